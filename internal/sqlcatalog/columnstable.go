package sqlcatalog

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// information_schema.columns is a virtual table over the tenant's tables
// and the column rows of its distinct schemas, each described once: a
// tenant of 1,000 tables that share or repeat schemas costs one
// description per schema, and building the engine does not copy 20 rows
// per table into SQLite. SQLite scans it and applies WHERE, ORDER BY and
// the rest itself. The module is registered on the tenant's own
// connection (Build), so its rows are that tenant's alone.
//
// It is written against SQLite's C API (sqlite3_create_module_v2), as
// statements run (stmt.go), not through modernc.org/sqlite/vtab, which
// hands SQLite every value as a Go value: each text copied into a C
// string, copied again by SQLite and freed, behind two map lookups per
// call. Here the descriptions are laid out once, at Build, in memory of
// SQLite's allocator (columnsArena), and each value is handed to SQLite
// where it lies (SQLITE_STATIC), so a scan allocates nothing. The
// callbacks read that memory alone: they find no Go state, and C memory
// holds no Go pointer.

// columnsModuleName names the module; columnsDecl is the table it declares
// (the Checker creates a plain table of the same columns).
const (
	columnsModuleName = "lake_information_schema_columns"
	columnsDecl       = `CREATE TABLE x (
	table_catalog TEXT, table_schema TEXT, table_name TEXT,
	column_name TEXT, ordinal_position INTEGER, column_default TEXT,
	is_nullable TEXT, data_type TEXT,
	character_maximum_length INTEGER, character_octet_length INTEGER,
	numeric_precision INTEGER, numeric_precision_radix INTEGER, numeric_scale INTEGER,
	datetime_precision INTEGER, column_comment TEXT)`
)

// The arena: one block of C memory, laid out as
//
//	sqlite3_module | arenaHeader | rows []arenaRow | tables []arenaTable | texts
//
// Every part is a multiple of 8 bytes long but the texts, so each starts
// aligned.

// text is a run of the arena's texts. Table names are deduplicated (as
// are types, to save room), so two table names are equal exactly when
// their runs are.
type text struct{ off, n uint32 }

// arenaHeader says where the parts are. catalog and version are what the
// engine's functions answer; moduleName and declared are
// columnsModuleName and columnsDecl, NUL-terminated for SQLite.
type arenaHeader struct {
	catalog, version, moduleName, declared text
	rows, tables, texts                    uintptr
	ntables                                int64
	count                                  int64 // column rows of all the tables
}

// arenaTable is one table: its column rows are rows [first, first+n) (n
// is 0 for a table without a schema).
type arenaTable struct {
	ns, name text
	first, n uint32
}

// arenaRow is one top-level field as information_schema.columns shows it
// (describeSchema): numbers holds columns 8 to 13
// (character_maximum_length to datetime_precision); bit i of set says
// numbers[i] is not NULL, bit 6 that comment is not.
type arenaRow struct {
	name, nullable, dataType, comment text
	set                               uint32
	_                                 uint32
	numbers                           [6]int64
}

const commentSet = 1 << 6

// columnsLayout is the arena as Go builds it, before it is copied into C
// memory.
type columnsLayout struct {
	catalog, version, moduleName, declared text
	yes, no                                text
	rows                                   []arenaRow
	tables                                 []arenaTable
	texts                                  []byte
	refs                                   map[string]text
	// count is the column rows of all tables (a schema's once per table
	// that has it), for the plans' estimates.
	count int64
}

// text is s in l's texts, once whatever the number of calls.
func (l *columnsLayout) text(s string) text {
	if r, ok := l.refs[s]; ok {
		return r
	}
	r := l.append(s)
	l.refs[s] = r
	return r
}

// append adds s to l's texts.
func (l *columnsLayout) append(s string) text {
	r := text{off: uint32(len(l.texts)), n: uint32(len(s))}
	l.texts = append(l.texts, s...)
	return r
}

