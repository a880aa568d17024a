package preview_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/preview"
)

// schema is the tables' registered schema in these tests.
var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// row is one row of the test schema; name "" is null.
type row struct {
	id    int64
	name  string
	score float64
}

// writeFile writes rows as a Parquet file at dir/name (dir "": nowhere),
// rowGroup rows a row group, with statistics and the stored Arrow schema,
// and returns its bytes.
func writeFile(tb testing.TB, dir, name string, sc *arrow.Schema, rowGroup int64, rows []row, opts ...parquet.WriterProperty) []byte {
	tb.Helper()
	b, err := encode(sc, rowGroup, rows, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	if dir != "" {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return b
}

// encode is writeFile's Parquet file.
func encode(sc *arrow.Schema, rowGroup int64, rows []row, opts ...parquet.WriterProperty) ([]byte, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for i, f := range sc.Fields() {
			fb := b.Field(i)
			switch f.Name {
			case "id":
				switch fb := fb.(type) {
				case *array.Int64Builder:
					fb.Append(r.id)
				case *array.Int32Builder:
					fb.Append(int32(r.id))
				}
			case "name":
				if r.name == "" {
					fb.AppendNull()
				} else {
					fb.(*array.StringBuilder).Append(r.name)
				}
			case "score":
				fb.(*array.Float64Builder).Append(r.score)
			default:
				fb.AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(rowGroup), parquet.WithStats(true), parquet.WithDictionaryDefault(false)}, opts...)...)
	w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	if err := w.WriteBuffered(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// rowsFrom are n rows with ids from first up, a 100-byte name (null every
// nullEvery-th row when nullEvery > 0) and a score.
func rowsFrom(first int64, n int, nullEvery int) []row {
	out := make([]row, n)
	for i := range out {
		id := first + int64(i)
		out[i] = row{id: id, name: fmt.Sprintf("name-%06d-%s", id, strings.Repeat("x", 88)), score: float64(id) / 2}
		if nullEvery > 0 && i%nullEvery == 0 {
			out[i].name = ""
		}
	}
	return out
}

// read previews req over the files under dir with lim, with a checked
// allocator, and returns the rows' ids (or -1 per row without an id
// column), the batches' schema and the stats.
func read(tb testing.TB, files icebergsync.Files, req preview.Request, lim preview.Limits) ([]int64, *arrow.Schema, preview.Stats, error) {
	tb.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(tb, 0)
	if req.Schema == nil {
		req.Schema = schema
	}
	if req.Table == "" {
		req.Table = "sales.orders"
	}
	batches, st, err := preview.Read(context.Background(), files, req, lim, mem)
	var ids []int64
	var sc *arrow.Schema
	for _, b := range batches {
		sc = b.Schema()
		idx := b.Schema().FieldIndices("id")
		for i := range int(b.NumRows()) {
			if len(idx) == 0 {
				ids = append(ids, -1)
			} else {
				ids = append(ids, b.Column(idx[0]).(*array.Int64).Value(i))
			}
		}
		b.Release()
	}
	return ids, sc, st, err
}

func TestColumnsAndSchema(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "part-0.parquet", schema, 1000, rowsFrom(0, 5000, 0))
	files := icebergsync.NewLocalFiles(dir)
	ids, sc, one, err := read(t, files, preview.Request{Columns: []int{0}, Limit: 100}, preview.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 100 || ids[0] != 0 || ids[99] != 99 {
		t.Fatalf("got %d ids from %v, want 0..99", len(ids), ids[:min(3, len(ids))])
	}
	if want := arrow.NewSchema([]arrow.Field{schema.Field(0)}, nil); !sc.Equal(want) {
		t.Fatalf("got schema %s, want %s", sc, want)
	}
	_, sc, all, err := read(t, files, preview.Request{Limit: 100}, preview.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Equal(schema) {
		t.Fatalf("got schema %s, want %s", sc, schema)
	}
	// The name column is ~100 bytes a row: reading it takes far more.
	if one.BytesRead*3 > all.BytesRead {
		t.Fatalf("got %d bytes read for id, %d for all columns; want id's well under a third", one.BytesRead, all.BytesRead)
	}
	t.Logf("bytes read: id %d, all %d", one.BytesRead, all.BytesRead)
}

func TestReadsOnlyWhatTheLimitNeeds(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "a/part-0.parquet", schema, 10_000, rowsFrom(0, 50_000, 0))
	writeFile(t, dir, "b/part-1.parquet", schema, 10_000, rowsFrom(50_000, 1000, 0))
	files := icebergsync.NewLocalFiles(dir)
	for _, c := range []struct {
		limit       int64
		rows        int
		filesOpened int
	}{
		{1, 1, 1},
		{100, 100, 1},
		{50_000, 50_000, 1},
		{50_500, 50_500, 2},
		{60_000, 51_000, 2},
	} {
		t.Run(fmt.Sprint(c.limit), func(t *testing.T) {
			ids, _, st, err := read(t, files, preview.Request{Columns: []int{0, 1}, Limit: c.limit}, preview.Limits{MaxRows: 100_000})
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != c.rows || st.Rows != int64(c.rows) || st.FilesOpened != c.filesOpened {
				t.Fatalf("got %d rows (stats %+v), want %d rows from %d files", len(ids), st, c.rows, c.filesOpened)
			}
			for i, id := range ids {
				if id != int64(i) {
					t.Fatalf("got id %d at row %d", id, i)
				}
			}
		})
	}
	// A LIMIT 100 reads the footer and the first pages of the asked
	// columns: at most the footer and the first row group's chunks of
	// them; with pages of 32 KiB, a few pages of each.
	_, _, st, err := read(t, files, preview.Request{Columns: []int{0, 1}, Limit: 100}, preview.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bound := footerAndFirstChunks(t, data, 0, 1)
	if st.BytesRead > bound {
		t.Fatalf("got %d bytes read, want at most %d (the footer and the first row group's asked chunks)", st.BytesRead, bound)
	}
	t.Logf("LIMIT 100, 1 MiB pages: %d bytes read of a %d-byte file (bound %d)", st.BytesRead, len(data), bound)

	small := t.TempDir()
	data = writeFile(t, small, "part-0.parquet", schema, 10_000, rowsFrom(0, 50_000, 0), parquet.WithDataPageSize(32<<10))
	_, _, st, err = read(t, icebergsync.NewLocalFiles(small), preview.Request{Columns: []int{0, 1}, Limit: 100}, preview.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bound = footerAndFirstChunks(t, data, 0, 1)
	if st.BytesRead*4 > bound {
		t.Fatalf("got %d bytes read, want under a quarter of %d (the footer and the first row group's asked chunks)", st.BytesRead, bound)
	}
	t.Logf("LIMIT 100, 32 KiB pages: %d bytes read of a %d-byte file (bound %d)", st.BytesRead, len(data), bound)
}

// footerAndFirstChunks is the footer's size (with its length and magic)
// and the first row group's chunks of the leaf columns cols.
func footerAndFirstChunks(tb testing.TB, data []byte, cols ...int) int64 {
	tb.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	md := pf.MetaData()
	n := int64(md.Size()) + 8
	for _, c := range cols {
		cc, err := md.RowGroup(0).ColumnChunk(c)
		if err != nil {
			tb.Fatal(err)
		}
		n += cc.TotalCompressedSize()
	}
	return n
}

func TestRowGroupSkipping(t *testing.T) {
	dir := t.TempDir()
	// ids 0..999, 10 row groups of 100; name null in rows 300..399 only.
	rows := rowsFrom(0, 1000, 0)
	for i := 300; i < 400; i++ {
		rows[i].name = ""
	}
	writeFile(t, dir, "part-0.parquet", schema, 100, rows)
	files := icebergsync.NewLocalFiles(dir)
	for _, c := range []struct {
		name    string
		filters []preview.Filter
		read    int
		first   int64
	}{
		{"id > 950", []preview.Filter{{Column: 0, Op: preview.OpGt, Value: int64(950)}}, 1, 900},
		{"id >= 900", []preview.Filter{{Column: 0, Op: preview.OpGe, Value: int64(900)}}, 1, 900},
		{"id > 899.5", []preview.Filter{{Column: 0, Op: preview.OpGt, Value: 899.5}}, 1, 900},
		{"id < 100", []preview.Filter{{Column: 0, Op: preview.OpLt, Value: int64(100)}}, 1, 0},
		{"id <= 100", []preview.Filter{{Column: 0, Op: preview.OpLe, Value: int64(100)}}, 2, 0},
		{"id = 555", []preview.Filter{{Column: 0, Op: preview.OpEq, Value: int64(555)}}, 1, 500},
		{"id = 5000", []preview.Filter{{Column: 0, Op: preview.OpEq, Value: int64(5000)}}, 0, -1},
		{"id = 'x'", []preview.Filter{{Column: 0, Op: preview.OpEq, Value: "x"}}, 10, 0},
		{"score > 400", []preview.Filter{{Column: 2, Op: preview.OpGt, Value: int64(400)}}, 2, 800},
		{"name IS NULL", []preview.Filter{{Column: 1, Op: preview.OpIsNull}}, 1, 300},
		{"name IS NOT NULL", []preview.Filter{{Column: 1, Op: preview.OpIsNotNull}}, 9, 0},
		{"name = 'name-000700…'", []preview.Filter{{Column: 1, Op: preview.OpEq, Value: rows[700].name}}, 1, 700},
		{"name < 'name-000100'", []preview.Filter{{Column: 1, Op: preview.OpLt, Value: []byte("name-000100")}}, 1, 0},
		{"id > 100 AND id < 300", []preview.Filter{{Column: 0, Op: preview.OpGt, Value: int64(100)}, {Column: 0, Op: preview.OpLt, Value: int64(300)}}, 2, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, _, st, err := read(t, files, preview.Request{Columns: []int{0}, Filters: c.filters}, preview.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if st.RowGroupsRead != c.read || st.RowGroupsSkipped != 10-c.read {
				t.Fatalf("got %d row groups read, %d skipped; want %d, %d", st.RowGroupsRead, st.RowGroupsSkipped, c.read, 10-c.read)
			}
			if len(ids) != 100*c.read {
				t.Fatalf("got %d rows, want %d", len(ids), 100*c.read)
			}
			if c.read > 0 && ids[0] != c.first {
				t.Fatalf("got first id %d, want %d", ids[0], c.first)
			}
		})
	}
}

func TestAbsentNullableColumnReadsAsNulls(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "part-0.parquet", schema, 100, rowsFrom(0, 250, 0))
	wide := arrow.NewSchema(append(schema.Fields(), arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batches, st, err := preview.Read(context.Background(), icebergsync.NewLocalFiles(dir), preview.Request{Table: "t", Schema: wide, Columns: []int{0, 3}, Limit: 200}, preview.Limits{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range batches {
		if !b.Schema().Field(1).Equal(wide.Field(3)) {
			t.Errorf("got field %s, want %s", b.Schema().Field(1), wide.Field(3))
		}
		if nulls := b.Column(1).NullN(); nulls != int(b.NumRows()) {
			t.Errorf("got %d nulls of %d rows", nulls, b.NumRows())
		}
		n += int(b.NumRows())
		b.Release()
	}
	if n != 200 || st.Rows != 200 {
		t.Fatalf("got %d rows (stats %+v), want 200", n, st)
	}
	// Only the absent column: no column chunk is read, the rows come
	// from the footer's counts.
	_, _, st, err = read(t, icebergsync.NewLocalFiles(dir), preview.Request{Schema: wide, Columns: []int{3}}, preview.Limits{})
	if err != nil || st.Rows != 250 {
		t.Fatalf("got %+v, %v; want 250 rows", st, err)
	}
	// A comparison on the absent column is never true: every row group
	// is skipped.
	_, _, st, err = read(t, icebergsync.NewLocalFiles(dir), preview.Request{Schema: wide, Filters: []preview.Filter{{Column: 3, Op: preview.OpEq, Value: "x"}}}, preview.Limits{})
	if err != nil || st.Rows != 0 || st.RowGroupsSkipped != 3 {
		t.Fatalf("got %+v, %v; want 3 row groups skipped", st, err)
	}
}

func TestMismatchNamesTheFile(t *testing.T) {
	int32ID := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, schema.Field(1)}, nil)
	nullableID := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, schema.Field(1)}, nil)
	noID := arrow.NewSchema([]arrow.Field{schema.Field(1)}, nil)
	for _, c := range []struct {
		name   string
		write  func(dir string)
		reason string
	}{
		{"type", func(dir string) { writeFile(t, dir, "p.parquet", int32ID, 100, rowsFrom(0, 10, 0)) }, `column "id": the file's type int32 is not the table's int64`},
		{"nullable", func(dir string) { writeFile(t, dir, "p.parquet", nullableID, 100, rowsFrom(0, 10, 0)) }, `column "id": nullable in the file, required by the table`},
		{"missing", func(dir string) { writeFile(t, dir, "p.parquet", noID, 100, rowsFrom(0, 10, 0)) }, `column "id": required by the table, missing from the file`},
		{"not parquet", func(dir string) { os.WriteFile(filepath.Join(dir, "p.parquet"), []byte("id,name\n1,a\n2,b\n"), 0o644) }, "does not end in PAR1"},
		{"short", func(dir string) { os.WriteFile(filepath.Join(dir, "p.parquet"), []byte("PAR1"), 0o644) }, "too short"},
		{"bad footer", func(dir string) {
			os.WriteFile(filepath.Join(dir, "p.parquet"), []byte("PAR1garbagegarbage\x08\x00\x00\x00PAR1"), 0o644)
		}, "not readable Parquet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.write(dir)
			files := icebergsync.NewLocalFiles(dir)
			_, _, _, err := read(t, files, preview.Request{}, preview.Limits{})
			var me *preview.MismatchError
			if !errors.As(err, &me) {
				t.Fatalf("got %v, want a *MismatchError", err)
			}
			if me.File != files.Location("p.parquet") || !strings.Contains(me.Reason, c.reason) {
				t.Fatalf("got file %q reason %q, want %q and %q", me.File, me.Reason, files.Location("p.parquet"), c.reason)
			}
		})
	}
}

func TestCaps(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "part-0.parquet", schema, 100, rowsFrom(0, 300, 0))
	writeFile(t, dir, "part-1.parquet", schema, 100, rowsFrom(300, 300, 0))
	files := icebergsync.NewLocalFiles(dir)
	for _, c := range []struct {
		name  string
		req   preview.Request
		lim   preview.Limits
		cap   string // "": no error
		rows  int
		files int
	}{
		{"bytes", preview.Request{}, preview.Limits{MaxBytes: 2000}, "bytes read", 0, 1},
		{"footer", preview.Request{}, preview.Limits{MaxFooterBytes: 100}, "footer bytes", 0, 1},
		{"files", preview.Request{Limit: 400}, preview.Limits{MaxFiles: 1}, "files opened", 0, 1},
		{"files enough", preview.Request{Limit: 300}, preview.Limits{MaxFiles: 1}, "", 300, 1},
		{"listed", preview.Request{Limit: 400}, preview.Limits{MaxListed: 1}, "objects listed", 0, 1},
		{"listed enough", preview.Request{Limit: 200}, preview.Limits{MaxListed: 1}, "", 200, 1},
		{"rows, no limit", preview.Request{}, preview.Limits{MaxRows: 500}, "rows", 0, 2},
		{"rows, limit over the cap", preview.Request{Limit: 1000}, preview.Limits{MaxRows: 500}, "rows", 0, 2},
		{"rows, limit under the cap", preview.Request{Limit: 450}, preview.Limits{MaxRows: 500}, "", 450, 2},
		{"rows, all of them under the cap", preview.Request{}, preview.Limits{MaxRows: 600}, "", 600, 2},
		{"rows, a cap at the end of a file", preview.Request{}, preview.Limits{MaxRows: 300}, "rows", 0, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, _, st, err := read(t, files, c.req, c.lim)
			if c.cap == "" {
				if err != nil || len(ids) != c.rows || st.FilesOpened != c.files {
					t.Fatalf("got %d rows, %+v, %v; want %d rows from %d files", len(ids), st, err, c.rows, c.files)
				}
				return
			}
			var le *preview.LimitError
			if !errors.As(err, &le) || le.Limit != c.cap {
				t.Fatalf("got %v, want a *LimitError on %q", err, c.cap)
			}
			if ids != nil || st.FilesOpened != c.files {
				t.Fatalf("got %d rows, %+v; want none, %d files opened", len(ids), st, c.files)
			}
			if c.lim.MaxBytes > 0 && st.BytesRead > c.lim.MaxBytes {
				t.Fatalf("got %d bytes read, over the cap %d", st.BytesRead, c.lim.MaxBytes)
			}
		})
	}
}

// memFiles is a Files over objects in memory; readErr, when set, fails
// every read.
type memFiles struct {
	objs    map[string][]byte
	keys    []string
	readErr error
}

func (m *memFiles) List(ctx context.Context, visit func(icebergsync.Object) error) error {
	for _, k := range m.keys {
		if err := visit(icebergsync.Object{Key: k, Size: int64(len(m.objs[k]))}); err != nil {
			return err
		}
	}
	return nil
}

func (m *memFiles) ReadAt(ctx context.Context, o icebergsync.Object, p []byte, off int64) error {
	if m.readErr != nil {
		return fmt.Errorf("read %s: %w", m.Location(o.Key), m.readErr)
	}
	b, ok := m.objs[o.Key]
	if !ok {
		return fmt.Errorf("%w: %s", icebergsync.ErrNotFound, m.Location(o.Key))
	}
	if off < 0 || off+int64(len(p)) > int64(len(b)) {
		return fmt.Errorf("read %s: out of range", m.Location(o.Key))
	}
	copy(p, b[off:])
	return nil
}

func (m *memFiles) Location(key string) string { return "mem://t/" + key }

func TestStoreErrorsSurface(t *testing.T) {
	data := writeFile(t, "", "", schema, 100, rowsFrom(0, 10, 0))
	denied := errors.New("api error AccessDenied: Access Denied")
	for _, c := range []struct {
		name string
		m    *memFiles
		want error
	}{
		{"gone", &memFiles{objs: map[string][]byte{"p.parquet": data}, keys: []string{"p.parquet"}, readErr: icebergsync.ErrNotFound}, icebergsync.ErrNotFound},
		{"denied", &memFiles{objs: map[string][]byte{"p.parquet": data}, keys: []string{"p.parquet"}, readErr: denied}, denied},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, _, _, err := read(t, c.m, preview.Request{}, preview.Limits{})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "mem://t/p.parquet") || ids != nil {
				t.Fatalf("got %d rows, %v; want %v naming mem://t/p.parquet", len(ids), err, c.want)
			}
		})
	}
}

