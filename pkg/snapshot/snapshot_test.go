package snapshot_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

var t0 = time.Date(2026, 11, 30, 9, 30, 0, 123456000, time.UTC)

// rows are one tenant's tables, tombstones and settings.
type rows struct {
	tables     []snapshot.Table
	tombstones []snapshot.Tombstone
	settings   []byte
}

// fixtureRows are the fixture catalog's rows, by tenant, as the committed
// version 6 fixture holds them: acme's three tables (orders described,
// with properties and the rich schema; customers and people sharing a
// schema) and a live tombstone, globex's ledger and a legacy table without
// a schema, and initech's tombstone alone; as the version 7 fixture holds
// them, acme's settings (fixtureSettings; the others have none); and, as
// the version 8 fixture holds them, each table's creation id and field ids
// (fixtureIDs); and, as the version 10 fixture holds them, orders at
// version 3 with two earlier versions (fixtureEarlier).
// They are unpublished (Published zero), so a writer stamps them with its
// generation. Each call returns rows of their own.
func fixtureRows(tb testing.TB) map[string]rows {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v6.lakesnap"))
	if err != nil {
		tb.Fatal(err)
	}
	r := snapshottest.Open(tb, b)
	out := map[string]rows{}
	for _, e := range r.Entries() {
		seg := snapshottest.Tenant(tb, r, e.Tenant)
		var rs rows
		for i := range seg.NumTables() {
			t := seg.Table(i)
			t.Published = 0
			ids := fixtureIDs(t.Namespace + "." + t.Name)
			t.CreationID, t.FieldIDs, t.LastColumnID = ids.CreationID, ids.FieldIDs, ids.LastColumnID
			t.IcebergState = fixtureIcebergState(tb, t.Namespace+"."+t.Name)
			rs.tables = append(rs.tables, t)
		}
		if e.Tenant == "acme" {
			fixtureEarlier(rs.tables)
		}
		for i := range seg.Tombstones.Name.Len() {
			d := seg.Tombstone(i)
			d.Published = 0
			rs.tombstones = append(rs.tombstones, d)
		}
		if e.Tenant == "acme" {
			rs.settings = fixtureSettings(tb)
		}
		out[e.Tenant] = rs
	}
	return out
}

// fixtureEarlier gives acme's orders (in tables, acme's rows) version 3
// and its two earlier versions: version 1 of customers' schema and ids
// (a schema the segment holds already), version 2 of its own schema and
// ids (the current one's, also held).
func fixtureEarlier(tables []snapshot.Table) {
	var customers, orders *snapshot.Table
	for i := range tables {
		switch tables[i].Namespace + "." + tables[i].Name {
		case "sales.customers":
			customers = &tables[i]
		case "sales.orders":
			orders = &tables[i]
		}
	}
	orders.Version = 3
	orders.Earlier = []snapshot.Earlier{
		{Version: 1, SchemaIPC: customers.SchemaIPC, FieldIDs: customers.FieldIDs, LastColumnID: customers.LastColumnID},
		{Version: 2, SchemaIPC: orders.SchemaIPC, FieldIDs: orders.FieldIDs, LastColumnID: orders.LastColumnID},
	}
}

// fixtureSettings are acme's settings item in the fixtures, as the
// catalog stores it.
func fixtureSettings(tb testing.TB) []byte {
	tb.Helper()
	b, err := catalog.EncodeTenantSettings(catalog.TenantSettings{AllowedPrefixes: []string{"s3://acme-data/sales/", "s3://acme-data/hr/"},
		UpdatedBy: "ops", UpdatedAt: t0})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// fixtureIDs are a fixture table's creation id and field ids (by
// namespace.name): orders' ids after an evolution (a field dropped, one
// added), customers' and people's assigned in order, globex's legacy table
// without a schema none, and its ledger a creation id alone (a table whose
// schema has no ids recorded).
func fixtureIDs(table string) snapshot.Table {
	switch table {
	case "sales.orders":
		return snapshot.Table{CreationID: "a1b2c3d4e5f60718", FieldIDs: []int32{1, 2, 3, 5, 6, 4, 9, 8}, LastColumnID: 10}
	case "sales.customers":
		return snapshot.Table{CreationID: "0f1e2d3c4b5a6978", FieldIDs: []int32{1, 2, 3}, LastColumnID: 3}
	case "hr.people":
		return snapshot.Table{CreationID: "8796a5b4c3d2e1f0", FieldIDs: []int32{1, 2, 3}, LastColumnID: 3}
	case "finance.ledger":
		return snapshot.Table{CreationID: "00112233aabbccdd"}
	}
	return snapshot.Table{}
}

// fixtureIcebergState is a fixture table's Iceberg state item (by
// namespace.name): orders' as the catalog stores it, none for the others.
func fixtureIcebergState(tb testing.TB, table string) []byte {
	tb.Helper()
	if table != "sales.orders" {
		return nil
	}
	b, err := catalog.EncodeIcebergState(catalog.IcebergState{CreationID: fixtureIDs(table).CreationID, Version: 3,
		MetadataLocation: "s3://acme-data/lake-metadata/sales/orders/v3.metadata.json",
		Metadata:         []byte(`{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"s3://acme-data/sales/orders"}`),
		SyncedAt:         t0})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// built is a written blob with its one-file form.
type built struct {
	Written *snapshot.Written
	Blob    []byte
}

// write writes tenants' rows through one Writer, in tenant order.
func write(tb testing.TB, opts snapshot.WriterOptions, tenants map[string]rows) built {
	tb.Helper()
	w, err := snapshot.NewWriter(opts)
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(tenants)) {
		if err := w.AddTenantWithSettings(name, tenants[name].tables, tenants[name].tombstones, tenants[name].settings); err != nil {
			tb.Fatal(err)
		}
	}
	out, err := w.Finish()
	if err != nil {
		tb.Fatal(err)
	}
	blob, err := out.Blob()
	if err != nil {
		tb.Fatal(err)
	}
	return built{out, blob}
}

func TestOlderFixturesCarryOver(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"v4.lakesnap", "v5.lakesnap"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fixtureCarriesOver(t, name)
		})
	}
}

