package discovery_test

// The SQL tools' sequences, replayed call by call (`make compat` lists
// them). Sources read to build them:
//
//   - influxdata/grafana-flightsql-datasource (a7cc7d8): pkg/flightsql/flightsql.go
//     (NewDatasource: a username/password form is a Basic-auth Handshake
//     through arrow-go's AuthenticateBasicToken, whose "authorization"
//     answer is sent on every later call; a token form sends
//     "Authorization: Bearer"; CheckHealth runs "select 1" as a statement),
//     pkg/flightsql/query_data.go (a statement is client.Execute, then DoGet
//     of the first endpoint), pkg/flightsql/resources.go (the table picker:
//     GetTables with table_types ["BASE TABLE", "table"]; the column picker:
//     GetTables with the table name and include_schema).
//   - apache/arrow-java flight/flight-sql-jdbc-core/.../client/ArrowFlightSqlClientHandler.java
//     (every Statement.executeQuery is prepare → getDataSetSchema, an empty
//     schema meaning an update → executeQuery, a GetFlightInfo of
//     CommandPreparedStatementQuery → getStream, DoGet of each endpoint →
//     close, DoAction ClosePreparedStatement; user= and password= log in
//     with FlightClient.authenticateBasicToken, and the Builder's
//     ClientIncomingAuthHeaderMiddleware keeps the bearer token the
//     Handshake answers in its "authorization" header).
//   - J0hnG4lt/metabase-flightsql-driver (fd1e489) src/metabase/driver/flightsql.clj
//     (through the JDBC driver: can-connect? runs "SELECT 1"; describe-database
//     "SHOW TABLES", reading table_schema and table_name; describe-table
//     `DESCRIBE "schema"."table"`, reading column_name, data_type and
//     is_nullable ("YES"/"NO"); describe-fields-sql, a honeysql SELECT over
//     information_schema.columns).
//   - influxdata/flightsql-dbapi (a5336c1) flightsql/sqlalchemy.py, the
//     DataFusion dialect Superset uses, and flightsql/dbapi.py (a cursor's
//     execute is a statement: GetFlightInfo of CommandStatementQuery, then
//     DoGet): get_schema_names "select distinct table_schema from
//     information_schema.tables", get_table_names "select table_name from
//     information_schema.tables where table_schema = '…'", get_columns
//     `show columns from "schema"."table"` (six columns, is_nullable
//     "YES"/"NO"); SQLAlchemy's pool pre-ping (DefaultDialect.do_ping,
//     lib/sqlalchemy/engine/default.py) runs "SELECT 1".
//   - apache/arrow-adbc go/adbc/driver/flightsql (v1.12.0)
//     flightsql_statement.go: SetSqlQuery + ExecuteQuery is a statement,
//     Prepare + ExecuteQuery a prepared statement.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
)

// renderRecords prints a result as "col,col|v,v|v,v" (NULL for nulls).
func renderRecords(schema *arrow.Schema, recs []arrow.RecordBatch) string {
	var names []string
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	parts := []string{strings.Join(names, ",")}
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			var vals []string
			for _, c := range r.Columns() {
				switch {
				case c.IsNull(i):
					vals = append(vals, "NULL")
				default:
					if s, ok := c.(*array.String); ok {
						vals = append(vals, s.Value(i))
					} else {
						vals = append(vals, c.ValueStr(i))
					}
				}
			}
			parts = append(parts, strings.Join(vals, ","))
		}
	}
	return strings.Join(parts, "|")
}

