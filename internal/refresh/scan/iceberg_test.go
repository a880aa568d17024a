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

// syncState stores an Iceberg state of r's registration as the sync would, and
// returns the item as stored.
func syncState(tb testing.TB, c *catalog.Catalog, st metastore.Store, r catalog.TableRef, at time.Time) []byte {
	tb.Helper()
	ctx := context.Background()
	reg, err := c.Get(ctx, r)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.PutIcebergState(ctx, r, catalog.IcebergState{CreationID: reg.CreationID(), Version: reg.Version(),
		MetadataLocation: "s3://lake/meta/" + r.Name + "/v1.metadata.json",
		Metadata:         []byte(`{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}`), SyncedAt: at}); err != nil {
		tb.Fatal(err)
	}
	raw, err := st.Get(ctx, catalog.IcebergPrefix+r.String())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func TestBuildCarriesIcebergState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	orders := ref("acme", "sales", "orders")
	want := syncState(t, c, st, orders, t0)
	// Stale: a state of another registration of customers; one of a table
	// with no row; one that does not decode.
	stale, _ := catalog.DecodeIcebergState(want)
	stale.CreationID = "ffff"
	b, _ := catalog.EncodeIcebergState(stale)
	for k, v := range map[string][]byte{
		catalog.IcebergPrefix + "acme/sales/customers": b,
		catalog.IcebergPrefix + "acme/sales/nothing":   want,
		catalog.IcebergPrefix + "acme/hr/people":       []byte(`{"creation_id":"x"}`),
	} {
		if err := st.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	clean := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	for _, r := range []catalog.TableRef{orders, ref("acme", "sales", "customers"), ref("acme", "hr", "people"), ref("globex", "finance", "ledger")} {
		got := row(t, clean.Blob, r).IcebergState
		if w := map[bool][]byte{true: want}[r == orders]; !bytes.Equal(got, w) || (got == nil) != (w == nil) {
			t.Errorf("%s: state %q, want %q", r, got, w)
		}
	}
	if !slices.Contains(clean.SkippedKeys, "iceberg/acme/hr/people") {
		t.Errorf("skipped %q, want the undecodable state among them", clean.SkippedKeys)
	}
}

// Apply of a state key alone rewrites its tenant's segment with the state
// (no change, the row keeps its publication), as a full scan would; an
// update keeps it; a drop and a new registration of the name lose it; a
// state written before its registration reached the batch is read with
// the registration.
func TestApplyIcebergState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	orders := ref("acme", "sales", "orders")
	key := catalog.IcebergPrefix + orders.String()
	base := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0, Marker: snapshot.Marker{Changes: 3, FullScanAt: t0}})
	baseR := snapshottest.Open(t, base.Blob)
	want := syncState(t, c, st, orders, t0)

	apply := func(r *snapshot.Reader, gen uint64, keys ...string) (scan.Applied, []byte) {
		t.Helper()
		a, err := scan.Apply(ctx, st, r, keys, scan.ApplyOptions{Generation: gen, CreatedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		blob, err := a.Written.Blob()
		if err != nil {
			t.Fatal(err)
		}
		return a, blob
	}
	a, blob := apply(baseR, 2, key)
	if got := row(t, blob, orders); !bytes.Equal(got.IcebergState, want) || got.Published != 1 {
		t.Fatalf("after the state key: state %q published %d, want %q at 1", got.IcebergState, got.Published, want)
	}
	if len(a.Changes) != 0 || a.Writes != 1 || a.Tenants != 1 {
		t.Fatalf("changes %+v, %d writes, %d tenants; want none, 1, 1", a.Changes, a.Writes, a.Tenants)
	}
	full := build(t, st, scan.BuildOptions{Generation: 2, CreatedAt: t0, Base: baseR})
	if a.Written.Header.ContentHash != full.Written.Header.ContentHash {
		t.Error("the applied blob differs from a full build's")
	}
	r := snapshottest.Open(t, blob)

	// An update: the row keeps its state (of the version before; discovery
	// does not serve it for the new one), reading nothing more.
	if _, err := c.Update(ctx, orders, catalog.TableSpec{Location: "s3://lake/acme/orders/", Schema: catalogtest.RichSchema(),
		Description: "changed"}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, blob = apply(r, 3, catalog.KeyPrefix+orders.String())
	if got := row(t, blob, orders); !bytes.Equal(got.IcebergState, want) || a.Reads != 2 {
		t.Fatalf("after an update: state %q, %d reads; want %q, 2 (the registration, the settings)", got.IcebergState, a.Reads, want)
	}
	r = snapshottest.Open(t, blob)

	// Dropped and registered again, the state key deleted by the drop in
	// another batch: the new row has none.
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	register(t, c, orders, catalog.TableSpec{Location: "s3://lake/acme/orders2/", Schema: catalogtest.RichSchema()})
	_, blob = apply(r, 4, catalog.KeyPrefix+orders.String())
	if got := row(t, blob, orders); got.IcebergState != nil {
		t.Fatalf("a new registration kept the old one's state %q", got.IcebergState)
	}
	r = snapshottest.Open(t, blob)

	// The new registration synced; the registration key and the state key
	// in one batch, or the state key first and the registration after.
	want = syncState(t, c, st, orders, t0.Add(time.Minute))
	_, blob = apply(r, 5, key, catalog.KeyPrefix+orders.String())
	if got := row(t, blob, orders); !bytes.Equal(got.IcebergState, want) {
		t.Fatalf("a batch of both keys: state %q, want %q", got.IcebergState, want)
	}
	_, blob = apply(baseR, 5, key)
	if got := row(t, blob, orders); got.IcebergState != nil {
		t.Fatalf("a state of another registration than the row's: %q, want none", got.IcebergState)
	}
	_, blob = apply(snapshottest.Open(t, blob), 6, catalog.KeyPrefix+orders.String())
	if got := row(t, blob, orders); !bytes.Equal(got.IcebergState, want) {
		t.Fatalf("the registration after its state: state %q, want %q", got.IcebergState, want)
	}

	// Deleted: the row loses it.
	if err := st.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	a, blob = apply(snapshottest.Open(t, blob), 7, key)
	if got := row(t, blob, orders); got.IcebergState != nil || a.Writes != 0 {
		t.Fatalf("state deleted: %q, %d writes; want none, 0", got.IcebergState, a.Writes)
	}
}
