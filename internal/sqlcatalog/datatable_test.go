package sqlcatalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/preview"
)

// memData serves each table's rows from record batches in memory, in
// batches of batchRows, and records what each Open asked. It stands for
// package preview's reader over a table's files (tested there): this
// package's part is what SQLite asks of it and what it makes of the rows.
type memData struct {
	schemas   map[string]*arrow.Schema
	rows      map[string]arrow.RecordBatch
	batchRows int64
	openErr   error

	mu    sync.Mutex
	asked []preview.Request
	read  int64 // rows handed out
}

func (d *memData) Schema(ns, name string) (*arrow.Schema, error) {
	s, ok := d.schemas[ns+"."+name]
	if !ok || s == nil {
		return nil, fmt.Errorf("no schema")
	}
	return s, nil
}

func (d *memData) Open(_ context.Context, ns, name string, req preview.Request) (Rows, error) {
	d.mu.Lock()
	d.asked = append(d.asked, req)
	d.mu.Unlock()
	if d.openErr != nil {
		return nil, d.openErr
	}
	rec := d.rows[ns+"."+name]
	cols := req.Columns
	if cols == nil {
		for i := range req.Schema.NumFields() {
			cols = append(cols, i)
		}
	}
	fields := make([]arrow.Field, len(cols))
	for k, c := range cols {
		fields[k] = req.Schema.Field(c)
	}
	return &memRows{d: d, rec: rec, cols: cols, schema: arrow.NewSchema(fields, nil), limit: req.Limit}, nil
}

type memRows struct {
	d      *memData
	rec    arrow.RecordBatch
	cols   []int
	schema *arrow.Schema
	at     int64
	limit  int64
}

func (r *memRows) Next(context.Context) (arrow.RecordBatch, error) {
	end := min(r.at+r.d.batchRows, r.rec.NumRows())
	if r.limit > 0 {
		end = min(end, r.limit)
	}
	if r.at >= end {
		return nil, io.EOF
	}
	arrs := make([]arrow.Array, len(r.cols))
	for k, c := range r.cols {
		arrs[k] = array.NewSlice(r.rec.Column(c), r.at, end)
	}
	out := array.NewRecordBatch(r.schema, arrs, end-r.at)
	for _, a := range arrs {
		a.Release()
	}
	r.d.mu.Lock()
	r.d.read += end - r.at
	r.d.mu.Unlock()
	r.at = end
	return out, nil
}

func (r *memRows) Close() error { return nil }

// ordersRows are 10 rows of testTenant's orders schema: id 1..10, amount
// id.5 (NULL for id 3), at id seconds after the epoch, code 16 bytes of
// id, score id/2.
func ordersRows(t testing.TB, s *arrow.Schema) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := int64(1); i <= 10; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		if i == 3 {
			b.Field(1).AppendNull()
		} else {
			n, err := decimal128.FromString(fmt.Sprintf("%d.5", i), 38, 10)
			if err != nil {
				t.Fatal(err)
			}
			b.Field(1).(*array.Decimal128Builder).Append(n)
		}
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(i * 1_000_000))
		b.Field(3).(*array.FixedSizeBinaryBuilder).Append([]byte(strings.Repeat(string(rune('a'+i)), 16)))
		b.Field(4).(*array.Float32Builder).Append(float32(i) / 2)
	}
	return b.NewRecordBatch()
}

func peopleRows(s *arrow.Schema) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for _, n := range []string{"ada", "grace", "linus"} {
		b.Field(0).(*array.StringBuilder).Append(n)
	}
	return b.NewRecordBatch()
}