// statement runs sql as Grafana and flightsql-dbapi do: Execute (a
// GetFlightInfo of CommandStatementQuery), then DoGet of each endpoint.
func statement(e *env, ctx context.Context, sql string) (string, error) {
	info, err := e.client.Execute(ctx, sql)
	if err != nil {
		return "", err
	}
	want, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
	if err != nil {
		return "", err
	}
	schema, recs, err := e.doGet(ctx, info, nil)
	if err != nil {
		return "", err
	}
	defer release(recs)
	if !schema.Equal(want) {
		return "", fmt.Errorf("DoGet schema %s differs from GetFlightInfo's %s", schema, want)
	}
	return renderRecords(schema, recs), nil
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// jdbcPrepared runs sql as the JDBC driver's Statement.executeQuery does
// (ArrowFlightSqlClientHandler.prepare): CreatePreparedStatement, the
// dataset schema (non-empty: a query), GetFlightInfo of the prepared
// statement, DoGet of each endpoint, ClosePreparedStatement.
func jdbcPrepared(e *env, ctx context.Context, sql string) (string, error) {
	stmt, err := e.client.Prepare(ctx, sql)
	if err != nil {
		return "", err
	}
	defer func() { _ = stmt.Close(ctx) }()
	ds := stmt.DatasetSchema()
	if ds == nil || ds.NumFields() == 0 {
		return "", fmt.Errorf("dataset schema %v: the driver would take the statement for an update", ds)
	}
	info, err := stmt.Execute(ctx)
	if err != nil {
		return "", err
	}
	schema, recs, err := e.doGet(ctx, info, nil)
	if err != nil {
		return "", err
	}
	defer release(recs)
	if !schema.Equal(ds) {
		return "", fmt.Errorf("DoGet schema %s differs from the dataset schema %s", schema, ds)
	}
	if err := stmt.Close(ctx); err != nil {
		return "", fmt.Errorf("ClosePreparedStatement: %w", err)
	}
	return renderRecords(schema, recs), nil
}

// jdbcPreparedFlow is jdbcPrepared that fails t on an error.
func jdbcPreparedFlow(t *testing.T, e *env, ctx context.Context, sql string) string {
	t.Helper()
	got, err := jdbcPrepared(e, ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return got
}

// expectAnswer runs a replayed query and compares its rendered answer.
func expectAnswer(t *testing.T, run func(string) (string, error), sql, want string) {
	t.Helper()
	got, err := run(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if got != want {
		t.Errorf("%s\n got  %s\n want %s", sql, got, want)
	}
}

func TestCompatGrafana(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	var ctx context.Context
	replay(t, "save & test, username/password form: Handshake Basic(acme, <token>) → authorization: Bearer (flightsql.go NewDatasource, AuthenticateBasicToken)", func(t *testing.T) {
		var err error
		ctx, err = e.client.Client.AuthenticateBasicToken(context.Background(), "acme", token(t, "acme"))
		if err != nil {
			t.Fatal(err)
		}
	})
	if ctx == nil {
		t.FailNow()
	}
	replay(t, `CheckHealth: Execute("select 1") → DoGet (flightsql.go CheckHealth, query_data.go)`, func(t *testing.T) {
		expectAnswer(t, func(s string) (string, error) { return statement(e, ctx, s) }, "select 1", "1|1")
	})
	replay(t, `token form: Execute("select 1") with Authorization: Bearer`, func(t *testing.T) {
		expectAnswer(t, func(s string) (string, error) { return statement(e, as(t, "acme"), s) }, "select 1", "1|1")
	})
	replay(t, `table picker: GetTables{table_types: ["BASE TABLE", "table"]} (resources.go getTables)`, func(t *testing.T) {
		rows, err := e.tables(ctx, &flightsql.GetTablesOpts{TableTypes: []string{"BASE TABLE", "table"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.ns+"."+r.name+":"+r.typ)
		}
		if g := strings.Join(got, " "); g != "hr.people:TABLE salesXeu.orderXitems:TABLE sales_eu.order_items:TABLE" {
			t.Errorf("GetTables = %q", g)
		}
	})
	replay(t, `column picker: GetTables{table_name_filter_pattern: "people", include_schema} (resources.go getColumns)`, func(t *testing.T) {
		rows, err := e.tables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: strp("people"), IncludeSchema: true})
		if err != nil || len(rows) != 1 || rows[0].schema == nil {
			t.Fatalf("GetTables = %v, %v", rows, err)
		}
	})
	replay(t, "a panel query over a registered table: Execute → UNIMPLEMENTED naming its location", func(t *testing.T) {
		_, err := statement(e, ctx, "SELECT * FROM hr.people")
		if codeOf(err) != codes.Unimplemented || !strings.Contains(err.Error(), "s3://lake/acme%2Fhr%2Fpeople") || !strings.Contains(err.Error(), "catalog") {
			t.Fatalf("query over hr.people = %v", err)
		}
	})
}

func TestCompatJDBCPrepared(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	var ctx context.Context
	replay(t, "connect user=acme&password=<token>: Handshake Basic → authorization: Bearer (authenticateBasicToken, ClientIncomingAuthHeaderMiddleware)", func(t *testing.T) {
		var err error
		ctx, err = e.client.Client.AuthenticateBasicToken(context.Background(), "acme", token(t, "acme"))
		if err != nil {
			t.Fatal(err)
		}
	})
	if ctx == nil {
		t.FailNow()
	}
	replay(t, "connect user=globex&password=<acme's token>: UNAUTHENTICATED, the username must be the token's tenant", func(t *testing.T) {
		_, err := e.client.Client.AuthenticateBasicToken(context.Background(), "globex", token(t, "acme"))
		if codeOf(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "username must be the token's tenant") {
			t.Fatalf("AuthenticateBasicToken = %v", err)
		}
	})
	run := func(s string) (string, error) { return jdbcPrepared(e, ctx, s) }
	replay(t, `executeQuery("SELECT 1"): CreatePreparedStatement → dataset schema → GetFlightInfo(CommandPreparedStatementQuery) → DoGet → ClosePreparedStatement`, func(t *testing.T) {
		expectAnswer(t, run, "SELECT 1", "1|1")
	})
	replay(t, `executeQuery("SELECT current_catalog(), current_user(), version()")`, func(t *testing.T) {
		expectAnswer(t, run, "SELECT current_catalog(), current_user(), version()",
			"current_catalog(),current_user(),version()|acme,acme,lake 9.9.9")
	})
	replay(t, `executeQuery("SELECT table_schema, table_name FROM information_schema.tables ORDER BY 1, 2")`, func(t *testing.T) {
		expectAnswer(t, run, "SELECT table_schema, table_name FROM information_schema.tables ORDER BY 1, 2",
			"table_schema,table_name|hr,people|salesXeu,orderXitems|sales_eu,order_items")
	})
	replay(t, `executeQuery over a registered table → UNIMPLEMENTED naming its location`, func(t *testing.T) {
		_, err := run(`SELECT * FROM "sales_eu"."order_items"`)
		if codeOf(err) != codes.Unimplemented || !strings.Contains(err.Error(), "s3://lake/acme%2Fsales_eu%2Forder_items") {
			t.Fatalf("= %v", err)
		}
	})
	replay(t, `executeUpdate("DELETE FROM information_schema.tables") → PERMISSION_DENIED, read-only`, func(t *testing.T) {
		_, err := e.client.Prepare(ctx, "DELETE FROM information_schema.tables")
		if codeOf(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("= %v", err)
		}
	})
	replay(t, `executeQuery("SELEC 1") → INVALID_ARGUMENT with the position`, func(t *testing.T) {
		_, err := run("SELEC 1")
		if codeOf(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "line 1, column 1") {
			t.Fatalf("= %v", err)
		}
	})
}

func TestCompatMetabase(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	ctx := as(t, "acme")
	run := func(s string) (string, error) { return jdbcPrepared(e, ctx, s) } // Metabase's driver goes through the JDBC driver
	replay(t, `can-connect?: "SELECT 1"`, func(t *testing.T) {
		expectAnswer(t, run, "SELECT 1", "1|1")
	})
	replay(t, `describe-database: "SHOW TABLES" (reads table_schema, table_name)`, func(t *testing.T) {
		expectAnswer(t, run, "SHOW TABLES", "table_catalog,table_schema,table_name,table_type|"+
			"acme,hr,people,BASE TABLE|acme,salesXeu,orderXitems,BASE TABLE|acme,sales_eu,order_items,BASE TABLE")
	})
	replay(t, `describe-table: DESCRIBE "sales_eu"."order_items" (reads column_name, data_type, is_nullable)`, func(t *testing.T) {
		expectAnswer(t, run, `DESCRIBE "sales_eu"."order_items"`, "column_name,data_type,is_nullable|order_id,int64,NO|total,decimal128(18, 2),YES")
	})
	replay(t, "describe-fields-sql: SELECT … FROM information_schema.columns WHERE lower(table_schema) IN (…) AND lower(table_name) IN (…) ORDER BY …", func(t *testing.T) {
		sql := `SELECT "column_name" AS "name", "ordinal_position" AS "database-position", "table_schema" AS "table-schema", ` +
			`"table_name" AS "table-name", UPPER("data_type") AS "database-type", FALSE AS "database-is-auto-increment", ` +
			`CASE WHEN "is_nullable" = 'NO' THEN TRUE ELSE FALSE END AS "database-required", '' AS "field-comment" ` +
			`FROM "information_schema"."columns" WHERE (1 >= 1) AND (LOWER("table_schema") IN ('sales_eu')) AND (LOWER("table_name") IN ('order_items')) ` +
			`ORDER BY "table_schema" ASC, "table_name" ASC, "ordinal_position" ASC`
		expectAnswer(t, run, sql, "name,database-position,table-schema,table-name,database-type,database-is-auto-increment,database-required,field-comment|"+
			"order_id,1,sales_eu,order_items,INT64,0,1,|total,2,sales_eu,order_items,DECIMAL128(18, 2),0,0,")
	})
}

func TestCompatSuperset(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	ctx := as(t, "acme")
	run := func(s string) (string, error) { return statement(e, ctx, s) } // flightsql-dbapi's cursor.execute
	replay(t, `pool pre-ping (SQLAlchemy do_ping): "SELECT 1"`, func(t *testing.T) {
		expectAnswer(t, run, "SELECT 1", "1|1")
	})
	replay(t, `get_schema_names: "select distinct table_schema from information_schema.tables"`, func(t *testing.T) {
		expectAnswer(t, run, "select distinct table_schema from information_schema.tables", "table_schema|hr|salesXeu|sales_eu")
	})
	replay(t, `get_table_names(sales_eu): "select table_name from information_schema.tables where table_schema = 'sales_eu'"`, func(t *testing.T) {
		expectAnswer(t, run, "select table_name from information_schema.tables where table_schema = 'sales_eu'", "table_name|order_items")
	})
	replay(t, `get_columns(order_items, sales_eu): show columns from "sales_eu"."order_items"`, func(t *testing.T) {
		expectAnswer(t, run, `show columns from "sales_eu"."order_items"`, "table_catalog,table_schema,table_name,column_name,data_type,is_nullable|"+
			"acme,sales_eu,order_items,order_id,int64,NO|acme,sales_eu,order_items,total,decimal128(18, 2),YES")
	})
	replay(t, `get_columns(people): show columns from "people"`, func(t *testing.T) {
		got, err := run(`show columns from "people"`)
		if err != nil || !strings.HasPrefix(got, "table_catalog,table_schema,table_name,column_name,data_type,is_nullable|acme,hr,people,") {
			t.Fatalf("= %q, %v", got, err)
		}
	})
	replay(t, "information_schema.columns comments (column_comment from ARROW:FLIGHT:SQL:REMARKS)", func(t *testing.T) {
		expectAnswer(t, run, "select column_name, column_comment from information_schema.columns where table_name = 'order_items'",
			"column_name,column_comment|order_id,the order's id|total,NULL")
	})
}

func TestCompatADBCStatements(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	cn := adbcConn(t, e, "acme")
	ctx := context.Background()
	query := func(prepare bool, sql string) (string, error) {
		st, err := cn.NewStatement()
		if err != nil {
			return "", err
		}
		defer st.Close()
		if err := st.SetSqlQuery(sql); err != nil {
			return "", err
		}
		if prepare {
			if err := st.Prepare(ctx); err != nil {
				return "", err
			}
		}
		rdr, _, err := st.ExecuteQuery(ctx)
		if err != nil {
			return "", err
		}
		defer rdr.Release()
		var recs []arrow.RecordBatch
		for rdr.Next() {
			r := rdr.RecordBatch()
			r.Retain()
			recs = append(recs, r)
		}
		defer release(recs)
		return renderRecords(rdr.Schema(), recs), rdr.Err()
	}
	replay(t, `Statement.SetSqlQuery("SELECT 1") + ExecuteQuery`, func(t *testing.T) {
		expectAnswer(t, func(s string) (string, error) { return query(false, s) }, "SELECT 1", "1|1")
	})
	replay(t, `Statement.Prepare("SELECT count(*) FROM information_schema.columns") + ExecuteQuery`, func(t *testing.T) {
		expectAnswer(t, func(s string) (string, error) { return query(true, s) }, "SELECT count(*) FROM information_schema.columns", "count(*)|42")
	})
	replay(t, `Statement.SetSqlQuery("BEGIN") → a read-only error`, func(t *testing.T) {
		_, err := query(false, "BEGIN")
		var ae adbc.Error
		if err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("= %v (%v)", err, ae)
		}
	})
}
