package snapshot_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

// settingsRows are three tenants of one table each: acme with settings,
// globex with none (nil) and initech with empty settings (none as well).
func settingsRows(tb testing.TB) map[string]rows {
	tb.Helper()
	table := func() []snapshot.Table {
		return []snapshot.Table{{Namespace: "n", Name: "t", TableType: "TABLE", Location: "s3://b/n/t/", CreatedAt: t0, UpdatedAt: t0, Published: 1}}
	}
	return map[string]rows{
		"acme":    {tables: table(), settings: fixtureSettings(tb)},
		"globex":  {tables: table()},
		"initech": {tables: table(), settings: []byte{}},
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, settingsRows(t))
	store := snapshottest.StoreSegments(b.Written)
	manifest, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: store.Fetch})
	if err != nil {
		t.Fatal(err)
	}
	for form, r := range map[string]*snapshot.Reader{"one file": snapshottest.Open(t, b.Blob), "manifest alone": manifest} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			if got, want := snapshottest.Tenant(t, r, "acme").Settings(), fixtureSettings(t); !bytes.Equal(got, want) {
				t.Errorf("acme settings %q, want %q", got, want)
			}
			for _, name := range []string{"globex", "initech"} {
				if got := snapshottest.Tenant(t, r, name).Settings(); got != nil {
					t.Errorf("%s settings %q, want nil", name, got)
				}
			}
		})
	}
}

// The settings are part of the segment: other settings, other bytes
// (address and content hash), so a settings change alone republishes its
// tenant's segment and no other.
func TestSettingsChangeTheSegment(t *testing.T) {
	t.Parallel()
	before := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, settingsRows(t)).Written
	tenants := settingsRows(t)
	acme := tenants["acme"]
	acme.settings = []byte(`{"allowed_prefixes":["s3://acme-data/other/"]}`)
	tenants["acme"] = acme
	after := write(t, snapshot.WriterOptions{Generation: 4, CreatedAt: t0, Previous: before.Entries}, tenants).Written
	if before.Header.ContentHash == after.Header.ContentHash {
		t.Fatal("the content hash did not change with acme's settings")
	}
	for i, e := range after.Entries {
		changed := e.Address != before.Entries[i].Address
		if want := e.Tenant == "acme"; changed != want {
			t.Errorf("%s: segment changed %v, want %v", e.Tenant, changed, want)
		}
		if want := map[bool]uint64{true: 4, false: 3}[e.Tenant == "acme"]; e.Generation != want {
			t.Errorf("%s: generation %d, want %d", e.Tenant, e.Generation, want)
		}
	}
}

func TestCopyTenantKeepsSettings(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, settingsRows(t))
	manifest, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for form, base := range map[string]*snapshot.Reader{"byte for byte": snapshottest.Open(t, b.Blob), "by reference": manifest} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 4, CreatedAt: t0})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range base.Entries() {
				if err := w.CopyTenant(base, e.Tenant); err != nil {
					t.Fatal(err)
				}
			}
			out, err := w.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if e, _ := out.Entries[0], 0; e.Tenant != "acme" || e.Address != b.Written.Entries[0].Address || e.Generation != 3 {
				t.Fatalf("copied acme entry %+v, want its address and generation 3", e)
			}
			store := snapshottest.StoreSegments(b.Written)
			r, err := snapshot.Open(out.Manifest, snapshot.ReaderOptions{Fetch: store.Fetch})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := snapshottest.Tenant(t, r, "acme").Settings(), fixtureSettings(t); !bytes.Equal(got, want) {
				t.Errorf("copied acme settings %q, want %q", got, want)
			}
			if got := snapshottest.Tenant(t, r, "globex").Settings(); got != nil {
				t.Errorf("copied globex settings %q, want nil", got)
			}
		})
	}
}

func TestWriterRefusesOversizedSettings(t *testing.T) {
	t.Parallel()
	table := []snapshot.Table{{Namespace: "n", Name: "t", Location: "/t"}}
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 1, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddTenantWithSettings("a", table, nil, bytes.Repeat([]byte("x"), snapshot.MaxSettingsBytes)); err != nil {
		t.Fatalf("settings of MaxSettingsBytes: %v", err)
	}
	err = w.AddTenantWithSettings("b", table, nil, bytes.Repeat([]byte("x"), snapshot.MaxSettingsBytes+1))
	if err == nil || !strings.Contains(err.Error(), "settings of") {
		t.Fatalf("settings of MaxSettingsBytes+1: %v, want an error", err)
	}
	if _, ferr := w.Finish(); !errors.Is(ferr, err) {
		t.Fatalf("Finish after the refusal: %v, want %v", ferr, err)
	}
	// Also for a tenant of no rows, whose segment would be left out.
	w, err = snapshot.NewWriter(snapshot.WriterOptions{Generation: 1, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddTenantWithSettings("c", nil, nil, bytes.Repeat([]byte("x"), snapshot.MaxSettingsBytes+1)); err == nil {
		t.Fatal("oversized settings of a tenant of no rows: no error")
	}
}

// A tenant with settings but no rows has no segment: nothing of it to
// serve.
func TestSettingsAloneMakeNoSegment(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 1, CreatedAt: t0}, map[string]rows{
		"acme":   {settings: fixtureSettings(t)},
		"globex": {tables: []snapshot.Table{{Namespace: "n", Name: "t", Location: "/t"}}},
	})
	r := snapshottest.Open(t, b.Blob)
	if _, ok := r.Entry("acme"); ok || len(r.Entries()) != 1 {
		t.Fatalf("entries %+v, want globex's alone", r.Entries())
	}
}