func newDataEngine(t testing.TB, limits Limits) (*Engine, *memData) {
	t.Helper()
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ten := testTenant()
	d := &memData{batchRows: 4, schemas: map[string]*arrow.Schema{
		"sales.orders": ten.Schemas[0], "sales_eu.orders": ten.Schemas[0], "hr.people": ten.Schemas[1]}}
	d.rows = map[string]arrow.RecordBatch{"sales.orders": ordersRows(t, ten.Schemas[0]), "sales_eu.orders": ordersRows(t, ten.Schemas[0]),
		"hr.people": peopleRows(ten.Schemas[1])}
	ten.Data = d
	e, err := Build(context.Background(), ten, c, limits, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, d
}

func TestDataStatementsReadRegisteredTables(t *testing.T) {
	e, d := newDataEngine(t, Limits{})
	for _, tc := range []struct{ sql, want string }{
		{"SELECT id, score FROM sales.orders LIMIT 3", "id,score|1,0.5|2,1|3,1.5"},
		{"SELECT name FROM people ORDER BY name DESC", "name|linus|grace|ada"},
		{`SELECT count(*) AS n, sum(id) AS s FROM "sales"."orders" WHERE id > 4`, "n,s|6,45"},
		{"SELECT o.id, p.name FROM sales.orders o JOIN hr.people p ON o.id = length(p.name) ORDER BY 1", "id,name|3,ada|5,grace|5,linus"},
		{"SELECT id FROM sales_eu.orders WHERE amount IS NULL", "id|3"},
		{"SELECT table_name FROM information_schema.tables WHERE table_schema = 'hr'", "table_name|people"},
		// A LIMIT over an aggregate, a sort, DISTINCT, GROUP BY or a join
		// bounds their rows, not the scan's.
		{"SELECT count(*) FROM sales.orders LIMIT 1", "count(*)|10"},
		{"SELECT id FROM sales.orders ORDER BY id DESC LIMIT 2", "id|10|9"},
		{"SELECT DISTINCT id % 3 AS r FROM sales.orders ORDER BY r LIMIT 3", "r|0|1|2"},
		{"SELECT id % 4 AS r, count(*) AS n FROM sales.orders GROUP BY r LIMIT 2", "r,n|0,2|1,3"},
		{"SELECT max(o.id) AS m FROM sales.orders o, sales_eu.orders p WHERE o.id = p.id + 9 LIMIT 1", "m|10"},
		{"SELECT id FROM sales.orders LIMIT 2 OFFSET 8", "id|9|10"},
	} {
		res, err := e.Query(context.Background(), tc.sql, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if got := render(res); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
		if !res.Data && !strings.Contains(tc.sql, "information_schema") {
			t.Errorf("%s: result not marked as data", tc.sql)
		}
	}
	if len(d.asked) == 0 {
		t.Fatal("no table was opened")
	}
}

func TestDataResultsKeepRegisteredTypes(t *testing.T) {
	e, _ := newDataEngine(t, Limits{})
	res, err := e.Query(context.Background(), "SELECT *, id + 1 AS next FROM sales.orders WHERE id = 2", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := testTenant().Schemas[0]
	for i, f := range reg.Fields() {
		if got := res.Schema.Field(i).Type; !arrow.TypeEqual(got, f.Type) {
			t.Errorf("column %s: type %s, registered %s", f.Name, got, f.Type)
		}
	}
	if got := res.Schema.Field(5).Type; !arrow.TypeEqual(got, arrow.PrimitiveTypes.Int64) {
		t.Errorf("an expression's column: %s, want int64", got)
	}
	b := res.Batches()[0]
	defer b.Release()
	if got := b.Column(1).(*array.Decimal128).ValueStr(0); got != "2.5" {
		t.Errorf("amount %s, want 2.5", got)
	}
	if got := b.Column(2).(*array.Timestamp).Value(0); got != 2_000_000 {
		t.Errorf("at %d, want 2000000", got)
	}
	if got := string(b.Column(3).(*array.FixedSizeBinary).Value(0)); got != strings.Repeat("c", 16) {
		t.Errorf("code %q", got)
	}
}

func TestDataPlansPushColumnsFiltersAndLimit(t *testing.T) {
	e, d := newDataEngine(t, Limits{})
	last := func() preview.Request { return d.asked[len(d.asked)-1] }
	if _, err := e.Query(context.Background(), "SELECT score FROM sales.orders LIMIT 2", nil); err != nil {
		t.Fatal(err)
	}
	if r := last(); fmt.Sprint(r.Columns) != "[4]" || r.Limit != 2 {
		t.Errorf("columns %v limit %d, want [4] and 2", r.Columns, r.Limit)
	}
	if d.read > 4 {
		t.Errorf("%d rows read for LIMIT 2, want one batch at most", d.read)
	}
	if _, err := e.Query(context.Background(), "SELECT id FROM sales.orders WHERE id >= 7 AND score < 100 AND amount IS NOT NULL LIMIT 1", nil); err != nil {
		t.Fatal(err)
	}
	r := last()
	if r.Limit != 0 {
		t.Errorf("limit %d handed over beside other constraints; want none (SQLite applies them)", r.Limit)
	}
	got := map[string]bool{}
	for _, f := range r.Filters {
		got[fmt.Sprintf("%d %d %v", f.Column, f.Op, f.Value)] = true
	}
	for _, want := range []string{fmt.Sprintf("0 %d 7", preview.OpGe), fmt.Sprintf("4 %d 100", preview.OpLt), fmt.Sprintf("1 %d <nil>", preview.OpIsNotNull)} {
		if !got[want] {
			t.Errorf("filters %v lack %q", r.Filters, want)
		}
	}
}

func TestDataStatementsStayReadOnly(t *testing.T) {
	e, _ := newDataEngine(t, Limits{})
	if _, err := e.Query(context.Background(), "SELECT id FROM sales.orders", nil); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"DELETE FROM sales.orders",
		"INSERT INTO sales.orders(id) VALUES (1)",
		"DROP TABLE sales.orders",
		"ATTACH ':memory:' AS x",
		"DETACH sales",
		"PRAGMA query_only = 0",
		"CREATE VIRTUAL TABLE sales.x USING lake_table",
	} {
		_, err := e.Query(context.Background(), sql, nil)
		var se *Error
		if !errors.As(err, &se) || se.Kind != ErrReadOnly && se.Kind != ErrInvalid {
			t.Errorf("%s: %v, want refused", sql, err)
		}
	}
	// Still readable after the refusals.
	if res, err := e.Query(context.Background(), "SELECT count(*) FROM sales.orders", nil); err != nil || render(res) != "count(*)|10" {
		t.Fatalf("after refusals: %v", err)
	}
}

func TestDataFailuresAreClassified(t *testing.T) {
	e, d := newDataEngine(t, Limits{})
	d.openErr = &preview.LimitError{Table: "sales.orders", Limit: "bytes read", Max: 64}
	_, err := e.Query(context.Background(), "SELECT * FROM sales.orders", nil)
	var se *Error
	if !errors.As(err, &se) || se.Kind != ErrLimit || !strings.Contains(se.Msg, "bytes read") {
		t.Fatalf("limit: %v", err)
	}
	d.openErr = &preview.MismatchError{Table: "sales.orders", File: "file:///x/part-0.parquet", Reason: "column id: int32, registered int64"}
	_, err = e.Query(context.Background(), "SELECT * FROM sales.orders", nil)
	var me *preview.MismatchError
	if !errors.As(err, &se) || se.Kind != ErrData || !errors.As(err, &me) || !strings.Contains(se.Msg, "part-0.parquet") {
		t.Fatalf("mismatch: %v", err)
	}
	// A table without a schema.
	_, err = e.Query(context.Background(), "SELECT * FROM sales.legacy", nil)
	if !errors.As(err, &se) || se.Kind != ErrData {
		t.Fatalf("no schema: %v", err)
	}
}

func TestDataStatementsAcrossManyNamespaces(t *testing.T) {
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	people := testTenant().Schemas[1]
	var tables tableList
	d := &memData{batchRows: 100, schemas: map[string]*arrow.Schema{}, rows: map[string]arrow.RecordBatch{}}
	for i := range maxDataSchemas + 3 {
		ns := fmt.Sprintf("ns%02d", i)
		tables = append(tables, table{Namespace: ns, Name: "people", Type: "TABLE", Schema: 0})
		d.schemas[ns+".people"] = people
		d.rows[ns+".people"] = peopleRows(people)
	}
	e, err := Build(context.Background(), Tenant{Catalog: "acme", Tables: tables, Schemas: []*arrow.Schema{people}, Data: d}, c, Limits{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for round := range 2 {
		for _, tb := range tables {
			res, err := e.Query(context.Background(), fmt.Sprintf("SELECT count(*) FROM %s.people", tb.Namespace), nil)
			if err != nil || render(res) != "count(*)|3" {
				t.Fatalf("round %d, %s: %v", round, tb.Namespace, err)
			}
		}
	}
	if n := len(e.data.schemas); n > maxDataSchemas {
		t.Errorf("%d namespaces attached, at most %d", n, maxDataSchemas)
	}
}

func TestNoDataMeansTableDataRefused(t *testing.T) {
	e := newTestEngine(t, Limits{})
	_, err := e.Query(context.Background(), "SELECT * FROM sales.orders LIMIT 1", nil)
	var se *Error
	if !errors.As(err, &se) || se.Kind != ErrTableData {
		t.Fatalf("%v, want ErrTableData", err)
	}
}

// FuzzSQLOverRows is FuzzSQL on an engine that reads registered tables'
// rows: any text answers a result or an *Error, never panics, and leaves
// the engine as it was: read-only, its tables' rows unchanged, and
// another tenant's names nowhere.
func FuzzSQLOverRows(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM sales.orders LIMIT 3", "SELECT count(*) FROM orders", "SELECT name FROM hr.people WHERE name > 'b'",
		"DELETE FROM sales.orders", "DETACH sales", "ATTACH ':memory:' AS globex", "CREATE VIRTUAL TABLE x USING lake_table",
		"SELECT * FROM sales.orders o, sales_eu.orders p WHERE o.id = p.id AND o.amount IS NULL",
		"SELECT * FROM sales.legacy", "SELECT * FROM main.orders", "SELECT rowid, * FROM sales.orders ORDER BY 1 DESC LIMIT 2 OFFSET 1",
		"SELECT * FROM sales.orders WHERE id IN (1, 2) OR code = x'00'", "PRAGMA sales.table_info(orders)",
	} {
		f.Add(s)
	}
	e, _ := newDataEngine(f, Limits{Timeout: 200 * time.Millisecond, MaxRows: 1000, MaxBytes: 1 << 20})
	f.Fuzz(func(t *testing.T, sql string) {
		res, err := e.Query(context.Background(), sql, nil)
		var se *Error
		switch {
		case err == nil:
			if got := render(res); strings.Contains(got, "globex") && !strings.Contains(sql, "globex") {
				t.Fatalf("%q answered another tenant's name: %s", sql, got)
			}
		case !errors.As(err, &se):
			t.Fatalf("%q: %v is not an *Error", sql, err)
		}
		after, err := e.Query(context.Background(), "SELECT count(*), sum(id) FROM sales.orders", nil)
		if err != nil || render(after) != "count(*),sum(id)|10,55" {
			t.Fatalf("after %q: %v %v", sql, after, err)
		}
	})
}

// Dates, times and timestamps are SQLite's date and time text inside a
// statement (so comparisons with literals, ORDER BY and date functions
// work) and their registered types again in the result.
func TestDataTemporalValues(t *testing.T) {
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "t", Type: arrow.FixedWidthTypes.Time32ms},
		{Name: "n", Type: arrow.FixedWidthTypes.Time64ns},
		{Name: "naive", Type: &arrow.TimestampType{Unit: arrow.Second}},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	base := time.Date(2024, 6, 1, 12, 30, 15, 123456789, time.UTC)
	for day := range 5 {
		at := base.AddDate(0, 0, day)
		b.Field(0).(*array.Date32Builder).Append(arrow.Date32FromTime(at))
		b.Field(1).(*array.Time32Builder).Append(arrow.Time32((12*3600+30*60+15)*1000 + 123 + day))
		b.Field(2).(*array.Time64Builder).Append(arrow.Time64((12*3600+30*60+15)*1_000_000_000 + 123456789 + day))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(at.Unix()))
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixNano()))
	}
	d := &memData{batchRows: 2, schemas: map[string]*arrow.Schema{"ev.log": s}, rows: map[string]arrow.RecordBatch{"ev.log": b.NewRecordBatch()}}
	e, err := Build(context.Background(), Tenant{Catalog: "acme", Schemas: []*arrow.Schema{s},
		Tables: tableList{{Namespace: "ev", Name: "log", Type: "TABLE", Schema: 0}}, Data: d}, c, Limits{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tc := range []struct{ sql, want string }{
		{"SELECT count(*) FROM ev.log WHERE at >= '2024-06-03'", "count(*)|3"},
		{"SELECT count(*) FROM ev.log WHERE d BETWEEN '2024-06-02' AND '2024-06-03'", "count(*)|2"},
		{"SELECT date(at), strftime('%H:%M', naive), typeof(t) FROM ev.log ORDER BY at DESC LIMIT 1", "date(at),strftime('%H:%M', naive),typeof(t)|2024-06-05,12:30,text"},
		{"SELECT at || '' AS a, t || '' AS b, n || '' AS c FROM ev.log LIMIT 1", "a,b,c|2024-06-01 12:30:15.123456789,12:30:15.123,12:30:15.123456789"},
	} {
		res, err := e.Query(context.Background(), tc.sql, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if got := render(res); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
	res, err := e.Query(context.Background(), "SELECT * FROM ev.log WHERE d = '2024-06-02'", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range s.Fields() {
		if got := res.Schema.Field(i).Type; !arrow.TypeEqual(got, f.Type) {
			t.Errorf("column %s: %s, want the registered %s", f.Name, got, f.Type)
		}
	}
	rec := res.Batches()[0]
	defer rec.Release()
	want := base.AddDate(0, 0, 1)
	if got := rec.Column(4).(*array.Timestamp).Value(0); int64(got) != want.UnixNano() {
		t.Errorf("at %d, want %d", got, want.UnixNano())
	}
	if got := rec.Column(3).(*array.Timestamp).Value(0); int64(got) != want.Unix() {
		t.Errorf("naive %d, want %d", got, want.Unix())
	}
	if got := rec.Column(2).(*array.Time64).Value(0); int64(got) != (12*3600+30*60+15)*1_000_000_000+123456789+1 {
		t.Errorf("n %d", got)
	}
	if got := rec.Column(1).(*array.Time32).Value(0); int64(got) != (12*3600+30*60+15)*1000+123+1 {
		t.Errorf("t %d", got)
	}
	if got := rec.Column(0).(*array.Date32).Value(0); got != arrow.Date32FromTime(want) {
		t.Errorf("d %d", got)
	}
}

// Review findings of the read path, each a statement whose answer was
// wrong: decimals compared as text, a NOCASE comparison's row groups
// skipped by bytes, count(*) reading every column, an unqualified name
// in two namespaces read from either, a statement scanning a table once
// per outer row without end.
func TestDataReviewFindings(t *testing.T) {
	e, d := newDataEngine(t, Limits{})
	last := func() preview.Request { return d.asked[len(d.asked)-1] }
	for _, tc := range []struct{ sql, want string }{
		// amount is decimal128(38, 10): id.5, NULL for id 3.
		{"SELECT count(*) FROM sales.orders WHERE amount > 5", "count(*)|6"},
		{"SELECT id FROM sales.orders ORDER BY amount DESC LIMIT 1", "id|10"},
		{"SELECT max(amount) AS m FROM sales.orders", "m|10.5"},
	} {
		res, err := e.Query(context.Background(), tc.sql, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if got := render(res); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
	res, err := e.Query(context.Background(), "SELECT amount FROM sales.orders WHERE id = 4", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Schema.Field(0).Type; !arrow.TypeEqual(got, testTenant().Schemas[0].Field(1).Type) {
		t.Errorf("amount comes back as %s", got)
	}
	if got := render(res); got != "amount|4.5" && got != "amount|4.5000000000" {
		t.Errorf("amount = %s", got)
	}

	if _, err := e.Query(context.Background(), "SELECT count(*) FROM hr.people WHERE name = 'ADA' COLLATE NOCASE", nil); err != nil {
		t.Fatal(err)
	}
	if r := last(); len(r.Filters) != 0 {
		t.Errorf("a NOCASE comparison was handed over as %v", r.Filters)
	}
	if _, err := e.Query(context.Background(), "SELECT count(*) FROM hr.people WHERE name > x'00'", nil); err != nil {
		t.Fatal(err)
	}
	if r := last(); len(r.Filters) != 0 {
		t.Errorf("a blob compared with a text column was handed over as %v", r.Filters)
	}
	if _, err := e.Query(context.Background(), "SELECT count(*) FROM sales.orders WHERE score IS NULL", nil); err != nil {
		t.Fatal(err)
	}
	if r := last(); len(r.Filters) != 0 || r.Columns == nil || len(r.Columns) != 1 {
		t.Errorf("IS NULL on a float column handed over as %v, columns %v", r.Filters, r.Columns)
	}
	if _, err := e.Query(context.Background(), "SELECT count(*) FROM sales.orders", nil); err != nil {
		t.Fatal(err)
	}
	if r := last(); r.Columns == nil || len(r.Columns) != 0 {
		t.Errorf("count(*) asked columns %#v, want none", r.Columns)
	}

	var se *Error
	for _, before := range []string{"", "SELECT count(*) FROM sales_eu.orders"} {
		// Also after a statement that mounted one of the two.
		if before != "" {
			if _, err := e.Query(context.Background(), before, nil); err != nil {
				t.Fatal(err)
			}
		}
		_, err = e.Query(context.Background(), "SELECT count(*) FROM orders", nil)
		if !errors.As(err, &se) || se.Kind != ErrInvalid || !strings.Contains(se.Msg, "sales.orders or sales_eu.orders") {
			t.Errorf("an unqualified name in two namespaces (after %q): %v", before, err)
		}
	}

	_, err = e.Query(context.Background(), "SELECT count(*) FROM sales.orders a, sales_eu.orders b, sales.orders c, sales_eu.orders d WHERE a.id + b.id + c.id = d.id + random() * 0", nil)
	if !errors.As(err, &se) || se.Kind != ErrLimit || !strings.Contains(se.Msg, "more than 256 times") {
		t.Errorf("a correlated scan per outer row: %v", err)
	}
}