// layoutColumns describes t's distinct schemas once each (describeSchema)
// and lays the descriptions and t's tables out for the arena.
func layoutColumns(t Tenant) (*columnsLayout, error) {
	fields := 0
	for _, s := range t.Schemas {
		if s != nil {
			fields += s.NumFields()
		}
	}
	l := &columnsLayout{refs: map[string]text{}, rows: make([]arenaRow, 0, fields), tables: make([]arenaTable, len(t.Tables))}
	l.catalog, l.version = l.append(t.Catalog), l.append("lake "+t.Version)
	l.moduleName, l.declared = l.append(columnsModuleName+"\x00"), l.append(columnsDecl+"\x00")
	l.yes, l.no = l.append("YES"), l.append("NO")
	first := make([]int, len(t.Schemas))
	count := make([]int, len(t.Schemas))
	for i, s := range t.Schemas {
		if s == nil {
			continue
		}
		first[i] = len(l.rows)
		describeSchema(l, s)
		count[i] = len(l.rows) - first[i]
	}
	for i, tb := range t.Tables {
		at := arenaTable{name: l.text(tb.Name)}
		if i > 0 && tb.Namespace == t.Tables[i-1].Namespace {
			at.ns = l.tables[i-1].ns
		} else {
			at.ns = l.append(tb.Namespace)
		}
		if tb.Schema >= 0 && tb.Schema < len(t.Schemas) {
			at.first, at.n = uint32(first[tb.Schema]), uint32(count[tb.Schema])
		}
		l.tables[i] = at
		l.count += int64(at.n)
	}
	if len(l.texts) > math.MaxUint32 || len(l.rows) > math.MaxUint32 {
		return nil, fmt.Errorf("sqlcatalog: the tenant's column descriptions exceed 4 GiB")
	}
	return l, nil
}

// columnsArena is a columnsLayout copied into C memory, with the module
// that reads it. It must outlive the connection it is registered on.
type columnsArena struct {
	p, size uintptr
}

// newColumnsArena lays t out and copies it into C memory.
func newColumnsArena(tls *libc.TLS, t Tenant) (*columnsArena, error) {
	l, err := layoutColumns(t)
	if err != nil {
		return nil, err
	}
	const moduleSize = unsafe.Sizeof(sqlite3.Sqlite3_module{})
	const headerSize = unsafe.Sizeof(arenaHeader{})
	rowsSize := uintptr(len(l.rows)) * unsafe.Sizeof(arenaRow{})
	tablesSize := uintptr(len(l.tables)) * unsafe.Sizeof(arenaTable{})
	size := moduleSize + headerSize + rowsSize + tablesSize + uintptr(len(l.texts))
	p := zeroed(tls, size)
	if p == 0 {
		return nil, fmt.Errorf("sqlcatalog: columns: out of memory (%d bytes)", size)
	}
	a := &columnsArena{p: p, size: size}
	m := at[sqlite3.Sqlite3_module](p)
	m.FiVersion = 1
	m.FxCreate = cFunction(columnsConnect)
	m.FxConnect = cFunction(columnsConnect)
	m.FxBestIndex = cFunction(columnsBestIndex)
	m.FxDisconnect = cFunction(columnsDisconnect)
	m.FxDestroy = cFunction(columnsDisconnect)
	m.FxOpen = cFunction(columnsOpen)
	m.FxClose = cFunction(columnsClose)
	m.FxFilter = cFunction(columnsFilter)
	m.FxNext = cFunction(columnsNext)
	m.FxEof = cFunction(columnsEOF)
	m.FxColumn = cFunction(columnsColumn)
	m.FxRowid = cFunction(columnsRowid)
	h := a.header()
	h.catalog, h.version, h.moduleName, h.declared = l.catalog, l.version, l.moduleName, l.declared
	h.ntables, h.count = int64(len(l.tables)), l.count
	h.rows = p + moduleSize + headerSize
	h.tables = h.rows + rowsSize
	h.texts = h.tables + tablesSize
	copy(cSlice[arenaRow](h.rows, len(l.rows)), l.rows)
	copy(cSlice[arenaTable](h.tables, len(l.tables)), l.tables)
	copy(cSlice[byte](h.texts, len(l.texts)), l.texts)
	return a, nil
}