func TestContextCancelled(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "part-0.parquet", schema, 100, rowsFrom(0, 300, 0))
	ctx, cancel := context.WithCancel(context.Background())
	r, err := preview.Open(ctx, icebergsync.NewLocalFiles(dir), preview.Request{Table: "t", Schema: schema}, preview.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	cancel()
	if _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestGate(t *testing.T) {
	g := preview.NewGate(2, 3)
	var releases []func()
	enter := func(tenant string) error {
		release, err := g.Enter(tenant)
		if err == nil {
			releases = append(releases, release)
		}
		return err
	}
	for _, c := range []struct {
		tenant string
		full   bool
	}{
		{"a", false}, {"a", false}, {"a", true}, {"b", false}, {"c", true},
	} {
		err := enter(c.tenant)
		var le *preview.LimitError
		if full := errors.As(err, &le) && le.Limit == "concurrent previews"; full != c.full || (!c.full && err != nil) {
			t.Fatalf("enter %s: got %v, want full %v", c.tenant, err, c.full)
		}
	}
	releases[0]()
	releases[0]() // twice is once
	if err := enter("c"); err != nil {
		t.Fatalf("enter c after a release: %v", err)
	}
	if err := enter("b"); err == nil {
		t.Fatal("enter b: got nil, want full")
	}
}

// A nested column whose fields are required in the file and nullable in
// the registration is returned as the registered type; the other way
// round is a mismatch.
func TestNestedNullability(t *testing.T) {
	strict := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "pt", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64}), Nullable: true},
	}, nil)
	loose := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "pt", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), Nullable: true},
	}, nil)
	write := func(dir string, sc *arrow.Schema) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for i := range 50 {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			lb := b.Field(1).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int64Builder).AppendValues([]int64{int64(i), int64(i) * 2}, nil)
			sb := b.Field(2).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Float64Builder).Append(float64(i))
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		f, err := os.Create(filepath.Join(dir, "p.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	write(dir, strict)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batches, _, err := preview.Read(context.Background(), icebergsync.NewLocalFiles(dir), preview.Request{Table: "t", Schema: loose, Limit: 10}, preview.Limits{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != 1 || batches[0].NumRows() != 10 || !batches[0].Schema().Equal(loose) {
		t.Fatalf("got %d batches, want one of 10 rows of %s", len(batches), loose)
	}
	if got := batches[0].Column(1).(*array.List).ListValues().(*array.Int64).Value(6); got != 3 {
		t.Errorf("got tags value %d, want 3", got)
	}
	if got := batches[0].Column(2).(*array.Struct).Field(0).(*array.Float64).Value(4); got != 4 {
		t.Errorf("got pt.x %v, want 4", got)
	}
	batches[0].Release()

	dir = t.TempDir()
	write(dir, loose)
	_, _, err = preview.Read(context.Background(), icebergsync.NewLocalFiles(dir), preview.Request{Table: "t", Schema: strict}, preview.Limits{}, nil)
	var me *preview.MismatchError
	if !errors.As(err, &me) || !strings.Contains(me.Reason, `column "tags"`) {
		t.Fatalf("got %v, want a *MismatchError on tags", err)
	}
}

