package snapshot_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

// equalEarlier reports whether two lists of earlier versions hold the
// same versions, schema bytes and field ids.
func equalEarlier(a, b []snapshot.Earlier) bool {
	return slices.EqualFunc(a, b, func(x, y snapshot.Earlier) bool {
		return x.Version == y.Version && bytes.Equal(x.SchemaIPC, y.SchemaIPC) && slices.Equal(x.FieldIDs, y.FieldIDs) &&
			x.LastColumnID == y.LastColumnID
	})
}

// A row's earlier versions come back as written, from either form,
// through Segment.Table and TableColumns.EarlierOf, and through
// CopyTenant; an earlier schema of the tenant's is stored once, one that
// is no current row's joins the segment's schemas, and a row of one
// version reads none.
func TestEarlierRoundTrip(t *testing.T) {
	t.Parallel()
	rs := fixtureRows(t)
	acme := rs["acme"]
	gone, err := catalog.EncodeSchema(catalogtest.WideSchema(7, 2))
	if err != nil {
		t.Fatal(err)
	}
	var want []snapshot.Earlier
	for i := range acme.tables {
		if tb := &acme.tables[i]; tb.Name == "people" {
			// An earlier schema no current row has, ids not the version
			// before's, then two versions of the same schema and ids.
			tb.Version = 9
			tb.Earlier = []snapshot.Earlier{{Version: 2, SchemaIPC: gone, FieldIDs: []int32{1, 2}, LastColumnID: 2},
				{Version: 5, SchemaIPC: tb.SchemaIPC, FieldIDs: tb.FieldIDs, LastColumnID: tb.LastColumnID},
				{Version: 8, SchemaIPC: tb.SchemaIPC, FieldIDs: tb.FieldIDs, LastColumnID: tb.LastColumnID}}
			want = slices.Clone(tb.Earlier)
		}
	}
	b := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, rs)
	r := snapshottest.Open(t, b.Blob)
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 4, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Entries() {
		if err := w.CopyTenant(r, e.Tenant); err != nil {
			t.Fatal(err)
		}
	}
	copied, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := copied.Blob()
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range []*snapshot.Reader{r, snapshottest.Open(t, blob)} {
		seg := snapshottest.Tenant(t, rd, "acme")
		if seg.Schemas.Len() != 3 {
			t.Fatalf("acme holds %d distinct schemas, want 3 (people's earlier schema that no current row has)", seg.Schemas.Len())
		}
		for i, name := range snapshottest.Names(seg) {
			got := seg.Tables.EarlierOf(i, seg.Schemas)
			if !equalEarlier(got, seg.Table(i).Earlier) {
				t.Fatalf("%s: EarlierOf %+v, Table's %+v", name, got, seg.Table(i).Earlier)
			}
			switch name {
			case "hr.people":
				if !equalEarlier(got, want) {
					t.Fatalf("people's earlier versions %+v, want %+v", got, want)
				}
				// Table copies the row's schema once for its versions of it.
				if tb := seg.Table(i); &tb.Earlier[1].SchemaIPC[0] != &tb.SchemaIPC[0] || &tb.Earlier[2].SchemaIPC[0] != &tb.SchemaIPC[0] {
					t.Fatalf("people's Table holds a copy of its schema per earlier version of it")
				}
			case "sales.orders":
				if len(got) != 2 {
					t.Fatalf("orders' earlier versions %+v, want 2", got)
				}
			default:
				if got != nil || !seg.Tables.Earlier.IsNull(i) {
					t.Fatalf("%s: earlier versions %+v, want none (null)", name, got)
				}
			}
		}
	}
}

