package discovery_test

// The SQL tools' data views over a table's rows (issue 42), replayed call
// by call against a discovery service that reads rows through its Door
// from Parquet files written with arrow-go. Sources read to build them:
//
//   - influxdata/grafana-flightsql-datasource (a7cc7d8): src/components/utils.ts
//     buildQueryString (the query builder: `SELECT ${columns} FROM
//     ${table}` then WHERE, GROUP BY, ORDER BY and LIMIT; prefixDB makes the
//     table "schema.table"), sent as a statement (pkg/flightsql/query_data.go).
//   - dbeaver/dbeaver plugins/org.jkiss.dbeaver.model.jdbc/.../struct/JDBCTable.java
//     readData (the data tab: "SELECT " + the dialect's all-attributes
//     alias "*" + " FROM " + the table's DML name, through
//     DBUtils.makeStatement with maxRows, which the JDBC driver applies on
//     the client: no LIMIT reaches the server) and countData ("SELECT
//     COUNT(*) FROM " + the name), each through the JDBC driver's
//     prepared-statement flow (jdbcPrepared).
//   - Metabase's table view through the metabase-flightsql-driver
//     (J0hnG4lt/metabase-flightsql-driver, fd1e489, a sql-jdbc driver): an
//     MBQL query of the table's fields with Metabase's bare-rows limit of
//     2,000, compiled by sql.qp with every identifier quoted and qualified
//     ("schema"."table"."column"), run through the JDBC driver.
//   - apache/arrow-java ArrowFlightSqlClientHandler.java prepare: the
//     dataset schema CreatePreparedStatement answers is what the driver
//     describes the result with (ResultSetMetaData) before it executes.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// ordersSchema is the registered schema of the rows tables.
var ordersSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// writeOrders writes rows ids [from, to] of ordersSchema to a Parquet file
// at path, rowGroup rows per row group: amount id.25 (NULL every 7th), at
// id seconds after 2024-01-01, note "<prefix>-<id>".
func writeOrders(t testing.TB, path, prefix string, from, to int, rowGroup int64) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, ordersSchema)
	defer b.Release()
	for id := from; id <= to; id++ {
		b.Field(0).(*array.Int64Builder).Append(int64(id))
		if id%7 == 0 {
			b.Field(1).AppendNull()
		} else {
			n, err := decimal128.FromString(fmt.Sprintf("%d.25", id), 18, 2)
			if err != nil {
				t.Fatal(err)
			}
			b.Field(1).(*array.Decimal128Builder).Append(n)
		}
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_704_067_200_000_000 + int64(id)*1_000_000))
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", prefix, id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(ordersSchema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithStats(true))
	if err := pqarrow.WriteTable(tbl, f, rowGroup, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
		t.Fatal(err)
	}
}

// rowsEnv is a discovery service reading rows under a data root: acme's
// sales.orders over two files (ids 1–30 in row groups of 10, ids 31–50),
// globex's sales.orders over a file of its own (ids 1–5), and acme's
// sales.skewed, whose file's id column is int32 where the registration
// says int64.
func rowsEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	writeOrders(t, filepath.Join(root, "acme/orders/part-0.parquet"), "acme", 1, 30, 10)
	writeOrders(t, filepath.Join(root, "acme/orders/part-1.parquet"), "acme", 31, 50, 10)
	writeOrders(t, filepath.Join(root, "globex/orders/part-0.parquet"), "globex", 1, 5, 10)
	writeSkewed(t, filepath.Join(root, "acme/skewed/part-0.parquet"))
	e := newEnv(t, discovery.Options{ServerName: "lake", Version: "9.9.9", Door: &vending.Door{DataRoot: root}, Rows: discovery.RowsOptions{Reads: 1}})
	for _, r := range []struct{ tenant, name, dir string }{
		{"acme", "orders", "acme/orders"}, {"globex", "orders", "globex/orders"}, {"acme", "skewed", "acme/skewed"},
		{"acme", "theirs", "globex/orders"}, // registered over another tenant's folder
	} {
		e.registerSpec(r.tenant, "sales", r.name, catalog.TableSpec{Location: "file://" + filepath.Join(root, r.dir) + "/", Schema: ordersSchema})
	}
	e.publish()
	return e
}