func fixtureCarriesOver(t *testing.T, name string) {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	r := snapshottest.Open(t, b)
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
	r5 := snapshottest.Open(t, blob)
	if r5.Header().Version != snapshot.Version || r5.Header().Counts.Tables != h.Counts.Tables ||
		r5.Header().Counts.SchemaUnavailable != h.Counts.SchemaUnavailable || r5.Header().ContentHash != h.ContentHash {
		t.Fatalf("copied header %+v, from %+v", r5.Header(), h)
	}
	if e, _ := r5.Entry("acme"); e.Generation != 7 {
		t.Fatalf("copied: acme generation %d, want 7", e.Generation)
	}
	if got, want := snapshottest.Names(snapshottest.Tenant(t, r5, "acme")), snapshottest.Names(snapshottest.Tenant(t, r, "acme")); !slices.Equal(got, want) {
		t.Fatalf("copied acme tables %q, want %q", got, want)
	}
	if p := snapshottest.Tenant(t, r5, "acme").Table(0).Published; p != 7 {
		t.Fatalf("copied: acme's first table published at %d, want 7", p)
	}
}

func TestOldAndUnknownVersionsAreRefused(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 1, CreatedAt: t0}, fixtureRows(t)).Blob
	for _, v := range []uint16{1, 2, 3, 11, 0xffff} {
		bad := slices.Clone(b)
		bad[8], bad[9] = byte(v), byte(v>>8)
		if _, err := snapshot.Open(bad, snapshot.ReaderOptions{}); !errors.Is(err, snapshot.ErrVersion) || errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("version %d: Open = %v, want ErrVersion alone", v, err)
		}
	}
}

func TestManifestStandsAlone(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 1, CreatedAt: t0}, fixtureRows(t))
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
	if got := snapshottest.Names(snapshottest.Tenant(t, m, "acme")); len(got) != 3 {
		t.Fatalf("attached acme: %q", got)
	}

	// Republish: globex changes, the others are referenced by entry. The
	// full blob holds every row as published in b but globex's new one.
	next := fixtureRows(t)
	for _, rs := range next {
		for i := range rs.tables {
			rs.tables[i].Published = 1
		}
		for i := range rs.tombstones {
			rs.tombstones[i].Published = 1
		}
	}
	globex := next["globex"]
	globex.tables = append(globex.tables, snapshot.Table{Namespace: "finance", Name: "budget", TableType: catalog.DefaultTableType,
		Location: "/b", Version: 1, CreatedAt: t0, UpdatedAt: t0, SchemaIPC: globex.tables[0].SchemaIPC})
	next["globex"] = globex
	seg := write(t, snapshot.WriterOptions{Generation: 2, CreatedAt: t0, Previous: b.Written.Entries}, next)
	full := snapshottest.Open(t, seg.Blob)
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

func TestWriterRefusesBadInput(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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

func TestPropertiesAreAnArrowMap(t *testing.T) {
	t.Parallel()
	if f, _ := snapshot.TablesSchema.FieldsByName("properties"); len(f) != 1 || f[0].Type.ID() != arrow.MAP {
		t.Fatalf("properties field %v, want a map", f)
	}
	seg := snapshottest.Tenant(t, snapshottest.Open(t, write(t, snapshot.WriterOptions{CreatedAt: t0}, fixtureRows(t)).Blob), "acme")
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