// The writer refuses earlier versions the format cannot hold: out of
// order, not below the table's version, from 0, or without a schema.
func TestEarlierRefusedByTheWriter(t *testing.T) {
	t.Parallel()
	schema := fixtureRows(t)["acme"].tables[0].SchemaIPC
	for _, tc := range []struct {
		name    string
		version int64
		earlier []snapshot.Earlier
		want    string
	}{
		{"at the table's version", 3, []snapshot.Earlier{{Version: 3, SchemaIPC: schema}}, "below the table's 3"},
		{"out of order", 5, []snapshot.Earlier{{Version: 3, SchemaIPC: schema}, {Version: 2, SchemaIPC: schema}}, "earlier version 2 after 3"},
		{"twice", 5, []snapshot.Earlier{{Version: 2, SchemaIPC: schema}, {Version: 2, SchemaIPC: schema}}, "earlier version 2 after 2"},
		{"version 0", 5, []snapshot.Earlier{{Version: 0, SchemaIPC: schema}}, "earlier version 0"},
		{"no schema", 5, []snapshot.Earlier{{Version: 1}}, "has no schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs := fixtureRows(t)["acme"]
			rs.tables[0].Version, rs.tables[0].Earlier = tc.version, tc.earlier
			w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 1, CreatedAt: t0})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AddTenant("acme", rs.tables, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AddTenant: %v, want an error saying %q", err, tc.want)
			}
			if _, err := w.Finish(); err == nil {
				t.Fatal("Finish after a refused tenant succeeded")
			}
		})
	}
}

// What earlier versions cost a segment of 10,000 tables of 20 columns: a
// table of one version nothing stored (a null), a table updated with an
// unchanged schema (the common update: a description, a location) a few
// bytes a version, and one whose schema changed its ids once more; the
// schemas are the tenant's, stored once.
func TestEarlierSegmentSize(t *testing.T) {
	t.Parallel()
	const tables, columns = 10_000, 20
	schemas := make([][]byte, 10)
	for i := range schemas {
		s, err := catalog.EncodeSchema(catalogtest.WideSchema(i, columns))
		if err != nil {
			t.Fatal(err)
		}
		schemas[i] = s
	}
	ids := make([]int32, columns)
	for j := range ids {
		ids[j] = int32(j + 1)
	}
	segment := func(every int) snapshot.Entry {
		var rs []snapshot.Table
		for i := range tables {
			r := snapshot.Table{Namespace: fmt.Sprintf("ns%02d", i%50), Name: fmt.Sprintf("table_%05d", i), TableType: catalog.DefaultTableType,
				SchemaIPC: schemas[i%len(schemas)], Location: fmt.Sprintf("s3://lake-data/acme/ns%02d/table_%05d/", i%50, i),
				Version: 1, CreatedAt: t0, UpdatedAt: t0, UpdatedBy: "arn:aws:iam::1:role/acme-producer", Op: catalog.OpCreate,
				CreationID: fmt.Sprintf("%016x", i), FieldIDs: ids, LastColumnID: columns}
			if every > 0 && i%every == 0 {
				// Version 4: version 1 of another schema, 2 and 3 of its own.
				r.Version = 4
				r.Earlier = []snapshot.Earlier{{Version: 1, SchemaIPC: schemas[(i+1)%len(schemas)], FieldIDs: ids, LastColumnID: columns},
					{Version: 2, SchemaIPC: r.SchemaIPC, FieldIDs: ids[:columns-1], LastColumnID: columns},
					{Version: 3, SchemaIPC: r.SchemaIPC, FieldIDs: ids[:columns-1], LastColumnID: columns}}
			}
			rs = append(rs, r)
		}
		return write(t, snapshot.WriterOptions{Generation: 1, CreatedAt: t0}, map[string]rows{"acme": {tables: rs}}).Written.Entries[0]
	}
	none, some := segment(0), segment(10)
	const with = tables / 10
	stored, payload := some.StoredBytes-none.StoredBytes, some.PayloadBytes-none.PayloadBytes
	t.Logf("%d of %d tables with 3 earlier versions: stored %d -> %d bytes (+%d, %.1f a table with them); uncompressed %d -> %d (+%d, %.1f a table with them)",
		with, tables, none.StoredBytes, some.StoredBytes, stored, float64(stored)/with, none.PayloadBytes, some.PayloadBytes, payload, float64(payload)/with)
	// Uncompressed: a count, 3 × (a version, a reference, a marker), the
	// two lists of ids (20 and 19 ids, a count and a last each).
	if maxPayload := 1 + 3*3 + (columns + 2) + (columns - 1 + 2); payload > maxPayload*with {
		t.Errorf("%.1f bytes a table with earlier versions uncompressed, want at most %d", float64(payload)/with, maxPayload)
	}
	if stored > 24*with {
		t.Errorf("%.1f bytes a table with earlier versions stored, want at most 24", float64(stored)/with)
	}
}