// Without statistics, or on a type whose order filters do not judge,
// nothing is skipped.
func TestNoSkippingWithoutTrustedStatistics(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "part-0.parquet", schema, 100, rowsFrom(0, 500, 0), parquet.WithStats(false))
	_, _, st, err := read(t, icebergsync.NewLocalFiles(dir), preview.Request{Columns: []int{0},
		Filters: []preview.Filter{{Column: 0, Op: preview.OpGt, Value: int64(10_000)}, {Column: 1, Op: preview.OpIsNull}}}, preview.Limits{})
	if err != nil || st.RowGroupsSkipped != 0 || st.RowGroupsRead != 5 || st.Rows != 500 {
		t.Fatalf("got %+v, %v; want 5 row groups read, none skipped", st, err)
	}

	ts := arrow.NewSchema([]arrow.Field{{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, ts)
	defer b.Release()
	for i := range 300 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(ts, &buf, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100)), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteBuffered(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, st, err = read(t, icebergsync.NewLocalFiles(dir), preview.Request{Schema: ts,
		Filters: []preview.Filter{{Column: 0, Op: preview.OpGt, Value: int64(1_000_000)}}}, preview.Limits{})
	if err != nil || st.RowGroupsSkipped != 0 || st.Rows != 300 {
		t.Fatalf("got %+v, %v; want nothing skipped on a timestamp", st, err)
	}
}
