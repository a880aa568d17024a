package discovery_test

// The client-compatibility suite: what the SQL tools send, replayed call by
// call with arrow-go's Flight SQL client (the JDBC driver and DBeaver cannot
// run here), and the real ADBC Go driver. Each replayed call is a subtest,
// so `go test -v -run TestCompat` lists them. Sources read to build it:
//
//   - apache/arrow-java flight/flight-sql-jdbc-core/src/main/java/org/apache/arrow/driver/jdbc/
//     ArrowDatabaseMetadata.java (getSqlInfoAndCacheIfCacheIsEmpty: one
//     GetSqlInfo naming no ids, every row cached into an EnumMap keyed by the
//     driver's SqlInfo enum; the 69 ids it reads and the Java type each is
//     cast to; getColumns = GetTables with include_schema and no table types;
//     the key commands' column renames, which need exact Arrow types),
//     client/ArrowFlightSqlClientHandler.java (SetSessionOptions {"catalog"}
//     at connect when the URL has catalog=, CloseSession at close;
//     Statement.executeQuery sends CreatePreparedStatement: see
//     compat_sql_test.go for the SQL tools), and
//     flight/flight-sql/.../FlightSqlColumnMetadata.java (the field metadata
//     keys getColumns reads).
//   - dbeaver/dbeaver plugins/org.jkiss.dbeaver.model.jdbc/.../JDBCSQLDialect.java
//     initDriverSettings (quote string, search escape, keywords, the four
//     function lists, catalog/schema usage), JDBCDataSourceInfo (terms,
//     batch updates, transactions), GenericDataSource.initialize (getTypeInfo
//     — answered locally by the driver —, getCatalogs, getSchemas(catalog,
//     "%")) and GenericMetaModel (on expanding a namespace: getTables with
//     the schema name escaped by JDBCUtils.escapeWildCards, getColumns,
//     getPrimaryKeys, getImportedKeys, getExportedKeys). DBeaver opens two
//     connections (main and metadata), so GetSqlInfo is read twice.
//   - apache/arrow-adbc go/adbc/driver/flightsql (v1.12.0):
//     flightsql_database.go Open (GetSqlInfo [8], read as int32 union child
//     3), flightsql_connection.go GetInfo (ids 0, 1, 2), GetObjects,
//     GetTableSchema, current catalog through GetSessionOptions.

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// Union members of a GetSqlInfo value (FlightSql.proto CommandGetSqlInfo).
const (
	memberString  = 0
	memberBool    = 1
	memberBigint  = 2
	memberInt32   = 3
	memberStrList = 4
	memberMap     = 5
)

// jdbcReads is every SqlInfo id the Flight SQL JDBC driver reads
// (ArrowDatabaseMetadata.java, the same set in 18.2, 18.3 and 19.0), with
// the union member whose Java type the driver casts the value to. That is
// the member the spec prescribes for each, except 562
// (SQL_DEFAULT_TRANSACTION_ISOLATION): the spec says int32, the driver
// casts to Long, and lake sends bigint (documented in sqlinfo.go).
var jdbcReads = map[uint32]int8{
	0: memberString, 1: memberString, 3: memberBool,
	504: memberString, 508: memberStrList, 509: memberStrList, 510: memberStrList, 511: memberStrList, 512: memberStrList,
	513: memberString, 514: memberString, 515: memberBool, 516: memberBool, 517: memberMap,
	518: memberBool, 519: memberBool, 520: memberBool, 521: memberBool, 522: memberInt32, 523: memberBool, 524: memberBool,
	525: memberInt32, 526: memberInt32, 527: memberBool, 528: memberInt32, 529: memberString, 530: memberString,
	531: memberString, 532: memberBool, 533: memberInt32, 534: memberInt32, 535: memberInt32, 536: memberBool,
	537: memberBool, 538: memberInt32, 539: memberBool, 540: memberInt32,
	541: memberBigint, 542: memberBigint, 543: memberBigint, 544: memberBigint, 545: memberBigint, 546: memberBigint,
	547: memberBigint, 548: memberBigint, 549: memberBigint, 550: memberBigint, 551: memberBigint, 552: memberBigint,
	553: memberBigint, 554: memberBigint, 555: memberBigint, 556: memberBool, 557: memberBigint, 558: memberBigint,
	559: memberBigint, 560: memberBigint, 561: memberBigint, 562: memberBigint, 563: memberBool, 564: memberInt32,
	565: memberBool, 566: memberBool, 567: memberInt32, 572: memberBool, 573: memberBool, 574: memberBool,
	575: memberBool, 576: memberBool,
}