// writeSkewed writes a file whose id is int32.
func writeSkewed(t testing.TB, path string) {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(s, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pqarrow.WriteTable(tbl, f, 10, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
}

func TestCompatRowsGrafana(t *testing.T) {
	t.Parallel()
	e := rowsEnv(t)
	ctx := as(t, "acme")
	run := func(s string) (string, error) { return statement(e, ctx, s) }
	replay(t, "query builder: Execute(\"SELECT id,amount FROM sales.orders WHERE id > 40 ORDER BY id asc LIMIT 3\") → DoGet (utils.ts buildQueryString, prefixDB)", func(t *testing.T) {
		expectAnswer(t, run, "SELECT id,amount FROM sales.orders WHERE id > 40 ORDER BY id asc LIMIT 3", "id,amount|41,41.25|42,NULL|43,43.25")
	})
	replay(t, "a time series panel: SELECT at, id FROM sales.orders WHERE id <= 2 (timestamps keep their registered type)", func(t *testing.T) {
		expectAnswer(t, run, "SELECT at, id FROM sales.orders WHERE id <= 2", "at,id|2024-01-01T00:00:01Z,1|2024-01-01T00:00:02Z,2")
	})
	replay(t, "the raw editor: an aggregate over the rows", func(t *testing.T) {
		expectAnswer(t, run, "SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM sales.orders WHERE note LIKE 'acme-%'", "n,lo,hi|50,1,50")
	})
}

func TestCompatRowsDBeaver(t *testing.T) {
	t.Parallel()
	e := rowsEnv(t)
	ctx := as(t, "acme")
	run := func(s string) (string, error) { return jdbcPrepared(e, ctx, s) }
	replay(t, `data tab: JDBCTable.readData "SELECT * FROM sales.orders" (maxRows on the client) through the JDBC driver`, func(t *testing.T) {
		got, err := run("SELECT * FROM sales.orders")
		if err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(got, "|")
		if rows[0] != "id,amount,at,note" || len(rows) != 51 || rows[1] != "1,1.25,2024-01-01T00:00:01Z,acme-1" || rows[50] != "50,50.25,2024-01-01T00:00:50Z,acme-50" {
			t.Fatalf("%d rows: %s … %s", len(rows)-1, rows[0], rows[len(rows)-1])
		}
	})
	replay(t, `row count: JDBCTable.countData "SELECT COUNT(*) FROM sales.orders"`, func(t *testing.T) {
		expectAnswer(t, run, "SELECT COUNT(*) FROM sales.orders", "COUNT(*)|50")
	})
}

func TestCompatRowsMetabase(t *testing.T) {
	t.Parallel()
	e := rowsEnv(t)
	ctx := as(t, "acme")
	run := func(s string) (string, error) { return jdbcPrepared(e, ctx, s) }
	replay(t, `table view: SELECT "sales"."orders"."id" AS "id", … FROM "sales"."orders" LIMIT 2000`, func(t *testing.T) {
		got, err := run(`SELECT "sales"."orders"."id" AS "id", "sales"."orders"."note" AS "note" FROM "sales"."orders" LIMIT 2000`)
		if err != nil {
			t.Fatal(err)
		}
		if rows := strings.Split(got, "|"); len(rows) != 51 || rows[0] != "id,note" || rows[7] != "7,acme-7" {
			t.Fatalf("%d rows: %.200s", len(rows)-1, got)
		}
	})
}

func TestCompatRowsJDBCPreparedSchema(t *testing.T) {
	t.Parallel()
	e := rowsEnv(t)
	ctx := as(t, "acme")
	replay(t, "prepare: CreatePreparedStatement's dataset schema has the registered types", func(t *testing.T) {
		stmt, err := e.client.Prepare(ctx, "SELECT note, amount, at, id, id * 2 AS twice FROM sales.orders LIMIT 5")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = stmt.Close(ctx) }()
		ds := stmt.DatasetSchema()
		want := []arrow.DataType{arrow.BinaryTypes.String, ordersSchema.Field(1).Type, ordersSchema.Field(2).Type, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64}
		if ds.NumFields() != len(want) {
			t.Fatalf("dataset schema %s", ds)
		}
		for i, w := range want {
			if !arrow.TypeEqual(ds.Field(i).Type, w) {
				t.Errorf("column %s: %s, want %s", ds.Field(i).Name, ds.Field(i).Type, w)
			}
		}
	})
}

func TestRowsIsolationAndFailures(t *testing.T) {
	t.Parallel()
	e := rowsEnv(t)
	t.Run("each tenant reads its own table's files", func(t *testing.T) {
		expectAnswer(t, func(s string) (string, error) { return statement(e, as(t, "globex"), s) },
			"SELECT count(*), max(note) FROM sales.orders", "count(*),max(note)|5,globex-5")
	})
	t.Run("another tenant's table does not exist", func(t *testing.T) {
		_, err := statement(e, as(t, "globex"), "SELECT * FROM sales.skewed")
		if codeOf(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "no such table") {
			t.Fatalf("= %v", err)
		}
	})
	t.Run("a table located in another tenant's folder of the data root reads nothing", func(t *testing.T) {
		_, err := statement(e, as(t, "acme"), "SELECT note FROM sales.theirs LIMIT 2")
		if codeOf(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "own folder") {
			t.Fatalf("= %v", err)
		}
	})
	t.Run("a file that does not match the registration is named", func(t *testing.T) {
		_, err := statement(e, as(t, "acme"), "SELECT * FROM sales.skewed")
		if codeOf(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "part-0.parquet") {
			t.Fatalf("= %v", err)
		}
	})
	t.Run("a join's inner scans share the statement's one turn", func(t *testing.T) {
		// One read at a time in the process (the default on 2 cores):
		// a join scans its inner table once per outer row, all within
		// the statement's turn.
		expectAnswer(t, func(s string) (string, error) { return statement(e, as(t, "acme"), s) },
			"SELECT count(*) FROM sales.orders a JOIN sales.orders b ON a.id = b.id", "count(*)|50")
	})
	t.Run("writes stay refused", func(t *testing.T) {
		_, err := statement(e, as(t, "acme"), "DELETE FROM sales.orders")
		if codeOf(err) != codes.PermissionDenied {
			t.Fatalf("= %v", err)
		}
	})
}

func TestRowsWithoutADoorNameTheLocation(t *testing.T) {
	t.Parallel()
	e := compatEnv(t) // no Door: a catalog only
	_, err := statement(e, as(t, "acme"), "SELECT * FROM hr.people LIMIT 10")
	if codeOf(err) != codes.Unimplemented || !strings.Contains(err.Error(), "s3://lake/acme%2Fhr%2Fpeople") {
		t.Fatalf("= %v", err)
	}
}
