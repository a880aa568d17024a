package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// TestDroppedReadsTheIndex drops tables of two tenants on DynamoDB
// (dynalite) and lists one tenant's: only Gets (the index's shards and the
// listed tombstones), no prefix read, which on DynamoDB is a Scan of the
// whole table; only that tenant's drops, newest first. An undrop takes its
// entry out, a tombstone past retention is not listed, and the next write
// of its index item prunes it.
func TestDroppedReadsTheIndex(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	dst, err := dynamo.New(d.Client(), dynamo.Options{Table: d.NewTable(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	st := countCalls(dst)
	clk := &clock{now: t0}
	c := catalog.New(st, catalog.Options{Now: clk.Now, TombstoneRetention: 24 * time.Hour})
	ctx := context.Background()

	refs := []catalog.TableRef{
		{Tenant: "acme", Namespace: "sales", Name: "orders"},
		{Tenant: "acme", Namespace: "sales", Name: "returns"},
		{Tenant: "acme", Namespace: "ops", Name: "events"},
		{Tenant: "globex", Namespace: "sales", Name: "orders"},
		{Tenant: "acmex", Namespace: "sales", Name: "orders"},
	}
	ids := map[catalog.TableRef]string{}
	for _, ref := range refs {
		reg := mustRegister(t, c, ref, catalog.TableSpec{Location: "/" + ref.Name, Schema: catalogtest.WideSchema(1, 2)})
		ids[ref] = reg.CreationID()
	}
	for _, ref := range refs {
		clk.now = clk.now.Add(time.Minute)
		if err := c.Drop(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	list := func(tenant string) []string {
		t.Helper()
		counter(st).take()
		ds, err := c.Dropped(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		for call := range counter(st).take() {
			if !strings.HasPrefix(call, "Get ") {
				t.Errorf("listing %s's drops called %s, want Gets only", tenant, call)
			}
		}
		var got []string
		for _, d := range ds {
			if d.Registration.CreationID() != ids[d.Ref] {
				t.Errorf("%s dropped with creation id %s, want %s", d.Ref, d.Registration.CreationID(), ids[d.Ref])
			}
			got = append(got, d.Ref.String())
		}
		return got
	}
	want := func(tenant string, wantRefs ...string) {
		t.Helper()
		if got := list(tenant); fmt.Sprint(got) != fmt.Sprint(wantRefs) {
			t.Errorf("%s's drops: got %v, want %v", tenant, got, wantRefs)
		}
	}
	want("acme", "acme/ops/events", "acme/sales/returns", "acme/sales/orders")
	want("globex", "globex/sales/orders")
	want("initech")

	if _, err := c.Undrop(ctx, refs[1], ids[refs[1]]); err != nil {
		t.Fatal(err)
	}
	want("acme", "acme/ops/events", "acme/sales/orders")

	// Past retention of orders (dropped first) but not of events.
	clk.now = t0.Add(24*time.Hour + 2*time.Minute + 30*time.Second)
	want("acme", "acme/ops/events")
	// The next write of an index item prunes what is past retention:
	// orders registered again and dropped writes its item, which then no
	// longer holds the first drop of orders.
	old := ids[refs[0]]
	ids[refs[0]] = mustRegister(t, c, refs[0], catalog.TableSpec{Location: "/orders", Schema: catalogtest.WideSchema(1, 2)}).CreationID()
	if err := c.Drop(ctx, refs[0]); err != nil {
		t.Fatal(err)
	}
	want("acme", "acme/sales/orders", "acme/ops/events")
	entries, err := dst.ScanPrefix(ctx, catalog.DroppedIndexPrefix+"acme/")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no index items of acme")
	}
	for _, e := range entries {
		if strings.Contains(string(e.Value), old) {
			t.Errorf("index item %s still lists the expired drop %s: %s", e.Key, old, e.Value)
		}
	}
}

var _ metastore.Store = (*countingStore)(nil)

// A drop the index lacks (made before it, or whose index write failed) is
// not listed, and PurgeExpired, local mode's sweep, adds it.
// dropUnindexed registers and drops orders in a new catalog, then deletes
// the index item its drop wrote, as a drop made before the index was: the
// catalog and the registration dropped.
func dropUnindexed(t *testing.T) (*catalog.Catalog, catalog.Registration) {
	t.Helper()
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(0, 2)})
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	items, err := st.ScanPrefix(ctx, catalog.DroppedIndexPrefix)
	if err != nil || len(items) != 1 {
		t.Fatalf("index items after a drop: %v, %v; want one", items, err)
	}
	if err := st.Delete(ctx, catalog.DroppedIndexPrefix+items[0].Key); err != nil {
		t.Fatal(err)
	}
	return c, reg
}

func TestPurgeExpiredIndexesDropsTheIndexLacks(t *testing.T) {
	t.Parallel()
	c, reg := dropUnindexed(t)
	ctx := context.Background()
	if ds, err := c.Dropped(ctx, "acme"); err != nil || len(ds) != 0 {
		t.Fatalf("dropped without its index entry: %v, %v; want none", ds, err)
	}
	if p, err := c.PurgeExpired(ctx); err != nil || p != (catalog.Purged{Indexed: 1}) {
		t.Fatalf("PurgeExpired = %+v, %v; want the one drop indexed", p, err)
	}
	ds, err := c.Dropped(ctx, "acme")
	if err != nil || len(ds) != 1 || ds[0].Registration.CreationID() != reg.CreationID() {
		t.Fatalf("dropped after the sweep: %v, %v; want orders", ds, err)
	}
	if p, err := c.PurgeExpired(ctx); err != nil || p != (catalog.Purged{}) {
		t.Fatalf("second PurgeExpired = %+v, %v; want nothing", p, err)
	}
}

// On AWS nothing runs PurgeExpired (DynamoDB's TTL deletes the
// tombstones): refresh's sweep of orphaned history, which scans every
// item anyway, adds to the index the drops in retention it lacks — drops
// made before the index existed are listed after the first sweep.
func TestSweepIndexesDropsTheIndexLacks(t *testing.T) {
	t.Parallel()
	c, reg := dropUnindexed(t)
	ctx := context.Background()
	if h, err := c.SweepOrphanedHistories(ctx, 0); err != nil || h.Indexed != 1 {
		t.Fatalf("sweep = %+v, %v; want the one drop indexed", h, err)
	}
	ds, err := c.Dropped(ctx, "acme")
	if err != nil || len(ds) != 1 || ds[0].Registration.CreationID() != reg.CreationID() {
		t.Fatalf("dropped after the sweep: %v, %v; want orders", ds, err)
	}
	if h, err := c.SweepOrphanedHistories(ctx, 0); err != nil || h.Indexed != 0 {
		t.Fatalf("second sweep = %+v, %v; want nothing indexed", h, err)
	}
}
