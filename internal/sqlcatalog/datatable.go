package sqlcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lake-catalog/lake/internal/preview"
)

// Registered tables' rows. A statement naming a registered table (which the
// Checker reports as ErrTableData) is run, when the engine has Data, over
// a virtual table of that table's rows: the table is mounted on the
// engine's own database (its namespace attached as a schema, so that
// "sales.orders" and "orders" both resolve), the statement is compiled
// there (tables mounted one by one until every name resolves), and SQLite
// reads the rows through the module below, which reads them with package
// preview: only the columns the statement uses (colUsed), the row groups
// whose footer statistics do not rule out its simple comparisons
// (=, <, <=, >, >=, IS NULL, IS NOT NULL on a column against a literal;
// SQLite still applies every condition itself), and no further than the
// rows SQLite asks for (the LIMIT, when SQLite hands it over, sizes the
// first read). Everything else SQLite does over the rows is allowed, within
// the caps of preview.Limits, the statement's time budget and its result
// caps.
//
// The module's callbacks are Go closures over the engine's dataTables
// (SQLite holds their addresses, cFunction); its tables and cursors are
// C structs SQLite allocates through us, mapped to their Go state by
// address. The engine runs one statement at a time, so the state is used
// from one goroutine at a time.
//
// A result column that is a registered column as it is (SQLite's column
// origin) keeps the registered Arrow type (typedColumn): the rows are
// handed to SQLite as its own kinds (integers, reals, texts, blobs) and
// laid out again in the registered type.

// Data reads the rows of an engine's registered tables.
type Data interface {
	// Schema is table ns.name's registered schema; an error when it has
	// none the engine can read.
	Schema(ns, name string) (*arrow.Schema, error)
	// Open starts reading its rows for one statement (req.Schema is
	// Schema's answer). ctx is the statement's.
	Open(ctx context.Context, ns, name string, req preview.Request) (Rows, error)
}

