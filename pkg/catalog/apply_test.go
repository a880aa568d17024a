package catalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// Applying a batch of changed keys to a blob gives the blob a full scan
// gives (the same content hash and tables), re-encodes only the tenants
// the keys name, and carries every other tenant over unchanged, generation
// included.
func TestApplyChangesEqualsAFullBuild(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	c := catalog.New(st, catalog.Options{})
	spec := func(seed int) catalog.TableSpec {
		return catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(seed, 3)}
	}
	for i, r := range []catalog.TableRef{ref("acme", "a"), ref("acme", "b"), ref("globex", "g"), ref("initech", "only"), ref("umbrella", "u")} {
		mustRegister(t, c, r, spec(i))
	}
	t1 := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	base, err := catalog.BuildBlob(ctx, st, catalog.BuildOptions{Generation: 1, CreatedAt: t1, Marker: catalog.ChangeMarker{Changes: 7, FullScanAt: t1}})
	if err != nil {
		t.Fatal(err)
	}
	baseBlob, err := catalog.OpenBlob(base.Blob, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}

	mustRegister(t, c, ref("acme", "c"), spec(7))                                                  // added
	if _, err := c.Update(ctx, ref("globex", "g"), spec(8), catalog.UpdateOptions{}); err != nil { // changed
		t.Fatal(err)
	}
	if err := c.Drop(ctx, ref("initech", "only")); err != nil { // its tenant's last table
		t.Fatal(err)
	}
	mustRegister(t, c, ref("hooli", "h"), spec(9)) // a new tenant
	keys := []string{"tbl/acme/ns/c", "tbl/globex/ns/g", "tbl/initech/ns/only", "tbl/hooli/ns/h", "tbl/globex/ns/g",
		catalog.ChangesKey, "quota/acme", "tbl/not a/valid/key/at all"}

	t2 := t1.Add(time.Minute)
	got, err := catalog.ApplyChanges(ctx, st, baseBlob, keys, catalog.ApplyOptions{Generation: 2, CreatedAt: t2})
	if err != nil {
		t.Fatal(err)
	}
	full, err := catalog.BuildBlob(ctx, st, catalog.BuildOptions{Generation: 2, CreatedAt: t2})
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.ContentHash != full.Header.ContentHash || got.Header.Counts != full.Header.Counts {
		t.Fatalf("applied blob: counts %+v hash %x; a full build: %+v %x", got.Header.Counts, got.Header.ContentHash, full.Header.Counts, full.Header.ContentHash)
	}
	if got.Tenants != 4 || got.Reads != 4 {
		t.Fatalf("re-encoded %d tenants after %d reads, want 4 and 4", got.Tenants, got.Reads)
	}
	blob, err := catalog.OpenBlob(got.Blob, catalog.DecodeOptions{})
	if err != nil {
		t.Fatalf("the applied blob does not open: %v", err)
	}
	// The marker: base's (7 writes, scanned at t1) plus the 4 writes of
	// the batch (c and h registered, g updated once, only dropped).
	if h := blob.Header(); got.Writes != 4 || h.Changes != 7+4 || !h.FullScanAt.Equal(t1) || h.Generation != 2 {
		t.Fatalf("writes %d, header = %+v; want 4 writes, generation 2 and marker 11 scanned at t1", got.Writes, h)
	}
	snap, _, err := catalog.Refresh(ctx, st, 2, t2)
	if err != nil {
		t.Fatal(err)
	}
	equalTenants(t, blob, snap)
	for _, name := range []string{"acme", "globex", "hooli"} {
		if info, _ := blob.Tenant(name); info.Generation != 2 {
			t.Errorf("%s: generation %d, want 2 (changed)", name, info.Generation)
		}
	}
	if info, _ := blob.Tenant("umbrella"); info.Generation != 1 {
		t.Errorf("umbrella (not in the batch): generation %d, want 1", info.Generation)
	}
	if _, ok := blob.Tenant("initech"); ok {
		t.Error("initech, whose last table was dropped, is still in the blob")
	}
}
