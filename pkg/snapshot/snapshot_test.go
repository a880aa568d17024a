package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

var t0 = time.Date(2026, 11, 30, 9, 30, 0, 123456000, time.UTC)

func ref(tenant, ns, name string) catalog.TableRef {
	return catalog.TableRef{Tenant: tenant, Namespace: ns, Name: name}
}

func newStore(tb testing.TB) (*catalog.Catalog, metastore.Store) {
	tb.Helper()
	st := memstore.New(memstore.Options{})
	tb.Cleanup(func() { st.Close() })
	return catalog.New(st, catalog.Options{Now: func() time.Time { return t0 }}), st
}

func register(tb testing.TB, c *catalog.Catalog, r catalog.TableRef, spec catalog.TableSpec) catalog.Registration {
	tb.Helper()
	reg, created, err := c.Register(context.Background(), r, spec)
	if err != nil || !created {
		tb.Fatalf("Register(%s) = %v, %v", r, created, err)
	}
	return reg
}

// putTombstone stores a tombstone of a table as a drop would leave it.
func putTombstone(tb testing.TB, st metastore.Store, r catalog.TableRef, spec catalog.TableSpec, droppedAt, expiresAt time.Time) catalog.Tombstone {
	tb.Helper()
	reg, err := catalog.NewRegistration(spec, droppedAt.Add(-time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	d := catalog.Tombstone{Ref: r, Registration: reg, DroppedAt: droppedAt, DroppedBy: "bob", ExpiresAt: expiresAt}
	key, err := d.Key()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := catalog.EncodeTombstone(d)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Put(context.Background(), key, b); err != nil {
		tb.Fatal(err)
	}
	return d
}

// fixture registers two tenants (a described table, a legacy one, shared
// schemas) and tombstones: one live, one expired, one of a tenant with no
// tables left.
func fixture(tb testing.TB) (*catalog.Catalog, metastore.Store) {
	tb.Helper()
	c, st := newStore(tb)
	register(tb, c, ref("acme", "sales", "orders"), catalog.TableSpec{Location: "s3://lake/acme/orders/", Schema: catalogtest.RichSchema(),
		Description: "one row per order", Properties: map[string]string{"owner": "sales-eng", "pii": "false"}})
	register(tb, c, ref("acme", "sales", "customers"), catalog.TableSpec{Location: "s3://lake/acme/customers/", Schema: catalogtest.WideSchema(3, 12)})
	register(tb, c, ref("acme", "hr", "people"), catalog.TableSpec{Location: "s3://lake/acme/people/", Schema: catalogtest.WideSchema(3, 12)})
	register(tb, c, ref("globex", "finance", "ledger"), catalog.TableSpec{Location: "s3://lake/globex/ledger/", Schema: catalogtest.WideSchema(7, 5)})
	if err := st.Put(context.Background(), "tbl/globex/legacy/old", []byte(`{"location":"/old","created_at":"2024-01-01T00:00:00Z"}`)); err != nil {
		tb.Fatal(err)
	}
	spec := catalog.TableSpec{Location: "s3://lake/gone/", Schema: catalogtest.WideSchema(1, 2)}
	putTombstone(tb, st, ref("acme", "sales", "returns"), spec, t0.Add(-time.Hour), t0.Add(24*time.Hour))
	putTombstone(tb, st, ref("acme", "sales", "expired"), spec, t0.Add(-48*time.Hour), t0.Add(-time.Hour))
	putTombstone(tb, st, ref("initech", "ops", "tps"), spec, t0.Add(-time.Hour), time.Time{})
	return c, st
}

// built is a Build's result with its one-file form.
type built struct {
	snapshot.Built
	Blob []byte
}

func build(tb testing.TB, st metastore.Store, opts snapshot.BuildOptions) built {
	tb.Helper()
	b, err := snapshot.Build(context.Background(), st, opts)
	if err != nil {
		tb.Fatal(err)
	}
	blob, err := b.Written.Blob()
	if err != nil {
		tb.Fatal(err)
	}
	return built{b, blob}
}

func open(tb testing.TB, b []byte) *snapshot.Reader {
	tb.Helper()
	r, err := snapshot.Open(b, snapshot.ReaderOptions{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return r
}

func tenant(tb testing.TB, r *snapshot.Reader, name string) *snapshot.Segment {
	tb.Helper()
	seg, err := r.Tenant(context.Background(), name)
	if err != nil {
		tb.Fatalf("Tenant(%s): %v", name, err)
	}
	tb.Cleanup(seg.Release)
	return seg
}

// names lists a segment's tables as namespace.name.
func names(s *snapshot.Segment) []string {
	var out []string
	for i := range s.NumTables() {
		out = append(out, s.Tables.Namespace.Value(i)+"."+s.Tables.Name.Value(i))
	}
	return out
}

// A full build holds every tenant's tables in order, each distinct schema
// once, describe's columns, properties as a map, the change fields, and
// the tenant's live tombstones (an expired one left out, a tenant with
// only tombstones kept).
func TestBuildRoundTrips(t *testing.T) {
	_, st := fixture(t)
	b := build(t, st, snapshot.BuildOptions{Generation: 7, CreatedAt: t0, Marker: snapshot.Marker{Changes: 5, FullScanAt: t0}})
	if want := (catalog.Counts{Tables: 5, SchemaUnavailable: 1}); b.Counts != want || b.Tombstones != 2 {
		t.Fatalf("counts %+v, %d tombstones; want %+v, 2", b.Counts, b.Tombstones, want)
	}
	r := open(t, b.Blob)
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
	acme := tenant(t, r, "acme")
	if got, want := names(acme), []string{"hr.people", "sales.customers", "sales.orders"}; !slices.Equal(got, want) {
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
	globex := tenant(t, r, "globex")
	if globex.Schema(1) != nil || globex.Schema(0) == nil {
		t.Fatalf("globex: legacy table must have no schema, the ledger one")
	}
	initech := tenant(t, r, "initech")
	if initech.NumTables() != 0 || initech.Tombstones.Name.Len() != 1 {
		t.Fatalf("initech: %d tables, %d tombstones; want 0, 1", initech.NumTables(), initech.Tombstones.Name.Len())
	}
	if _, err := r.Tenant(context.Background(), "nobody"); !errors.Is(err, snapshot.ErrNoTenant) {
		t.Fatalf("Tenant(nobody) = %v, want ErrNoTenant", err)
	}
}

// The same catalog builds the same bytes. A build over the blob before
// (Base) keeps each unchanged row's publication and each unchanged
// tenant's generation, and publishes the new row at its own; one over the
// index alone (Previous) publishes every row again.
func TestBuildIsDeterministicAndCarriesGenerations(t *testing.T) {
	c, st := fixture(t)
	first := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0})
	again := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0})
	if string(first.Blob) != string(again.Blob) {
		t.Fatal("two builds of one catalog differ")
	}
	register(t, c, ref("globex", "finance", "budget"), catalog.TableSpec{Location: "/b", Schema: catalogtest.WideSchema(2, 2)})
	t1 := t0.Add(time.Minute)
	second := build(t, st, snapshot.BuildOptions{Generation: 2, CreatedAt: t1, Base: open(t, first.Blob)})
	r := open(t, second.Blob)
	for name, gen := range map[string]uint64{"acme": 1, "globex": 2, "initech": 1} {
		if e, _ := r.Entry(name); e.Generation != gen {
			t.Errorf("%s generation %d, want %d", name, e.Generation, gen)
		}
	}
	if second.Written.Header.ContentHash == first.Written.Header.ContentHash {
		t.Error("content hash did not change with the catalog")
	}
	published := func(r *snapshot.Reader, name string) string {
		seg := tenant(t, r, name)
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
	renumbered := open(t, build(t, st, snapshot.BuildOptions{Generation: 3, CreatedAt: t1, Previous: second.Written.Entries}).Blob)
	if got, want := published(renumbered, "globex"), "finance.budget@3 finance.ledger@3 legacy.old@3"; got != want {
		t.Errorf("without Base, globex rows published %s, want %s", got, want)
	}
}

// The committed version 4 and 5 fixtures (what earlier releases' refresh
// wrote) carry over into version 6: a writer copies their segments byte
// for byte, each tenant keeping its generation, each row reading as
// published at it.
func TestOlderFixturesCarryOver(t *testing.T) {
	for _, name := range []string{"v4.lakesnap", "v5.lakesnap"} {
		t.Run(name, func(t *testing.T) { fixtureCarriesOver(t, name) })
	}
}

func fixtureCarriesOver(t *testing.T, name string) {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	r := open(t, b)
	h := r.Header()
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 8, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Entries() {
		if err := w.CopyTenant(r, e.Tenant); err != nil {
			t.Fatal(err)
		}
	}
	out, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := out.Blob()
	if err != nil {
		t.Fatal(err)
	}
	r5 := open(t, blob)
	if r5.Header().Version != snapshot.Version || r5.Header().Counts.Tables != h.Counts.Tables ||
		r5.Header().Counts.SchemaUnavailable != h.Counts.SchemaUnavailable || r5.Header().ContentHash != h.ContentHash {
		t.Fatalf("copied header %+v, from %+v", r5.Header(), h)
	}
	if e, _ := r5.Entry("acme"); e.Generation != 7 {
		t.Fatalf("copied: acme generation %d, want 7", e.Generation)
	}
	if got, want := names(tenant(t, r5, "acme")), names(tenant(t, r, "acme")); !slices.Equal(got, want) {
		t.Fatalf("copied acme tables %q, want %q", got, want)
	}
	if p := tenant(t, r5, "acme").Table(0).Published; p != 7 {
		t.Fatalf("copied: acme's first table published at %d, want 7", p)
	}
}

// Blobs of versions 1 to 3 and of unknown versions are refused as
// ErrVersion: the loader keeps serving what it has.
func TestOldAndUnknownVersionsAreRefused(t *testing.T) {
	_, st := fixture(t)
	b := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0}).Blob
	for _, v := range []uint16{1, 2, 3, 7, 0xffff} {
		bad := slices.Clone(b)
		bad[8], bad[9] = byte(v), byte(v>>8)
		if _, err := snapshot.Open(bad, snapshot.ReaderOptions{}); !errors.Is(err, snapshot.ErrVersion) || errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("version %d: Open = %v, want ErrVersion alone", v, err)
		}
	}
}

