package sqlcatalog

import (
	"fmt"
	"sort"

	"modernc.org/sqlite/vtab"
)

// information_schema.columns is a virtual table (modernc.org/sqlite/vtab)
// over the tenant's tables and the column rows of its distinct schemas,
// each described once: a tenant of 1,000 tables that share or repeat
// schemas costs one description per schema, and building the engine does
// not copy 20 rows per table into SQLite. SQLite scans it and applies
// WHERE, ORDER BY and the rest itself. The module is registered on the
// tenant's own driver (Build), so its rows are that tenant's alone.

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

// columnsData is what the virtual table lists: for each table with a
// schema, its rows are described[table.Schema].
type columnsData struct {
	catalog   string
	tables    []Table
	described [][]columnRow
	rows      int
}

// columnsModule creates the virtual table over data.
type columnsModule struct{ data *columnsData }

func (m columnsModule) Create(ctx vtab.Context, _ []string) (vtab.Table, error) {
	if err := ctx.Declare(columnsDecl); err != nil {
		return nil, fmt.Errorf("sqlcatalog: declare columns: %w", err)
	}
	return columnsTable(m), nil
}

func (m columnsModule) Connect(ctx vtab.Context, args []string) (vtab.Table, error) {
	return m.Create(ctx, args)
}

type columnsTable struct{ data *columnsData }

// Plans (IdxNum bits): table_schema = ? and table_name = ? constraints
// narrow the walk (the tables are sorted by namespace and name, so a
// namespace is a binary-searched range). SQLite still checks every
// constraint itself (none is omitted), so a narrowed walk only skips rows
// that could not match.
const (
	planSchema = 1 << iota
	planName
)

// BestIndex uses the equality constraints on table_schema and table_name.
func (t columnsTable) BestIndex(info *vtab.IndexInfo) error {
	arg := 0
	for i := range info.Constraints {
		c := &info.Constraints[i]
		c.ArgIndex = -1
		if !c.Usable || c.Op != vtab.OpEQ {
			continue
		}
		switch {
		case c.Column == 1 && info.IdxNum&planSchema == 0:
			info.IdxNum |= planSchema
		case c.Column == 2 && info.IdxNum&planName == 0:
			info.IdxNum |= planName
		default:
			continue
		}
		c.ArgIndex = arg
		arg++
	}
	// IdxStr records which argument is which, in order.
	for _, c := range info.Constraints {
		if c.ArgIndex >= 0 {
			info.IdxStr += fmt.Sprint(c.Column)
		}
	}
	rows := float64(max(t.data.rows, 1))
	switch info.IdxNum {
	case planSchema | planName:
		rows = 20
	case planSchema:
		rows /= 10
	case planName:
		rows /= 2
	}
	info.EstimatedRows = int64(rows)
	info.EstimatedCost = rows
	return nil
}

func (t columnsTable) Open() (vtab.Cursor, error) { return &columnsCursor{data: t.data}, nil }
func (t columnsTable) Disconnect() error          { return nil }
func (t columnsTable) Destroy() error             { return nil }

// columnsCursor walks table ti's column ci, over tables [ti, end) whose
// name is name (any when name is nil).
type columnsCursor struct {
	data        *columnsData
	ti, ci, end int
	name        *string
	rowid       int64
}

// skip moves to the first column row at or after (ti, ci).
func (c *columnsCursor) skip() {
	for c.ti < c.end {
		t := c.data.tables[c.ti]
		if (c.name == nil || t.Name == *c.name) && t.Schema >= 0 && t.Schema < len(c.data.described) && c.ci < len(c.data.described[t.Schema]) {
			return
		}
		c.ti, c.ci = c.ti+1, 0
	}
}

func (c *columnsCursor) Filter(idxNum int, idxStr string, vals []vtab.Value) error {
	tables := c.data.tables
	c.ti, c.ci, c.end, c.name, c.rowid = 0, 0, len(tables), nil, 1
	for i, col := range idxStr {
		if i >= len(vals) {
			break
		}
		v, ok := vals[i].(string)
		if !ok {
			continue // SQLite compares other values itself
		}
		switch {
		case col == '1' && idxNum&planSchema != 0:
			c.ti = sort.Search(len(tables), func(k int) bool { return tables[k].Namespace >= v })
			c.end = c.ti + sort.Search(len(tables)-c.ti, func(k int) bool { return tables[c.ti+k].Namespace > v })
		case col == '2' && idxNum&planName != 0:
			c.name = &v
		}
	}
	c.skip()
	return nil
}

func (c *columnsCursor) Next() error {
	c.ci++
	c.rowid++
	c.skip()
	return nil
}

func (c *columnsCursor) Eof() bool { return c.ti >= c.end }

func (c *columnsCursor) Column(col int) (vtab.Value, error) {
	t := c.data.tables[c.ti]
	r := &c.data.described[t.Schema][c.ci]
	switch col {
	case 0:
		return c.data.catalog, nil
	case 1:
		return t.Namespace, nil
	case 2:
		return t.Name, nil
	case 3:
		return r.name, nil
	case 4:
		return int64(c.ci + 1), nil
	case 5:
		return nil, nil
	case 6:
		return r.nullable, nil
	case 7:
		return r.dataType, nil
	case 8:
		return r.charMaxLength, nil
	case 9:
		return r.octetLength, nil
	case 10:
		return r.precision, nil
	case 11:
		return r.radix, nil
	case 12:
		return r.scale, nil
	case 13:
		return r.datetimePrecision, nil
	case 14:
		return r.comment, nil
	default:
		return nil, fmt.Errorf("sqlcatalog: columns has no column %d", col)
	}
}

func (c *columnsCursor) Rowid() (int64, error) { return c.rowid, nil }
func (c *columnsCursor) Close() error          { return nil }

// describeTenant describes t's distinct schemas once each.
func describeTenant(t Tenant) *columnsData {
	d := &columnsData{catalog: t.Catalog, tables: t.Tables, described: make([][]columnRow, len(t.Schemas))}
	for i, s := range t.Schemas {
		if s != nil {
			d.described[i] = describeSchema(s)
		}
	}
	for _, tb := range t.Tables {
		if tb.Schema >= 0 && tb.Schema < len(d.described) {
			d.rows += len(d.described[tb.Schema])
		}
	}
	return d
}

// bytes estimates what d holds beyond the tenant's own tables slice.
func (d *columnsData) bytes() int64 {
	var n int64
	for _, rows := range d.described {
		for _, r := range rows {
			n += int64(len(r.name)+len(r.nullable)+len(r.dataType)) + 160
			if s, ok := r.comment.(string); ok {
				n += int64(len(s))
			}
		}
	}
	return n + int64(len(d.tables))*64
}
