package icebergsync_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// tableSchema is the registration: id long, name string, both nullable.
var tableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func testTable(location string) icebergsync.Table {
	return icebergsync.Table{
		Tenant: "acme", Namespace: "sales", Name: "orders",
		UUID: "6f1c1a4e-2b8d-4a53-9a53-0c1d2e3f4a5b", Location: location,
		Schema: tableSchema, IDs: icebergschema.Assign(nil, icebergschema.FieldIDs{}, tableSchema), SchemaID: 0,
	}
}

// row is one row of the table as a scan returns it.
type row struct {
	ID   int64
	Name string // "<null>" for null
}

// parquetBytes writes rows as Parquet with pqarrow: ids as int64, or as
// int32 when narrow, and the name column only when withName.
func parquetBytes(tb testing.TB, rows []row, narrow, withName bool) []byte {
	tb.Helper()
	idType := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if narrow {
		idType = arrow.PrimitiveTypes.Int32
	}
	fields := []arrow.Field{{Name: "id", Type: idType, Nullable: true}}
	if withName {
		fields = append(fields, arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	s := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for _, r := range rows {
		if narrow {
			b.Field(0).(*array.Int32Builder).Append(int32(r.ID))
		} else {
			b.Field(0).(*array.Int64Builder).Append(r.ID)
		}
		if withName {
			b.Field(1).(*array.StringBuilder).Append(r.Name)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(s, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// conflicting is a Parquet file whose id column is a string.
func conflicting(tb testing.TB) []byte {
	tb.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("x")
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(s, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func rowsOf(ids []int64, name string) []row {
	out := make([]row, len(ids))
	for i, id := range ids {
		out[i] = row{ID: id, Name: fmt.Sprint(name, id)}
	}
	return out
}

func writeFile(tb testing.TB, dir, name string, b []byte) {
	tb.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// scan reads the table at metadataLocation with iceberg-go (its own
// metadata parser, manifest readers and Parquet scan) and returns its rows
// sorted by id.
func scan(tb testing.TB, metadataLocation string, fsys iceio.IO) []row {
	tb.Helper()
	ctx := context.Background()
	tbl, err := table.NewFromLocation(ctx, table.Identifier{"sales", "orders"}, metadataLocation,
		func(context.Context) (iceio.IO, error) { return fsys, nil }, nil)
	if err != nil {
		tb.Fatalf("load %s: %v", metadataLocation, err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		tb.Fatalf("scan: %v", err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var out []row
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		names := rec.Column(rec.Schema().FieldIndices("name")[0]).(*array.String)
		for i := range int(rec.NumRows()) {
			r := row{ID: ids.Value(i), Name: "<null>"}
			if names.IsValid(i) {
				r.Name = names.Value(i)
			}
			out = append(out, r)
		}
	}
	if err := tr.Err(); err != nil {
		tb.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// entries returns the live data files of the current snapshot, by base
// name, read with iceberg-go's manifest readers.
func entries(tb testing.TB, metadataLocation string, fsys iceio.IO) (map[string]iceberg.DataFile, []string) {
	tb.Helper()
	tbl, err := table.NewFromLocation(context.Background(), table.Identifier{"sales", "orders"}, metadataLocation,
		func(context.Context) (iceio.IO, error) { return fsys, nil }, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]iceberg.DataFile{}
	var paths []string
	for _, m := range ms {
		paths = append(paths, m.FilePath())
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				tb.Fatal(err)
			}
			out[filepath.Base(e.DataFile().FilePath())] = e.DataFile()
		}
	}
	return out, paths
}

func count(tb testing.TB, dir string) int {
	tb.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		tb.Fatal(err)
	}
	return n
}

func clock() func() time.Time {
	t := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func skippedKeys(s []icebergsync.Skip) []string {
	var out []string
	for _, k := range s {
		out = append(out, k.Key)
	}
	return out
}

const metaPrefix = "acme/sales/orders/6f1c1a4e/metadata/"

func TestSyncLocal(t *testing.T) {
	ctx := context.Background()
	dataDir, metaDir := t.TempDir(), t.TempDir()
	a := rowsOf([]int64{1, 2, 3}, "a")
	b := rowsOf([]int64{10, 11, 12, 13, 14}, "b")
	writeFile(t, dataDir, "a.parquet", parquetBytes(t, a, false, true))
	// b: id as int32 (promoted to long) and no name column (nullable).
	writeFile(t, dataDir, "part/b.parquet", parquetBytes(t, b, true, false))
	writeFile(t, dataDir, "bad.parquet", conflicting(t))
	writeFile(t, dataDir, "notes.txt", []byte("not a parquet file at all"))
	writeFile(t, dataDir, "_SUCCESS", nil)

	data, meta := icebergsync.NewLocalFiles(dataDir), icebergsync.NewLocalMetaStore(metaDir)
	tbl := testTable("file://" + dataDir)
	now := clock()
	fsys := iceio.LocalFS{}

	// First sync.
	r1, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Changed || r1.Files != 2 || r1.Added != 2 || r1.Records != 8 {
		t.Fatalf("first sync: got changed %v files %d added %d records %d, want true 2 2 8", r1.Changed, r1.Files, r1.Added, r1.Records)
	}
	if got, want := skippedKeys(r1.Skipped), []string{"bad.parquet", "notes.txt"}; !slices.Equal(got, want) {
		t.Fatalf("skipped: got %v, want %v", got, want)
	}
	if !strings.Contains(r1.Skipped[0].Reason, `column "id"`) || !strings.Contains(r1.Skipped[1].Reason, "not Parquet") {
		t.Errorf("skip reasons: got %q", r1.Skipped)
	}
	if r1.FooterBytes <= 0 || r1.FooterBytes > r1.DataBytes {
		t.Errorf("footer bytes %d of %d", r1.FooterBytes, r1.DataBytes)
	}
	want := append([]row{}, a...)
	for _, r := range b {
		want = append(want, row{ID: r.ID, Name: "<null>"})
	}
	if got := scan(t, r1.MetadataLocation, fsys); !slices.Equal(got, want) {
		t.Fatalf("scan after the first sync: got %v, want %v", got, want)
	}
	// Stats from the footer, by field id (id = 1, name = 2).
	files, manifests1 := entries(t, r1.MetadataLocation, fsys)
	fa := files["a.parquet"]
	if fa == nil || fa.Count() != 3 || fa.ValueCounts()[1] != 3 || fa.NullValueCounts()[1] != 0 {
		t.Fatalf("a.parquet's data file: %+v", fa)
	}
	if lo, hi := fa.LowerBoundValues()[1], fa.UpperBoundValues()[1]; len(lo) != 8 || binary.LittleEndian.Uint64(lo) != 1 || binary.LittleEndian.Uint64(hi) != 3 {
		t.Errorf("a.parquet id bounds: got %x..%x, want 1..3", lo, hi)
	}
	if got := string(fa.LowerBoundValues()[2]); got != "a1" {
		t.Errorf("a.parquet name lower bound: got %q, want a1", got)
	}
	if fb := files["b.parquet"]; fb == nil || fb.Count() != 5 || binary.LittleEndian.Uint32(fb.UpperBoundValues()[1]) != 14 {
		t.Errorf("b.parquet's data file: %+v", fb)
	}
	st := r1.State
	if len(st.Snapshots) != 1 || st.CurrentSnapshot != r1.SnapshotID || st.Snapshots[0].Summary["operation"] != "append" || st.Snapshots[0].Summary["total-records"] != "8" {
		t.Errorf("state: %+v", st)
	}

	// Nothing changed: nothing written.
	before := count(t, metaDir)
	r2, err := icebergsync.Sync(ctx, tbl, r1.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Changed || r2.MetadataLocation != r1.MetadataLocation || r2.FooterBytes != 0 || r2.Records != 8 || count(t, metaDir) != before {
		t.Fatalf("unchanged sync: got changed %v location %s footer bytes %d records %d, %d objects (was %d)",
			r2.Changed, r2.MetadataLocation, r2.FooterBytes, r2.Records, count(t, metaDir), before)
	}

	// A file added: a new snapshot whose parent is the first, the first
	// manifest carried forward.
	c := rowsOf([]int64{20, 21}, "c")
	writeFile(t, dataDir, "c.parquet", parquetBytes(t, c, false, true))
	r3, err := icebergsync.Sync(ctx, tbl, r2.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !r3.Changed || r3.Added != 1 || r3.Removed != 0 || r3.Files != 3 || r3.Records != 10 {
		t.Fatalf("add: got %+v", r3)
	}
	if r3.FooterBytes == 0 || r3.DataBytes != int64(len(parquetBytes(t, c, false, true))) {
		t.Errorf("add read footers of %d bytes of files, want c.parquet's alone", r3.DataBytes)
	}
	if len(r3.State.Snapshots) != 2 || r3.State.Snapshots[1].ParentID != r1.SnapshotID || r3.State.Snapshots[1].SequenceNumber != 2 {
		t.Fatalf("add: snapshots %+v", r3.State.Snapshots)
	}
	_, manifests3 := entries(t, r3.MetadataLocation, fsys)
	if len(manifests3) != 2 || !slices.Contains(manifests3, manifests1[0]) {
		t.Errorf("add: manifests %v, want %v and one more", manifests3, manifests1)
	}
	want = append(want, c...)
	sort.Slice(want, func(i, j int) bool { return want[i].ID < want[j].ID })
	if got := scan(t, r3.MetadataLocation, fsys); !slices.Equal(got, want) {
		t.Fatalf("scan after the add: got %v, want %v", got, want)
	}
	// The first snapshot is still readable as it was.
	if got := scan(t, r1.MetadataLocation, fsys); len(got) != 8 {
		t.Errorf("the first metadata now scans %d rows, want 8", len(got))
	}

	// A file removed: its rows are gone.
	if err := os.Remove(filepath.Join(dataDir, "a.parquet")); err != nil {
		t.Fatal(err)
	}
	r4, err := icebergsync.Sync(ctx, tbl, r3.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !r4.Changed || r4.Added != 0 || r4.Removed != 1 || r4.Files != 2 || r4.Records != 7 || r4.FooterBytes != 0 {
		t.Fatalf("remove: got %+v", r4)
	}
	if s := r4.State.Snapshots[2]; s.ParentID != r3.SnapshotID || s.Summary["operation"] != "delete" || s.Summary["deleted-records"] != "3" {
		t.Errorf("remove: snapshot %+v", s)
	}
	want = slices.DeleteFunc(want, func(r row) bool { return r.ID < 10 })
	if got := scan(t, r4.MetadataLocation, fsys); !slices.Equal(got, want) {
		t.Fatalf("scan after the remove: got %v, want %v", got, want)
	}
	_, manifests4 := entries(t, r4.MetadataLocation, fsys)
	if len(manifests4) != 2 || slices.Contains(manifests4, manifests1[0]) || !slices.Contains(manifests4, manifests3[1]) {
		t.Errorf("remove: manifests %v, want the first rewritten and the second as it was (%v)", manifests4, manifests3)
	}

	// A file rewritten in place (same key, new content) is removed and
	// added again.
	c2 := rowsOf([]int64{30, 31, 32}, "c")
	time.Sleep(10 * time.Millisecond)
	writeFile(t, dataDir, "c.parquet", parquetBytes(t, c2, false, true))
	r5, err := icebergsync.Sync(ctx, tbl, r4.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !r5.Changed || r5.Added != 1 || r5.Removed != 1 || r5.Records != 8 || r5.State.Snapshots[3].Summary["operation"] != "overwrite" {
		t.Fatalf("rewrite: got %+v", r5)
	}
	want = slices.DeleteFunc(want, func(r row) bool { return r.ID >= 20 })
	want = append(want, c2...)
	if got := scan(t, r5.MetadataLocation, fsys); !slices.Equal(got, want) {
		t.Fatalf("scan after the rewrite: got %v, want %v", got, want)
	}
	_, manifests5 := entries(t, r5.MetadataLocation, fsys)
	if len(manifests5) != 3 {
		t.Fatalf("rewrite: manifests %v, want b's, the old c's (its removal) and the new c's", manifests5)
	}

	// The manifest that only recorded the old c's removal is not carried.
	writeFile(t, dataDir, "d.parquet", parquetBytes(t, rowsOf([]int64{40}, "d"), false, true))
	r6, err := icebergsync.Sync(ctx, tbl, r5.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	_, manifests6 := entries(t, r6.MetadataLocation, fsys)
	if len(manifests6) != 3 || slices.Contains(manifests6, manifests5[1]) || !slices.Contains(manifests6, manifests5[0]) || !slices.Contains(manifests6, manifests5[2]) {
		t.Fatalf("after adding d: manifests %v, want %v but its second, and one more", manifests6, manifests5)
	}
	want = append(want, rowsOf([]int64{40}, "d")...)
	if got := scan(t, r6.MetadataLocation, fsys); !slices.Equal(got, want) || r6.Records != int64(len(want)) {
		t.Fatalf("scan after adding d: got %v (%d records), want %v", got, r6.Records, want)
	}
}

func TestSyncLimits(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	for i := range 3 {
		writeFile(t, dataDir, fmt.Sprintf("f%d.parquet", i), parquetBytes(t, rowsOf([]int64{int64(i)}, "f"), false, true))
	}
	data := icebergsync.NewLocalFiles(dataDir)
	tbl := testTable("file://" + dataDir)

	t.Run("max files", func(t *testing.T) {
		metaDir := t.TempDir()
		_, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, icebergsync.NewLocalMetaStore(metaDir), metaPrefix, icebergsync.Limits{MaxFiles: 2}, clock())
		var tm *icebergsync.TooManyFilesError
		if !errors.As(err, &tm) || tm.Count != 3 || tm.Limit != 2 || !strings.Contains(err.Error(), "3 files") {
			t.Fatalf("got %v, want a TooManyFilesError of 3 files, limit 2", err)
		}
		if n := count(t, metaDir); n != 0 {
			t.Errorf("%d objects written, want none", n)
		}
	})
	t.Run("max footer bytes", func(t *testing.T) {
		metaDir := t.TempDir()
		r, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, icebergsync.NewLocalMetaStore(metaDir), metaPrefix, icebergsync.Limits{MaxFooterBytes: 16}, clock())
		if err != nil {
			t.Fatal(err)
		}
		if r.Changed || count(t, metaDir) != 0 {
			t.Fatalf("got %+v, want nothing changed or written", r)
		}
		if len(r.Skipped) != 3 || !strings.Contains(r.Skipped[0].Reason, "limit 16") {
			t.Errorf("skipped: got %+v, want the 3 files, their footers over 16 bytes", r.Skipped)
		}
	})
	t.Run("max total footer bytes", func(t *testing.T) {
		metaDir := t.TempDir()
		_, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, icebergsync.NewLocalMetaStore(metaDir), metaPrefix, icebergsync.Limits{MaxTotalFooterBytes: 100}, clock())
		if !errors.Is(err, icebergsync.ErrBudget) {
			t.Fatalf("got %v, want ErrBudget", err)
		}
		if n := count(t, metaDir); n != 0 {
			t.Errorf("%d objects written, want none", n)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		metaDir := t.TempDir()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := icebergsync.Sync(cctx, tbl, icebergsync.State{}, data, icebergsync.NewLocalMetaStore(metaDir), metaPrefix, icebergsync.Limits{}, clock())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
	t.Run("racing syncs", func(t *testing.T) {
		metaDir := t.TempDir()
		meta := icebergsync.NewLocalMetaStore(metaDir)
		if _, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, meta, metaPrefix, icebergsync.Limits{}, clock()); err != nil {
			t.Fatal(err)
		}
		_, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, meta, metaPrefix, icebergsync.Limits{}, clock())
		if !errors.Is(err, icebergsync.ErrExists) {
			t.Fatalf("a second first sync: got %v, want ErrExists", err)
		}
	})
}

// countingFiles records every read a Sync makes of the data files.
type countingFiles struct {
	icebergsync.Files
	mu    sync.Mutex
	reads []string // "key off len size"
	bad   []string // reads that do not end at the file's end
	bytes int64
}

func (c *countingFiles) ReadAt(ctx context.Context, o icebergsync.Object, p []byte, off int64) error {
	c.mu.Lock()
	c.reads = append(c.reads, fmt.Sprint(o.Key, off, len(p), o.Size))
	if off+int64(len(p)) != o.Size {
		c.bad = append(c.bad, c.reads[len(c.reads)-1])
	}
	c.bytes += int64(len(p))
	c.mu.Unlock()
	return c.Files.ReadAt(ctx, o, p, off)
}

// Sync reads the ends of files only, and little more than the footers.
func TestSyncReadsFootersOnly(t *testing.T) {
	dataDir := t.TempDir()
	var total int64
	for i := range 20 {
		ids := make([]int64, 1000)
		for j := range ids {
			ids[j] = int64(i*1000 + j)
		}
		b := parquetBytes(t, rowsOf(ids, "r"), false, true)
		total += int64(len(b))
		writeFile(t, dataDir, fmt.Sprintf("f%02d.parquet", i), b)
	}
	files := &countingFiles{Files: icebergsync.NewLocalFiles(dataDir)}
	r, err := icebergsync.Sync(context.Background(), testTable("file://"+dataDir), icebergsync.State{}, files,
		icebergsync.NewLocalMetaStore(t.TempDir()), metaPrefix, icebergsync.Limits{Concurrency: 1}, clock())
	if err != nil {
		t.Fatal(err)
	}
	if r.Files != 20 || r.Records != 20_000 {
		t.Fatalf("got %d files, %d records", r.Files, r.Records)
	}
	if len(files.bad) != 0 {
		t.Errorf("reads not at the files' ends: %v", files.bad)
	}
	if files.bytes != r.FooterBytes || r.DataBytes != total {
		t.Errorf("footer bytes %d, counted %d; data bytes %d, want %d", r.FooterBytes, files.bytes, r.DataBytes, total)
	}
	// The first file is read with 8 KiB, the others with about the footer.
	if r.FooterBytes > 8<<10+19*(2<<10) {
		t.Errorf("read %d bytes of %d for 20 footers, want at most %d", r.FooterBytes, total, 8<<10+19*(2<<10))
	}
	t.Logf("read %d bytes of %d (%.1f%%) in %d reads", r.FooterBytes, total, 100*float64(r.FooterBytes)/float64(total), len(files.reads))
}

// A file left out under one schema is read again after the registration's
// schema changes, and taken when the new schema takes it.
func TestSyncSchemaChange(t *testing.T) {
	ctx := context.Background()
	dataDir, metaDir := t.TempDir(), t.TempDir()
	v1 := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	ids1 := icebergschema.Assign(nil, icebergschema.FieldIDs{}, v1)
	writeFile(t, dataDir, "a.parquet", parquetBytes(t, rowsOf([]int64{1, 2}, "a"), false, false))
	writeFile(t, dataDir, "b.parquet", parquetBytes(t, rowsOf([]int64{3}, "b"), false, true)) // name: a string
	data, meta := icebergsync.NewLocalFiles(dataDir), icebergsync.NewLocalMetaStore(metaDir)
	tbl := testTable("file://" + dataDir)
	tbl.Schema, tbl.IDs = v1, ids1
	now := clock()
	r1, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Files != 1 || len(r1.Skipped) != 1 || !strings.Contains(r1.Skipped[0].Reason, `column "name"`) {
		t.Fatalf("v1: got %+v", r1)
	}

	// v2: name is a string (a new field, id 3).
	tbl.Schema, tbl.IDs, tbl.SchemaID = tableSchema, icebergschema.Assign(v1, ids1, tableSchema), 1
	r2, err := icebergsync.Sync(ctx, tbl, r1.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Changed || r2.Added != 1 || r2.Files != 2 || len(r2.Skipped) != 0 {
		t.Fatalf("v2: got %+v", r2)
	}
	if got := r2.State.Snapshots[1].SchemaID; got != 1 {
		t.Errorf("v2 snapshot's schema id: got %d, want 1", got)
	}
	want := []row{{1, "<null>"}, {2, "<null>"}, {3, "b3"}}
	if got := scan(t, r2.MetadataLocation, iceio.LocalFS{}); !slices.Equal(got, want) {
		t.Fatalf("scan: got %v, want %v", got, want)
	}
}

// Outside bytes as a data file never panic Sync: the file is taken or left
// out with a reason.
func FuzzSyncFile(f *testing.F) {
	f.Add(parquetBytes(f, rowsOf([]int64{1, 2}, "a"), false, true))
	f.Add(conflicting(f))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Add([]byte("PAR1\xff\xff\xff\x7fPAR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dataDir := t.TempDir()
		writeFile(t, dataDir, "x.parquet", b)
		r, err := icebergsync.Sync(context.Background(), testTable("file://"+dataDir), icebergsync.State{},
			icebergsync.NewLocalFiles(dataDir), icebergsync.NewLocalMetaStore(t.TempDir()), metaPrefix, icebergsync.Limits{}, clock())
		if err != nil {
			t.Fatal(err)
		}
		if r.Files+len(r.Skipped) != 1 {
			t.Fatalf("got %d files and %v skipped, want the one file in either", r.Files, r.Skipped)
		}
	})
}

// A column only in the file leaves the file out, naming the column.
func TestSyncExtraColumn(t *testing.T) {
	dataDir := t.TempDir()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "extra", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{0.5, 1.5}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{7, 8}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(s, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dataDir, "x.parquet", buf.Bytes())
	r, err := icebergsync.Sync(context.Background(), testTable("file://"+dataDir), icebergsync.State{},
		icebergsync.NewLocalFiles(dataDir), icebergsync.NewLocalMetaStore(t.TempDir()), metaPrefix, icebergsync.Limits{}, clock())
	if err != nil {
		t.Fatal(err)
	}
	if r.Files != 0 || len(r.Skipped) != 1 || r.Skipped[0].Reason != `column "extra": in the file, not in the table` {
		t.Fatalf("got %+v, want the file left out for its column extra", r)
	}
}
