package snapshot_test

import (
	"crypto/rand"
	"encoding/hex"
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

// sameIDs reports whether two rows hold the same creation id and field
// ids.
func sameIDs(a, b snapshot.Table) bool {
	return a.CreationID == b.CreationID && slices.Equal(a.FieldIDs, b.FieldIDs) && a.LastColumnID == b.LastColumnID
}

// Each row's creation id and field ids come back as written, from either
// form, through Segment.Table and TableColumns; CopyTenant carries them
// with the segment, and a blob's older segment carried over reads none.
func TestIDsRoundTrip(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, fixtureRows(t))
	store := snapshottest.StoreSegments(b.Written)
	manifest, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: store.Fetch})
	if err != nil {
		t.Fatal(err)
	}
	// CopyTenant: acme and globex carried from the one-file form, initech
	// from the manifest alone (by reference).
	one := snapshottest.Open(t, b.Blob)
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 4, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range one.Entries() {
		if err := w.CopyTenant(one, e.Tenant); err != nil {
			t.Fatal(err)
		}
	}
	copied, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	copiedBlob, err := copied.Blob()
	if err != nil {
		t.Fatal(err)
	}
	for form, r := range map[string]*snapshot.Reader{"one file": one, "manifest alone": manifest, "copied": snapshottest.Open(t, copiedBlob)} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			for _, tenant := range []string{"acme", "globex"} {
				seg := snapshottest.Tenant(t, r, tenant)
				for i, name := range snapshottest.Names(seg) {
					got, want := seg.Table(i), fixtureIDs(name)
					if !sameIDs(got, want) {
						t.Errorf("%s %s: creation id %q, field ids %v (last %d); want %q, %v (last %d)", tenant, name,
							got.CreationID, got.FieldIDs, got.LastColumnID, want.CreationID, want.FieldIDs, want.LastColumnID)
					}
					ids, last := seg.Tables.FieldIDsOf(i)
					if seg.Tables.CreationID.Value(i) != want.CreationID || !slices.Equal(ids, want.FieldIDs) || last != want.LastColumnID {
						t.Errorf("%s %s columns: creation id %q, field ids %v (last %d)", tenant, name, seg.Tables.CreationID.Value(i), ids, last)
					}
					if null := seg.Tables.FieldIDs.IsNull(i); null != (len(want.FieldIDs) == 0 && want.LastColumnID == 0) {
						t.Errorf("%s %s: field_ids null %v", tenant, name, null)
					}
				}
			}
		})
	}
	// A segment before version 8 carried into a version 8 blob: its rows
	// read without ids.
	v7, err := os.ReadFile(filepath.Join("testdata", "v7.lakesnap"))
	if err != nil {
		t.Fatal(err)
	}
	old := snapshottest.Open(t, v7)
	w, err = snapshot.NewWriter(snapshot.WriterOptions{Generation: 8, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CopyTenant(old, "acme"); err != nil {
		t.Fatal(err)
	}
	out, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	ob, err := out.Blob()
	if err != nil {
		t.Fatal(err)
	}
	acme := snapshottest.Tenant(t, snapshottest.Open(t, ob), "acme")
	for i := range acme.NumTables() {
		if got := acme.Table(i); !sameIDs(got, snapshot.Table{}) || acme.Tables.FieldIDs.IsValid(i) {
			t.Errorf("row %d of a version 7 segment: creation id %q, field ids %v (last %d), want none", i, got.CreationID, got.FieldIDs, got.LastColumnID)
		}
	}
}

// A change of a row's ids alone is a change of its segment, and of no
// other tenant's.
func TestIDsChangeTheSegment(t *testing.T) {
	t.Parallel()
	published := func() map[string]rows {
		tenants := fixtureRows(t)
		for _, rs := range tenants {
			for i := range rs.tables {
				rs.tables[i].Published = 1
			}
			for i := range rs.tombstones {
				rs.tombstones[i].Published = 1
			}
		}
		return tenants
	}
	before := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, published()).Written
	for _, change := range []func(*snapshot.Table){
		func(t *snapshot.Table) { t.CreationID = "ffffffffffffffff" },
		func(t *snapshot.Table) { t.FieldIDs = append(slices.Clone(t.FieldIDs), t.LastColumnID+1) },
		func(t *snapshot.Table) { t.LastColumnID++ },
	} {
		tenants := published()
		change(&tenants["acme"].tables[0])
		after := write(t, snapshot.WriterOptions{Generation: 4, CreatedAt: t0, Previous: before.Entries}, tenants).Written
		if after.Entries[0].Address == before.Entries[0].Address || after.Entries[1].Address != before.Entries[1].Address {
			t.Errorf("acme's segment unchanged (%v) or globex's changed (%v)", after.Entries[0].Address == before.Entries[0].Address,
				after.Entries[1].Address != before.Entries[1].Address)
		}
	}
}

