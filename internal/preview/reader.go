package preview

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// Reading settings.
const (
	// bufferSize is what arrow-go's buffered stream reads of a column
	// chunk at a time: a preview reads the first pages of the asked
	// columns, never whole chunks.
	bufferSize = 128 << 10
	// maxBatch is the most rows in one batch.
	maxBatch = 8192
	// maxPage is the largest page read, compressed or not: arrow-go
	// writes pages of 1 MiB, Spark and DuckDB of about as much.
	maxPage = 64 << 20
	// maxSchemaDepth bounds the nesting of a file's schema before
	// pqarrow walks it recursively.
	maxSchemaDepth = 64
)

// errListed stops the listing at Limits.MaxListed.
var errListed = errors.New("listed enough")

// reader is Reader's state: the listed objects, the file being read and
// the counts.
type reader struct {
	files icebergsync.Files
	req   Request
	lim   Limits
	mem   memory.Allocator
	out   *arrow.Schema
	// cols are the registered fields read, in the order of out.
	cols []int

	// limit is the most rows returned; capped says it is Limits.MaxRows
	// rather than the caller's (one more row is then a *LimitError).
	limit  int64
	capped bool

	objs []icebergsync.Object
	// cut says the listing stopped at MaxListed with objects left.
	cut     bool
	nextObj int
	cur     *fileReader
	budget  budget
	// footerSeen is the largest footer read so far: the next file's first
	// read asks for a little more, so alike footers take one request.
	footerSeen int64
	// overflow says the last batch had rows past the limit.
	overflow bool
	st       Stats
	// err is the first error; every later call returns it.
	err  error
	done bool
}

// fileReader is one open file.
type fileReader struct {
	loc  string
	src  *source
	pf   *file.Reader
	fr   *pqarrow.FileReader
	plan []colPlan
	// leaves are the file's leaf columns read.
	leaves []int
	// rowGroups are the row groups to read, in order; rg indexes it.
	rowGroups []int
	rg        int
	rr        pqarrow.RecordReader
}

// colPlan says where one asked column comes from in a file.
type colPlan struct {
	// pos is the column's index in the file's record batches; -1: the
	// file lacks the column and it reads as nulls.
	pos int
	// relabel: the file's type differs from the registered one only in
	// names or nullability of nested fields (readable).
	relabel bool
}

func withDefaults(lim Limits) Limits {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = DefaultMaxFiles
	}
	if lim.MaxListed <= 0 {
		lim.MaxListed = DefaultMaxListed
	}
	if lim.MaxRows <= 0 {
		lim.MaxRows = DefaultMaxRows
	}
	if lim.MaxFooterBytes <= 0 {
		lim.MaxFooterBytes = DefaultMaxFooterBytes
	}
	return lim
}

func open(ctx context.Context, files icebergsync.Files, req Request, lim Limits, mem memory.Allocator) (*Reader, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	lim = withDefaults(lim)
	r := &reader{files: files, req: req, lim: lim, mem: mem, budget: budget{table: req.Table, max: lim.MaxBytes}}
	if err := r.plan(); err != nil {
		return nil, err
	}
	err := files.List(ctx, func(o icebergsync.Object) error {
		if len(r.objs) == lim.MaxListed {
			r.cut = true
			return errListed
		}
		r.objs = append(r.objs, o)
		return nil
	})
	if err != nil && !errors.Is(err, errListed) {
		return nil, fmt.Errorf("preview of %s: %w", req.Table, err)
	}
	r.st.FilesListed = len(r.objs)
	return &Reader{impl: r}, nil
}

// plan checks the request and works out the output schema and the limit.
func (r *reader) plan() error {
	req := r.req
	if req.Schema == nil {
		return fmt.Errorf("preview of %s: no registered schema", req.Table)
	}
	n := req.Schema.NumFields()
	r.cols = req.Columns
	if r.cols == nil {
		r.cols = make([]int, n)
		for i := range r.cols {
			r.cols[i] = i
		}
	}
	fields := make([]arrow.Field, len(r.cols))
	for i, c := range r.cols {
		if c < 0 || c >= n || (i > 0 && c <= r.cols[i-1]) {
			return fmt.Errorf("preview of %s: columns %v are not ascending field indices of %d fields", req.Table, req.Columns, n)
		}
		fields[i] = req.Schema.Field(c)
	}
	for _, f := range req.Filters {
		if f.Column < 0 || f.Column >= n {
			return fmt.Errorf("preview of %s: a filter on column %d of %d", req.Table, f.Column, n)
		}
	}
	r.out = arrow.NewSchema(fields, nil)
	r.limit = r.lim.MaxRows
	r.capped = true
	if req.Limit > 0 && req.Limit <= r.lim.MaxRows {
		r.limit, r.capped = req.Limit, false
	}
	return nil
}