// Rows is one read of a table's rows (preview.Reader satisfies it).
type Rows interface {
	// Next returns the next batch, or io.EOF.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// maxDataSchemas is how many namespaces an engine may have attached:
// SQLite's SQLITE_MAX_ATTACHED (10) but information_schema's.
const maxDataSchemas = sqlite3.SQLITE_MAX_ATTACHED - 1

// maxMounts is how many registered tables one statement may read. Each
// statement mounts its tables from nothing (queryData), so their
// namespaces always fit the attached schemas: the constant below does not
// compile otherwise.
const maxMounts = 8

const _ = uint(maxDataSchemas - maxMounts)

// dataModuleName is the data tables' module.
const dataModuleName = "lake_table"

// dataTable is a mounted registered table.
type dataTable struct {
	ns, name string
	schema   *arrow.Schema
	decl     string // its CREATE TABLE for sqlite3_declare_vtab
}

// dataPlan is what a BestIndex call chose, for the Filter it names.
type dataPlan struct {
	columns []int // the registered fields read
	filters []planFilter
	limit   int // argv index (0-based) of the LIMIT, or -1
	offset  int // of the OFFSET, or -1
}

type planFilter struct {
	column int
	op     preview.Op
	arg    int // argv index, or -1 for IS [NOT] NULL
}

// dataCursor is one scan of a dataTable.
type dataCursor struct {
	t       *dataTable
	rows    Rows
	rec     arrow.RecordBatch
	row     int
	eof     bool
	rowid   int64
	index   []int // vtab column → rec column, -1 when not read
	charged int64
}

// dataTables are an engine's mounted tables and their module.
type dataTables struct {
	src    Data
	tables map[string]*dataTable // "ns\x00name"
	// schemas are the attached namespaces, in the order attached.
	schemas []string
	vtabs   map[uintptr]*dataTable
	cursors map[uintptr]*dataCursor
	plans   []dataPlan
	// pending is the table a CREATE VIRTUAL TABLE being run mounts.
	pending *dataTable
	// The running statement's context and reservation, and the first
	// failure a callback met (SQLite only carries a message).
	ctx context.Context
	r   *Reservation
	err error
	// module is the sqlite3_module in C memory; callbacks keeps the
	// closures SQLite holds the addresses of.
	module    uintptr
	callbacks []any
	// scratch is C memory each text or blob value is copied into before
	// SQLite copies it (SQLITE_TRANSIENT): a Go slice's address is no
	// pointer SQLite may read through, since the stack it may live on
	// moves when a call grows it (scratchCap bytes at scratch).
	scratch    uintptr
	scratchCap int
	// opens counts the statement's scans (xFilter calls).
	opens int
}

// maxScans is how many scans of registered tables one statement may
// start: a nested loop join or an IN list scans the inner table once per
// outer row or value, each a read of its files.
const maxScans = 256

// bytes hands SQLite b as a text or blob value, copied through the
// scratch buffer.
func (d *dataTables) bytes(tls *libc.TLS, ctx uintptr, b []byte, blob bool) {
	if len(b) > d.scratchCap {
		p := sqlite3.Xsqlite3_realloc64(tls, d.scratch, uint64(len(b)))
		if p == 0 {
			sqlite3.Xsqlite3_result_error_nomem(tls, ctx)
			return
		}
		d.scratch, d.scratchCap = p, len(b)
	}
	if len(b) > 0 {
		copy(cSlice[byte](d.scratch, len(b)), b)
	}
	if blob {
		sqlite3.Xsqlite3_result_blob64(tls, ctx, d.scratch, uint64(len(b)), transient)
	} else {
		sqlite3.Xsqlite3_result_text64(tls, ctx, d.scratch, uint64(len(b)), transient, sqlite3.SQLITE_UTF8)
	}
}

// newDataTables registers the module on db.
func newDataTables(tls *libc.TLS, db uintptr, src Data) (*dataTables, error) {
	d := &dataTables{src: src, tables: map[string]*dataTable{}, vtabs: map[uintptr]*dataTable{}, cursors: map[uintptr]*dataCursor{}}
	d.module = zeroed(tls, moduleSize)
	if d.module == 0 {
		return nil, fmt.Errorf("sqlcatalog: data tables: out of memory")
	}
	m := at[sqlite3.Sqlite3_module](d.module)
	create := d.connect
	bestIndex, disconnect, open, closeCursor := d.bestIndex, d.disconnect, d.open, d.close
	filter, next, eof, column, rowid := d.filter, d.next, d.eof, d.column, d.rowid
	d.callbacks = []any{create, bestIndex, disconnect, open, closeCursor, filter, next, eof, column, rowid}
	m.FiVersion = 1
	m.FxCreate, m.FxConnect = cFunction(create), cFunction(create)
	m.FxBestIndex = cFunction(bestIndex)
	m.FxDisconnect, m.FxDestroy = cFunction(disconnect), cFunction(disconnect)
	m.FxOpen, m.FxClose = cFunction(open), cFunction(closeCursor)
	m.FxFilter, m.FxNext, m.FxEof = cFunction(filter), cFunction(next), cFunction(eof)
	m.FxColumn, m.FxRowid = cFunction(column), cFunction(rowid)
	z, err := libc.CString(dataModuleName)
	if err != nil {
		sqlite3.Xsqlite3_free(tls, d.module)
		return nil, err
	}
	defer libc.Xfree(tls, z)
	if rc := sqlite3.Xsqlite3_create_module_v2(tls, db, z, d.module, 0, 0); rc != sqlite3.SQLITE_OK {
		sqlite3.Xsqlite3_free(tls, d.module)
		return nil, fmt.Errorf("sqlcatalog: data tables module: %s", libc.GoString(sqlite3.Xsqlite3_errstr(tls, rc)))
	}
	return d, nil
}

// free gives the module back, once the connection is closed.
func (d *dataTables) free(tls *libc.TLS) {
	if d != nil && d.module != 0 {
		sqlite3.Xsqlite3_free(tls, d.module)
		d.module = 0
	}
	if d != nil && d.scratch != 0 {
		sqlite3.Xsqlite3_free(tls, d.scratch)
		d.scratch, d.scratchCap = 0, 0
	}
}

// begin and end bracket a statement: its context and reservation, a fresh
// plan list and failure.
func (d *dataTables) begin(ctx context.Context, r *Reservation) {
	d.ctx, d.r, d.err, d.plans, d.opens = ctx, r, nil, d.plans[:0], 0
}

func (d *dataTables) end() {
	for p, c := range d.cursors {
		c.closeRows(d)
		delete(d.cursors, p)
	}
	d.ctx, d.r = nil, nil
}

// fail records err as the statement's failure and sets pVtab's message.
func (d *dataTables) fail(tls *libc.TLS, pVtab uintptr, err error) int32 {
	if d.err == nil {
		d.err = err
	}
	setVtabError(tls, pVtab, err.Error())
	return sqlite3.SQLITE_ERROR
}

func setVtabError(tls *libc.TLS, pVtab uintptr, msg string) {
	v := at[sqlite3.Sqlite3_vtab](pVtab)
	if v.FzErrMsg != 0 {
		sqlite3.Xsqlite3_free(tls, v.FzErrMsg)
	}
	v.FzErrMsg = cStringSQLite(tls, msg)
}

// cStringSQLite is s in SQLite's allocator, NUL-terminated (0 when out of
// memory), for SQLite to free.
func cStringSQLite(tls *libc.TLS, s string) uintptr {
	p := sqlite3.Xsqlite3_malloc64(tls, uint64(len(s)+1))
	if p != 0 {
		b := cSlice[byte](p, len(s)+1)
		copy(b, s)
		b[len(s)] = 0
	}
	return p
}

// quoteIdent is name as an SQL identifier.
func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// reservedSchemas are the schema names SQLite keeps for itself or the
// engine uses: a namespace of one of these names cannot be attached.
var reservedSchemas = []string{"main", "temp", "information_schema"}

// mount makes registered table ns.name a virtual table of the engine's
// database, attaching its namespace first. It runs with the engine held.
func (e *Engine) mount(tls *libc.TLS, ns, name string) error {
	d := e.data
	key := ns + "\x00" + name
	if _, ok := d.tables[key]; ok {
		return nil
	}
	if slices.ContainsFunc(reservedSchemas, func(r string) bool { return strings.EqualFold(r, ns) }) {
		return invalid("sql: the rows of %s.%s cannot be read through SQL: its namespace's name is SQLite's own", ns, name)
	}
	for _, s := range d.schemas {
		if strings.EqualFold(s, ns) && s != ns {
			return invalid("sql: the rows of %s.%s cannot be read in this statement: namespace %s differs from %s only in case, and SQL names are case-insensitive", ns, name, ns, s)
		}
	}
	schema, err := d.src.Schema(ns, name)
	if err != nil {
		return &Error{Kind: ErrData, Msg: fmt.Sprintf("sql: %s.%s: %v", ns, name, err), Offset: -1, Namespace: ns, Table: name, Err: err}
	}
	t := &dataTable{ns: ns, name: name, schema: schema, decl: declareTable(schema)}
	e.mounting = true
	defer func() { e.mounting = false }()
	if !slices.Contains(d.schemas, ns) {
		if err := e.exec(tls, "ATTACH ':memory:' AS "+quoteIdent(ns)); err != nil {
			return &Error{Kind: ErrData, Msg: fmt.Sprintf("sql: the rows of %s.%s cannot be read through SQL: namespace %s: %v", ns, name, ns, err), Offset: -1, Err: err}
		}
		d.schemas = append(d.schemas, ns)
	}
	d.pending = t
	defer func() { d.pending = nil }()
	if err := e.exec(tls, "PRAGMA query_only = 0; CREATE VIRTUAL TABLE "+quoteIdent(ns)+"."+quoteIdent(name)+" USING "+dataModuleName+"; PRAGMA query_only = 1"); err != nil {
		if rerr := e.exec(tls, "PRAGMA query_only = 1"); rerr != nil {
			// The connection would stay writable: close it; later
			// statements fail (errClosed) until the engine is rebuilt.
			sqlite3.Xsqlite3_close_v2(tls, e.handle)
			e.handle = 0
		}
		// SQLite's reason: two columns of one name (SQL names ignore
		// case), more columns than it takes, and the like.
		return &Error{Kind: ErrData, Msg: fmt.Sprintf("sql: the rows of %s.%s cannot be read through SQL: %v", ns, name, err), Offset: -1, Err: err}
	}
	d.tables[key] = t
	return nil
}

// unmountAll detaches every namespace mounted, and so their tables.
func (e *Engine) unmountAll(tls *libc.TLS) error {
	d := e.data
	e.mounting = true
	defer func() { e.mounting = false }()
	for len(d.schemas) > 0 {
		ns := d.schemas[0]
		if err := e.exec(tls, "DETACH "+quoteIdent(ns)); err != nil {
			return fmt.Errorf("sqlcatalog: detach %s: %w", ns, err)
		}
		d.schemas = d.schemas[1:]
		for k, t := range d.tables {
			if t.ns == ns {
				delete(d.tables, k)
			}
		}
	}
	return nil
}

// declareTable is the CREATE TABLE a registered schema is declared as:
// each field under its name, with SQLite's type of the values handed over
// (sqliteType).
func declareTable(s *arrow.Schema) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE x(")
	for i, f := range s.Fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(f.Name))
		b.WriteString(" ")
		b.WriteString(sqliteType(f.Type))
	}
	b.WriteString(")")
	return b.String()
}

