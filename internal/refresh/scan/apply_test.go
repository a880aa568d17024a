package scan_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

func TestApplyEqualsAFullBuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	register(t, c, ref("umbrella", "u", "u1"), catalog.TableSpec{Location: "/u", Schema: catalogtest.WideSchema(4, 3)})
	base := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0, Marker: snapshot.Marker{Changes: 7, FullScanAt: t0}})
	baseR := snapshottest.Open(t, base.Blob)

	t1 := t0.Add(time.Minute)
	spec := catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(9, 2)}
	register(t, c, ref("globex", "finance", "budget"), spec)                // added
	if err := c.Drop(ctx, ref("globex", "finance", "ledger")); err != nil { // removed
		t.Fatal(err)
	}
	d := putTombstone(t, st, ref("acme", "hr", "interns"), spec, t0, t0.Add(time.Hour)) // a new tombstone
	purged, err := st.ScanPrefix(ctx, "dropped/initech/")
	if err != nil || len(purged) != 1 {
		t.Fatalf("initech tombstones %v, %v", purged, err)
	}
	purgedKey := "dropped/initech/" + purged[0].Key
	if err := st.Delete(ctx, purgedKey); err != nil { // purged: initech goes
		t.Fatal(err)
	}
	dKey, _ := d.Key()
	// The drop's own tombstone, as its stream record would name it.
	ledger, err := st.ScanPrefix(ctx, "dropped/globex/finance/ledger/")
	if err != nil || len(ledger) != 1 {
		t.Fatalf("the drop's tombstone: %v, %v", ledger, err)
	}
	keys := []string{"tbl/globex/finance/budget", "tbl/globex/finance/ledger", "tbl/acme/sales/orders", dKey, "dropped/globex/finance/ledger/" + ledger[0].Key,
		purgedKey, catalog.ChangesKey, "quota/acme", "tbl/bad"}
	applied, err := scan.Apply(ctx, st, baseR, keys, scan.ApplyOptions{Generation: 2, CreatedAt: t1})
	if err != nil {
		t.Fatal(err)
	}
	if applied.Tenants != 3 || applied.Writes != 2 {
		t.Fatalf("applied %d tenants, %d writes; want 3 (acme, globex, initech), 2", applied.Tenants, applied.Writes)
	}
	full := build(t, st, scan.BuildOptions{Generation: 2, CreatedAt: t1, Base: baseR})
	got, want := applied.Written.Header, full.Written.Header
	if got.ContentHash != want.ContentHash || got.Counts != want.Counts {
		t.Fatalf("applied blob %+v, full build %+v", got, want)
	}
	if got.Marker.Changes != 9 || !got.Marker.FullScanAt.Equal(t0) {
		t.Fatalf("marker %+v, want 7+2 changes and the base's full-scan time", got.Marker)
	}
	blob, err := applied.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	r := snapshottest.Open(t, blob)
	for name, gen := range map[string]uint64{"acme": 2, "globex": 2, "umbrella": 1} {
		if e, ok := r.Entry(name); !ok || e.Generation != gen {
			t.Errorf("%s: generation %d (in blob %v), want %d", name, e.Generation, ok, gen)
		}
	}
	if _, ok := r.Entry("initech"); ok {
		t.Error("initech, whose only tombstone was purged, is still in the blob")
	}
	acme := snapshottest.Tenant(t, r, "acme")
	if acme.Tombstones.Name.Len() != 2 {
		t.Fatalf("acme has %d tombstones, want 2", acme.Tombstones.Name.Len())
	}
	// Rows read again unchanged keep their publication; new ones are the
	// batch's.
	var published []string
	for i := range acme.NumTables() {
		published = append(published, fmt.Sprintf("%s@%d", acme.Table(i).Name, acme.Table(i).Published))
	}
	for i := range acme.Tombstones.Name.Len() {
		published = append(published, fmt.Sprintf("dropped %s@%d", acme.Tombstone(i).Name, acme.Tombstone(i).Published))
	}
	if got, want := strings.Join(published, " "), "people@1 customers@1 orders@1 dropped interns@2 dropped returns@1"; got != want {
		t.Errorf("acme rows published %s, want %s", got, want)
	}
}

