package scan_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

func TestBuildRoundTrips(t *testing.T) {
	t.Parallel()
	_, st := fixture(t)
	b := build(t, st, scan.BuildOptions{Generation: 7, CreatedAt: t0, Marker: snapshot.Marker{Changes: 5, FullScanAt: t0}})
	if want := (catalog.Counts{Tables: 5, SchemaUnavailable: 1}); b.Counts != want || b.Tombstones != 2 {
		t.Fatalf("counts %+v, %d tombstones; want %+v, 2", b.Counts, b.Tombstones, want)
	}
	r := snapshottest.Open(t, b.Blob)
	h := r.Header()
	if h.Version != snapshot.Version || h.Generation != 7 || !h.CreatedAt.Equal(t0) || h.Marker.Changes != 5 || !h.Marker.FullScanAt.Equal(t0) {
		t.Fatalf("header %+v", h)
	}
	var tenants []string
	for _, e := range r.Entries() {
		tenants = append(tenants, e.Tenant)
	}
	if want := []string{"acme", "globex", "initech"}; !slices.Equal(tenants, want) {
		t.Fatalf("tenants %q, want %q", tenants, want)
	}
	acme := snapshottest.Tenant(t, r, "acme")
	if got, want := snapshottest.Names(acme), []string{"hr.people", "sales.customers", "sales.orders"}; !slices.Equal(got, want) {
		t.Fatalf("acme tables %q, want %q", got, want)
	}
	if acme.Schemas.Len() != 2 {
		t.Fatalf("acme holds %d distinct schemas, want 2", acme.Schemas.Len())
	}
	orders := acme.Table(2)
	s, err := catalog.DecodeSchema(orders.SchemaIPC)
	if err != nil || !catalog.SchemaEqual(s, catalogtest.RichSchema()) {
		t.Fatalf("orders schema = %v, %v; want the rich schema", s, err)
	}
	want := map[string]string{"owner": "sales-eng", "pii": "false"}
	if orders.Description != "one row per order" || !maps.Equal(orders.Properties, want) || orders.Location != "s3://lake/acme/orders/" ||
		orders.Version != 1 || !orders.CreatedAt.Equal(t0) || orders.TableType != catalog.DefaultTableType {
		orders.SchemaIPC = nil
		t.Fatalf("orders row %+v", orders)
	}
	if acme.Tombstones.Name.Len() != 1 {
		t.Fatalf("acme has %d tombstones, want 1 (the expired one left out)", acme.Tombstones.Name.Len())
	}
	if d := acme.Tombstone(0); d.Namespace != "sales" || d.Name != "returns" || d.DroppedBy != "bob" || d.Version != 1 || d.CreationID == "" {
		t.Fatalf("acme tombstone %+v", d)
	}
	globex := snapshottest.Tenant(t, r, "globex")
	if globex.Schema(1) != nil || globex.Schema(0) == nil {
		t.Fatalf("globex: legacy table must have no schema, the ledger one")
	}
	initech := snapshottest.Tenant(t, r, "initech")
	if initech.NumTables() != 0 || initech.Tombstones.Name.Len() != 1 {
		t.Fatalf("initech: %d tables, %d tombstones; want 0, 1", initech.NumTables(), initech.Tombstones.Name.Len())
	}
	if _, err := r.Tenant(context.Background(), "nobody"); !errors.Is(err, snapshot.ErrNoTenant) {
		t.Fatalf("Tenant(nobody) = %v, want ErrNoTenant", err)
	}
}

func TestBuildIsDeterministicAndCarriesGenerations(t *testing.T) {
	t.Parallel()
	c, st := fixture(t)
	first := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	again := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	if string(first.Blob) != string(again.Blob) {
		t.Fatal("two builds of one catalog differ")
	}
	register(t, c, ref("globex", "finance", "budget"), catalog.TableSpec{Location: "/b", Schema: catalogtest.WideSchema(2, 2)})
	t1 := t0.Add(time.Minute)
	second := build(t, st, scan.BuildOptions{Generation: 2, CreatedAt: t1, Base: snapshottest.Open(t, first.Blob)})
	r := snapshottest.Open(t, second.Blob)
	for name, gen := range map[string]uint64{"acme": 1, "globex": 2, "initech": 1} {
		if e, _ := r.Entry(name); e.Generation != gen {
			t.Errorf("%s generation %d, want %d", name, e.Generation, gen)
		}
	}
	if second.Written.Header.ContentHash == first.Written.Header.ContentHash {
		t.Error("content hash did not change with the catalog")
	}
	published := func(r *snapshot.Reader, name string) string {
		seg := snapshottest.Tenant(t, r, name)
		var out []string
		for i := range seg.NumTables() {
			row := seg.Table(i)
			out = append(out, fmt.Sprintf("%s.%s@%d", row.Namespace, row.Name, row.Published))
		}
		for i := range seg.Tombstones.Name.Len() {
			d := seg.Tombstone(i)
			out = append(out, fmt.Sprintf("dropped %s.%s@%d", d.Namespace, d.Name, d.Published))
		}
		return strings.Join(out, " ")
	}
	if got, want := published(r, "globex"), "finance.budget@2 finance.ledger@1 legacy.old@1"; got != want {
		t.Errorf("globex rows published %s, want %s", got, want)
	}
	if got, want := published(r, "initech"), "dropped ops.tps@1"; got != want {
		t.Errorf("initech rows published %s, want %s", got, want)
	}
	renumbered := snapshottest.Open(t, build(t, st, scan.BuildOptions{Generation: 3, CreatedAt: t1, Previous: second.Written.Entries}).Blob)
	if got, want := published(renumbered, "globex"), "finance.budget@3 finance.ledger@3 legacy.old@3"; got != want {
		t.Errorf("without Base, globex rows published %s, want %s", got, want)
	}
}