// sqliteType is the declared type a registered column's values have in
// SQLite: integers (booleans as 0 and 1, durations as their count of the
// unit), reals, numerics (decimal128, see resultValue), texts (dates,
// times and timestamps as SQLite's own date and time text; decimal256 as
// its text, nested values as JSON), blobs.
func sqliteType(t arrow.DataType) string {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.BOOL, arrow.DURATION:
		return "INTEGER"
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return "REAL"
	case arrow.DECIMAL128:
		return "NUMERIC"
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY, arrow.BINARY_VIEW:
		return "BLOB"
	default:
		return "TEXT"
	}
}

// queryData runs a statement over registered tables, first the one the
// Checker named, for Query: within the statement's budget (ctx), with the
// engine held and open.
func (e *Engine) queryData(ctx context.Context, query string, args []any, r *Reservation, first *Error) (*Result, error) {
	tls := libc.NewTLS()
	defer tls.Close()
	// Each statement mounts what it names, from nothing: a namespace left
	// attached by an earlier statement would resolve an unqualified name
	// to its table without asking, even one that is in two namespaces.
	if err := e.unmountAll(tls); err != nil {
		return nil, err
	}
	ns, name := first.Namespace, first.Table
	c := compiler{tls: tls, db: e.handle, out: &e.out, denied: &e.denied}
	for mounts := 0; ; mounts++ {
		if mounts == maxMounts {
			return nil, invalid("sql: the statement reads more than %d registered tables", maxMounts)
		}
		if err := e.mount(tls, ns, name); err != nil {
			return nil, err
		}
		e.data.begin(ctx, r)
		err := c.check(query, e.tables)
		e.data.end()
		var se *Error
		if errors.As(err, &se) && se.Kind == ErrTableData {
			ns, name = se.Namespace, se.Table
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	e.denied = ""
	e.data.begin(ctx, r)
	defer e.data.end()
	res, err := e.run(ctx, query, args, r)
	if err != nil {
		if de := e.data.err; de != nil && ctx.Err() == nil {
			return nil, dataError(de)
		}
		return nil, e.classify(ctx, err)
	}
	res.Data = true
	return res, nil
}

// dataError is a data table's failure as an *Error.
func dataError(err error) error {
	var se *Error
	if errors.As(err, &se) {
		return se
	}
	var le *preview.LimitError
	if errors.As(err, &le) {
		return &Error{Kind: ErrLimit, Msg: "sql: " + le.Error(), Offset: -1, Err: err}
	}
	return &Error{Kind: ErrData, Msg: "sql: " + err.Error(), Offset: -1, Err: err}
}

// connect is xCreate and xConnect: argv[1] and argv[2] are the schema
// (namespace) and table names.
func (d *dataTables) connect(tls *libc.TLS, db, _ uintptr, argc int32, argv, ppVtab, _ uintptr) int32 {
	t := d.pending
	if argc >= 3 {
		args := cSlice[uintptr](argv, int(argc))
		if k, ok := d.tables[libc.GoString(args[1])+"\x00"+libc.GoString(args[2])]; ok {
			t = k
		}
	}
	if t == nil {
		return sqlite3.SQLITE_ERROR
	}
	z, err := libc.CString(t.decl)
	if err != nil {
		return sqlite3.SQLITE_NOMEM
	}
	defer libc.Xfree(tls, z)
	if rc := sqlite3.Xsqlite3_declare_vtab(tls, db, z); rc != sqlite3.SQLITE_OK {
		return rc
	}
	p := zeroed(tls, unsafe.Sizeof(sqlite3.Sqlite3_vtab{}))
	if p == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	d.vtabs[p] = t
	*at[uintptr](ppVtab) = p
	return sqlite3.SQLITE_OK
}

func (d *dataTables) disconnect(tls *libc.TLS, pVtab uintptr) int32 {
	delete(d.vtabs, pVtab)
	v := at[sqlite3.Sqlite3_vtab](pVtab)
	if v.FzErrMsg != 0 {
		sqlite3.Xsqlite3_free(tls, v.FzErrMsg)
	}
	sqlite3.Xsqlite3_free(tls, pVtab)
	return sqlite3.SQLITE_OK
}

// constraintOps are the comparisons handed to preview as filters.
var constraintOps = map[uint8]preview.Op{
	sqlite3.SQLITE_INDEX_CONSTRAINT_EQ:        preview.OpEq,
	sqlite3.SQLITE_INDEX_CONSTRAINT_LT:        preview.OpLt,
	sqlite3.SQLITE_INDEX_CONSTRAINT_LE:        preview.OpLe,
	sqlite3.SQLITE_INDEX_CONSTRAINT_GT:        preview.OpGt,
	sqlite3.SQLITE_INDEX_CONSTRAINT_GE:        preview.OpGe,
	sqlite3.SQLITE_INDEX_CONSTRAINT_ISNULL:    preview.OpIsNull,
	sqlite3.SQLITE_INDEX_CONSTRAINT_ISNOTNULL: preview.OpIsNotNull,
}

// bestIndex plans a scan: the columns used, the comparisons against
// values (argv; none is omitted, SQLite checks every row itself), and the
// LIMIT and OFFSET when they bound the scan itself (the scan is lazy, so
// they only size the first read). Its idxNum indexes d.plans.
func (d *dataTables) bestIndex(tls *libc.TLS, pVtab, pInfo uintptr) int32 {
	t := d.vtabs[pVtab]
	if t == nil {
		return sqlite3.SQLITE_ERROR
	}
	info := at[sqlite3.Sqlite3_index_info](pInfo)
	n := int(info.FnConstraint)
	constraints := cSlice[sqlite3.Tsqlite3_index_constraint](info.FaConstraint, n)
	usage := cSlice[sqlite3.Tsqlite3_index_constraint_usage](info.FaConstraintUsage, n)
	// No column used (count(*), SELECT 1 FROM t) reads none, not all.
	p := dataPlan{columns: []int{}, limit: -1, offset: -1}
	used := uint64(info.FcolUsed)
	for i := range t.schema.NumFields() {
		if i >= 63 && used&(1<<63) != 0 || i < 63 && used&(1<<i) != 0 {
			p.columns = append(p.columns, i)
		}
	}
	// The LIMIT and OFFSET count the scan's own rows only when nothing
	// comes between the scan and them: no other constraint (SQLite checks
	// every one itself), no ORDER BY (never consumed here) and no
	// DISTINCT. SQLite hands them over with an ORDER BY too.
	others := 0
	for _, c := range constraints {
		if c.Fop != sqlite3.SQLITE_INDEX_CONSTRAINT_LIMIT && c.Fop != sqlite3.SQLITE_INDEX_CONSTRAINT_OFFSET {
			others++
		}
	}
	if info.FnOrderBy > 0 || sqlite3.Xsqlite3_vtab_distinct(tls, pInfo) != 0 {
		others++
	}
	arg := int32(0)
	for i, c := range constraints {
		if c.Fusable == 0 {
			continue
		}
		switch c.Fop {
		case sqlite3.SQLITE_INDEX_CONSTRAINT_LIMIT, sqlite3.SQLITE_INDEX_CONSTRAINT_OFFSET:
			if others > 0 {
				continue
			}
			arg++
			usage[i].FargvIndex = arg
			if c.Fop == sqlite3.SQLITE_INDEX_CONSTRAINT_LIMIT {
				p.limit = int(arg - 1)
			} else {
				p.offset = int(arg - 1)
			}
			continue
		}
		op, ok := constraintOps[c.Fop]
		if !ok || c.FiColumn < 0 || int(c.FiColumn) >= t.schema.NumFields() {
			continue
		}
		nullTest := op == preview.OpIsNull || op == preview.OpIsNotNull
		switch {
		case nullTest && isFloat(t.schema.Field(int(c.FiColumn)).Type):
			// SQLite holds a NaN as NULL: IS NULL is true of rows the
			// footer counts as not null.
			continue
		case !nullTest && !binaryCollation(tls, pInfo, i):
			// Under NOCASE or RTRIM, bytes that differ compare equal: the
			// footer's byte-ordered bounds cannot rule a row group out.
			continue
		}
		f := planFilter{column: int(c.FiColumn), op: op, arg: -1}
		if !nullTest {
			arg++
			usage[i].FargvIndex = arg
			f.arg = int(arg - 1)
		}
		p.filters = append(p.filters, f)
	}
	info.FidxNum = int32(len(d.plans))
	d.plans = append(d.plans, p)
	// A scan reads files: costly whatever the plan; filters may skip
	// row groups.
	cost := 1e6
	if len(p.filters) > 0 {
		cost = 1e5
	}
	info.FestimatedCost = cost
	info.FestimatedRows = int64(cost)
	return sqlite3.SQLITE_OK
}

func (d *dataTables) open(tls *libc.TLS, pVtab, ppCursor uintptr) int32 {
	t := d.vtabs[pVtab]
	if t == nil {
		return sqlite3.SQLITE_ERROR
	}
	p := zeroed(tls, unsafe.Sizeof(sqlite3.Sqlite3_vtab_cursor{}))
	if p == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	at[sqlite3.Sqlite3_vtab_cursor](p).FpVtab = pVtab
	d.cursors[p] = &dataCursor{t: t, eof: true}
	*at[uintptr](ppCursor) = p
	return sqlite3.SQLITE_OK
}

func (d *dataTables) close(tls *libc.TLS, pCursor uintptr) int32 {
	if c := d.cursors[pCursor]; c != nil {
		c.closeRows(d)
		delete(d.cursors, pCursor)
	}
	sqlite3.Xsqlite3_free(tls, pCursor)
	return sqlite3.SQLITE_OK
}

// closeRows ends c's read: its batch released and uncharged.
func (c *dataCursor) closeRows(d *dataTables) {
	c.dropBatch(d)
	if c.rows != nil {
		c.rows.Close() //nolint:errcheck // a read's close frees memory only
		c.rows = nil
	}
	c.eof = true
}

func (c *dataCursor) dropBatch(d *dataTables) {
	if c.rec != nil {
		c.rec.Release()
		c.rec = nil
	}
	if c.charged > 0 && d.r != nil {
		d.r.Shrink(c.charged)
	}
	c.charged = 0
}

// argValue is argv[i] as a filter's value: int64, float64, string or
// []byte (copied), or nil for NULL.
func argValue(tls *libc.TLS, argv uintptr, argc int32, i int) any {
	if i < 0 || i >= int(argc) {
		return nil
	}
	v := cSlice[uintptr](argv, int(argc))[i]
	switch sqlite3.Xsqlite3_value_type(tls, v) {
	case sqlite3.SQLITE_INTEGER:
		return sqlite3.Xsqlite3_value_int64(tls, v)
	case sqlite3.SQLITE_FLOAT:
		return sqlite3.Xsqlite3_value_double(tls, v)
	case sqlite3.SQLITE_TEXT:
		p := sqlite3.Xsqlite3_value_text(tls, v)
		return string(cBytes(p, sqlite3.Xsqlite3_value_bytes(tls, v)))
	case sqlite3.SQLITE_BLOB:
		p := sqlite3.Xsqlite3_value_blob(tls, v)
		return slices.Clone(cBytes(p, sqlite3.Xsqlite3_value_bytes(tls, v)))
	}
	return nil
}

// filter starts a scan by plan idxNum.
func (d *dataTables) filter(tls *libc.TLS, pCursor uintptr, idxNum int32, _ uintptr, argc int32, argv uintptr) int32 {
	c := d.cursors[pCursor]
	pVtab := at[sqlite3.Sqlite3_vtab_cursor](pCursor).FpVtab
	if c == nil || idxNum < 0 || int(idxNum) >= len(d.plans) || d.ctx == nil {
		return sqlite3.SQLITE_ERROR
	}
	if d.opens++; d.opens > maxScans {
		return d.fail(tls, pVtab, &Error{Kind: ErrLimit, Offset: -1, Msg: fmt.Sprintf(
			"sql: the statement scans registered tables more than %d times (a join or an IN list reads the inner table once per outer row or value, each a read of its files); join on fewer rows, or read each table once in a CTE", maxScans)})
	}
	c.closeRows(d)
	p := d.plans[idxNum]
	req := preview.Request{Table: c.t.ns + "." + c.t.name, Schema: c.t.schema, Columns: p.columns}
	if p.limit >= 0 {
		if n, ok := argValue(tls, argv, argc, p.limit).(int64); ok && n >= 0 {
			req.Limit = n
			if off, ok := argValue(tls, argv, argc, p.offset).(int64); ok && off > 0 {
				req.Limit += off
			}
			if req.Limit == 0 {
				c.eof = true
				return sqlite3.SQLITE_OK
			}
		}
	}
	for _, f := range p.filters {
		pf := preview.Filter{Column: f.column, Op: f.op}
		if f.arg >= 0 {
			if pf.Value = argValue(tls, argv, argc, f.arg); pf.Value == nil || !sameClass(c.t.schema.Field(f.column).Type, pf.Value) {
				// A comparison with NULL matches nothing, and one between
				// storage classes (SQLite orders numbers < texts < blobs)
				// is not the footer's order: SQLite sees to both.
				continue
			}
		}
		req.Filters = append(req.Filters, pf)
	}
	c.index = make([]int, c.t.schema.NumFields())
	for i := range c.index {
		c.index[i] = -1
	}
	for k, col := range p.columns {
		c.index[col] = k
	}
	rows, err := d.src.Open(d.ctx, c.t.ns, c.t.name, req)
	if err != nil {
		return d.fail(tls, pVtab, err)
	}
	c.rows, c.eof, c.row, c.rowid = rows, false, -1, 0
	return d.advance(tls, c, pVtab)
}

// advance moves c to its next row, reading the next batch when the one
// it holds is done.
func (d *dataTables) advance(tls *libc.TLS, c *dataCursor, pVtab uintptr) int32 {
	c.row++
	c.rowid++
	for c.rec == nil || c.row >= int(c.rec.NumRows()) {
		c.dropBatch(d)
		rec, err := c.rows.Next(d.ctx)
		if errors.Is(err, io.EOF) {
			c.eof = true
			return sqlite3.SQLITE_OK
		}
		if err != nil {
			c.eof = true
			return d.fail(tls, pVtab, err)
		}
		c.rec, c.row = rec, 0
		if size := batchSize(rec); d.r != nil {
			if err := d.r.Grow(size); err != nil {
				c.eof = true
				return d.fail(tls, pVtab, err)
			}
			c.charged = size
		}
	}
	return sqlite3.SQLITE_OK
}

// batchSize is the bytes rec's buffers hold.
func batchSize(rec arrow.RecordBatch) int64 {
	var n int64
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, col := range rec.Columns() {
		walk(col.Data())
	}
	return n
}

func (d *dataTables) next(tls *libc.TLS, pCursor uintptr) int32 {
	c := d.cursors[pCursor]
	if c == nil || c.eof {
		return sqlite3.SQLITE_OK
	}
	return d.advance(tls, c, at[sqlite3.Sqlite3_vtab_cursor](pCursor).FpVtab)
}

func (d *dataTables) eof(_ *libc.TLS, pCursor uintptr) int32 {
	if c := d.cursors[pCursor]; c == nil || c.eof {
		return 1
	}
	return 0
}

func (d *dataTables) rowid(_ *libc.TLS, pCursor, pRowid uintptr) int32 {
	if c := d.cursors[pCursor]; c != nil {
		*at[int64](pRowid) = c.rowid
	}
	return sqlite3.SQLITE_OK
}

// transient is SQLITE_TRANSIENT: SQLite copies the value at once.
const transient = ^uintptr(0)

// column hands SQLite column col of the cursor's row (see sqliteType).
func (d *dataTables) column(tls *libc.TLS, pCursor, ctx uintptr, col int32) int32 {
	c := d.cursors[pCursor]
	if c == nil || c.rec == nil || col < 0 || int(col) >= len(c.index) || c.index[col] < 0 {
		sqlite3.Xsqlite3_result_null(tls, ctx)
		return sqlite3.SQLITE_OK
	}
	d.resultValue(tls, ctx, c.rec.Column(c.index[col]), c.row)
	return sqlite3.SQLITE_OK
}

// resultValue hands SQLite row i of a.
func (d *dataTables) resultValue(tls *libc.TLS, ctx uintptr, a arrow.Array, i int) {
	if a.IsNull(i) {
		sqlite3.Xsqlite3_result_null(tls, ctx)
		return
	}
	resultInt := func(v int64) { sqlite3.Xsqlite3_result_int64(tls, ctx, v) }
	resultBytes := func(b []byte, blob bool) { d.bytes(tls, ctx, b, blob) }
	switch a := a.(type) {
	case *array.Int8:
		resultInt(int64(a.Value(i)))
	case *array.Int16:
		resultInt(int64(a.Value(i)))
	case *array.Int32:
		resultInt(int64(a.Value(i)))
	case *array.Int64:
		resultInt(a.Value(i))
	case *array.Uint8:
		resultInt(int64(a.Value(i)))
	case *array.Uint16:
		resultInt(int64(a.Value(i)))
	case *array.Uint32:
		resultInt(int64(a.Value(i)))
	case *array.Uint64:
		if v := a.Value(i); v <= math.MaxInt64 {
			resultInt(int64(v))
		} else {
			resultBytes([]byte(a.ValueStr(i)), false)
		}
	case *array.Boolean:
		if a.Value(i) {
			resultInt(1)
		} else {
			resultInt(0)
		}
	case *array.Date32:
		resultBytes(a.Value(i).ToTime().AppendFormat(nil, dateLayout), false)
	case *array.Date64:
		resultBytes(a.Value(i).ToTime().AppendFormat(nil, dateLayout), false)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		resultBytes(a.Value(i).ToTime(unit).UTC().AppendFormat(nil, timestampLayouts[unit]), false)
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		resultBytes(a.Value(i).ToTime(unit).AppendFormat(nil, timeLayouts[unit]), false)
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		resultBytes(a.Value(i).ToTime(unit).AppendFormat(nil, timeLayouts[unit]), false)
	case *array.Duration:
		resultInt(int64(a.Value(i)))
	case *array.Float16:
		sqlite3.Xsqlite3_result_double(tls, ctx, float64(a.Value(i).Float32()))
	case *array.Float32:
		sqlite3.Xsqlite3_result_double(tls, ctx, float64(a.Value(i)))
	case *array.Float64:
		sqlite3.Xsqlite3_result_double(tls, ctx, a.Value(i))
	case *array.String:
		resultBytes([]byte(a.Value(i)), false)
	case *array.LargeString:
		resultBytes([]byte(a.Value(i)), false)
	case *array.Binary:
		resultBytes(a.Value(i), true)
	case *array.LargeBinary:
		resultBytes(a.Value(i), true)
	case *array.FixedSizeBinary:
		resultBytes(a.Value(i), true)
	case *array.Decimal128:
		t := a.DataType().(*arrow.Decimal128Type)
		n := a.Value(i)
		switch abs := n.Abs(); {
		case t.Scale == 0 && (n.HighBits() == 0 && n.LowBits() <= math.MaxInt64 || n.HighBits() == -1 && n.LowBits() >= 1<<63):
			resultInt(int64(n.LowBits()))
		case abs.HighBits() == 0 && abs.LowBits() < 1e15:
			// Up to 15 significant digits: a double holds it and rounds
			// back to it (typed.go).
			sqlite3.Xsqlite3_result_double(tls, ctx, n.ToFloat64(t.Scale))
		default:
			resultBytes([]byte(a.ValueStr(i)), false)
		}
	case *array.Decimal256:
		resultBytes([]byte(a.ValueStr(i)), false)
	default:
		// Nested and other values as JSON.
		b, err := json.Marshal(a.GetOneForMarshal(i))
		if err != nil {
			b = []byte(a.ValueStr(i))
		}
		resultBytes(b, false)
	}
}

// Dates, times and timestamps reach SQLite as the text its own date and
// time functions use and answer (date('now'), datetime(…)): YYYY-MM-DD,
// HH:MM:SS and YYYY-MM-DD HH:MM:SS, with as many fraction digits as the
// unit has, always. Text of one layout sorts as the instants do, so
// WHERE at >= '2024-06-01' and ORDER BY at mean what they say, and
// date(at), strftime(…, at) work. A timestamp with a time zone is an
// instant, shown in UTC; one without is a wall-clock time, shown as it
// is. A result column that is such a column as it is gets its registered
// type back (typed.go).
const dateLayout = "2006-01-02"

var timestampLayouts = map[arrow.TimeUnit]string{
	arrow.Second: "2006-01-02 15:04:05", arrow.Millisecond: "2006-01-02 15:04:05.000",
	arrow.Microsecond: "2006-01-02 15:04:05.000000", arrow.Nanosecond: "2006-01-02 15:04:05.000000000",
}

var timeLayouts = map[arrow.TimeUnit]string{
	arrow.Second: "15:04:05", arrow.Millisecond: "15:04:05.000",
	arrow.Microsecond: "15:04:05.000000", arrow.Nanosecond: "15:04:05.000000000",
}

// A decimal128 reaches SQLite as a number where one holds it exactly: an
// integer when it has no fraction and fits 64 bits, a real when it has up
// to 15 significant digits (53 bits hold every such decimal, and it
// rounds back to it), so that comparisons, ORDER BY, min() and sum() are
// numeric; a wider value as its decimal text (which sorts after every
// number). A decimal256 is always its text.

func isFloat(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

// sameClass reports whether a filter's value v is of the storage class a
// column of type t reaches SQLite as (sqliteType): a comparison across
// classes is SQLite's, not the footer's.
func sameClass(t arrow.DataType, v any) bool {
	switch sqliteType(t) {
	case "INTEGER", "REAL", "NUMERIC":
		switch v.(type) {
		case int64, float64:
			return true
		}
	case "BLOB":
		_, ok := v.([]byte)
		return ok
	default:
		_, ok := v.(string)
		return ok
	}
	return false
}
