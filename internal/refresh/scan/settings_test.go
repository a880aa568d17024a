package scan_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

// allow sets tenant's allowed prefixes through the catalog and returns the
// settings item as stored.
func allow(tb testing.TB, c *catalog.Catalog, st metastore.Store, tenant string, prefixes ...string) []byte {
	tb.Helper()
	ctx := context.Background()
	if _, err := c.UpdateTenantSettings(ctx, tenant, "ops", func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = prefixes
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	raw, err := st.Get(ctx, catalog.TenantKey(tenant))
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// settingsOf reads tenant's settings from blob (nil when none).
func settingsOf(tb testing.TB, r *snapshot.Reader, tenant string) []byte {
	tb.Helper()
	return snapshottest.Tenant(tb, r, tenant).Settings()
}

func TestBuildCarriesSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	clean := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	acme := allow(t, c, st, "acme", "s3://lake/acme/")
	allow(t, c, st, "hooli", "s3://lake/hooli/") // settings, no tables or tombstones
	if err := st.Put(ctx, catalog.TenantKey("globex"), []byte(`{"allowed_prefixes":"s3://lake/"}`)); err != nil {
		t.Fatal(err)
	}
	b := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	r := snapshottest.Open(t, b.Blob)
	if got := settingsOf(t, r, "acme"); !bytes.Equal(got, acme) {
		t.Errorf("acme settings %q, want the item as stored, %q", got, acme)
	}
	for _, tenant := range []string{"globex", "initech"} {
		if got := settingsOf(t, r, tenant); got != nil {
			t.Errorf("%s settings %q, want none", tenant, got)
		}
	}
	if _, ok := r.Entry("hooli"); ok {
		t.Error("hooli, of settings alone, has a segment")
	}
	if got, want := len(r.Entries()), len(clean.Written.Entries); got != want {
		t.Errorf("%d tenants, want %d as without settings", got, want)
	}
	if got, want := b.Counts.Skipped, clean.Counts.Skipped+1; got != want || !slices.Contains(b.SkippedKeys, "tenant/globex") {
		t.Errorf("skipped %d %q, want %d with tenant/globex", got, b.SkippedKeys, want)
	}
}

func TestApplySettingsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	allow(t, c, st, "acme", "s3://lake/acme/")
	base := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0, Marker: snapshot.Marker{Changes: 3, FullScanAt: t0}})
	baseR := snapshottest.Open(t, base.Blob)
	acme := allow(t, c, st, "acme", "s3://lake/acme/", "s3://lake/shared/")
	allow(t, c, st, "hooli", "s3://lake/hooli/")

	t1 := t0.Add(time.Minute)
	applied, err := scan.Apply(ctx, st, baseR, []string{catalog.TenantKey("acme"), catalog.TenantKey("hooli")},
		scan.ApplyOptions{Generation: 2, CreatedAt: t1})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.Changes) != 0 || applied.Writes != 1 || applied.Reads != 2 {
		t.Fatalf("changes %+v, %d writes, %d reads; want none, 1 (acme's settings), 2 (acme's and hooli's items)",
			applied.Changes, applied.Writes, applied.Reads)
	}
	blob, err := applied.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	r := snapshottest.Open(t, blob)
	if got := settingsOf(t, r, "acme"); !bytes.Equal(got, acme) {
		t.Errorf("acme settings %q, want %q", got, acme)
	}
	if _, ok := r.Entry("hooli"); ok {
		t.Error("hooli, of settings alone, has a segment")
	}
	for _, e := range baseR.Entries() {
		got, _ := r.Entry(e.Tenant)
		if rewritten := got.Address != e.Address; rewritten != (e.Tenant == "acme") {
			t.Errorf("%s: rewritten %v, want it for acme alone", e.Tenant, rewritten)
		}
		if want := map[bool]uint64{true: 2, false: 1}[e.Tenant == "acme"]; got.Generation != want {
			t.Errorf("%s: generation %d, want %d", e.Tenant, got.Generation, want)
		}
	}
	if got := snapshottest.Tenant(t, r, "acme").Table(0).Published; got != 1 {
		t.Errorf("acme's first table published at %d, want 1: a settings change is no table's", got)
	}
	if m := applied.Written.Header.Marker; m.Changes != 4 {
		t.Errorf("marker %+v, want 3+1 changes", m)
	}
	// As a full scan of the same store writes it.
	full := build(t, st, scan.BuildOptions{Generation: 2, CreatedAt: t1, Base: baseR})
	if applied.Written.Header.ContentHash != full.Written.Header.ContentHash {
		t.Error("the applied blob differs from a full build's")
	}
	// The same key again: nothing to write.
	again, err := scan.Apply(ctx, st, r, []string{catalog.TenantKey("acme")}, scan.ApplyOptions{Generation: 3, CreatedAt: t1})
	if err != nil {
		t.Fatal(err)
	}
	if again.Writes != 0 || again.Written.Header.ContentHash != applied.Written.Header.ContentHash {
		t.Errorf("the key again: %d writes, content changed %v; want 0, false",
			again.Writes, again.Written.Header.ContentHash != applied.Written.Header.ContentHash)
	}
}

