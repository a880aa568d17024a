package sqlcatalog

import (
	"bytes"
	"slices"
	"sort"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// information_schema.schemata and .tables are virtual tables over the
// arena's tables (columnstable.go), one row per namespace and per table,
// in (namespace, name) order: the order of the PRIMARY KEY they had as
// tables of the database, so a statement without ORDER BY lists them as
// before, and an ORDER BY of that order is consumed (orderedBy) rather
// than sorted.

func schemataConnect(tls *libc.TLS, db, pAux uintptr, _ int32, _, ppVtab, _ uintptr) int32 {
	return connect(tls, db, pAux, ppVtab, vtabSchemata)
}

func tablesConnect(tls *libc.TLS, db, pAux uintptr, _ int32, _, ppVtab, _ uintptr) int32 {
	return connect(tls, db, pAux, ppVtab, vtabTables)
}

// orderedBy reports whether a walk in the order of columns order (each
// ascending) satisfies the statement's ORDER BY, so that SQLite need not
// sort: every term is one of constant's columns (one value for every row,
// in either direction), or the next of order, ascending.
func orderedBy(info *sqlite3.Sqlite3_index_info, order, constant []int32) bool {
	terms := cSlice[sqlite3.Tsqlite3_index_orderby](info.FaOrderBy, int(info.FnOrderBy))
	next := 0
	for _, t := range terms {
		switch {
		case slices.Contains(constant, t.FiColumn):
		case t.Fdesc == 0 && next < len(order) && t.FiColumn == order[next]:
			next++
		default:
			return false
		}
	}
	return len(terms) > 0
}

// tablesBestIndex uses the first usable equality constraints on
// table_schema and table_name that compare under BINARY; the walk is in
// (table_schema, table_name) order.
func tablesBestIndex(tls *libc.TLS, pVtab, pInfo uintptr) int32 {
	p, info := plan(tls, pInfo, 1, 2)
	rows := float64(max(arenaOf(at[vtab](pVtab).arena).ntables, 1))
	switch p {
	case planSchema | planName:
		rows = 1
		info.FidxFlags |= sqlite3.SQLITE_INDEX_SCAN_UNIQUE
	case planSchema:
		rows /= 10
	case planName:
		rows /= 2
	}
	estimate(info, rows)
	if orderedBy(info, []int32{1, 2}, []int32{0}) {
		info.ForderByConsumed = 1
	}
	return sqlite3.SQLITE_OK
}

func tablesFilter(tls *libc.TLS, pCursor uintptr, idxNum int32, _ uintptr, argc int32, argv uintptr) int32 {
	c := at[cursor](pCursor)
	h := arenaOf(c.arena)
	c.narrow(tls, h, idxNum, argc, argv)
	c.skipTables(h)
	return sqlite3.SQLITE_OK
}

// skipTables moves to the first table at or after ti.
func (c *cursor) skipTables(h *arenaHeader) {
	for c.byName != 0 && c.ti < c.end && h.table(c.ti).name != c.name {
		c.ti++
	}
}

func tablesNext(_ *libc.TLS, pCursor uintptr) int32 {
	c := at[cursor](pCursor)
	c.ti++
	c.rowid++
	c.skipTables(arenaOf(c.arena))
	return sqlite3.SQLITE_OK
}

// tablesColumn hands SQLite column col of the cursor's table.
func tablesColumn(tls *libc.TLS, pCursor, ctx uintptr, col int32) int32 {
	c := at[cursor](pCursor)
	h := arenaOf(c.arena)
	t := h.table(c.ti)
	switch col {
	case 0:
		resultText(tls, ctx, h, h.catalog)
	case 1:
		resultText(tls, ctx, h, t.ns)
	case 2:
		resultText(tls, ctx, h, t.name)
	case 3:
		resultText(tls, ctx, h, t.typ)
	default:
		sqlite3.Xsqlite3_result_null(tls, ctx)
	}
	return sqlite3.SQLITE_OK
}

// schemataBestIndex uses the first usable equality constraint on
// schema_name that compares under BINARY; the walk is in schema_name
// order.
func schemataBestIndex(tls *libc.TLS, pVtab, pInfo uintptr) int32 {
	p, info := plan(tls, pInfo, 1, -1)
	rows := float64(max(arenaOf(at[vtab](pVtab).arena).nnamespaces, 1))
	if p&planSchema != 0 {
		rows = 1
		info.FidxFlags |= sqlite3.SQLITE_INDEX_SCAN_UNIQUE
	}
	estimate(info, rows)
	// catalog_name and schema_owner are the tenant's name on every row.
	if orderedBy(info, []int32{1}, []int32{0, 2}) {
		info.ForderByConsumed = 1
	}
	return sqlite3.SQLITE_OK
}

// schemataFilter walks the namespaces: all of them, or the one named.
func schemataFilter(tls *libc.TLS, pCursor uintptr, idxNum int32, _ uintptr, argc int32, argv uintptr) int32 {
	c := at[cursor](pCursor)
	h := arenaOf(c.arena)
	c.ti, c.ci, c.end, c.byName, c.rowid = 0, 0, h.nnamespaces, 0, 1
	if idxNum&planSchema != 0 {
		if v, ok := textArg(tls, argv, argc, 0); ok {
			n := int(h.nnamespaces)
			k := int64(sort.Search(n, func(k int) bool { return bytes.Compare(h.bytes(h.namespace(int64(k)).ns), v) >= 0 }))
			if k < c.end && bytes.Equal(h.bytes(h.namespace(k).ns), v) {
				c.ti, c.end = k, k+1
			} else {
				c.ti = c.end
			}
		}
	}
	return sqlite3.SQLITE_OK
}

func schemataNext(_ *libc.TLS, pCursor uintptr) int32 {
	c := at[cursor](pCursor)
	c.ti++
	c.rowid++
	return sqlite3.SQLITE_OK
}

// schemataColumn hands SQLite column col of the cursor's namespace.
func schemataColumn(tls *libc.TLS, pCursor, ctx uintptr, col int32) int32 {
	c := at[cursor](pCursor)
	h := arenaOf(c.arena)
	switch col {
	case 0, 2:
		resultText(tls, ctx, h, h.catalog)
	case 1:
		resultText(tls, ctx, h, h.namespace(c.ti).ns)
	default:
		sqlite3.Xsqlite3_result_null(tls, ctx)
	}
	return sqlite3.SQLITE_OK
}