func (a *columnsArena) header() *arenaHeader { return arenaOf(a.p) }

// register registers the module on db, reading a.
func (a *columnsArena) register(tls *libc.TLS, db uintptr) error {
	h := a.header()
	if rc := sqlite3.Xsqlite3_create_module_v2(tls, db, h.address(h.moduleName), a.p, a.p, 0); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlcatalog: columns module: %s", libc.GoString(sqlite3.Xsqlite3_errstr(tls, rc)))
	}
	return nil
}

// free gives the arena back, once no connection holds the module.
func (a *columnsArena) free() {
	if a != nil && a.p != 0 {
		tls := libc.NewTLS()
		sqlite3.Xsqlite3_free(tls, a.p)
		tls.Close()
		a.p = 0
	}
}

// at is the T at p, in C memory. C memory is not the Go heap: p is no Go
// pointer that could move or be collected, so it is converted by its
// address (as vet asks).
func at[T any](p uintptr) *T { return *(**T)(unsafe.Pointer(&p)) }

// cSlice is the n Ts at p, in C memory (see at).
func cSlice[T any](p uintptr, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice(at[T](p), n)
}

// arenaOf is the header of the arena at p (the module's pAux, which its
// tables and cursors keep).
func arenaOf(p uintptr) *arenaHeader {
	return at[arenaHeader](p + unsafe.Sizeof(sqlite3.Sqlite3_module{}))
}

func (h *arenaHeader) table(i int64) *arenaTable {
	return at[arenaTable](h.tables + uintptr(i)*unsafe.Sizeof(arenaTable{}))
}

func (h *arenaHeader) row(i uint32) *arenaRow {
	return at[arenaRow](h.rows + uintptr(i)*unsafe.Sizeof(arenaRow{}))
}

func (h *arenaHeader) bytes(t text) []byte { return cSlice[byte](h.address(t), int(t.n)) }

func (h *arenaHeader) address(t text) uintptr { return h.texts + uintptr(t.off) }

// catalogFunction answers current_catalog() and the like: the tenant's
// name. Its user data is the arena.
func catalogFunction(tls *libc.TLS, ctx uintptr, _ int32, _ uintptr) {
	h := arenaOf(sqlite3.Xsqlite3_user_data(tls, ctx))
	sqlite3.Xsqlite3_result_text(tls, ctx, h.address(h.catalog), int32(h.catalog.n), 0) // SQLITE_STATIC
}

// versionFunction answers version(): "lake " and the server's version.
func versionFunction(tls *libc.TLS, ctx uintptr, _ int32, _ uintptr) {
	h := arenaOf(sqlite3.Xsqlite3_user_data(tls, ctx))
	sqlite3.Xsqlite3_result_text(tls, ctx, h.address(h.version), int32(h.version.n), 0) // SQLITE_STATIC
}

// columnsVtab is the module's sqlite3_vtab.
type columnsVtab struct {
	_     sqlite3.Sqlite3_vtab // SQLite's part
	arena uintptr
}

// columnsCursor walks table ti's column ci, over tables [ti, end) whose
// name is name (any when byName is 0).
type columnsCursor struct {
	base        sqlite3.Sqlite3_vtab_cursor
	arena       uintptr
	ti, ci, end int64
	rowid       int64
	name        text
	byName      uint32
}

// zeroed is n bytes of SQLite's allocator, zeroed, or 0.
func zeroed(tls *libc.TLS, n uintptr) uintptr {
	p := sqlite3.Xsqlite3_malloc64(tls, uint64(n))
	if p != 0 {
		clear(cSlice[byte](p, int(n)))
	}
	return p
}

// columnsConnect is xCreate and xConnect: pAux is the arena.
func columnsConnect(tls *libc.TLS, db, pAux uintptr, _ int32, _, ppVtab, _ uintptr) int32 {
	h := arenaOf(pAux)
	if rc := sqlite3.Xsqlite3_declare_vtab(tls, db, h.address(h.declared)); rc != sqlite3.SQLITE_OK {
		return rc
	}
	p := zeroed(tls, unsafe.Sizeof(columnsVtab{}))
	if p == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	at[columnsVtab](p).arena = pAux
	*at[uintptr](ppVtab) = p
	return sqlite3.SQLITE_OK
}