func TestRichSchemaRoundTripsExactly(t *testing.T) {
	t.Parallel()
	st, err := rocksdb.Open(t.TempDir(), rocksdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := catalog.New(st, catalog.Options{})
	rich := catalogtest.RichSchema()
	r := catalog.TableRef{Tenant: "ácme", Namespace: "データ", Name: "every_type ✓"}
	register(t, c, r, catalog.TableSpec{Location: "s3://lake/rich/", Schema: rich})
	seg := snapshottest.Tenant(t, snapshottest.Open(t, build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0}).Blob), r.Tenant)
	if seg.NumTables() != 1 || seg.Tables.Name.Value(0) != r.Name || seg.Tables.Namespace.Value(0) != r.Namespace {
		t.Fatalf("segment holds %q", snapshottest.Names(seg))
	}
	got, err := catalog.DecodeSchema(seg.Schema(0))
	if err != nil {
		t.Fatal(err)
	}
	// Field by field, so a failure names the type that broke.
	for i, f := range rich.Fields() {
		if g := got.Field(i); !g.Equal(f) {
			t.Errorf("field %d: got %v, want %v", i, g, f)
		}
	}
	if rich.Metadata().Len() == 0 || !got.Metadata().Equal(rich.Metadata()) {
		t.Errorf("schema metadata = %v, want %v", got.Metadata(), rich.Metadata())
	}
}

func TestBuildMarksUnavailableAndSkipsMalformed(t *testing.T) {
	t.Parallel()
	c, st := newStore(t)
	ctx := context.Background()
	register(t, c, ref("t1", "n", "good"), catalog.TableSpec{Location: "/g", Schema: catalogtest.WideSchema(1, 2)})
	for key, val := range map[string]string{
		"tbl/t1/n/legacy":         `{"location":"/l","created_at":"2024-01-01T00:00:00Z"}`,
		"tbl/t1/n/garbled":        `{"location":"/x","created_at":"2024-01-01T00:00:00Z","schema_ipc":"AAAA"}`,
		"tbl/t1/n/notjson":        `{{{`,
		"tbl/t1/too/many/parts":   `{"location":"/x"}`,
		"tbl/onlytwo/parts":       `{"location":"/x"}`,
		"other/t1/n/x":            `{"location":"/x"}`,
		"dropped/t1/n/gone/nocid": `{"registration":{"location":"/x"},"dropped_at":"2026-01-01T00:00:00Z"}`,
	} {
		if err := st.Put(ctx, key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	b := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	want := []string{"dropped/t1/n/gone/nocid", "tbl/onlytwo/parts", "tbl/t1/n/notjson", "tbl/t1/too/many/parts"}
	if !slices.Equal(b.SkippedKeys, want) {
		t.Fatalf("skipped %q, want %q", b.SkippedKeys, want)
	}
	if w := (catalog.Counts{Tables: 3, SchemaUnavailable: 2, Skipped: 4}); b.Counts != w {
		t.Fatalf("counts = %+v, want %+v", b.Counts, w)
	}
	seg := snapshottest.Tenant(t, snapshottest.Open(t, b.Blob), "t1")
	for i, want := range map[int]bool{0: false, 1: true, 2: false} { // garbled, good, legacy
		if got := seg.Schema(i) != nil; got != want {
			t.Errorf("%s: has a schema %v, want %v", seg.Tables.Name.Value(i), got, want)
		}
	}
}

func TestBuildEmptyAndFailing(t *testing.T) {
	t.Parallel()
	_, st := newStore(t)
	b := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	if r := snapshottest.Open(t, b.Blob); len(r.Entries()) != 0 || b.Counts != (catalog.Counts{}) {
		t.Fatalf("empty catalog: entries %v, counts %+v", r.Entries(), b.Counts)
	}
	closed := memstore.New(memstore.Options{})
	_ = closed.Close()
	if got, err := scan.Build(context.Background(), closed, scan.BuildOptions{Generation: 1}); err == nil || got.Written != nil {
		t.Fatalf("Build over a closed store: %v, %v", got.Written, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := scan.Build(ctx, st, scan.BuildOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Build with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestChangeFieldsAreCarried(t *testing.T) {
	t.Parallel()
	_, st := newStore(t)
	reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "/x", Schema: catalogtest.WideSchema(1, 1)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	js, err := reg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	js = append(js[:len(js)-1], []byte(`,"updated_by":"arn:aws:iam::1:user/alice","op":"update"}`)...)
	if err := st.Put(context.Background(), "tbl/acme/n/t", js); err != nil {
		t.Fatal(err)
	}
	row := snapshottest.Tenant(t, snapshottest.Open(t, build(t, st, scan.BuildOptions{CreatedAt: t0}).Blob), "acme").Table(0)
	if row.UpdatedBy != "arn:aws:iam::1:user/alice" || row.Op != catalog.OpUpdate {
		t.Fatalf("change fields: by %q, op %q", row.UpdatedBy, row.Op)
	}
}