// specMember is the union member the spec prescribes for every id lake
// answers beyond those the JDBC driver reads (FlightSql.proto, enum SqlInfo).
var specMember = map[uint32]int8{
	2: memberString, 4: memberBool, 5: memberBool, 8: memberInt32, 9: memberBool, 10: memberBool, 11: memberBool,
	100: memberInt32, 101: memberInt32, 500: memberBool, 501: memberBool, 502: memberBool, 503: memberInt32,
	505: memberInt32, 506: memberBool, 507: memberInt32, 568: memberInt32, 569: memberInt32, 570: memberInt32,
	571: memberInt32,
}

// sqlInfoValue is one decoded GetSqlInfo row.
type sqlInfoValue struct {
	member int8
	val    any
}

// sqlInfo fetches GetSqlInfo for ids (none: all) and decodes every row,
// failing on a duplicate id.
func (e *env) sqlInfo(ctx context.Context, ids ...flightsql.SqlInfo) map[uint32]sqlInfoValue {
	e.t.Helper()
	schema, recs, err := e.fetch(ctx)(e.client.GetSqlInfo(ctx, ids))
	if err != nil {
		e.t.Fatalf("GetSqlInfo: %v", err)
	}
	if !schema.Equal(schema_ref.SqlInfo) {
		e.t.Fatalf("GetSqlInfo schema = %s, want the spec's", schema)
	}
	out := map[uint32]sqlInfoValue{}
	for _, r := range recs {
		names, vals := r.Column(0).(*array.Uint32), r.Column(1).(*array.DenseUnion)
		for i := 0; i < int(r.NumRows()); i++ {
			id, member, off := names.Value(i), vals.TypeCode(i), int(vals.ValueOffset(i))
			var v any
			switch c := vals.Field(vals.ChildID(i)).(type) {
			case *array.String:
				v = c.Value(off)
			case *array.Boolean:
				v = c.Value(off)
			case *array.Int64:
				v = c.Value(off)
			case *array.Int32:
				v = c.Value(off)
			case *array.List:
				start, end := c.ValueOffsets(off)
				strs := c.ListValues().(*array.String)
				list := []string{}
				for j := start; j < end; j++ {
					list = append(list, strs.Value(int(j)))
				}
				v = list
			case *array.Map:
				start, end := c.ValueOffsets(off)
				v = end - start
			}
			if _, dup := out[id]; dup {
				e.t.Fatalf("GetSqlInfo answered id %d twice", id)
			}
			out[id] = sqlInfoValue{member, v}
		}
		r.Release()
	}
	return out
}

// compatEnv is two tenants with tables whose names use LIKE's wildcards and
// whose columns carry the Flight SQL column metadata.
func compatEnv(t *testing.T) *env {
	e := newEnv(t, discovery.Options{ServerName: "lake", Version: "9.9.9"})
	commented := arrow.NewSchema([]arrow.Field{
		{Name: "order_id", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata(
			[]string{flightsql.RemarksKey, flightsql.TypeNameKey}, []string{"the order's id", "BIGINT"})},
		{Name: "total", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true, Metadata: arrow.NewMetadata(
			[]string{flightsql.PrecisionKey, flightsql.ScaleKey}, []string{"18", "2"})},
	}, nil)
	e.register("acme", "sales_eu", "order_items", commented)
	e.register("acme", "salesXeu", "orderXitems", wide(2))
	e.register("acme", "hr", "people", wide(3))
	e.register("globex", "sales_eu", "order_items", wide(4))
	e.register("globex", "secret", "plans", wide(5))
	e.publish()
	return e
}

// replay runs one replayed client call as a subtest named for it.
func replay(t *testing.T, call string, f func(t *testing.T)) {
	t.Helper()
	t.Run(call, f)
}