func (r *reader) schema() *arrow.Schema { return r.out }

func (r *reader) stats() Stats {
	s := r.st
	s.BytesRead = r.budget.read
	return s
}

func (r *reader) close() error {
	r.closeFile()
	r.done = true
	return nil
}

func (r *reader) closeFile() {
	if r.cur == nil {
		return
	}
	if r.cur.rr != nil {
		r.cur.rr.Release()
	}
	r.cur = nil
}

func (r *reader) next(ctx context.Context) (rec arrow.RecordBatch, err error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, io.EOF
	}
	defer func() {
		if err != nil && err != io.EOF {
			r.err = err
			r.closeFile()
		}
		if err == io.EOF {
			r.done = true
			r.closeFile()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.st.Rows == r.limit && (!r.capped || r.overflow) {
			if r.capped {
				return nil, &LimitError{Table: r.req.Table, Limit: "rows", Max: r.lim.MaxRows}
			}
			return nil, io.EOF
		}
		if r.cur == nil {
			if r.nextObj == len(r.objs) {
				if r.cut {
					return nil, &LimitError{Table: r.req.Table, Limit: "objects listed", Max: int64(r.lim.MaxListed)}
				}
				return nil, io.EOF
			}
			if r.st.FilesOpened == r.lim.MaxFiles {
				return nil, &LimitError{Table: r.req.Table, Limit: "files opened", Max: int64(r.lim.MaxFiles)}
			}
			o := r.objs[r.nextObj]
			r.nextObj++
			f, err := r.openFile(ctx, o)
			if err != nil {
				return nil, err
			}
			r.cur = f
		}
		rec, err := r.readBatch(ctx)
		if err == io.EOF {
			r.closeFile()
			continue
		}
		if err != nil {
			return nil, err
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		if r.st.Rows == r.limit {
			// The probe past MaxRows found a row.
			rec.Release()
			r.overflow = true
			continue
		}
		if left := r.limit - r.st.Rows; rec.NumRows() > left {
			cut := rec.NewSlice(0, left)
			rec.Release()
			rec = cut
			r.overflow = true
		}
		r.st.Rows += rec.NumRows()
		return rec, nil
	}
}

// call runs one call into arrow-go for f with ctx in its source. A panic
// on corrupt input becomes an error; the source's own error (the byte cap,
// the store's, the context's), when there is one, is returned rather than
// arrow-go's wrapping of it; any other error names the file.
func (r *reader) call(ctx context.Context, f *fileReader, fn func() error) (err error) {
	f.src.ctx = ctx
	defer func() {
		f.src.ctx = nil
		if v := recover(); v != nil {
			err = fmt.Errorf("corrupt Parquet (%v)", v)
		}
		if err == nil || err == io.EOF {
			return
		}
		if serr := f.src.err; serr != nil {
			var le *LimitError
			if errors.As(serr, &le) || errors.Is(serr, context.Canceled) || errors.Is(serr, context.DeadlineExceeded) {
				err = serr
			} else {
				// The store's error names the location (Files' contract).
				err = fmt.Errorf("preview of %s: %w", r.req.Table, serr)
			}
			return
		}
		err = fmt.Errorf("preview of %s: read %s: %w", r.req.Table, f.loc, err)
	}()
	return fn()
}

// openFile reads o's footer, checks its schema against the registration
// and picks its row groups.
func (r *reader) openFile(ctx context.Context, o icebergsync.Object) (*fileReader, error) {
	r.st.FilesOpened++
	f := &fileReader{
		loc: r.files.Location(o.Key),
		src: &source{files: r.files, obj: o, budget: &r.budget},
	}
	mismatch := func(format string, args ...any) error {
		return &MismatchError{Table: r.req.Table, File: f.loc, Reason: fmt.Sprintf(format, args...)}
	}
	var md *metadata.FileMetaData
	err := r.call(ctx, f, func() error {
		guess := int64(8)
		if r.footerSeen > 0 {
			guess = r.footerSeen + r.footerSeen/4 + 8
		}
		buf, err := f.src.footer(guess, r.lim.MaxFooterBytes)
		if err != nil {
			return err
		}
		r.footerSeen = max(r.footerSeen, int64(len(buf)))
		md, err = metadata.NewFileMetaData(buf, nil)
		if err != nil {
			return &errNotParquet{fmt.Sprintf("not readable Parquet: %v", err)}
		}
		return nil
	})
	var np *errNotParquet
	if errors.As(err, &np) {
		return nil, mismatch("%s", np.reason)
	}
	if err != nil {
		if f.src.err == nil && !errors.As(err, new(*LimitError)) {
			// A panic decoding the footer.
			return nil, mismatch("not readable Parquet: %v", errors.Unwrap(err))
		}
		return nil, err
	}
	if md.IsSetEncryptionAlgorithm() {
		return nil, mismatch("an encrypted Parquet file, which lake does not read")
	}
	if depth(md.Schema.Root()) > maxSchemaDepth {
		return nil, mismatch("a schema nested over %d levels", maxSchemaDepth)
	}
	// pqarrow decodes the stored Arrow schema without checking its
	// flatbuffer, whose counts could make it allocate without bound;
	// catalog.DecodeSchema checks it first, bounded.
	if stored := md.KeyValueMetadata().FindValue("ARROW:schema"); stored != nil {
		raw, err := base64.StdEncoding.DecodeString(*stored)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(*stored)
		}
		if err == nil {
			_, err = catalog.DecodeSchema(raw)
		}
		if err != nil {
			return nil, mismatch("its stored Arrow schema does not decode: %v", err)
		}
	}
	md.SetSourceFileSize(o.Size)
	// arrow-go's page buffers are freed by finalizers, not by Close: they
	// come from Go's heap, and only the rows from mem.
	props := parquet.NewReaderProperties(nil)
	props.BufferedStreamEnabled = true
	props.BufferSize = bufferSize
	// A page header's sizes are what arrow-go allocates before reading
	// the page: no page over the byte cap, nor one that inflates past
	// maxPage.
	props.MaxCompressedPageSize = min(r.lim.MaxBytes, maxPage)
	props.MaxUncompressedPageSize = maxPage
	err = r.call(ctx, f, func() error {
		pf, err := file.NewParquetReader(io.NewSectionReader(f.src, 0, f.src.obj.Size), file.WithReadProps(props), file.WithMetadata(md))
		if err != nil {
			return err
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: false}, r.mem)
		if err != nil {
			return err
		}
		f.pf, f.fr = pf, fr
		return nil
	})
	if err != nil {
		if f.src.err == nil {
			return nil, mismatch("not readable Parquet: %v", errors.Unwrap(err))
		}
		return nil, err
	}
	if err := r.matchColumns(f); err != nil {
		return nil, err
	}
	r.pickRowGroups(f)
	return f, nil
}

