package sqlcatalog

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// information_schema.schemata, .tables and .columns are virtual tables
// over one arena laid out at Build from the tenant's Tables (in discovery,
// the prepared tenant's Arrow columns) and the column rows of its distinct
// schemas, each described once: a tenant of 1,000 tables that share or
// repeat schemas costs one description per schema, and building the
// engine inserts no row into SQLite. SQLite scans them and applies WHERE,
// ORDER BY and the rest itself. The modules are registered on the
// tenant's own connection (Build), so their rows are that tenant's alone.
//
// They are written against SQLite's C API (sqlite3_create_module_v2), as
// statements run (stmt.go), not through modernc.org/sqlite/vtab, which
// hands SQLite every value as a Go value: each text copied into a C
// string, copied again by SQLite and freed, behind two map lookups per
// call. Here the rows are laid out once, at Build, in memory of SQLite's
// allocator (the arena), and each value is handed to SQLite where it lies
// (SQLITE_STATIC), so a scan allocates nothing. The callbacks read that
// memory alone: they find no Go state, and C memory holds no Go pointer.
// The schemata and tables walks are in (namespace, name) order, the
// Tables' own, which is also what their ORDER BY asks most often.

// The virtual tables: their modules' names and the tables they declare
// (the Checker creates plain tables of the same columns).
const (
	vtabSchemata = iota
	vtabTables
	vtabColumns
	numVtabs
)

var vtabs = [numVtabs]struct{ module, decl string }{
	vtabSchemata: {"lake_information_schema_schemata", `CREATE TABLE x (
	catalog_name TEXT NOT NULL, schema_name TEXT NOT NULL, schema_owner TEXT)`},
	vtabTables: {"lake_information_schema_tables", `CREATE TABLE x (
	table_catalog TEXT NOT NULL, table_schema TEXT NOT NULL, table_name TEXT NOT NULL, table_type TEXT NOT NULL)`},
	vtabColumns: {"lake_information_schema_columns", `CREATE TABLE x (
	table_catalog TEXT, table_schema TEXT, table_name TEXT,
	column_name TEXT, ordinal_position INTEGER, column_default TEXT,
	is_nullable TEXT, data_type TEXT,
	character_maximum_length INTEGER, character_octet_length INTEGER,
	numeric_precision INTEGER, numeric_precision_radix INTEGER, numeric_scale INTEGER,
	datetime_precision INTEGER, column_comment TEXT)`},
}

// vtabNames are the information_schema names of the virtual tables.
var vtabNames = [numVtabs]string{vtabSchemata: "schemata", vtabTables: "tables", vtabColumns: "columns"}

// The arena: one block of C memory, laid out as
//
//	sqlite3_module × numVtabs | arenaHeader | rows []arenaRow | tables []arenaTable | namespaces []uint32 | texts
//
// Every part is a multiple of 8 bytes long but the texts, so each starts
// aligned (the namespaces are padded).

// text is a run of the arena's texts. Table names and types are
// deduplicated (as are column types, to save room), so two table names are
// equal exactly when their runs are.
type text struct{ off, n uint32 }

// arenaHeader says where the parts are. catalog and version are what the
// engine's functions answer; modules and decls are the vtabs' module names
// and declarations, NUL-terminated for SQLite.
type arenaHeader struct {
	catalog, version         text
	modules, decls           [numVtabs]text
	rows, tables, namespaces uintptr
	texts                    uintptr
	ntables, nnamespaces     int64
	count                    int64 // column rows of all the tables
}

