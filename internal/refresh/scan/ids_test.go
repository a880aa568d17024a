package scan_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

// row returns a tenant's row of a table in a blob.
func row(tb testing.TB, blob []byte, r catalog.TableRef) snapshot.Table {
	tb.Helper()
	seg := snapshottest.Tenant(tb, snapshottest.Open(tb, blob), r.Tenant)
	i := slices.Index(snapshottest.Names(seg), r.Namespace+"."+r.Name)
	if i < 0 {
		tb.Fatalf("%s: no row", r)
	}
	return seg.Table(i)
}

// wantIDs checks that a row holds a registration's creation id and field
// ids.
func wantIDs(tb testing.TB, what string, got snapshot.Table, reg catalog.Registration) {
	tb.Helper()
	ids, _ := reg.FieldIDs()
	if got.CreationID != reg.CreationID() || !slices.Equal(got.FieldIDs, ids.IDs) || got.LastColumnID != ids.LastColumnID {
		tb.Errorf("%s: creation id %q, field ids %v (last %d); want the catalog's %q, %v (last %d)", what, got.CreationID, got.FieldIDs,
			got.LastColumnID, reg.CreationID(), ids.IDs, ids.LastColumnID)
	}
}

// Build and Apply fill each row's creation id and field ids from its
// registration, and they follow the catalog as the schema evolves.
func TestRowsCarryTheCatalogsIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	orders := ref("acme", "sales", "orders")
	events := ref("acme", "web", "events")
	reg := register(t, c, events, catalog.TableSpec{Location: "s3://lake/acme/events/", Schema: catalogtest.WideSchema(5, 3)})
	base := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	// Three fields, the third a list: four paths.
	first, ok := reg.FieldIDs()
	if !ok || !slices.Equal(first.IDs, []int32{1, 2, 3, 4}) || first.LastColumnID != 4 {
		t.Fatalf("the catalog's ids of a new table: %v, %v; want [1 2 3 4] (last 4)", first, ok)
	}
	wantIDs(t, "built events", row(t, base.Blob, events), reg)
	ordersReg, err := c.Get(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "built orders", row(t, base.Blob, orders), ordersReg)
	if got := row(t, base.Blob, orders); len(got.FieldIDs) == 0 || got.CreationID == "" {
		t.Fatalf("orders: creation id %q, field ids %v; want both", got.CreationID, got.FieldIDs)
	}
	if got := row(t, base.Blob, ref("globex", "legacy", "old")); got.CreationID != "" || got.FieldIDs != nil || got.LastColumnID != 0 {
		t.Errorf("a legacy registration without a schema: creation id %q, field ids %v (last %d); want none", got.CreationID, got.FieldIDs, got.LastColumnID)
	}

	// An update adding a field: the field gets the next id, the others
	// keep theirs, the creation id stays.
	next, err := c.Update(ctx, events, catalog.TableSpec{Schema: catalogtest.WideSchema(5, 4)}, catalog.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := next.FieldIDs(); !slices.Equal(ids.IDs, []int32{1, 2, 3, 4, 5}) || ids.LastColumnID != 5 {
		t.Fatalf("the catalog's ids after adding a field: %v; want [1 2 3 4 5] (last 5)", ids)
	}
	baseR := snapshottest.Open(t, base.Blob)
	applied, err := scan.Apply(ctx, st, baseR, []string{catalog.KeyPrefix + "acme/web/events"}, scan.ApplyOptions{Generation: 2, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := applied.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "applied events", row(t, blob, events), next)
	if got := row(t, blob, events); got.CreationID != reg.CreationID() {
		t.Errorf("applied events: creation id %q, want it kept, %q", got.CreationID, reg.CreationID())
	}
	full := build(t, st, scan.BuildOptions{Generation: 2, CreatedAt: t0, Base: baseR})
	wantIDs(t, "rebuilt events", row(t, full.Blob, events), next)
	if got, want := applied.Written.Header.ContentHash, full.Written.Header.ContentHash; got != want {
		t.Errorf("applied blob and full build differ")
	}
}

// A row whose field ids alone changed is a changed row: published again
// by Apply (and reported) and by a full scan over its blob; a row whose
// ids are the same keeps its publication.
func TestIDsAloneChangeARow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	events := ref("acme", "web", "events")
	register(t, c, events, catalog.TableSpec{Location: "s3://lake/acme/events/", Schema: catalogtest.WideSchema(5, 3)})
	base := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	baseR := snapshottest.Open(t, base.Blob)

	// The stored registration with its last column id raised, as nothing
	// but the ids: the same bytes otherwise.
	key := catalog.KeyPrefix + "acme/web/events"
	raw, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	ids, ok := m["iceberg_field_ids"].(map[string]any)
	if !ok {
		t.Fatalf("the stored registration records no iceberg_field_ids: %s", raw)
	}
	ids["last_column_id"] = 7
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, key, raw); err != nil {
		t.Fatal(err)
	}
	if reg, err := c.Get(ctx, events); err != nil {
		t.Fatal(err)
	} else if got, _ := reg.FieldIDs(); got.LastColumnID != 7 {
		t.Fatalf("the rewritten registration's last column id %d, want 7", got.LastColumnID)
	}

	at := t0.Add(time.Minute)
	applied, err := scan.Apply(ctx, st, baseR, []string{key, catalog.KeyPrefix + "acme/sales/orders"}, scan.ApplyOptions{Generation: 2, CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.Changes) != 1 || applied.Changes[0].Ref != events {
		t.Errorf("changes %+v, want events' alone", applied.Changes)
	}
	blob, err := applied.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	full := build(t, st, scan.BuildOptions{Generation: 2, CreatedAt: at, Base: baseR})
	for what, b := range map[string][]byte{"applied": blob, "rebuilt": full.Blob} {
		if got := row(t, b, events); got.LastColumnID != 7 || got.Published != 2 {
			t.Errorf("%s events: last column id %d, published at %d; want 7 and 2", what, got.LastColumnID, got.Published)
		}
		if got := row(t, b, ref("acme", "sales", "orders")); got.Published != 1 {
			t.Errorf("%s orders: published at %d, want 1 (unchanged)", what, got.Published)
		}
	}
}