// matchColumns maps each asked column to the file's, by name: the file's
// column must be readable as the registered type; a nullable column the
// file lacks reads as nulls, a required one is a mismatch.
func (r *reader) matchColumns(f *fileReader) error {
	m := f.fr.Manifest
	top := make([]int, 0, len(r.cols))
	f.plan = make([]colPlan, len(r.cols))
	for i, c := range r.cols {
		rf := r.req.Schema.Field(c)
		fi := fileField(m, rf.Name)
		if fi < 0 {
			if !rf.Nullable {
				return &MismatchError{Table: r.req.Table, File: f.loc, Reason: fmt.Sprintf("column %q: required by the table, missing from the file", rf.Name)}
			}
			f.plan[i] = colPlan{pos: -1}
			continue
		}
		ff := m.Fields[fi].Field
		if ff.Nullable && !rf.Nullable {
			return &MismatchError{Table: r.req.Table, File: f.loc, Reason: fmt.Sprintf("column %q: nullable in the file, required by the table", rf.Name)}
		}
		if !readable(ff.Type, rf.Type) {
			return &MismatchError{Table: r.req.Table, File: f.loc, Reason: fmt.Sprintf("column %q: the file's type %s is not the table's %s", rf.Name, ff.Type, rf.Type)}
		}
		f.plan[i] = colPlan{relabel: !arrow.TypeEqual(ff.Type, rf.Type)}
		top = append(top, fi)
		f.leaves = append(f.leaves, leaves(&m.Fields[fi], nil)...)
	}
	if len(f.leaves) == 0 {
		return nil
	}
	slices.Sort(f.leaves)
	// pqarrow returns the fields of the leaves asked in the order
	// GetFieldIndices gives them.
	order, err := m.GetFieldIndices(f.leaves)
	if err != nil {
		return &MismatchError{Table: r.req.Table, File: f.loc, Reason: fmt.Sprintf("not readable Parquet: %v", err)}
	}
	j := 0
	for i := range f.plan {
		if f.plan[i].pos == -1 {
			continue
		}
		f.plan[i].pos = slices.Index(order, top[j])
		j++
	}
	return nil
}

// fileField is the index of the file's top-level field named name, -1
// when there is none.
func fileField(m *pqarrow.SchemaManifest, name string) int {
	for i, sf := range m.Fields {
		if sf.Field != nil && sf.Field.Name == name {
			return i
		}
	}
	return -1
}

// leaves appends the leaf column indices under sf.
func leaves(sf *pqarrow.SchemaField, out []int) []int {
	if sf.IsLeaf() {
		return append(out, sf.ColIndex)
	}
	for i := range sf.Children {
		out = leaves(&sf.Children[i], out)
	}
	return out
}

