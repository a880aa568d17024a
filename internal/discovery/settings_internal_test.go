package discovery

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// serveBlob loads a written blob into a new Service logging to log, as
// Source does.
func serveBlob(t *testing.T, w *snapshot.Written, log *slog.Logger) *Service {
	t.Helper()
	b, err := w.Blob()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := snapshot.Open(b, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(Options{Log: log})
	s.setView(&View{Generation: w.Header.Generation, index: blobIndex{blob: blob}})
	return s
}

// settingsFor is what the Flight action will do: the authenticated tenant
// (begin), its prepared state (tenantState), its settings.
func settingsFor(t *testing.T, s *Service, tenant string) catalog.TenantSettings {
	t.Helper()
	ctx := WithTenant(context.Background(), tenant)
	tenant, v, err := s.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		t.Fatal(err)
	}
	return ts.settings()
}

// A prepared tenant exposes the operator's settings its segment carries,
// as refresh's full scan put them there from the store.
func TestPreparedTenantExposesSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	c := catalog.New(st, catalog.Options{})
	for _, tenant := range []string{"acme", "globex"} {
		ref := catalog.TableRef{Tenant: tenant, Namespace: "sales", Name: "orders"}
		if _, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "s3://data/" + tenant + "/orders/", Schema: catalogtest.WideSchema(1, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"s3://data/acme/", "s3://shared/acme/"}
	if _, err := c.UpdateTenantSettings(ctx, "acme", "ops", func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = want
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	built, err := scan.Build(ctx, st, scan.BuildOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	s := serveBlob(t, built.Written, slog.New(slog.DiscardHandler))

	got := settingsFor(t, s, "acme")
	if !slices.Equal(got.AllowedPrefixes, want) || got.UpdatedBy != "ops" {
		t.Fatalf("acme settings %+v, want prefixes %q by ops", got, want)
	}
	got.AllowedPrefixes[0] = "s3://elsewhere/"
	if again := settingsFor(t, s, "acme"); !slices.Equal(again.AllowedPrefixes, want) {
		t.Fatalf("acme settings after the caller changed its copy: %q, want %q", again.AllowedPrefixes, want)
	}
	for _, tenant := range []string{"globex", "initech"} { // none set; no tables
		if got := settingsFor(t, s, tenant); len(got.AllowedPrefixes) != 0 {
			t.Errorf("%s settings %+v, want none", tenant, got)
		}
	}
}

// Settings that do not decode are none (no prefix allowed), logged once at
// warn with the tenant, not at every request.
func TestUndecodableSettingsAreNone(t *testing.T) {
	t.Parallel()
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	table := []snapshot.Table{{Namespace: "sales", Name: "orders", TableType: "TABLE", Location: "s3://data/acme/orders/"}}
	if err := w.AddTenantWithSettings("acme", table, nil, []byte(`{"allowed_prefixes":[""]}`)); err != nil {
		t.Fatal(err)
	}
	written, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s := serveBlob(t, written, slog.New(slog.NewJSONHandler(&logged, nil)))
	for range 3 {
		if got := settingsFor(t, s, "acme"); len(got.AllowedPrefixes) != 0 {
			t.Fatalf("acme settings %+v, want none", got)
		}
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"level":"WARN"`) || !strings.Contains(lines[0], `"tenant":"acme"`) {
		t.Fatalf("log %q, want one warning naming acme", logged.String())
	}
}

// The settings are counted in what a prepared tenant is charged in the
// cache.
func TestSettingsCountInThePreparedSize(t *testing.T) {
	t.Parallel()
	prepare := func(settings []byte) int64 {
		t.Helper()
		w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 1, CreatedAt: time.Unix(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		table := []snapshot.Table{{Namespace: "sales", Name: "orders", TableType: "TABLE", Location: "s3://data/acme/orders/"}}
		if err := w.AddTenantWithSettings("acme", table, nil, settings); err != nil {
			t.Fatal(err)
		}
		written, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		b, err := written.Blob()
		if err != nil {
			t.Fatal(err)
		}
		r, err := snapshot.Open(b, snapshot.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seg, err := r.Tenant(context.Background(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(seg.Release)
		ts, err := prepareTenant(seg, 1<<20, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		return ts.bytes
	}
	prefixes := make([]string, catalog.MaxAllowedPrefixes)
	for i := range prefixes {
		prefixes[i] = "s3://data/acme/" + strings.Repeat("p", 200) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "/"
	}
	raw, err := catalog.EncodeTenantSettings(catalog.TenantSettings{AllowedPrefixes: prefixes})
	if err != nil {
		t.Fatal(err)
	}
	without, with := prepare(nil), prepare(raw)
	if with-without < 2*int64(len(raw))-64 {
		t.Fatalf("prepared with %d bytes of settings: %d bytes, without: %d; want the raw and decoded settings counted", len(raw), with, without)
	}
}