func TestCompatJDBCDriver(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	ctx := as(t, "acme")

	replay(t, `connect catalog=acme: DoAction SetSessionOptions{"catalog":"acme"}`, func(t *testing.T) {
		res, err := e.client.Client.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{
			"catalog": {OptionValue: &pb.SessionOptionValue_StringValue{StringValue: "acme"}}}})
		if err != nil || len(res.GetErrors()) != 0 {
			t.Fatalf("SetSessionOptions(catalog=acme) = %v, %v; want no error", res, err)
		}
	})
	replay(t, `connect catalog=globex: DoAction SetSessionOptions{"catalog":"globex"} refused`, func(t *testing.T) {
		_, err := e.client.Client.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{
			"catalog": {OptionValue: &pb.SessionOptionValue_StringValue{StringValue: "globex"}}}})
		if codeOf(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"acme"`) || strings.Contains(err.Error(), "globex") {
			t.Fatalf("SetSessionOptions(catalog=globex) = %v; want INVALID_ARGUMENT naming only the caller's catalog", err)
		}
	})

	var all map[uint32]sqlInfoValue
	replay(t, "first DatabaseMetaData getter: GetSqlInfo{} (all ids, cached)", func(t *testing.T) {
		all = e.sqlInfo(ctx)
		for id, want := range jdbcReads {
			got, ok := all[id]
			if !ok {
				t.Errorf("id %d (%s) missing: JDBC 18.x throws NullPointerException on it", id, pb.SqlInfo(id))
			} else if got.member != want {
				t.Errorf("id %d (%s) in union member %d, want %d (the driver's ClassCastException otherwise)", id, pb.SqlInfo(id), got.member, want)
			}
		}
		for id, v := range all {
			if _, known := pb.SqlInfo_name[int32(id)]; !known {
				t.Errorf("id %d is not in the spec's SqlInfo enum: the driver's EnumMap.put(null) throws", id)
			}
			if want, ok := specMember[id]; ok && v.member != want {
				t.Errorf("id %d (%s) in union member %d, want %d", id, pb.SqlInfo(id), v.member, want)
			}
			if _, ok := jdbcReads[id]; !ok {
				if _, ok := specMember[id]; !ok {
					t.Errorf("id %d answered but neither the driver's nor the spec's table here knows it", id)
				}
			}
		}
	})
	replay(t, "getDatabaseProductName/Version, isReadOnly, getIdentifierQuoteString, getSearchStringEscape, getCatalogTerm, getSchemaTerm", func(t *testing.T) {
		want := map[uint32]any{0: "lake", 1: "9.9.9", 3: true, 504: `"`, 513: `\`, 531: "tenant", 529: "namespace", 563: false, 562: int64(0)}
		for id, w := range want {
			if got := all[id].val; got != w {
				t.Errorf("id %d (%s) = %v, want %v", id, pb.SqlInfo(id), got, w)
			}
		}
	})
	replay(t, "getCatalogs: GetCatalogs{}", func(t *testing.T) {
		schema, recs, err := e.fetch(ctx)(e.client.GetCatalogs(ctx))
		if err != nil || !schema.Equal(schema_ref.Catalogs) || columnValues(recs, 0) != "acme" {
			t.Fatalf("GetCatalogs = %v %v", columnValues(recs, 0), err)
		}
	})
	replay(t, "getSchemas(): GetDbSchemas{}", func(t *testing.T) {
		schema, recs, err := e.fetch(ctx)(e.client.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{}))
		if err != nil || !schema.Equal(schema_ref.DBSchemas) || columnValues(recs, 1) != "hr salesXeu sales_eu" {
			t.Fatalf("GetDbSchemas = %q %v", columnValues(recs, 1), err)
		}
	})
	replay(t, "getTableTypes: GetTableTypes{}", func(t *testing.T) {
		schema, recs, err := e.fetch(ctx)(e.client.GetTableTypes(ctx))
		if err != nil || !schema.Equal(schema_ref.TableTypes) || columnValues(recs, 0) != "TABLE" {
			t.Fatalf("GetTableTypes = %q %v", columnValues(recs, 0), err)
		}
	})
	replay(t, `getTables(null, "sales\_eu", "%", [TABLE, VIEW]): GetTables{include_schema=false}`, func(t *testing.T) {
		rows, err := e.tables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: strp(`sales\_eu`), TableNameFilterPattern: strp("%"), TableTypes: []string{"TABLE", "VIEW"}})
		if err != nil || len(rows) != 1 || rows[0].ns+"."+rows[0].name != "sales_eu.order_items" {
			t.Fatalf("GetTables = %v %v", rows, err)
		}
	})
	replay(t, `getColumns(null, "sales\_eu", "order\_items", "%"): GetTables{include_schema=true}, column metadata read`, func(t *testing.T) {
		rows, err := e.tables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: strp(`sales\_eu`), TableNameFilterPattern: strp(`order\_items`), IncludeSchema: true})
		if err != nil || len(rows) != 1 {
			t.Fatalf("GetTables = %v %v", rows, err)
		}
		s, err := catalog.DecodeSchema(rows[0].schema)
		if err != nil {
			t.Fatal(err)
		}
		md0, md1 := s.Field(0).Metadata, s.Field(1).Metadata
		md := flightsql.ColumnMetadata{Data: &md0}
		if remarks, _ := md.Remarks(); remarks != "the order's id" {
			t.Errorf("REMARKS = %q, want the registered comment", remarks)
		}
		if tn, _ := md.TypeName(); tn != "BIGINT" {
			t.Errorf("TYPE_NAME = %q", tn)
		}
		if p, _ := (&flightsql.ColumnMetadata{Data: &md1}).Precision(); p != 18 {
			t.Errorf("PRECISION = %d", p)
		}
	})
	keyCalls := []struct {
		call   string
		schema *arrow.Schema
		info   func() (*flight.FlightInfo, error)
	}{
		{"getPrimaryKeys(null, null, \"order_items\"): GetPrimaryKeys", schema_ref.PrimaryKeys, func() (*flight.FlightInfo, error) {
			return e.client.GetPrimaryKeys(ctx, flightsql.TableRef{Table: "order_items"})
		}},
		{"getImportedKeys(\"acme\", \"sales_eu\", \"order_items\"): GetImportedKeys", schema_ref.ImportedKeys, func() (*flight.FlightInfo, error) {
			return e.client.GetImportedKeys(ctx, flightsql.TableRef{Catalog: strp("acme"), DBSchema: strp("sales_eu"), Table: "order_items"})
		}},
		{"getExportedKeys(\"acme\", \"sales_eu\", \"order_items\"): GetExportedKeys", schema_ref.ExportedKeys, func() (*flight.FlightInfo, error) {
			return e.client.GetExportedKeys(ctx, flightsql.TableRef{Catalog: strp("acme"), DBSchema: strp("sales_eu"), Table: "order_items"})
		}},
		{"getCrossReference(…, \"order_items\", …, \"people\"): GetCrossReference", schema_ref.CrossReference, func() (*flight.FlightInfo, error) {
			return e.client.GetCrossReference(ctx, flightsql.TableRef{Table: "order_items"}, flightsql.TableRef{Table: "people"})
		}},
	}
	for _, kc := range keyCalls {
		replay(t, kc.call, func(t *testing.T) {
			info, err := kc.info()
			if err != nil {
				t.Fatal(err)
			}
			if got, err := flight.DeserializeSchema(info.Schema, nil); err != nil || !got.Equal(kc.schema) {
				t.Fatalf("FlightInfo schema = %v, %v; want the spec's", got, err)
			}
			schema, recs, err := e.doGet(ctx, info, nil)
			if err != nil || !schema.Equal(kc.schema) || rowCount(recs) != 0 {
				t.Fatalf("= %v, %d rows, %v; want the spec's schema and no rows", schema, rowCount(recs), err)
			}
			// The driver renames by name and needs these exact types.
			for name, typ := range map[string]arrow.DataType{"key_sequence": arrow.PrimitiveTypes.Int32,
				"update_rule": arrow.PrimitiveTypes.Uint8, "table_name": arrow.BinaryTypes.String, "pk_table_name": arrow.BinaryTypes.String} {
				if idx := schema.FieldIndices(name); len(idx) == 1 && !arrow.TypeEqual(schema.Field(idx[0]).Type, typ) {
					t.Errorf("%s is %s, want %s", name, schema.Field(idx[0]).Type, typ)
				}
			}
		})
	}
	replay(t, `Statement.executeQuery("SELECT 1"): CreatePreparedStatement → GetFlightInfo → DoGet → ClosePreparedStatement (compat_sql_test.go replays it in full)`, func(t *testing.T) {
		if got := jdbcPreparedFlow(t, e, ctx, "SELECT 1"); got != "1|1" {
			t.Fatalf("SELECT 1 = %q", got)
		}
	})
	replay(t, "close: DoAction CloseSession", func(t *testing.T) {
		res, err := e.client.Client.CloseSession(ctx, &flight.CloseSessionRequest{})
		if err != nil || res.GetStatus() != flight.CloseSessionResultClosed {
			t.Fatalf("CloseSession = %v, %v", res, err)
		}
	})
}