func columnsDisconnect(tls *libc.TLS, pVtab uintptr) int32 {
	sqlite3.Xsqlite3_free(tls, pVtab)
	return sqlite3.SQLITE_OK
}

// Plans (idxNum bits): table_schema = ? and table_name = ? constraints
// narrow the walk (the tables are sorted by namespace and name, so a
// namespace is a binary-searched range). The schema's value is argument
// 1 when it is used, the name's follows. SQLite still checks every
// constraint itself (none is omitted), so a narrowed walk only skips rows
// that could not match. The walk compares bytes, so only a constraint
// under the BINARY collation narrows it: one under NOCASE, RTRIM or
// another collation ('SALES' COLLATE NOCASE) holds for rows whose bytes
// differ, and is left to SQLite alone.
const (
	planSchema = 1 << iota
	planName
)

// columnsBestIndex uses the first usable equality constraints on
// table_schema and table_name that compare under BINARY.
func columnsBestIndex(tls *libc.TLS, pVtab, pInfo uintptr) int32 {
	info := at[sqlite3.Sqlite3_index_info](pInfo)
	n := int(info.FnConstraint)
	constraints := cSlice[sqlite3.Tsqlite3_index_constraint](info.FaConstraint, n)
	usage := cSlice[sqlite3.Tsqlite3_index_constraint_usage](info.FaConstraintUsage, n)
	schema, name := -1, -1
	for i, c := range constraints {
		if c.Fusable == 0 || c.Fop != sqlite3.SQLITE_INDEX_CONSTRAINT_EQ || !binaryCollation(tls, pInfo, i) {
			continue
		}
		switch {
		case c.FiColumn == 1 && schema < 0:
			schema = i
		case c.FiColumn == 2 && name < 0:
			name = i
		}
	}
	plan, arg := 0, int32(0)
	if schema >= 0 {
		plan |= planSchema
		arg++
		usage[schema].FargvIndex = arg
	}
	if name >= 0 {
		plan |= planName
		arg++
		usage[name].FargvIndex = arg
	}
	info.FidxNum = int32(plan)
	rows := float64(max(arenaOf(at[columnsVtab](pVtab).arena).count, 1))
	switch plan {
	case planSchema | planName:
		rows = 20
	case planSchema:
		rows /= 10
	case planName:
		rows /= 2
	}
	info.FestimatedCost = rows
	if int64(rows) != 0 {
		info.FestimatedRows = int64(rows)
	}
	return sqlite3.SQLITE_OK
}

// binaryCollation reports whether constraint i of a BestIndex call
// compares under BINARY (sqlite3_vtab_collation), so that equal values are
// equal bytes.
func binaryCollation(tls *libc.TLS, pInfo uintptr, i int) bool {
	z := sqlite3.Xsqlite3_vtab_collation(tls, pInfo, int32(i))
	return z != 0 && strings.EqualFold(libc.GoString(z), "BINARY")
}

func columnsOpen(tls *libc.TLS, pVtab, ppCursor uintptr) int32 {
	p := zeroed(tls, unsafe.Sizeof(columnsCursor{}))
	if p == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	c := at[columnsCursor](p)
	c.base.FpVtab = pVtab
	c.arena = at[columnsVtab](pVtab).arena
	*at[uintptr](ppCursor) = p
	return sqlite3.SQLITE_OK
}

func columnsClose(tls *libc.TLS, pCursor uintptr) int32 {
	sqlite3.Xsqlite3_free(tls, pCursor)
	return sqlite3.SQLITE_OK
}

