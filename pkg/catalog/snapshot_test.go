package catalog_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
)

// countingStore counts prefix scans and any other read of the store.
type countingStore struct {
	metastore.Store
	scans, gets atomic.Int64
}

func (c *countingStore) ScanPrefix(ctx context.Context, prefix string) ([]metastore.Entry, error) {
	c.scans.Add(1)
	return c.Store.ScanPrefix(ctx, prefix)
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

// The plan's catalog_refresh_caches_registration_schemas: two registrations
// with distinct schemas, one refresh; the listing and the cached schema
// lookup both match, and exactly one prefix scan ran.
func TestCatalogRefreshCachesRegistrationSchemas(t *testing.T) {
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	a := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	b := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "customers"}
	sa, sb := catalogtest.WideSchema(1, 3), catalogtest.RichSchema()
	mustRegister(t, c, a, catalog.TableSpec{Location: "/a", Schema: sa})
	mustRegister(t, c, b, catalog.TableSpec{Location: "/b", Schema: sb})

	counted := &countingStore{Store: st}
	snap, res, err := catalog.Refresh(ctx, counted, 7, t0)
	if err != nil {
		t.Fatal(err)
	}
	if n := counted.scans.Load(); n != 1 {
		t.Fatalf("refresh ran %d prefix scans, want exactly 1", n)
	}
	if n := counted.gets.Load(); n != 0 {
		t.Fatalf("refresh ran %d point reads, want none", n)
	}
	if res.Skipped != 0 || snap.Generation != 7 || !snap.CreatedAt.Equal(t0) {
		t.Fatalf("snapshot generation %d created %v skipped %d", snap.Generation, snap.CreatedAt, res.Skipped)
	}
	tables := snap.Tenant("acme")
	if len(tables) != 2 || tables[0].Ref != b || tables[1].Ref != a {
		t.Fatalf("listing = %+v, want customers then orders", tables)
	}
	for ref, want := range map[catalog.TableRef]*arrow.Schema{a: sa, b: sb} {
		tbl, ok := snap.Lookup(ref)
		if !ok {
			t.Fatalf("Lookup(%s) found nothing", ref)
		}
		got, err := tbl.Schema()
		if err != nil || !catalog.SchemaEqual(got, want) {
			t.Fatalf("cached schema of %s = %v, %v; want %v", ref, got, err, want)
		}
	}
	if snap.Counts != (catalog.Counts{Tables: 2}) {
		t.Fatalf("counts = %+v", snap.Counts)
	}
}

func TestSnapshotMarksUnavailableAndSkipsMalformed(t *testing.T) {
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	mustRegister(t, c, catalog.TableRef{Tenant: "t1", Namespace: "n", Name: "good"}, catalog.TableSpec{Location: "/g", Schema: catalogtest.WideSchema(1, 2)})
	put := func(key, val string) {
		if err := st.Put(ctx, key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	put("tbl/t1/n/legacy", `{"location":"/l","created_at":"2024-01-01T00:00:00Z"}`)
	put("tbl/t1/n/garbled", `{"location":"/x","created_at":"2024-01-01T00:00:00Z","schema_ipc":"AAAA"}`)
	put("tbl/t1/n/notjson", `{{{`)
	put("tbl/t1/too/many/parts", `{"location":"/x"}`)
	put("tbl/onlytwo/parts", `{"location":"/x"}`)
	put("other/t1/n/x", `{"location":"/x"}`)

	snap, res, err := catalog.Refresh(ctx, st, 1, t0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 3 || len(res.SkippedKeys) != 3 {
		t.Fatalf("skipped %d (%q), want 3", res.Skipped, res.SkippedKeys)
	}
	want := catalog.Counts{Tables: 3, SchemaUnavailable: 2, Skipped: 3}
	if snap.Counts != want {
		t.Fatalf("counts = %+v, want %+v", snap.Counts, want)
	}
	for name, reason := range map[string]string{"legacy": catalog.SchemaMissing, "garbled": catalog.SchemaUndecodable, "good": ""} {
		tbl, ok := snap.Lookup(catalog.TableRef{Tenant: "t1", Namespace: "n", Name: name})
		if !ok || tbl.SchemaError != reason || tbl.HasSchema() != (reason == "") {
			t.Fatalf("%s: found %v, schema error %q, want %q", name, ok, tbl.SchemaError, reason)
		}
	}
}

// Order is by (tenant, namespace, table), not by key bytes: "a!" sorts
// before "a/" in a key but after "a" as a tenant.
func TestSnapshotOrderAndTenantIndex(t *testing.T) {
	c, st, _ := newCatalog(t)
	refs := []catalog.TableRef{
		{Tenant: "a!", Namespace: "n", Name: "t"},
		{Tenant: "a", Namespace: "z", Name: "t"},
		{Tenant: "a", Namespace: "n", Name: "u"},
		{Tenant: "a", Namespace: "n", Name: "t"},
		{Tenant: "b", Namespace: "n", Name: "t"},
	}
	for i, r := range refs {
		mustRegister(t, c, r, catalog.TableSpec{Location: "/x", Schema: catalogtest.WideSchema(i, 2)})
	}
	snap, _, err := catalog.Refresh(context.Background(), st, 1, t0)
	if err != nil {
		t.Fatal(err)
	}
	var got []catalog.TableRef
	for _, tbl := range snap.Tables() {
		got = append(got, tbl.Ref)
	}
	want := []catalog.TableRef{refs[3], refs[2], refs[1], refs[0], refs[4]}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order = %v, want %v", got, want)
		}
	}
	if n := len(snap.Tenant("a")); n != 3 {
		t.Fatalf("tenant a has %d tables, want 3", n)
	}
	if snap.Tenant("nobody") != nil {
		t.Fatal("unknown tenant has tables")
	}
	if ts := snap.Tenants(); len(ts) != 3 || ts[0] != "a" || ts[1] != "a!" || ts[2] != "b" {
		t.Fatalf("Tenants() = %q", ts)
	}
	if _, ok := snap.Lookup(catalog.TableRef{Tenant: "a", Namespace: "n", Name: "v"}); ok {
		t.Fatal("Lookup found a table that is not there")
	}
}