// The size a version 8 segment adds to a tenant of 10,000 tables of 20
// columns: each table's creation id (random: it does not compress) and its
// 20 field ids (in order for 9 tables in 10, evolved for the others).
// Logged for the record (go test -run TestIDsSegmentSize -v), and bounded
// per table so the encoding cannot grow unnoticed. Each segment is of
// version 8, the columns empty where left out: against a version 7
// segment, the uncompressed size adds their offsets too (8 bytes a table,
// which compress to almost nothing).
func TestIDsSegmentSize(t *testing.T) {
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
	creationIDs := make([]string, tables)
	for i := range creationIDs {
		creationIDs[i] = hex.EncodeToString(randomBytes(t, 8))
	}
	segment := func(withCreationIDs, withFieldIDs bool) snapshot.Entry {
		var rs []snapshot.Table
		for i := range tables {
			r := snapshot.Table{Namespace: fmt.Sprintf("ns%02d", i%50), Name: fmt.Sprintf("table_%05d", i), TableType: catalog.DefaultTableType,
				SchemaIPC: schemas[i%len(schemas)], Location: fmt.Sprintf("s3://lake-data/acme/ns%02d/table_%05d/", i%50, i),
				Version: int64(1 + i%7), CreatedAt: t0, UpdatedAt: t0, UpdatedBy: "arn:aws:iam::1:role/acme-producer", Op: catalog.OpCreate}
			if withCreationIDs {
				r.CreationID = creationIDs[i]
			}
			if withFieldIDs {
				r.FieldIDs = make([]int32, columns)
				for j := range r.FieldIDs {
					r.FieldIDs[j] = int32(j + 1)
				}
				r.LastColumnID = columns
				if i%10 == 9 { // dropped the third column, added one
					r.FieldIDs = append(slices.Delete(r.FieldIDs, 2, 3), columns+1)
					r.LastColumnID = columns + 1
				}
			}
			rs = append(rs, r)
		}
		return write(t, snapshot.WriterOptions{Generation: 1, CreatedAt: t0}, map[string]rows{"acme": {tables: rs}}).Written.Entries[0]
	}
	none, cids, both := segment(false, false), segment(true, false), segment(true, true)
	for _, c := range []struct {
		what                  string
		from, to              snapshot.Entry
		maxStored, maxPayload int // bytes a table
	}{
		// Uncompressed: 16 hex digits and an offset; the ids (a byte
		// each, a count and a last) and an offset.
		{"creation ids", none, cids, 20, 16 + 4},
		{"field ids", cids, both, 4, columns + 3 + 4},
		{"both", none, both, 24, 16 + 4 + columns + 3 + 4},
	} {
		stored, payload := c.to.StoredBytes-c.from.StoredBytes, c.to.PayloadBytes-c.from.PayloadBytes
		t.Logf("%s, %d tables of %d columns: stored %d -> %d bytes (+%d, %.1f a table, +%.1f%%); uncompressed %d -> %d bytes (+%d, %.1f a table, +%.1f%%)",
			c.what, tables, columns, c.from.StoredBytes, c.to.StoredBytes, stored, float64(stored)/tables, 100*float64(stored)/float64(c.from.StoredBytes),
			c.from.PayloadBytes, c.to.PayloadBytes, payload, float64(payload)/tables, 100*float64(payload)/float64(c.from.PayloadBytes))
		if stored > c.maxStored*tables || payload > c.maxPayload*tables {
			t.Errorf("%s: %.1f bytes a table stored, %.1f uncompressed; want at most %d and %d", c.what,
				float64(stored)/tables, float64(payload)/tables, c.maxStored, c.maxPayload)
		}
	}
}

func randomBytes(tb testing.TB, n int) []byte {
	tb.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}