// textArg is argument i of argv as text, or false when it is not text
// (SQLite compares other values itself).
func textArg(tls *libc.TLS, argv uintptr, argc int32, i int) ([]byte, bool) {
	if i >= int(argc) {
		return nil, false
	}
	v := cSlice[uintptr](argv, int(argc))[i]
	if sqlite3.Xsqlite3_value_type(tls, v) != sqlite3.SQLITE_TEXT {
		return nil, false
	}
	p := sqlite3.Xsqlite3_value_text(tls, v)
	return cBytes(p, sqlite3.Xsqlite3_value_bytes(tls, v)), true
}

func columnsFilter(tls *libc.TLS, pCursor uintptr, idxNum int32, _ uintptr, argc int32, argv uintptr) int32 {
	c := at[columnsCursor](pCursor)
	h := arenaOf(c.arena)
	c.ti, c.ci, c.end, c.byName, c.rowid = 0, 0, h.ntables, 0, 1
	arg := 0
	if idxNum&planSchema != 0 {
		if v, ok := textArg(tls, argv, argc, arg); ok {
			n := int(h.ntables)
			c.ti = int64(sort.Search(n, func(k int) bool { return bytes.Compare(h.bytes(h.table(int64(k)).ns), v) >= 0 }))
			c.end = int64(sort.Search(n, func(k int) bool { return bytes.Compare(h.bytes(h.table(int64(k)).ns), v) > 0 }))
		}
		arg++
	}
	if idxNum&planName != 0 {
		if v, ok := textArg(tls, argv, argc, arg); ok {
			// The name's text, if any table in range has it (table
			// names are deduplicated); none has it otherwise.
			c.byName = 1
			c.name = text{off: math.MaxUint32, n: math.MaxUint32}
			for k := c.ti; k < c.end; k++ {
				if t := h.table(k).name; bytes.Equal(h.bytes(t), v) {
					c.name = t
					break
				}
			}
		}
	}
	c.skip(h)
	return sqlite3.SQLITE_OK
}

// skip moves to the first column row at or after (ti, ci).
func (c *columnsCursor) skip(h *arenaHeader) {
	for c.ti < c.end {
		t := h.table(c.ti)
		if (c.byName == 0 || t.name == c.name) && c.ci < int64(t.n) {
			return
		}
		c.ti, c.ci = c.ti+1, 0
	}
}

func columnsNext(_ *libc.TLS, pCursor uintptr) int32 {
	c := at[columnsCursor](pCursor)
	c.ci++
	c.rowid++
	c.skip(arenaOf(c.arena))
	return sqlite3.SQLITE_OK
}

func columnsEOF(_ *libc.TLS, pCursor uintptr) int32 {
	if c := at[columnsCursor](pCursor); c.ti >= c.end {
		return 1
	}
	return 0
}

func columnsRowid(_ *libc.TLS, pCursor, pRowid uintptr) int32 {
	*at[int64](pRowid) = at[columnsCursor](pCursor).rowid
	return sqlite3.SQLITE_OK
}

// columnsColumn hands SQLite column col of the cursor's row.
func columnsColumn(tls *libc.TLS, pCursor, ctx uintptr, col int32) int32 {
	c := at[columnsCursor](pCursor)
	h := arenaOf(c.arena)
	t := h.table(c.ti)
	r := h.row(t.first + uint32(c.ci))
	str := func(s text) {
		sqlite3.Xsqlite3_result_text(tls, ctx, h.address(s), int32(s.n), 0) // SQLITE_STATIC
	}
	switch {
	case col == 0:
		str(h.catalog)
	case col == 1:
		str(t.ns)
	case col == 2:
		str(t.name)
	case col == 3:
		str(r.name)
	case col == 4:
		sqlite3.Xsqlite3_result_int64(tls, ctx, c.ci+1)
	case col == 6:
		str(r.nullable)
	case col == 7:
		str(r.dataType)
	case col >= 8 && col <= 13 && r.set&(1<<(col-8)) != 0:
		sqlite3.Xsqlite3_result_int64(tls, ctx, r.numbers[col-8])
	case col == 14 && r.set&commentSet != 0:
		str(r.comment)
	default:
		sqlite3.Xsqlite3_result_null(tls, ctx)
	}
	return sqlite3.SQLITE_OK
}