// arenaTable is one table: its column rows are rows [first, first+n) (n
// is 0 for a table without a schema); typ is its table type as
// information_schema names it (tableTypeName).
type arenaTable struct {
	ns, name, typ text
	first, n      uint32
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

// arenaLayout is the arena as Go builds it, before it is copied into C
// memory, with the registration index (Engine.tables) built on the way.
type arenaLayout struct {
	catalog, version text
	modules, decls   [numVtabs]text
	yes, no          text
	rows             []arenaRow
	tables           []arenaTable
	// namespaces is the first table of each namespace, in order.
	namespaces []uint32
	texts      []byte
	refs       map[string]text
	// count is the column rows of all tables (a schema's once per table
	// that has it), for the plans' estimates.
	count int64
	// index is the registration index (Engine.tables).
	index map[string][]string
}

// text is s in l's texts, once whatever the number of calls.
func (l *arenaLayout) text(s string) text {
	if r, ok := l.refs[s]; ok {
		return r
	}
	r := l.append(s)
	l.refs[s] = r
	return r
}

// append adds s to l's texts.
func (l *arenaLayout) append(s string) text {
	r := text{off: uint32(len(l.texts)), n: uint32(len(s))}
	l.texts = append(l.texts, s...)
	return r
}

// layoutTenant describes t's distinct schemas once each (describeSchema)
// and lays the descriptions and t's tables out for the arena, reading each
// of t.Tables' rows once. It refuses tables out of (namespace, name)
// order, which the walks rely on, and stops with ctx's error when ctx
// ends.
func layoutTenant(ctx context.Context, t Tenant) (*arenaLayout, error) {
	fields := 0
	for _, s := range t.Schemas {
		if s != nil {
			fields += s.NumFields()
		}
	}
	n := 0
	if t.Tables != nil {
		n = t.Tables.Len()
	}
	l := &arenaLayout{refs: map[string]text{}, rows: make([]arenaRow, 0, fields), tables: make([]arenaTable, n),
		index: make(map[string][]string, n)}
	l.catalog, l.version = l.append(t.Catalog), l.append("lake "+t.Version)
	for k, v := range vtabs {
		l.modules[k], l.decls[k] = l.append(v.module+"\x00"), l.append(v.decl+"\x00")
	}
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
	var prevNS, prevName string
	for i := range n {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ns, name := t.Tables.Namespace(i), t.Tables.Name(i)
		if i > 0 && (ns < prevNS || ns == prevNS && name <= prevName) {
			return nil, fmt.Errorf("sqlcatalog: table %d (%q.%q) is not after %q.%q: tables must be sorted by namespace and name, each once", i, ns, name, prevNS, prevName)
		}
		at := arenaTable{name: l.text(name), typ: l.text(tableTypeName(t.Tables.Type(i)))}
		if i > 0 && ns == prevNS {
			at.ns = l.tables[i-1].ns
		} else {
			at.ns = l.append(ns)
			l.namespaces = append(l.namespaces, uint32(i))
		}
		if ref := t.Tables.SchemaRef(i); ref >= 0 && ref < len(t.Schemas) {
			at.first, at.n = uint32(first[ref]), uint32(count[ref])
		}
		l.tables[i] = at
		l.count += int64(at.n)
		// The index holds copies: the Tables' strings may be the
		// caller's memory.
		reg := ns + "\x00" + name
		key := strings.ToLower(reg[len(ns)+1:])
		l.index[key] = append(l.index[key], reg)
		prevNS, prevName = ns, name
	}
	if len(l.texts) > math.MaxUint32 || len(l.rows) > math.MaxUint32 || len(l.tables) > math.MaxUint32 {
		return nil, fmt.Errorf("sqlcatalog: the tenant's tables and column descriptions exceed 4 GiB")
	}
	return l, nil
}

// arena is an arenaLayout copied into C memory, with the modules that read
// it. It must outlive the connection it is registered on.
type arena struct {
	p, size uintptr
}

const moduleSize = unsafe.Sizeof(sqlite3.Sqlite3_module{})

// newArena copies l into C memory.
func newArena(tls *libc.TLS, l *arenaLayout) (*arena, error) {
	const headerSize = unsafe.Sizeof(arenaHeader{})
	modulesSize := numVtabs * moduleSize
	rowsSize := uintptr(len(l.rows)) * unsafe.Sizeof(arenaRow{})
	tablesSize := uintptr(len(l.tables)) * unsafe.Sizeof(arenaTable{})
	nsSize := (uintptr(len(l.namespaces))*4 + 7) &^ 7
	size := modulesSize + headerSize + rowsSize + tablesSize + nsSize + uintptr(len(l.texts))
	p := zeroed(tls, size)
	if p == 0 {
		return nil, fmt.Errorf("sqlcatalog: information_schema: out of memory (%d bytes)", size)
	}
	a := &arena{p: p, size: size}
	setModule(a.module(vtabSchemata), cFunction(schemataConnect), cFunction(schemataBestIndex),
		cFunction(schemataFilter), cFunction(schemataNext), cFunction(schemataColumn))
	setModule(a.module(vtabTables), cFunction(tablesConnect), cFunction(tablesBestIndex),
		cFunction(tablesFilter), cFunction(tablesNext), cFunction(tablesColumn))
	setModule(a.module(vtabColumns), cFunction(columnsConnect), cFunction(columnsBestIndex),
		cFunction(columnsFilter), cFunction(columnsNext), cFunction(columnsColumn))
	h := a.header()
	h.catalog, h.version, h.modules, h.decls = l.catalog, l.version, l.modules, l.decls
	h.ntables, h.nnamespaces, h.count = int64(len(l.tables)), int64(len(l.namespaces)), l.count
	h.rows = p + modulesSize + headerSize
	h.tables = h.rows + rowsSize
	h.namespaces = h.tables + tablesSize
	h.texts = h.namespaces + nsSize
	copy(cSlice[arenaRow](h.rows, len(l.rows)), l.rows)
	copy(cSlice[arenaTable](h.tables, len(l.tables)), l.tables)
	copy(cSlice[uint32](h.namespaces, len(l.namespaces)), l.namespaces)
	copy(cSlice[byte](h.texts, len(l.texts)), l.texts)
	return a, nil
}

// setModule fills a module of the arena: the vtab's own callbacks, and the
// ones every vtab shares.
func setModule(m *sqlite3.Sqlite3_module, connect, bestIndex, filter, next, column uintptr) {
	m.FiVersion = 1
	m.FxCreate = connect
	m.FxConnect = connect
	m.FxBestIndex = bestIndex
	m.FxDisconnect = cFunction(vtabDisconnect)
	m.FxDestroy = cFunction(vtabDisconnect)
	m.FxOpen = cFunction(vtabOpen)
	m.FxClose = cFunction(vtabClose)
	m.FxFilter = filter
	m.FxNext = next
	m.FxEof = cFunction(vtabEOF)
	m.FxColumn = column
	m.FxRowid = cFunction(vtabRowid)
}

// module is the arena's module of vtab k.
func (a *arena) module(k int) *sqlite3.Sqlite3_module {
	return at[sqlite3.Sqlite3_module](a.p + uintptr(k)*moduleSize)
}

func (a *arena) header() *arenaHeader { return arenaOf(a.p) }

// register registers the modules on db, each reading a (their pAux).
func (a *arena) register(tls *libc.TLS, db uintptr) error {
	h := a.header()
	for k := range numVtabs {
		m := a.p + uintptr(k)*moduleSize
		if rc := sqlite3.Xsqlite3_create_module_v2(tls, db, h.address(h.modules[k]), m, a.p, 0); rc != sqlite3.SQLITE_OK {
			return fmt.Errorf("sqlcatalog: %s module: %s", vtabNames[k], libc.GoString(sqlite3.Xsqlite3_errstr(tls, rc)))
		}
	}
	return nil
}

// free gives the arena back, once no connection holds the modules.
func (a *arena) free() {
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

// arenaOf is the header of the arena at p (the modules' pAux, which their
// tables and cursors keep).
func arenaOf(p uintptr) *arenaHeader {
	return at[arenaHeader](p + numVtabs*moduleSize)
}

func (h *arenaHeader) table(i int64) *arenaTable {
	return at[arenaTable](h.tables + uintptr(i)*unsafe.Sizeof(arenaTable{}))
}

// namespace is the first table of namespace k.
func (h *arenaHeader) namespace(k int64) *arenaTable {
	return h.table(int64(*at[uint32](h.namespaces + uintptr(k)*4)))
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
	resultText(tls, ctx, h, h.catalog)
}

// versionFunction answers version(): "lake " and the server's version.
func versionFunction(tls *libc.TLS, ctx uintptr, _ int32, _ uintptr) {
	h := arenaOf(sqlite3.Xsqlite3_user_data(tls, ctx))
	resultText(tls, ctx, h, h.version)
}

// vtab is a module's sqlite3_vtab.
type vtab struct {
	_     sqlite3.Sqlite3_vtab // SQLite's part
	arena uintptr
}

// cursor walks a vtab: table ti's column row ci over tables [ti, end)
// whose name is name (any when byName is 0) for columns, table ti for
// tables, namespace ti for schemata.
type cursor struct {
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

// connect is xCreate and xConnect of vtab k: pAux is the arena.
func connect(tls *libc.TLS, db, pAux, ppVtab uintptr, k int) int32 {
	h := arenaOf(pAux)
	if rc := sqlite3.Xsqlite3_declare_vtab(tls, db, h.address(h.decls[k])); rc != sqlite3.SQLITE_OK {
		return rc
	}
	p := zeroed(tls, unsafe.Sizeof(vtab{}))
	if p == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	at[vtab](p).arena = pAux
	*at[uintptr](ppVtab) = p
	return sqlite3.SQLITE_OK
}

func columnsConnect(tls *libc.TLS, db, pAux uintptr, _ int32, _, ppVtab, _ uintptr) int32 {
	return connect(tls, db, pAux, ppVtab, vtabColumns)
}

func vtabDisconnect(tls *libc.TLS, pVtab uintptr) int32 {
	sqlite3.Xsqlite3_free(tls, pVtab)
	return sqlite3.SQLITE_OK
}

// Plans (idxNum bits): table_schema = ? and table_name = ? constraints
// (schema_name = ? for schemata) narrow the walk (the tables are sorted by
// namespace and name, so a namespace is a binary-searched range, and a
// name within it too). The schema's value is argument 1 when it is used,
// the name's follows. SQLite still checks every constraint itself (none
// is omitted), so a narrowed walk only skips rows that could not match.
// The walk compares bytes, so only a constraint under the BINARY
// collation narrows it: one under NOCASE, RTRIM or another collation
// ('SALES' COLLATE NOCASE) holds for rows whose bytes differ, and is left
// to SQLite alone.
const (
	planSchema = 1 << iota
	planName
)

// plan picks the first usable equality constraints that compare under
// BINARY on column schemaCol and on column nameCol (-1: none) and hands
// their values to the filter; it returns the plan (idxNum) and the info.
func plan(tls *libc.TLS, pInfo uintptr, schemaCol, nameCol int32) (int, *sqlite3.Sqlite3_index_info) {
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
		case c.FiColumn == schemaCol && schema < 0:
			schema = i
		case c.FiColumn == nameCol && name < 0:
			name = i
		}
	}
	p, arg := 0, int32(0)
	if schema >= 0 {
		p |= planSchema
		arg++
		usage[schema].FargvIndex = arg
	}
	if name >= 0 {
		p |= planName
		arg++
		usage[name].FargvIndex = arg
	}
	info.FidxNum = int32(p)
	return p, info
}

// estimate sets the plan's cost and rows: rows, the rows the walk visits.
func estimate(info *sqlite3.Sqlite3_index_info, rows float64) {
	info.FestimatedCost = rows
	if int64(rows) != 0 {
		info.FestimatedRows = int64(rows)
	}
}

// binaryCollation reports whether constraint i of a BestIndex call
// compares under BINARY (sqlite3_vtab_collation), so that equal values are
// equal bytes.
func binaryCollation(tls *libc.TLS, pInfo uintptr, i int) bool {
	z := sqlite3.Xsqlite3_vtab_collation(tls, pInfo, int32(i))
	return z != 0 && strings.EqualFold(libc.GoString(z), "BINARY")
}

// columnsBestIndex uses the first usable equality constraints on
// table_schema and table_name that compare under BINARY.
func columnsBestIndex(tls *libc.TLS, pVtab, pInfo uintptr) int32 {
	p, info := plan(tls, pInfo, 1, 2)
	rows := float64(max(arenaOf(at[vtab](pVtab).arena).count, 1))
	switch p {
	case planSchema | planName:
		rows = 20
	case planSchema:
		rows /= 10
	case planName:
		rows /= 2
	}
	estimate(info, rows)
	return sqlite3.SQLITE_OK
}

func vtabOpen(tls *libc.TLS, pVtab, ppCursor uintptr) int32 {
	p := zeroed(tls, unsafe.Sizeof(cursor{}))
	if p == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	c := at[cursor](p)
	c.base.FpVtab = pVtab
	c.arena = at[vtab](pVtab).arena
	*at[uintptr](ppCursor) = p
	return sqlite3.SQLITE_OK
}

func vtabClose(tls *libc.TLS, pCursor uintptr) int32 {
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

// narrow starts c's walk over the tables a plan of the tables or columns
// vtab allows: a namespace's range, then one table of it, or any table of
// a name.
func (c *cursor) narrow(tls *libc.TLS, h *arenaHeader, idxNum, argc int32, argv uintptr) {
	c.ti, c.ci, c.end, c.byName, c.rowid = 0, 0, h.ntables, 0, 1
	arg, inNamespace := 0, false
	if idxNum&planSchema != 0 {
		if v, ok := textArg(tls, argv, argc, arg); ok {
			n := int(h.ntables)
			c.ti = int64(sort.Search(n, func(k int) bool { return bytes.Compare(h.bytes(h.table(int64(k)).ns), v) >= 0 }))
			c.end = int64(sort.Search(n, func(k int) bool { return bytes.Compare(h.bytes(h.table(int64(k)).ns), v) > 0 }))
			inNamespace = true
		}
		arg++
	}
	if idxNum&planName != 0 {
		if v, ok := textArg(tls, argv, argc, arg); ok {
			if inNamespace {
				// Names are sorted within a namespace.
				lo := c.ti
				k := lo + int64(sort.Search(int(c.end-lo), func(j int) bool { return bytes.Compare(h.bytes(h.table(lo+int64(j)).name), v) >= 0 }))
				if k < c.end && bytes.Equal(h.bytes(h.table(k).name), v) {
					c.ti, c.end = k, k+1
				} else {
					c.ti = c.end
				}
				return
			}
			// The name's text, if any table has it (table names are
			// deduplicated); none has it otherwise.
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
}

func columnsFilter(tls *libc.TLS, pCursor uintptr, idxNum int32, _ uintptr, argc int32, argv uintptr) int32 {
	c := at[cursor](pCursor)
	h := arenaOf(c.arena)
	c.narrow(tls, h, idxNum, argc, argv)
	c.skipColumns(h)
	return sqlite3.SQLITE_OK
}

// skipColumns moves to the first column row at or after (ti, ci).
func (c *cursor) skipColumns(h *arenaHeader) {
	for c.ti < c.end {
		t := h.table(c.ti)
		if (c.byName == 0 || t.name == c.name) && c.ci < int64(t.n) {
			return
		}
		c.ti, c.ci = c.ti+1, 0
	}
}

func columnsNext(_ *libc.TLS, pCursor uintptr) int32 {
	c := at[cursor](pCursor)
	c.ci++
	c.rowid++
	c.skipColumns(arenaOf(c.arena))
	return sqlite3.SQLITE_OK
}

func vtabEOF(_ *libc.TLS, pCursor uintptr) int32 {
	if c := at[cursor](pCursor); c.ti >= c.end {
		return 1
	}
	return 0
}

func vtabRowid(_ *libc.TLS, pCursor, pRowid uintptr) int32 {
	*at[int64](pRowid) = at[cursor](pCursor).rowid
	return sqlite3.SQLITE_OK
}

// resultText hands SQLite the arena's text s as a value, where it lies.
func resultText(tls *libc.TLS, ctx uintptr, h *arenaHeader, s text) {
	sqlite3.Xsqlite3_result_text(tls, ctx, h.address(s), int32(s.n), 0) // SQLITE_STATIC
}

// columnsColumn hands SQLite column col of the cursor's row.
func columnsColumn(tls *libc.TLS, pCursor, ctx uintptr, col int32) int32 {
	c := at[cursor](pCursor)
	h := arenaOf(c.arena)
	t := h.table(c.ti)
	r := h.row(t.first + uint32(c.ci))
	switch {
	case col == 0:
		resultText(tls, ctx, h, h.catalog)
	case col == 1:
		resultText(tls, ctx, h, t.ns)
	case col == 2:
		resultText(tls, ctx, h, t.name)
	case col == 3:
		resultText(tls, ctx, h, r.name)
	case col == 4:
		sqlite3.Xsqlite3_result_int64(tls, ctx, c.ci+1)
	case col == 6:
		resultText(tls, ctx, h, r.nullable)
	case col == 7:
		resultText(tls, ctx, h, r.dataType)
	case col >= 8 && col <= 13 && r.set&(1<<(col-8)) != 0:
		sqlite3.Xsqlite3_result_int64(tls, ctx, r.numbers[col-8])
	case col == 14 && r.set&commentSet != 0:
		resultText(tls, ctx, h, r.comment)
	default:
		sqlite3.Xsqlite3_result_null(tls, ctx)
	}
	return sqlite3.SQLITE_OK
}