// The manifest stands alone: opened without its segments, each segment
// attaches by its address; a writer that has only the manifest
// republishes unchanged tenants by their entries.
func TestManifestStandsAlone(t *testing.T) {
	c, st := fixture(t)
	b := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0})
	w := b.Written
	m, err := snapshot.Open(w.Manifest, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Header() != w.Header {
		t.Fatalf("manifest header %+v, want %+v", m.Header(), w.Header)
	}
	if _, err := m.Tenant(context.Background(), "acme"); !errors.Is(err, snapshot.ErrDetached) {
		t.Fatalf("Tenant before Attach = %v, want ErrDetached", err)
	}
	if err := m.Attach("acme", w.Segments[1]); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("Attach(acme, globex's segment) = %v, want ErrCorrupt", err)
	}
	if err := m.Attach("acme", w.Segments[0]); err != nil {
		t.Fatal(err)
	}
	if got := names(tenant(t, m, "acme")); len(got) != 3 {
		t.Fatalf("attached acme: %q", got)
	}

	// Republish: globex changes, the others are referenced by entry.
	register(t, c, ref("globex", "finance", "budget"), catalog.TableSpec{Location: "/b", Schema: catalogtest.WideSchema(2, 2)})
	seg := build(t, st, snapshot.BuildOptions{Generation: 2, CreatedAt: t0, Base: open(t, b.Blob)})
	full := open(t, seg.Blob)
	nw, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 2, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries() {
		if e.Tenant == "globex" {
			err = nw.CopyTenant(full, "globex")
		} else {
			err = nw.AddEntry(e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := nw.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Blob(); !errors.Is(err, snapshot.ErrDetached) {
		t.Fatalf("Blob() with referenced segments = %v, want ErrDetached", err)
	}
	if out.Header.ContentHash != seg.Written.Header.ContentHash || out.Header.Counts != seg.Written.Header.Counts {
		t.Fatalf("republished manifest %+v, full build %+v", out.Header, seg.Written.Header)
	}
	m2, err := snapshot.Open(out.Manifest, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := m2.Entry("acme"); e.Generation != 1 {
		t.Fatalf("referenced acme generation %d, want 1", e.Generation)
	}
}

// The writer refuses tenants out of order, invalid names and duplicate
// tables, and leaves out an empty tenant.
func TestWriterRefusesBadInput(t *testing.T) {
	row := func(ns, name string) snapshot.Table {
		return snapshot.Table{Namespace: ns, Name: name, Location: "/x", TableType: "TABLE"}
	}
	cases := []struct {
		name string
		run  func(w *snapshot.Writer) error
	}{
		{"out of order", func(w *snapshot.Writer) error {
			if err := w.AddTenant("b", []snapshot.Table{row("n", "t")}, nil); err != nil {
				return nil
			}
			return w.AddTenant("a", []snapshot.Table{row("n", "t")}, nil)
		}},
		{"bad tenant", func(w *snapshot.Writer) error { return w.AddTenant("a/b", []snapshot.Table{row("n", "t")}, nil) }},
		{"bad table name", func(w *snapshot.Writer) error { return w.AddTenant("a", []snapshot.Table{row("n", "")}, nil) }},
		{"duplicate", func(w *snapshot.Writer) error {
			return w.AddTenant("a", []snapshot.Table{row("n", "t"), row("n", "t")}, nil)
		}},
		{"published after the blob", func(w *snapshot.Writer) error {
			r := row("n", "t")
			r.Published = 8
			return w.AddTenant("a", []snapshot.Table{r}, nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 7})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.run(w); err == nil {
				t.Fatal("got nil error, want a refusal")
			}
		})
	}
	w, _ := snapshot.NewWriter(snapshot.WriterOptions{})
	if err := w.AddTenant("empty", nil, nil); err != nil {
		t.Fatal(err)
	}
	out, _ := w.Finish()
	if len(out.Entries) != 0 {
		t.Fatalf("an empty tenant was written: %+v", out.Entries)
	}
}

// Properties come back as the Arrow map, keys sorted.
func TestPropertiesAreAnArrowMap(t *testing.T) {
	if f, _ := snapshot.TablesSchema.FieldsByName("properties"); len(f) != 1 || f[0].Type.ID() != arrow.MAP {
		t.Fatalf("properties field %v, want a map", f)
	}
	_, st := fixture(t)
	seg := tenant(t, open(t, build(t, st, snapshot.BuildOptions{CreatedAt: t0}).Blob), "acme")
	m := seg.Tables.Properties
	lo, hi := m.ValueOffsets(2)
	var keys []string
	for j := lo; j < hi; j++ {
		keys = append(keys, m.Keys().ValueStr(int(j)))
	}
	if want := []string{"owner", "pii"}; !slices.Equal(keys, want) || !m.IsNull(0) {
		t.Fatalf("orders property keys %q (want %q), people's properties null: %v", keys, want, m.IsNull(0))
	}
}