func TestApplyToAManifestFetchesOnlyChangedTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	base := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0, Marker: snapshot.Marker{FullScanAt: t0}})
	segs := snapshottest.StoreSegments(base.Written)
	m, err := snapshot.Open(base.Written.Manifest, snapshot.ReaderOptions{Fetch: segs.Fetch})
	if err != nil {
		t.Fatal(err)
	}
	register(t, c, ref("globex", "finance", "budget"), catalog.TableSpec{Location: "/b", Schema: catalogtest.WideSchema(3, 2)})
	t1 := t0.Add(time.Minute)
	applied, err := scan.Apply(ctx, st, m, []string{"tbl/globex/finance/budget"}, scan.ApplyOptions{Generation: 2, CreatedAt: t1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(segs.Fetched, []string{"globex"}) || applied.Fetched != 1 || applied.Tenants != 1 {
		t.Fatalf("fetched %q (%d), wrote %d tenants; want globex alone", segs.Fetched, applied.Fetched, applied.Tenants)
	}
	for i, e := range applied.Written.Entries {
		if wrote := applied.Written.Segments[i] != nil; wrote != (e.Tenant == "globex") {
			t.Errorf("%s: segment written %v", e.Tenant, wrote)
		}
	}
	m2, err := snapshot.Open(base.Written.Manifest, snapshot.ReaderOptions{Fetch: segs.Fetch})
	if err != nil {
		t.Fatal(err)
	}
	full := build(t, st, scan.BuildOptions{Generation: 2, CreatedAt: t1, Base: m2})
	if got, want := applied.Written.Header, full.Written.Header; got.ContentHash != want.ContentHash || got.Counts != want.Counts {
		t.Fatalf("applied %+v, full build %+v", got, want)
	}
	// Without a Fetch, a detached changed tenant is an error, not a loss.
	m, _ = snapshot.Open(base.Written.Manifest, snapshot.ReaderOptions{})
	if _, err := scan.Apply(ctx, st, m, []string{"tbl/globex/finance/budget"}, scan.ApplyOptions{Generation: 2, CreatedAt: t1}); !errors.Is(err, snapshot.ErrDetached) {
		t.Fatalf("Apply without a Fetch: %v, want ErrDetached", err)
	}
}

func TestApplyListsItsChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	base := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0, Marker: snapshot.Marker{FullScanAt: t0}})
	by := catalog.WithCaller(ctx, "bob")
	register(t, c, ref("globex", "finance", "budget"), catalog.TableSpec{Location: "/b", Schema: catalogtest.WideSchema(3, 2)})
	if _, err := c.Update(by, ref("acme", "sales", "orders"), catalog.TableSpec{Schema: catalogtest.WideSchema(8, 2)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(by, ref("globex", "finance", "ledger")); err != nil {
		t.Fatal(err)
	}
	tomb, err := st.ScanPrefix(ctx, "dropped/globex/finance/ledger/")
	if err != nil || len(tomb) != 1 {
		t.Fatalf("tombstone %v, %v", tomb, err)
	}
	keys := []string{"tbl/globex/finance/budget", "tbl/acme/sales/orders", "tbl/globex/finance/ledger",
		"dropped/globex/finance/ledger/" + tomb[0].Key, "tbl/acme/sales/customers"}
	applied, err := scan.Apply(ctx, st, snapshottest.Open(t, base.Blob), keys, scan.ApplyOptions{Generation: 2, CreatedAt: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range applied.Changes {
		got = append(got, fmt.Sprintf("%s %s v%d by %s", ch.Op, ch.Ref, ch.Version, ch.By))
	}
	slices.Sort(got)
	want := []string{"create globex/finance/budget v1 by ", "drop globex/finance/ledger v2 by bob", "update acme/sales/orders v2 by bob"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
}