// depth is a schema's nesting, the root being 1, walked with a stack of
// its own.
func depth(root *schema.GroupNode) int {
	type item struct {
		n schema.Node
		d int
	}
	most := 0
	stack := []item{{root, 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		most = max(most, it.d)
		if most > maxSchemaDepth {
			return most
		}
		if g, ok := it.n.(*schema.GroupNode); ok {
			for i := range g.NumFields() {
				stack = append(stack, item{g.Field(i), it.d + 1})
			}
		}
	}
	return most
}

// pickRowGroups keeps the row groups no filter rules out.
func (r *reader) pickRowGroups(f *fileReader) {
	md := f.pf.MetaData()
	type stat struct {
		leaf int // -1: the file lacks the column
		t    arrow.DataType
		f    Filter
	}
	var filters []stat
	for _, flt := range r.req.Filters {
		rf := r.req.Schema.Field(flt.Column)
		fi := fileField(f.fr.Manifest, rf.Name)
		if fi < 0 {
			if rf.Nullable {
				filters = append(filters, stat{leaf: -1, f: flt})
			}
			continue
		}
		sf := &f.fr.Manifest.Fields[fi]
		if !sf.IsLeaf() || !arrow.TypeEqual(sf.Field.Type, rf.Type) {
			continue
		}
		filters = append(filters, stat{leaf: sf.ColIndex, t: rf.Type, f: flt})
	}
	for rg := range md.NumRowGroups() {
		rgm := md.RowGroup(rg)
		skip := false
		for _, s := range filters {
			if s.leaf == -1 {
				// Every row is null: only IS NULL can match.
				skip = s.f.Op != OpIsNull
			} else if col, err := rgm.ColumnChunk(s.leaf); err == nil {
				skip = canSkip(col, rgm.NumRows(), s.t, s.f)
			}
			if skip {
				break
			}
		}
		if skip {
			r.st.RowGroupsSkipped++
			continue
		}
		f.rowGroups = append(f.rowGroups, rg)
	}
}

// readBatch reads the open file's next batch as the output schema, or
// io.EOF when the file has no more row groups to read.
func (r *reader) readBatch(ctx context.Context) (arrow.RecordBatch, error) {
	f := r.cur
	for {
		if f.rr == nil {
			if f.rg == len(f.rowGroups) {
				return nil, io.EOF
			}
			rg := f.rowGroups[f.rg]
			f.rg++
			nrows := f.pf.MetaData().RowGroup(rg).NumRows()
			if nrows <= 0 {
				continue
			}
			r.st.RowGroupsRead++
			// want is the rows still wanted, with the one that tells
			// whether a capped preview had more.
			want := r.limit - r.st.Rows
			if r.capped {
				want++
			}
			if len(f.leaves) == 0 {
				// Only columns the file lacks (or none): one batch of
				// nulls a row group, up to the limit.
				return r.assemble(f, nil, min(nrows, want))
			}
			f.fr.Props.BatchSize = max(1, min(want, maxBatch))
			err := r.call(ctx, f, func() error {
				rr, err := f.fr.GetRecordReader(ctx, f.leaves, []int{rg})
				f.rr = rr
				return err
			})
			if err != nil {
				return nil, err
			}
		}
		var rec arrow.RecordBatch
		err := r.call(ctx, f, func() error {
			if f.rr.Next() {
				rec = f.rr.RecordBatch()
				return nil
			}
			return f.rr.Err()
		})
		if err != nil {
			return nil, err
		}
		if rec == nil {
			f.rr.Release()
			f.rr = nil
			continue
		}
		return r.assemble(f, rec, rec.NumRows())
	}
}

// assemble builds a batch of the output schema from the file's batch rec
// (owned by the record reader) of n rows.
func (r *reader) assemble(f *fileReader, rec arrow.RecordBatch, n int64) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(f.plan))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, p := range f.plan {
		t := r.out.Field(i).Type
		switch {
		case p.pos < 0:
			cols[i] = array.MakeArrayOfNull(r.mem, t, int(n))
		case p.relabel:
			d := relabel(rec.Column(p.pos).Data(), t)
			cols[i] = array.MakeFromData(d)
			d.Release()
		default:
			c := rec.Column(p.pos)
			c.Retain()
			cols[i] = c
		}
	}
	return array.NewRecordBatch(r.out, cols, n), nil
}

func read(ctx context.Context, files icebergsync.Files, req Request, lim Limits, mem memory.Allocator) ([]arrow.RecordBatch, Stats, error) {
	rd, err := open(ctx, files, req, lim, mem)
	if err != nil {
		return nil, Stats{}, err
	}
	defer rd.Close()
	var out []arrow.RecordBatch
	for {
		rec, err := rd.Next(ctx)
		if err == io.EOF {
			return out, rd.Stats(), nil
		}
		if err != nil {
			for _, b := range out {
				b.Release()
			}
			return nil, rd.Stats(), err
		}
		out = append(out, rec)
	}
}
