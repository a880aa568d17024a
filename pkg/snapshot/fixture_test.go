package snapshot_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

var update = flag.Bool("update", false, "rewrite testdata/v10.lakesnap with the writer, from the fixture catalog's rows (fixtureRows)")

func TestFixturesOpen(t *testing.T) {
	// Not parallel: with -update it rewrites testdata/v10.lakesnap, which other tests read.
	for _, v := range []uint16{snapshot.Version4, snapshot.Version5, snapshot.Version6, snapshot.Version7, snapshot.Version8, snapshot.Version9, snapshot.Version} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			fixtureOpens(t, v)
		})
	}
}

func fixtureOpens(t *testing.T, version uint16) {
	path := filepath.Join("testdata", fmt.Sprintf("v%d.lakesnap", version))
	if *update && version == snapshot.Version {
		b := write(t, snapshot.WriterOptions{Generation: 7, CreatedAt: t0, Marker: snapshot.Marker{Changes: 5, FullScanAt: t0}}, fixtureRows(t))
		if err := os.WriteFile(path, b.Blob, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := snapshottest.Open(t, b)
	if h := r.Header(); h.Version != version || h.Generation != 7 || h.Marker.Changes != 5 ||
		h.Counts != (catalog.Counts{Tables: 5, SchemaUnavailable: 1}) {
		t.Fatalf("fixture header %+v", h)
	}
	acme := snapshottest.Tenant(t, r, "acme")
	if got, want := snapshottest.Names(acme), []string{"hr.people", "sales.customers", "sales.orders"}; !slices.Equal(got, want) {
		t.Fatalf("acme tables %q, want %q", got, want)
	}
	orders := acme.Table(2)
	if s, err := catalog.DecodeSchema(orders.SchemaIPC); err != nil || !catalog.SchemaEqual(s, catalogtest.RichSchema()) ||
		orders.Description != "one row per order" || orders.Properties["owner"] != "sales-eng" {
		t.Fatalf("orders from the v4 fixture: schema %v, %v; description %q, properties %v", s, err, orders.Description, orders.Properties)
	}
	if orders.Published != 7 || acme.Generation != 7 {
		t.Fatalf("orders published at %d in a segment of generation %d, want 7 and 7", orders.Published, acme.Generation)
	}
	if d := acme.Tombstone(0); acme.Tombstones.Name.Len() != 1 || d.Name != "returns" || d.DroppedBy != "bob" || d.Published != 7 {
		t.Fatalf("acme tombstones from the v4 fixture: %d, first %+v", acme.Tombstones.Name.Len(), d)
	}
	// Settings from version 7: acme's as stored, none for the others.
	var want []byte
	if version >= snapshot.Version7 {
		want = fixtureSettings(t)
	}
	if got := acme.Settings(); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("acme settings %q, want %q", got, want)
	}
	if got := snapshottest.Tenant(t, r, "globex").Settings(); got != nil {
		t.Fatalf("globex settings %q, want none", got)
	}
	// Creation ids and field ids from version 8: each row's as fixtureIDs
	// gives them, none before.
	for i, name := range snapshottest.Names(acme) {
		got := acme.Table(i)
		var want snapshot.Table
		if version >= snapshot.Version8 {
			want = fixtureIDs(name)
		}
		if got.CreationID != want.CreationID || !slices.Equal(got.FieldIDs, want.FieldIDs) || got.LastColumnID != want.LastColumnID {
			t.Fatalf("acme %s: creation id %q, field ids %v (last %d); want %q, %v (last %d)", name, got.CreationID, got.FieldIDs,
				got.LastColumnID, want.CreationID, want.FieldIDs, want.LastColumnID)
		}
	}
	// Iceberg state from version 9: orders' as stored, none for the others.
	for i, name := range snapshottest.Names(acme) {
		var want []byte
		if version >= snapshot.Version9 {
			want = fixtureIcebergState(t, name)
		}
		if got := acme.Tables.IcebergStateOf(i); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("acme %s: iceberg state %q, want %q", name, got, want)
		}
		if got := acme.Table(i).IcebergState; !bytes.Equal(got, want) {
			t.Fatalf("acme %s: Table's iceberg state %q, want %q", name, got, want)
		}
	}
	// Earlier versions from version 10: orders' two (as fixtureEarlier
	// gives them), none for the others; their schemas are ones the
	// segment holds once.
	for i, name := range snapshottest.Names(acme) {
		got := acme.Table(i).Earlier
		if name != "sales.orders" || version < snapshot.Version {
			if got != nil {
				t.Fatalf("acme %s: earlier versions %+v, want none", name, got)
			}
			continue
		}
		customers := acme.Table(1)
		want := []snapshot.Earlier{
			{Version: 1, SchemaIPC: customers.SchemaIPC, FieldIDs: customers.FieldIDs, LastColumnID: customers.LastColumnID},
			{Version: 2, SchemaIPC: orders.SchemaIPC, FieldIDs: orders.FieldIDs, LastColumnID: orders.LastColumnID},
		}
		if orders.Version != 3 || !equalEarlier(got, want) {
			t.Fatalf("acme orders at version %d: earlier versions %+v, want version 3 and %+v", orders.Version, got, want)
		}
		if acme.Schemas.Len() != 2 {
			t.Fatalf("acme's segment holds %d distinct schemas, want 2 (earlier versions reference them)", acme.Schemas.Len())
		}
	}
	if initech := snapshottest.Tenant(t, r, "initech"); initech.NumTables() != 0 || initech.Tombstones.Name.Len() != 1 {
		t.Fatalf("initech from the v4 fixture: %d tables, %d tombstones", initech.NumTables(), initech.Tombstones.Name.Len())
	}
}