// A batch of a tenant's table keys reads its settings again, so settings
// whose own batch failed reach the snapshot with the tenant's next change.
func TestApplyTableKeyRereadsSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	allow(t, c, st, "acme", "s3://lake/acme/")
	baseR := snapshottest.Open(t, build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0}).Blob)
	acme := allow(t, c, st, "acme", "s3://lake/other/")
	register(t, c, ref("acme", "sales", "refunds"), catalog.TableSpec{Location: "s3://lake/acme/refunds/", Schema: catalogtest.WideSchema(2, 2)})
	applied, err := scan.Apply(ctx, st, baseR, []string{"tbl/acme/sales/refunds"}, scan.ApplyOptions{Generation: 2, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if applied.Reads != 3 || applied.Writes != 1 || len(applied.Changes) != 1 {
		t.Fatalf("%d reads, %d writes, %d changes; want 3 (the table, its iceberg state, acme's settings), 1, 1", applied.Reads, applied.Writes, len(applied.Changes))
	}
	blob, err := applied.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	if got := settingsOf(t, snapshottest.Open(t, blob), "acme"); !bytes.Equal(got, acme) {
		t.Errorf("acme settings %q, want the ones stored now, %q", got, acme)
	}
}

// Settings catalog.DecodeTenantSettings refuses are carried as none, by a
// batch as by a full scan.
func TestApplyMalformedSettingsAreNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	allow(t, c, st, "acme", "s3://lake/acme/")
	baseR := snapshottest.Open(t, build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0}).Blob)
	if settingsOf(t, baseR, "acme") == nil {
		t.Fatal("acme's base segment carries no settings")
	}
	for name, raw := range map[string][]byte{
		"not JSON":        []byte("{"),
		"an empty prefix": []byte(`{"allowed_prefixes":[""]}`),
		"over the bound":  append([]byte(`{"allowed_prefixes":[],"x":"`), append(bytes.Repeat([]byte("x"), catalog.MaxTenantSettingsBytes), '"', '}')...),
	} {
		t.Run(name, func(t *testing.T) {
			if err := st.Put(ctx, catalog.TenantKey("acme"), raw); err != nil {
				t.Fatal(err)
			}
			applied, err := scan.Apply(ctx, st, baseR, []string{catalog.TenantKey("acme")}, scan.ApplyOptions{Generation: 2, CreatedAt: t0})
			if err != nil {
				t.Fatal(err)
			}
			blob, err := applied.Written.Blob()
			if err != nil {
				t.Fatal(err)
			}
			if got := settingsOf(t, snapshottest.Open(t, blob), "acme"); got != nil {
				t.Errorf("acme settings %q, want none", got)
			}
			if applied.Writes != 0 {
				t.Errorf("%d writes, want 0: the catalog writes no such item", applied.Writes)
			}
		})
	}
}