func TestCompatDBeaver(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	ctx := as(t, "acme")
	for _, conn := range []string{"main", "metadata"} {
		replay(t, conn+" connection: JDBCSQLDialect.initDriverSettings and JDBCDataSourceInfo through GetSqlInfo{}", func(t *testing.T) {
			info := e.sqlInfo(ctx)
			if info[504].val != `"` {
				t.Errorf("getIdentifierQuoteString = %v: DBeaver would quote no identifier", info[504].val)
			}
			if info[513].val != `\` {
				t.Errorf("getSearchStringEscape = %v", info[513].val)
			}
			for _, id := range []uint32{508, 509, 510, 511, 512} {
				if _, ok := info[id].val.([]string); !ok {
					t.Errorf("id %d = %v, want a string list (getSQLKeywords lets only SQLException through)", id, info[id])
				}
			}
			for _, id := range []uint32{533, 534, 538, 564} {
				if info[id].member != memberInt32 {
					t.Errorf("id %d = %v, want an int32 bitmask", id, info[id])
				}
			}
			if info[563].val != false || info[572].val != false {
				t.Errorf("supportsTransactions %v, supportsBatchUpdates %v; want false", info[563].val, info[572].val)
			}
		})
	}
	replay(t, "GenericDataSource.initialize: getCatalogs → GetCatalogs{}", func(t *testing.T) {
		_, recs, err := e.fetch(ctx)(e.client.GetCatalogs(ctx))
		if err != nil || columnValues(recs, 0) != "acme" {
			t.Fatalf("GetCatalogs = %q %v", columnValues(recs, 0), err)
		}
	})
	replay(t, `expand catalog: getSchemas("acme", "%") → GetDbSchemas{catalog, "%"}`, func(t *testing.T) {
		_, recs, err := e.fetch(ctx)(e.client.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{Catalog: strp("acme"), DbSchemaFilterPattern: strp("%")}))
		if err != nil || columnValues(recs, 1) != "hr salesXeu sales_eu" {
			t.Fatalf("GetDbSchemas = %q %v", columnValues(recs, 1), err)
		}
	})
	replay(t, `expand namespace: getTables("acme", escapeWildCards("sales_eu"), "%", null)`, func(t *testing.T) {
		rows, err := e.tables(ctx, &flightsql.GetTablesOpts{Catalog: strp("acme"), DbSchemaFilterPattern: strp(`sales\_eu`), TableNameFilterPattern: strp("%")})
		if err != nil || len(rows) != 1 || rows[0].name != "order_items" {
			t.Fatalf("GetTables = %v %v", rows, err)
		}
	})
	replay(t, `open table: getColumns("acme", "sales\_eu", "order\_items", "%") → GetTables{include_schema}`, func(t *testing.T) {
		rows, err := e.tables(ctx, &flightsql.GetTablesOpts{Catalog: strp("acme"), DbSchemaFilterPattern: strp(`sales\_eu`), TableNameFilterPattern: strp(`order\_items`), IncludeSchema: true})
		if err != nil || len(rows) != 1 || rows[0].schema == nil {
			t.Fatalf("GetTables = %v %v", rows, err)
		}
	})
	for _, call := range []string{"getPrimaryKeys", "getImportedKeys", "getExportedKeys"} {
		replay(t, `open table: `+call+`("acme", "sales_eu", "order_items")`, func(t *testing.T) {
			ref := flightsql.TableRef{Catalog: strp("acme"), DBSchema: strp("sales_eu"), Table: "order_items"}
			var info *flight.FlightInfo
			var err error
			switch call {
			case "getPrimaryKeys":
				info, err = e.client.GetPrimaryKeys(ctx, ref)
			case "getImportedKeys":
				info, err = e.client.GetImportedKeys(ctx, ref)
			default:
				info, err = e.client.GetExportedKeys(ctx, ref)
			}
			_, recs, err := e.doGet(ctx, info, err)
			if err != nil || rowCount(recs) != 0 {
				t.Fatalf("%s = %d rows, %v; want none", call, rowCount(recs), err)
			}
		})
	}
}

func TestCompatADBC(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	cn := adbcConn(t, e, "acme") // Open sends GetSqlInfo [8] and reads union child 3 as int32.
	ctx := context.Background()

	replay(t, "GetInfo() → GetSqlInfo [0 1 2]", func(t *testing.T) {
		rdr, err := cn.GetInfo(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		got := map[adbc.InfoCode]string{}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			codes, vals := rec.Column(0).(*array.Uint32), rec.Column(1).(*array.DenseUnion)
			for i := 0; i < int(rec.NumRows()); i++ {
				if s, ok := vals.Field(vals.ChildID(i)).(*array.String); ok {
					got[adbc.InfoCode(codes.Value(i))] = s.Value(int(vals.ValueOffset(i)))
				}
			}
		}
		if got[adbc.InfoVendorName] != "lake" || got[adbc.InfoVendorVersion] != "9.9.9" || got[adbc.InfoVendorArrowVersion] != arrow.PkgVersion {
			t.Fatalf("GetInfo vendor = %v", got)
		}
	})
	replay(t, "current catalog → GetSessionOptions", func(t *testing.T) {
		got, err := cn.(adbc.GetSetOptions).GetOption(adbc.OptionKeyCurrentCatalog)
		if err != nil || got != "acme" {
			t.Fatalf("current catalog = %q, %v; want acme", got, err)
		}
	})
	replay(t, "GetObjects(depth all) → GetCatalogs, GetDbSchemas, GetTables{include_schema}", func(t *testing.T) {
		rdr, err := cn.GetObjects(ctx, adbc.ObjectDepthAll, nil, nil, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var cats []string
		for rdr.Next() {
			cats = append(cats, columnValues([]arrow.RecordBatch{rdr.RecordBatch()}, 0))
		}
		if strings.Join(cats, " ") != "acme" {
			t.Fatalf("GetObjects catalogs = %v", cats)
		}
	})
	replay(t, "GetTableSchema(acme, sales_eu, order_items) → GetTables{include_schema}, first batch", func(t *testing.T) {
		s, err := cn.GetTableSchema(ctx, strp("acme"), strp("sales_eu"), "order_items")
		if err != nil || s.NumFields() != 2 {
			t.Fatalf("GetTableSchema = %v, %v", s, err)
		}
	})
}

// columnValues joins column col's strings over recs with spaces.
func columnValues(recs []arrow.RecordBatch, col int) string {
	var out []string
	for _, r := range recs {
		c := r.Column(col).(*array.String)
		for i := 0; i < c.Len(); i++ {
			out = append(out, c.Value(i))
		}
	}
	return strings.Join(out, " ")
}

func rowCount(recs []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

// Keys, type info and sessions for two tenants: each answers the same
// whether or not the other tenant has the table asked about.
func TestKeysTypeInfoAndSessionsAcrossTenants(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	for _, tc := range []struct{ tenant, other string }{{"acme", "globex"}, {"globex", "acme"}} {
		ctx := as(t, tc.tenant)
		for _, ref := range []flightsql.TableRef{
			{Catalog: strp(tc.other), DBSchema: strp("secret"), Table: "plans"},
			{Catalog: strp(tc.other), DBSchema: strp("nothing"), Table: "nothing"},
			{Catalog: strp(tc.tenant), DBSchema: strp("sales_eu"), Table: "order_items"},
		} {
			for name, get := range map[string]func(context.Context, flightsql.TableRef) (*flight.FlightInfo, error){
				"GetPrimaryKeys": func(ctx context.Context, r flightsql.TableRef) (*flight.FlightInfo, error) {
					return e.client.GetPrimaryKeys(ctx, r)
				},
				"GetImportedKeys": func(ctx context.Context, r flightsql.TableRef) (*flight.FlightInfo, error) {
					return e.client.GetImportedKeys(ctx, r)
				},
				"GetExportedKeys": func(ctx context.Context, r flightsql.TableRef) (*flight.FlightInfo, error) {
					return e.client.GetExportedKeys(ctx, r)
				},
			} {
				_, recs, err := e.fetch(ctx)(get(ctx, ref))
				if err != nil || rowCount(recs) != 0 {
					t.Errorf("%s as %s of %v: %d rows, %v", name, tc.tenant, *ref.Catalog, rowCount(recs), err)
				}
			}
		}
		got, err := e.client.Client.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
		if err != nil || got.GetSessionOptions()["catalog"].GetStringValue() != tc.tenant || len(got.GetSessionOptions()) != 1 {
			t.Errorf("GetSessionOptions as %s = %v, %v", tc.tenant, got, err)
		}
		res, err := e.client.Client.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{
			"schema": {OptionValue: &pb.SessionOptionValue_StringValue{StringValue: "x"}}}})
		if err != nil || res.GetErrors()["schema"].GetValue() != flight.SetSessionOptionsResultErrorInvalidName {
			t.Errorf("SetSessionOptions(schema) as %s = %v, %v; want INVALID_NAME", tc.tenant, res, err)
		}
		_, err = e.client.Client.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{
			"catalog": {OptionValue: &pb.SessionOptionValue_StringValue{StringValue: tc.other}}}})
		if codeOf(err) != codes.InvalidArgument || strings.Contains(err.Error(), tc.other) {
			t.Errorf("SetSessionOptions(catalog=%s) as %s = %v", tc.other, tc.tenant, err)
		}
		// The session never changes the tenant: still only its own tables.
		rows, err := e.tables(ctx, &flightsql.GetTablesOpts{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.catalog != tc.tenant {
				t.Errorf("as %s after SetSessionOptions: saw %s.%s.%s", tc.tenant, r.catalog, r.ns, r.name)
			}
		}
	}
}

// GetXdbcTypeInfo has a row for the type of every column a registered
// schema can hold, ordered by data_type then type_name, and filters by
// data_type.
func TestXdbcTypeInfo(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	ctx := as(t, "acme")
	schema, recs, err := e.fetch(ctx)(e.client.GetXdbcTypeInfo(ctx, nil))
	if err != nil || !schema.Equal(schema_ref.XdbcTypeInfo) {
		t.Fatalf("GetXdbcTypeInfo: %v %v", schema, err)
	}
	type row struct {
		name string
		dt   int32
	}
	var rows []row
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			rows = append(rows, row{r.Column(0).(*array.String).Value(i), r.Column(1).(*array.Int32).Value(i)})
		}
	}
	if !slices.IsSortedFunc(rows, func(a, b row) int {
		if a.dt != b.dt {
			return int(a.dt - b.dt)
		}
		return strings.Compare(a.name, b.name)
	}) {
		t.Errorf("rows not ordered by data_type, type_name: %v", rows)
	}
	names := map[string]int32{}
	for _, r := range rows {
		names[r.name] = r.dt
	}
	var walk func(dt arrow.DataType)
	walk = func(dt arrow.DataType) {
		if _, ok := names[dt.Name()]; !ok {
			t.Errorf("no GetXdbcTypeInfo row for %s (%s)", dt.Name(), dt)
		}
		if nested, ok := dt.(arrow.NestedType); ok {
			for _, f := range nested.Fields() {
				walk(f.Type)
			}
		}
	}
	for _, f := range richSchema().Fields() {
		walk(f.Type)
	}
	if names["int64"] != -5 || names["utf8"] != 12 || names["timestamp"] != 93 || names["decimal"] != 3 || names["bool"] != -7 {
		t.Errorf("type codes: int64 %d utf8 %d timestamp %d decimal %d bool %d", names["int64"], names["utf8"], names["timestamp"], names["decimal"], names["bool"])
	}
	varchar := int32(12)
	_, recs, err = e.fetch(ctx)(e.client.GetXdbcTypeInfo(ctx, &varchar))
	if err != nil || columnValues(recs, 0) != "utf8" {
		t.Fatalf("GetXdbcTypeInfo(VARCHAR) = %q, %v", columnValues(recs, 0), err)
	}
}
