package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
)

func allow(p ...string) func(*catalog.TenantSettings) error {
	return func(s *catalog.TenantSettings) error {
		for _, x := range p {
			if !slices.Contains(s.AllowedPrefixes, x) {
				s.AllowedPrefixes = append(s.AllowedPrefixes, x)
			}
		}
		return nil
	}
}

// Settings are stored sorted and once each, record who changed them, and
// each change that changes something signals refresh (the change counter);
// one that changes nothing writes nothing.
func TestTenantSettingsRoundTrip(t *testing.T) {
	t.Parallel()
	cat, st, _ := newCatalog(t)
	ctx := context.Background()
	if s, err := cat.TenantSettings(ctx, "acme"); err != nil || len(s.AllowedPrefixes) != 0 {
		t.Fatalf("before = %+v, %v; want none", s, err)
	}
	before, _ := catalog.ReadChanges(ctx, st)
	s, err := cat.UpdateTenantSettings(ctx, "acme", "ops", allow("s3://b/z/", "s3://b/a/", "s3://b/z/"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.AllowedPrefixes, ",") != "s3://b/a/,s3://b/z/" || s.UpdatedBy != "ops" || s.UpdatedAt.IsZero() {
		t.Fatalf("stored = %+v", s)
	}
	after, _ := catalog.ReadChanges(ctx, st)
	if after != before+1 {
		t.Fatalf("change counter %d → %d, want one add", before, after)
	}
	raw, _ := st.Get(ctx, catalog.TenantKey("acme"))
	if _, err := cat.UpdateTenantSettings(ctx, "acme", "someone-else", allow("s3://b/a/")); err != nil {
		t.Fatal(err)
	}
	if again, _ := st.Get(ctx, catalog.TenantKey("acme")); string(again) != string(raw) {
		t.Fatalf("a change that changes nothing rewrote the item:\n%s\n%s", raw, again)
	}
	if n, _ := catalog.ReadChanges(ctx, st); n != after {
		t.Fatalf("change counter moved to %d for no change", n)
	}
	got, err := cat.TenantSettings(ctx, "acme")
	if err != nil || !slices.Equal(got.AllowedPrefixes, s.AllowedPrefixes) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if other, _ := cat.TenantSettings(ctx, "globex"); len(other.AllowedPrefixes) != 0 {
		t.Fatalf("another tenant sees %+v", other)
	}
}

// Concurrent operators each add a prefix; the compare-and-swap keeps all.
func TestTenantSettingsConcurrentAdds(t *testing.T) {
	t.Parallel()
	cat, _, _ := newCatalog(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	const n = 8
	for i := range n {
		wg.Go(func() {
			if _, err := cat.UpdateTenantSettings(ctx, "acme", "ops", allow(fmt.Sprintf("s3://b/p%d/", i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if s, _ := cat.TenantSettings(ctx, "acme"); len(s.AllowedPrefixes) != n {
		t.Fatalf("kept %d of %d concurrent adds: %v", len(s.AllowedPrefixes), n, s.AllowedPrefixes)
	}
}

// Out-of-bounds settings are refused and nothing is stored; a damaged item
// reads as an error, and the next update replaces it.
func TestTenantSettingsBounds(t *testing.T) {
	t.Parallel()
	cat, st, _ := newCatalog(t)
	ctx := context.Background()
	many := make([]string, catalog.MaxAllowedPrefixes+1)
	for i := range many {
		many[i] = fmt.Sprintf("s3://b/p%d/", i)
	}
	for name, p := range map[string][]string{"too many": many, "empty": {""}, "too long": {"s3://b/" + strings.Repeat("a", 300) + "/"},
		"control character": {"s3://b/a\n/"}} {
		if _, err := cat.UpdateTenantSettings(ctx, "acme", "ops", allow(p...)); !errors.Is(err, catalog.ErrInvalidSettings) {
			t.Fatalf("%s: error %v, want ErrInvalidSettings", name, err)
		}
	}
	if _, err := st.Get(ctx, catalog.TenantKey("acme")); err == nil {
		t.Fatal("a refused update stored an item")
	}
	if _, err := cat.UpdateTenantSettings(ctx, "a/b", "ops", allow("s3://b/p/")); !errors.Is(err, catalog.ErrInvalidName) {
		t.Fatalf("bad tenant name: %v", err)
	}
	if err := st.Put(ctx, catalog.TenantKey("acme"), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.TenantSettings(ctx, "acme"); !errors.Is(err, catalog.ErrInvalidSettings) {
		t.Fatalf("damaged item: %v, want ErrInvalidSettings", err)
	}
	if s, err := cat.UpdateTenantSettings(ctx, "acme", "ops", allow("s3://b/p/")); err != nil || len(s.AllowedPrefixes) != 1 {
		t.Fatalf("update over a damaged item = %+v, %v", s, err)
	}
	if _, err := catalog.DecodeTenantSettings([]byte(strings.Repeat(" ", catalog.MaxTenantSettingsBytes+1))); !errors.Is(err, catalog.ErrInvalidSettings) {
		t.Fatalf("oversized item: %v", err)
	}
}

func FuzzDecodeTenantSettings(f *testing.F) {
	f.Add([]byte(`{"allowed_prefixes":["s3://b/p/"],"updated_by":"ops"}`))
	f.Add([]byte(`{"allowed_prefixes":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := catalog.DecodeTenantSettings(raw)
		if err != nil {
			return
		}
		b, err := catalog.EncodeTenantSettings(s)
		if err != nil {
			t.Fatalf("decoded settings do not encode: %v", err)
		}
		again, err := catalog.DecodeTenantSettings(b)
		if err != nil || !slices.Equal(again.AllowedPrefixes, s.AllowedPrefixes) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, s)
		}
	})
}
