package sqlcatalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "modernc.org/sqlite"
)

// tableList is Tables held as a slice of rows.
type tableList []table

type table struct {
	Namespace, Name, Type string
	Schema                int
}

func (l tableList) Len() int               { return len(l) }
func (l tableList) Namespace(i int) string { return l[i].Namespace }
func (l tableList) Name(i int) string      { return l[i].Name }
func (l tableList) Type(i int) string      { return l[i].Type }
func (l tableList) SchemaRef(i int) int    { return l[i].Schema }

func testTenant() Tenant {
	orders := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true,
			Metadata: arrow.NewMetadata([]string{RemarksKey}, []string{"order total"})},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "code", Type: &arrow.FixedSizeBinaryType{ByteWidth: 16}},
		{Name: "score", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	people := arrow.NewSchema([]arrow.Field{{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	return Tenant{Catalog: "acme", Version: "1.2.3", Schemas: []*arrow.Schema{orders, people}, Tables: tableList{
		{Namespace: "hr", Name: "people", Type: "TABLE", Schema: 1},
		{Namespace: "sales", Name: "legacy", Type: "TABLE", Schema: -1},
		{Namespace: "sales", Name: "orders", Type: "TABLE", Schema: 0},
		{Namespace: "sales_eu", Name: "orders", Type: "TABLE", Schema: 0},
	}}
}

func newTestEngine(t testing.TB, limits Limits) *Engine {
	t.Helper()
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e, err := Build(context.Background(), testTenant(), c, limits, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// render prints a result as "col,col|v,v|v,v".
func render(r *Result) string {
	var parts []string
	var names []string
	for _, f := range r.Schema.Fields() {
		names = append(names, f.Name)
	}
	parts = append(parts, strings.Join(names, ","))
	for _, b := range r.Batches() {
		for i := 0; i < int(b.NumRows()); i++ {
			var vals []string
			for _, c := range b.Columns() {
				if c.IsNull(i) {
					vals = append(vals, "NULL")
					continue
				}
				switch c := c.(type) {
				case *array.Int64:
					vals = append(vals, fmt.Sprint(c.Value(i)))
				case *array.Float64:
					vals = append(vals, fmt.Sprint(c.Value(i)))
				case *array.String:
					vals = append(vals, c.Value(i))
				default:
					vals = append(vals, c.ValueStr(i))
				}
			}
			parts = append(parts, strings.Join(vals, ","))
		}
		b.Release()
	}
	return strings.Join(parts, "|")
}

// information_schema.columns reports nested types exactly, as
// arrowtype.String writes them for search, the browser and lake show.
func TestNestedDataTypes(t *testing.T) {
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "lines", Type: arrow.ListOfNonNullable(&arrow.Decimal128Type{Precision: 10, Scale: 2}), Nullable: true},
		{Name: "addr", Type: arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.BinaryTypes.String, Nullable: true})},
		{Name: "tags", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "code", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}, nil)
	e, err := Build(context.Background(), Tenant{Catalog: "acme", Version: "1", Schemas: []*arrow.Schema{sc},
		Tables: tableList{{Namespace: "sales", Name: "nested", Type: "TABLE", Schema: 0}}}, c, Limits{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	res, err := e.Query(context.Background(), "DESCRIBE sales.nested", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "column_name,data_type,is_nullable|lines,list<item: decimal128(10, 2) not null>,YES|addr,struct<zip: utf8>,NO|" +
		"tags,map<utf8, int64>,YES|code,dictionary<values=utf8, indices=int8>,YES"
	if got := render(res); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestQueries(t *testing.T) {
	e := newTestEngine(t, Limits{})
	tests := []struct{ sql, want string }{
		{"SELECT 1", "1|1"},
		{"select 1;", "1|1"},
		{"/* ping */ SELECT 1 AS ok", "ok|1"},
		{"SELECT 1 FROM dual", "1|1"},
		{"SELECT 'x', 2.5, NULL", "'x',2.5,NULL|x,2.5,NULL"},
		{"SELECT version(), current_catalog(), current_user(), current_schema(), database()", "version(),current_catalog(),current_user(),current_schema(),database()|lake 1.2.3,acme,acme,NULL,acme"},
		{"SELECT catalog_name, schema_name FROM information_schema.schemata", "catalog_name,schema_name|acme,hr|acme,sales|acme,sales_eu"},
		{"SELECT * FROM information_schema.tables WHERE table_name LIKE 'ord%' ORDER BY table_schema", "table_catalog,table_schema,table_name,table_type|acme,sales,orders,BASE TABLE|acme,sales_eu,orders,BASE TABLE"},
		{"SELECT column_name, ordinal_position, is_nullable, data_type, character_octet_length, numeric_precision, numeric_precision_radix, numeric_scale, datetime_precision, column_comment FROM information_schema.columns WHERE table_schema = 'sales' AND table_name = 'orders'",
			"column_name,ordinal_position,is_nullable,data_type,character_octet_length,numeric_precision,numeric_precision_radix,numeric_scale,datetime_precision,column_comment|" +
				"id,1,NO,int64,NULL,64,2,0,NULL,NULL|amount,2,YES,decimal128(38, 10),NULL,38,10,10,NULL,order total|at,3,YES,timestamp[us, tz=UTC],NULL,NULL,NULL,NULL,6,NULL|" +
				"code,4,NO,fixed_size_binary[16],16,NULL,NULL,NULL,NULL,NULL|score,5,YES,float32,NULL,24,2,NULL,NULL,NULL"},
		{"SELECT count(*) FROM information_schema.columns", "count(*)|11"},
		{"SELECT DISTINCT table_schema FROM columns ORDER BY 1 DESC LIMIT 2", "table_schema|sales_eu|sales"},
		{"SELECT t.table_name, count(c.column_name) FROM information_schema.tables t LEFT JOIN information_schema.columns c USING (table_schema, table_name) GROUP BY t.table_schema, t.table_name ORDER BY t.table_schema, t.table_name",
			"table_name,count(c.column_name)|people,1|legacy,0|orders,5|orders,5"},
		{"SELECT table_schema, column_name FROM information_schema.columns WHERE table_name = 'orders' AND ordinal_position = 1", "table_schema,column_name|sales,id|sales_eu,id"},
		{"SELECT count(*) FROM information_schema.columns WHERE table_schema = 'sales'", "count(*)|5"},
		{"SELECT count(*) FROM columns WHERE table_schema = 'zzz' OR table_schema = 'hr'", "count(*)|1"},
		{"SELECT count(*) FROM columns WHERE table_schema = 1", "count(*)|0"},
		{"SELECT count(*) FROM columns WHERE table_schema = 'hr' AND table_name = 'people' AND table_name = 'x'", "count(*)|0"},
		{"SELECT count(*) FROM columns WHERE 'sales_eu' = table_schema AND table_name IN ('orders', 'people')", "count(*)|5"},
		// A constraint under another collation than the column's (BINARY)
		// matches what that collation says is equal, whatever the table's
		// walk is narrowed by.
		{"SELECT count(*) FROM information_schema.columns WHERE table_schema = 'SALES' COLLATE NOCASE", "count(*)|5"},
		{"SELECT count(*) FROM information_schema.columns WHERE table_name = 'ORDERS' COLLATE NOCASE AND table_schema = 'sales'", "count(*)|5"},
		{"SELECT count(*) FROM information_schema.columns WHERE table_schema = 'hr ' COLLATE RTRIM", "count(*)|1"},
		{"SHOW TABLES", "table_catalog,table_schema,table_name,table_type|acme,hr,people,BASE TABLE|acme,sales,legacy,BASE TABLE|acme,sales,orders,BASE TABLE|acme,sales_eu,orders,BASE TABLE"},
		{"show schemas;", "catalog_name,schema_name|acme,hr|acme,sales|acme,sales_eu"},
		{`DESCRIBE "hr"."people"`, "column_name,data_type,is_nullable|name,utf8,YES"},
		{`desc acme.hr.people`, "column_name,data_type,is_nullable|name,utf8,YES"},
		{`DESCRIBE people`, "column_name,data_type,is_nullable|name,utf8,YES"},
		{`DESCRIBE HR.PEOPLE`, "column_name,data_type,is_nullable|name,utf8,YES"},
		{"SHOW COLUMNS FROM `sales_eu`.orders", "table_catalog,table_schema,table_name,column_name,data_type,is_nullable|acme,sales_eu,orders,id,int64,NO|acme,sales_eu,orders,amount,decimal128(38, 10),YES|acme,sales_eu,orders,at,timestamp[us, tz=UTC],YES|acme,sales_eu,orders,code,fixed_size_binary[16],NO|acme,sales_eu,orders,score,float32,YES"},
		{"SHOW COLUMNS FROM legacy", "table_catalog,table_schema,table_name,column_name,data_type,is_nullable"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			res, err := e.Query(context.Background(), tt.sql, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(res); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestColumnsPlansMatchTheFullScan: a WHERE on table_schema or table_name
// that narrows the columns table's walk answers what the full walk does
// (a unary + keeps SQLite from handing the constraint to the table).
func TestColumnsPlansMatchTheFullScan(t *testing.T) {
	e := newTestEngine(t, Limits{})
	for _, where := range []string{
		"table_schema = 'sales'",
		"table_name = 'orders'",
		"table_schema = 'sales' AND table_name = 'orders'",
		"table_name = 'orders' AND table_schema = 'sales_eu'",
		"table_schema = 'hr' AND table_name = 'orders'",
		"table_schema = 'sales' AND table_name = 'legacy'",
		"table_schema = 'nope'",
		"table_name = 'nope'",
		"table_schema = 'sales' AND table_schema = 'hr'",
		"table_schema IN ('sales', 'hr')",
		"table_schema = x'73616c6573'",
		"table_name = 1",
		"table_schema > 'hr' AND table_name = 'orders'",
		"table_schema = 'SALES' COLLATE NOCASE",
		"table_name = 'ORDERS' COLLATE NOCASE",
		"table_schema = 'Sales_EU' COLLATE NOCASE AND table_name = 'orders'",
		"table_schema = 'sales' COLLATE BINARY AND table_name = 'Orders' COLLATE NOCASE",
		"table_schema = 'hr ' COLLATE RTRIM",
	} {
		t.Run(where, func(t *testing.T) {
			run := func(where string) string {
				t.Helper()
				res, err := e.Query(context.Background(), "SELECT * FROM information_schema.columns WHERE "+where+
					" ORDER BY table_schema, table_name, ordinal_position", nil)
				if err != nil {
					t.Fatal(err)
				}
				return render(res)
			}
			full := strings.NewReplacer("table_schema", "+table_schema", "table_name", "+table_name").Replace(where)
			if got, want := run(where), run(full); got != want {
				t.Errorf("got  %s\nwant %s (%s)", got, want, full)
			}
		})
	}
}

// TestViewsPlansMatchTheFullScan: information_schema.tables and
// .schemata, virtual tables over the arena, answer a WHERE that narrows
// their walk and an ORDER BY their walk's order consumes as a full walk
// sorted by SQLite does (a unary + keeps SQLite from handing a constraint
// or an ORDER BY term to the table).
func TestViewsPlansMatchTheFullScan(t *testing.T) {
	e := newTestEngine(t, Limits{})
	plus := regexp.MustCompile(`\b(\w\.)?(table_schema|table_name|table_catalog|table_type|schema_name|catalog_name|schema_owner)\b`)
	for _, q := range []string{
		"SELECT * FROM information_schema.tables",
		"SELECT * FROM information_schema.tables ORDER BY table_schema, table_name",
		"SELECT * FROM information_schema.tables ORDER BY table_catalog, table_schema DESC",
		"SELECT * FROM information_schema.tables ORDER BY table_name, table_schema",
		"SELECT * FROM information_schema.tables ORDER BY table_schema, table_name DESC",
		"SELECT * FROM information_schema.tables ORDER BY table_type, table_schema",
		"SELECT * FROM information_schema.tables WHERE table_schema = 'sales' ORDER BY table_name",
		"SELECT * FROM information_schema.tables WHERE table_name = 'orders' ORDER BY table_schema",
		"SELECT * FROM information_schema.tables WHERE table_schema = 'sales' AND table_name = 'orders'",
		"SELECT * FROM information_schema.tables WHERE table_schema = 'sales' AND table_name = 'nope'",
		"SELECT * FROM information_schema.tables WHERE table_schema = 'nope'",
		"SELECT * FROM information_schema.tables WHERE table_schema = 'SALES' COLLATE NOCASE AND table_name = 'Orders' COLLATE NOCASE",
		"SELECT * FROM information_schema.tables WHERE table_name IN ('orders', 'people') ORDER BY 2, 3",
		"SELECT t.table_name AS n, count(*) AS k FROM information_schema.tables t JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name GROUP BY t.table_schema, t.table_name",
		"SELECT * FROM information_schema.schemata",
		"SELECT * FROM information_schema.schemata ORDER BY schema_name DESC",
		"SELECT * FROM information_schema.schemata ORDER BY catalog_name, schema_owner, schema_name",
		"SELECT * FROM information_schema.schemata WHERE schema_name = 'sales'",
		"SELECT * FROM information_schema.schemata WHERE schema_name = 'Sales_EU' COLLATE NOCASE",
		"SELECT * FROM information_schema.schemata WHERE schema_name = 'nope'",
		"SELECT s.schema_name AS s, t.table_name AS n FROM information_schema.schemata s JOIN information_schema.tables t ON t.table_schema = s.schema_name ORDER BY 1, 2",
	} {
		t.Run(q, func(t *testing.T) {
			run := func(q string) string {
				t.Helper()
				res, err := e.Query(context.Background(), q, nil)
				if err != nil {
					t.Fatal(err)
				}
				return render(res)
			}
			full := plus.ReplaceAllString(q, "+$1$2")
			if got, want := run(q), run(full); got != want {
				t.Errorf("got  %s\nwant %s (%s)", got, want, full)
			}
		})
	}
}

// TestBuildRefusesTablesOutOfOrder: the views' walks rely on the tables'
// (namespace, name) order, so Build refuses tables out of it or twice.
func TestBuildRefusesTablesOutOfOrder(t *testing.T) {
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for name, tables := range map[string]tableList{
		"names":      {{Namespace: "a", Name: "y", Type: "TABLE", Schema: -1}, {Namespace: "a", Name: "x", Type: "TABLE", Schema: -1}},
		"namespaces": {{Namespace: "b", Name: "x", Type: "TABLE", Schema: -1}, {Namespace: "a", Name: "y", Type: "TABLE", Schema: -1}},
		"twice":      {{Namespace: "a", Name: "x", Type: "TABLE", Schema: -1}, {Namespace: "a", Name: "x", Type: "TABLE", Schema: -1}},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := Build(context.Background(), Tenant{Catalog: "acme", Tables: tables}, c, Limits{}, nil)
			if err == nil {
				e.Close()
				t.Fatal("Build accepted tables out of order")
			}
		})
	}
}

// TestResultTypes: a column's type is what its values are, integers and
// reals widening to float64 and anything mixed with text or blobs to
// utf8 (numbers as SQLite prints them), or its declared type when all
// its values are NULL.
func TestResultTypes(t *testing.T) {
	e := newTestEngine(t, Limits{})
	tests := []struct{ sql, typ, want string }{
		{"SELECT 1 UNION ALL SELECT 2", "int64", "1|2"},
		{"SELECT 1 UNION ALL SELECT 2.5", "float64", "1|2.5"},
		{"SELECT 0.1 UNION ALL SELECT NULL", "float64", "0.1|NULL"},
		{"SELECT 1 UNION ALL SELECT 'a' UNION ALL SELECT 2.5", "utf8", "1|a|2.5"},
		{"SELECT x'6162' UNION ALL SELECT x''", "binary", "YWI=|"},
		{"SELECT x'61' UNION ALL SELECT 'b' UNION ALL SELECT 7", "utf8", "a|b|7"},
		{"SELECT NULL UNION ALL SELECT 1", "int64", "NULL|1"},
		{"SELECT '' UNION ALL SELECT NULL", "utf8", "|NULL"},
		{"SELECT column_default FROM information_schema.columns LIMIT 2", "utf8", "NULL|NULL"},
		{"SELECT character_maximum_length FROM information_schema.columns LIMIT 2", "int64", "NULL|NULL"},
		{"SELECT NULL", "utf8", "NULL"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			res, err := e.Query(context.Background(), tt.sql, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Schema.Field(0).Type.String(); got != tt.typ {
				t.Errorf("got type %s, want %s", got, tt.typ)
			}
			rows := strings.SplitN(render(res), "|", 2)
			if got := rows[len(rows)-1]; got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestResultAcrossBatches: a result of several record batches holds every
// row, in order, a column mixing numbers, texts and NULLs included.
func TestResultAcrossBatches(t *testing.T) {
	e := newTestEngine(t, Limits{})
	const n = 30_000
	res, err := e.Query(context.Background(), fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d)
SELECT i, CASE i %% 3 WHEN 0 THEN 'x' || i WHEN 1 THEN i END, printf('%%040d', i) FROM n`, n), nil)
	if err != nil {
		t.Fatal(err)
	}
	batches := res.Batches()
	if len(batches) < 2 {
		t.Fatalf("%d batches, want several", len(batches))
	}
	i := 1
	for _, b := range batches {
		ids, mixed, pad := b.Column(0).(*array.Int64), b.Column(1).(*array.String), b.Column(2).(*array.String)
		for r := range int(b.NumRows()) {
			want := ""
			switch i % 3 {
			case 0:
				want = fmt.Sprintf("x%d", i)
			case 1:
				want = fmt.Sprint(i)
			}
			if ids.Value(r) != int64(i) || mixed.IsNull(r) != (i%3 == 2) || mixed.Value(r) != want || pad.Value(r) != fmt.Sprintf("%040d", i) {
				t.Fatalf("row %d: got %d, %q (null %v), %q", i, ids.Value(r), mixed.Value(r), mixed.IsNull(r), pad.Value(r))
			}
			i++
		}
		b.Release()
	}
	if i != n+1 {
		t.Errorf("got %d rows, want %d", i-1, n)
	}
}

func TestRefused(t *testing.T) {
	e := newTestEngine(t, Limits{MaxRows: 50})
	tests := []struct {
		sql    string
		kind   ErrorKind
		msg    string
		offset int
	}{
		{"SELEC 1", ErrInvalid, `near "SELEC": syntax error at line 1, column 1`, 0},
		{"SELECT 1 FORM dual", ErrInvalid, "syntax error at line 1, column 15", 14},
		{"SELECT 1,\n  FROM x", ErrInvalid, "at line 2, column 3", 12},
		{"SELECT * FROM nowhere", ErrInvalid, "no such table: nowhere", -2},
		{"SELECT nope FROM information_schema.tables", ErrInvalid, "no such column: nope", -2},
		{"SELECT * FROM sales.orders", ErrTableData, "sales.orders is a registered table", -2},
		{`SELECT * FROM "sales_eu"."orders"`, ErrTableData, "registered table", -2},
		{"SELECT * FROM people", ErrTableData, "people is a registered table", -2},
		{"SELECT 1; SELECT 2", ErrInvalid, "one statement per request at line 1, column 10", 9},
		{"SELECT 1; DROP TABLE dual", ErrInvalid, "one statement per request", 9},
		{"", ErrInvalid, "no statement", -1},
		{"-- nothing", ErrInvalid, "no statement", -1},
		{"DROP TABLE information_schema.tables", ErrReadOnly, "read-only", -1},
		{"DELETE FROM dual", ErrReadOnly, "read-only", -1},
		{"INSERT INTO information_schema.tables VALUES ('a','b','c','d')", ErrReadOnly, "read-only", -1},
		{"CREATE TABLE t (x)", ErrReadOnly, "read-only", -1},
		{"CREATE TEMP VIEW v AS SELECT 1", ErrReadOnly, "read-only", -1},
		{"BEGIN", ErrReadOnly, "transactions refused", -1},
		{"COMMIT", ErrReadOnly, "transactions refused", -1},
		{"SAVEPOINT a", ErrReadOnly, "read-only", -1},
		{"ATTACH ':memory:' AS other", ErrReadOnly, "ATTACH refused", -1},
		{"DETACH information_schema", ErrReadOnly, "DETACH refused", -1},
		{"PRAGMA query_only = 0", ErrReadOnly, "PRAGMA refused", -1},
		{"PRAGMA table_info('tables')", ErrReadOnly, "PRAGMA refused", -1},
		{"SELECT * FROM pragma_table_info('tables')", ErrReadOnly, "PRAGMA refused", -1},
		{"SELECT load_extension('x')", ErrReadOnly, "load_extension refused", -1},
		{"VACUUM", ErrReadOnly, "read-only", -1},
		{"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT i FROM n LIMIT 51", ErrLimit, "more than 50 rows", -1},
		{"SHOW PROCESSLIST", ErrInvalid, "expected TABLES, SCHEMAS or COLUMNS after SHOW", 5},
		{"DESCRIBE orders", ErrInvalid, "ambiguous: it names sales.orders, sales_eu.orders", 9},
		{"DESCRIBE globex.sales.orders", ErrInvalid, "no such table: globex.sales.orders", 9},
		{"DESCRIBE sales.nope", ErrInvalid, "no such table: sales.nope", 9},
		{"DESCRIBE \"sales", ErrInvalid, "unterminated quoted identifier", 9},
		{"SHOW TABLES extra", ErrInvalid, "expected the end of the statement", 12},
		{strings.Repeat(" ", MaxSQLBytes+1), ErrInvalid, "at most", -1},
		{"SELECT 1\x00", ErrInvalid, "NUL", -1},
	}
	for _, tt := range tests {
		name := tt.sql
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			_, err := e.Query(context.Background(), tt.sql, nil)
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Query = %v, want an *Error", err)
			}
			if se.Kind != tt.kind || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("error %d %q, want kind %d saying %q", se.Kind, se.Msg, tt.kind, tt.msg)
			}
			if tt.offset != -2 && se.Offset != tt.offset {
				t.Errorf("offset %d, want %d", se.Offset, tt.offset)
			}
		})
	}
	// The engine still answers, unchanged, after all that.
	res, err := e.Query(context.Background(), "SELECT count(*) FROM information_schema.tables", nil)
	if err != nil || render(res) != "count(*)|4" {
		t.Fatalf("after the refusals: %v %v", res, err)
	}
}

func TestTimeout(t *testing.T) {
	e := newTestEngine(t, Limits{Timeout: 50 * time.Millisecond})
	_, err := e.Query(context.Background(), "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT count(*) FROM n", nil)
	var se *Error
	if !errors.As(err, &se) || se.Kind != ErrTimeout {
		t.Fatalf("Query = %v, want ErrTimeout", err)
	}
	if _, err := e.Query(context.Background(), "SELECT 1", nil); err != nil {
		t.Fatalf("after the timeout: %v", err)
	}
}

// slowRows is a statement whose first row is cheap and whose later rows
// are slow: row i counts up to (i-1)·3,000,000 in a recursive CTE, so the
// first step returns at once and the statement's whole work (about 18
// million steps, seconds) comes after it.
const slowRows = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 4)
SELECT i, (WITH RECURSIVE m(j) AS (SELECT 0 UNION ALL SELECT j+1 FROM m WHERE j < (i-1)*3000000) SELECT count(*) FROM m) FROM n`

// The budget holds for every row, not only the first: a statement whose
// later rows are slow ends with ErrTimeout instead of running to its end.
func TestTimeoutHoldsForEveryRow(t *testing.T) {
	e := newTestEngine(t, Limits{Timeout: 100 * time.Millisecond})
	res, err := e.Query(context.Background(), slowRows, nil)
	var se *Error
	if !errors.As(err, &se) || se.Kind != ErrTimeout {
		t.Fatalf("Query = %v, %v; want ErrTimeout", res, err)
	}
	if _, err := e.Query(context.Background(), "SELECT 1", nil); err != nil {
		t.Fatalf("after the timeout: %v", err)
	}
}

// The caller's cancel holds for every row too.
func TestCancelHoldsForEveryRow(t *testing.T) {
	e := newTestEngine(t, Limits{Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	res, err := e.Query(ctx, slowRows, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Query = %v, %v; want context.Canceled", res, err)
	}
}

// A result is charged to the budget while it is collected; one the
// budget cannot hold is refused with ErrBusy, and what it held is given
// back.
func TestBudgetRefusesAndGivesBack(t *testing.T) {
	e := newTestEngine(t, Limits{})
	const q = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 20000) SELECT i, printf('%050d', i) FROM n"
	big := NewBudget(64 << 20)
	r := big.Reserve()
	res, err := e.Query(context.Background(), q, r)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Bytes(), res.Size(); got != want {
		t.Errorf("reservation after the result = %d bytes, want the result's %d", got, want)
	}
	if st := big.Stats(); st.Peak <= res.Size() {
		t.Errorf("peak %d, want more than the result's %d (the gathered rows were charged too)", st.Peak, res.Size())
	}
	r.Release()
	if st := big.Stats(); st.Used != 0 {
		t.Errorf("after Release: %d bytes used, want 0", st.Used)
	}

	small := NewBudget(res.Size() / 2)
	r = small.Reserve()
	_, err = e.Query(context.Background(), q, r)
	var se *Error
	if !errors.As(err, &se) || se.Kind != ErrBusy {
		t.Fatalf("Query over a small budget = %v, want ErrBusy", err)
	}
	r.Release()
	if st := small.Stats(); st.Used != 0 || st.Refused != 1 {
		t.Errorf("small budget after the refusal: %+v, want nothing used and 1 refused", st)
	}
}

// The Checker compiles under the engines' authorizer: a PRAGMA SQLite
// would carry out while compiling it is refused before it acts, on the
// first statement or on a second one.
func TestCheckerRefusesPragmasBeforeTheyAct(t *testing.T) {
	e := newTestEngine(t, Limits{})
	for _, q := range []string{
		"PRAGMA soft_heap_limit = 12345",
		"SELECT 1; PRAGMA soft_heap_limit = 12345",
		"PRAGMA hard_heap_limit = 12345",
		"PRAGMA temp_store_directory = '/tmp/lake-checker-test'",
	} {
		_, err := e.Query(context.Background(), q, nil)
		var se *Error
		if !errors.As(err, &se) || se.Kind != ErrReadOnly && se.Kind != ErrInvalid {
			t.Errorf("%s: %v, want refused", q, err)
		}
	}
	// soft_heap_limit is process-wide: reading it on a fresh connection
	// shows whether a refused statement set it.
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, p := range []string{"soft_heap_limit", "hard_heap_limit"} {
		var n int64
		if err := db.QueryRow("PRAGMA " + p).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 12345 {
			t.Errorf("%s is %d: a refused statement changed it for the whole process", p, n)
		}
	}
}
