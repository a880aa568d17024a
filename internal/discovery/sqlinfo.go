package discovery

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/sqlcatalog"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Bit masks and ordinals of the Flight SQL enums lake answers with
// (FlightSql.proto). A bitmask sets bit n for the enum value n.
const (
	transactionNone         = 0                  // SqlSupportedTransaction.NONE
	caseSensitivityUnknown  = 0                  // SqlSupportedCaseSensitivity.UNKNOWN
	nullsSortedAtEnd        = 3                  // SqlNullOrdering.NULLS_SORTED_AT_END
	isolationNoneBit        = 1 << 0             // SqlTransactionIsolationLevel.NONE
	resultSetForwardOnlyBit = 1 << 1             // SqlSupportedResultSetType.FORWARD_ONLY
	concurrencyReadOnlyBit  = 1 << 1             // SqlSupportedResultSetConcurrency.READ_ONLY
	isolationNoneOrdinal    = 0                  // SqlTransactionIsolationLevel.NONE
	groupByUnrelatedBit     = 1 << 0             // SqlSupportedGroupBy.SQL_GROUP_BY_UNRELATED
	groupByBeyondSelectBit  = 1 << 1             // SqlSupportedGroupBy.SQL_GROUP_BY_BEYOND_SELECT
	grammarMinimumBit       = 1 << 0             // SupportedSqlGrammar.SQL_MINIMUM_GRAMMAR
	ansi92EntryBit          = 1 << 0             // SupportedAnsi92SqlGrammarLevel.ANSI92_ENTRY_SQL
	fullOuterJoins          = 2                  // SqlOuterJoinsSupportLevel.SQL_FULL_OUTER_JOINS
	subqueriesBits          = 1<<0 | 1<<1 | 1<<2 // SqlSupportedSubqueries: COMPARISONS, EXISTS, INS
	unionBits               = 1<<0 | 1<<1        // SqlSupportedUnions: UNION, UNION_ALL
)

// What GetSqlInfo says of lake's SQL (package sqlcatalog, SQLite's
// dialect): the keywords beyond SQL:2003 and the functions, by family.
var (
	sqlKeywords      = []string{"ATTACH", "DESC", "DESCRIBE", "DETACH", "GLOB", "LIMIT", "OFFSET", "PRAGMA", "REGEXP", "SHOW", "VACUUM"}
	numericFunctions = []string{"abs", "acos", "asin", "atan", "atan2", "ceil", "ceiling", "cos", "degrees", "exp", "floor",
		"ln", "log", "log10", "log2", "max", "min", "mod", "pi", "pow", "power", "radians", "random", "round", "sign", "sin",
		"sqrt", "tan", "trunc"}
	stringFunctions = []string{"char", "concat", "concat_ws", "format", "glob", "hex", "instr", "length", "like", "lower",
		"ltrim", "octet_length", "printf", "quote", "replace", "rtrim", "substr", "substring", "trim", "unhex", "unicode", "upper"}
	systemFunctions = []string{"coalesce", "current_catalog", "current_database", "current_schema", "current_user", "database",
		"ifnull", "iif", "nullif", "schema", "session_user", "sqlite_version", "typeof", "user", "version"}
	datetimeFunctions = []string{"date", "datetime", "julianday", "strftime", "time", "timediff", "unixepoch"}
)

// sqlInfoValue is one GetSqlInfo answer. val is a string, bool, int64,
// int32, []string or map[int32][]int32: the dense union's members 0 to 5.
type sqlInfoValue struct {
	id  uint32
	val any
}

// staticSqlInfo is every Flight SQL id that describes lake, sorted by id,
// with values true for a read-only catalog that answers read-only SQL over
// itself (SQLite's dialect, through package sqlcatalog). Names are
// case-sensitive and case-preserving (an identifier case the spec's enum
// has no value for, hence UNKNOWN); the catalog is the tenant and the
// db_schema the namespace, hence the terms. Length limits are
// catalog.MaxNameBytes (bytes of UTF-8); 0 means no limit or not applicable.
//
// Not answered: FLIGHT_SQL_SERVER_SUBSTRAIT_MIN_VERSION and _MAX_VERSION
// (6, 7), whose value the spec makes null when Substrait is unsupported.
//
// One deliberate departure: SQL_DEFAULT_TRANSACTION_ISOLATION (562) is a
// bigint, as the Flight SQL JDBC driver reads it (ArrowDatabaseMetadata
// getDefaultTransactionIsolation casts to Long) and arrow-java's own
// SqlInfoBuilder writes it; the proto comment says int32, which would make
// that JDBC call throw ClassCastException.
func staticSqlInfo(serverName, version string, timeout time.Duration) []sqlInfoValue {
	maxName := int64(catalog.MaxNameBytes)
	timeoutMillis := int32(timeout / time.Millisecond)
	return []sqlInfoValue{
		{0, serverName},                      // FLIGHT_SQL_SERVER_NAME
		{1, version},                         // FLIGHT_SQL_SERVER_VERSION
		{2, arrow.PkgVersion},                // FLIGHT_SQL_SERVER_ARROW_VERSION
		{3, true},                            // FLIGHT_SQL_SERVER_READ_ONLY
		{4, true},                            // FLIGHT_SQL_SERVER_SQL (read-only SQL over the catalog: sql.go)
		{5, false},                           // FLIGHT_SQL_SERVER_SUBSTRAIT
		{8, int32(transactionNone)},          // FLIGHT_SQL_SERVER_TRANSACTION
		{9, false},                           // FLIGHT_SQL_SERVER_CANCEL
		{10, false},                          // FLIGHT_SQL_SERVER_BULK_INGESTION
		{11, false},                          // FLIGHT_SQL_SERVER_INGEST_TRANSACTIONS_SUPPORTED
		{100, timeoutMillis},                 // FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT (each statement's budget, ms)
		{101, int32(0)},                      // FLIGHT_SQL_SERVER_TRANSACTION_TIMEOUT (no transactions)
		{500, false},                         // SQL_DDL_CATALOG
		{501, false},                         // SQL_DDL_SCHEMA
		{502, false},                         // SQL_DDL_TABLE
		{503, int32(caseSensitivityUnknown)}, // SQL_IDENTIFIER_CASE
		{504, `"`},                           // SQL_IDENTIFIER_QUOTE_CHAR
		{505, int32(caseSensitivityUnknown)}, // SQL_QUOTED_IDENTIFIER_CASE
		{506, false},                         // SQL_ALL_TABLES_ARE_SELECTABLE (registered tables' data is not)
		{507, int32(nullsSortedAtEnd)},       // SQL_NULL_ORDERING
		{508, sqlKeywords},                   // SQL_KEYWORDS (beyond SQL:2003)
		{509, numericFunctions},              // SQL_NUMERIC_FUNCTIONS
		{510, stringFunctions},               // SQL_STRING_FUNCTIONS
		{511, systemFunctions},               // SQL_SYSTEM_FUNCTIONS
		{512, datetimeFunctions},             // SQL_DATETIME_FUNCTIONS
		{513, `\`},                           // SQL_SEARCH_STRING_ESCAPE (the LIKE patterns' escape)
		{514, ""},                            // SQL_EXTRA_NAME_CHARACTERS
		{515, true},                          // SQL_SUPPORTS_COLUMN_ALIASING
		{516, true},                          // SQL_NULL_PLUS_NULL_IS_NULL
		{517, map[int32][]int32{}},           // SQL_SUPPORTS_CONVERT (no conversions)
		{518, true},                          // SQL_SUPPORTS_TABLE_CORRELATION_NAMES
		{519, false},                         // SQL_SUPPORTS_DIFFERENT_TABLE_CORRELATION_NAMES (none need be different)
		{520, true},                          // SQL_SUPPORTS_EXPRESSIONS_IN_ORDER_BY
		{521, true},                          // SQL_SUPPORTS_ORDER_BY_UNRELATED
		{522, int32(groupByUnrelatedBit | groupByBeyondSelectBit)}, // SQL_SUPPORTED_GROUP_BY
		{523, true},                           // SQL_SUPPORTS_LIKE_ESCAPE_CLAUSE (SQL's LIKE … ESCAPE)
		{524, true},                           // SQL_SUPPORTS_NON_NULLABLE_COLUMNS (schemas carry them)
		{525, int32(grammarMinimumBit)},       // SQL_SUPPORTED_GRAMMAR (SELECT only)
		{526, int32(ansi92EntryBit)},          // SQL_ANSI92_SUPPORTED_LEVEL (queries)
		{527, false},                          // SQL_SUPPORTS_INTEGRITY_ENHANCEMENT_FACILITY
		{528, int32(fullOuterJoins)},          // SQL_OUTER_JOINS_SUPPORT_LEVEL (LEFT, RIGHT and FULL)
		{529, "namespace"},                    // SQL_SCHEMA_TERM
		{530, "procedure"},                    // SQL_PROCEDURE_TERM (there are none)
		{531, "tenant"},                       // SQL_CATALOG_TERM
		{532, true},                           // SQL_CATALOG_AT_START (tenant.namespace.table)
		{533, int32(0)},                       // SQL_SCHEMAS_SUPPORTED_ACTIONS
		{534, int32(0)},                       // SQL_CATALOGS_SUPPORTED_ACTIONS
		{535, int32(0)},                       // SQL_SUPPORTED_POSITIONED_COMMANDS
		{536, false},                          // SQL_SELECT_FOR_UPDATE_SUPPORTED
		{537, false},                          // SQL_STORED_PROCEDURES_SUPPORTED
		{538, int32(subqueriesBits)},          // SQL_SUPPORTED_SUBQUERIES (comparisons, EXISTS, IN)
		{539, true},                           // SQL_CORRELATED_SUBQUERIES_SUPPORTED
		{540, int32(unionBits)},               // SQL_SUPPORTED_UNIONS (UNION, UNION ALL)
		{541, int64(0)},                       // SQL_MAX_BINARY_LITERAL_LENGTH
		{542, int64(0)},                       // SQL_MAX_CHAR_LITERAL_LENGTH
		{543, int64(0)},                       // SQL_MAX_COLUMN_NAME_LENGTH (Arrow field names: no limit)
		{544, int64(0)},                       // SQL_MAX_COLUMNS_IN_GROUP_BY
		{545, int64(0)},                       // SQL_MAX_COLUMNS_IN_INDEX
		{546, int64(0)},                       // SQL_MAX_COLUMNS_IN_ORDER_BY
		{547, int64(0)},                       // SQL_MAX_COLUMNS_IN_SELECT
		{548, int64(0)},                       // SQL_MAX_COLUMNS_IN_TABLE
		{549, int64(0)},                       // SQL_MAX_CONNECTIONS
		{550, int64(0)},                       // SQL_MAX_CURSOR_NAME_LENGTH
		{551, int64(0)},                       // SQL_MAX_INDEX_LENGTH
		{552, maxName},                        // SQL_DB_SCHEMA_NAME_LENGTH
		{553, int64(0)},                       // SQL_MAX_PROCEDURE_NAME_LENGTH
		{554, maxName},                        // SQL_MAX_CATALOG_NAME_LENGTH
		{555, int64(0)},                       // SQL_MAX_ROW_SIZE
		{556, false},                          // SQL_MAX_ROW_SIZE_INCLUDES_BLOBS
		{557, int64(sqlcatalog.MaxSQLBytes)},  // SQL_MAX_STATEMENT_LENGTH
		{558, int64(1)},                       // SQL_MAX_STATEMENTS (one per request)
		{559, maxName},                        // SQL_MAX_TABLE_NAME_LENGTH
		{560, int64(0)},                       // SQL_MAX_TABLES_IN_SELECT
		{561, int64(0)},                       // SQL_MAX_USERNAME_LENGTH
		{562, int64(isolationNoneOrdinal)},    // SQL_DEFAULT_TRANSACTION_ISOLATION (bigint: see above)
		{563, false},                          // SQL_TRANSACTIONS_SUPPORTED
		{564, int32(isolationNoneBit)},        // SQL_SUPPORTED_TRANSACTIONS_ISOLATION_LEVELS
		{565, false},                          // SQL_DATA_DEFINITION_CAUSES_TRANSACTION_COMMIT
		{566, false},                          // SQL_DATA_DEFINITIONS_IN_TRANSACTIONS_IGNORED
		{567, int32(resultSetForwardOnlyBit)}, // SQL_SUPPORTED_RESULT_SET_TYPES
		{568, int32(concurrencyReadOnlyBit)},  // SQL_SUPPORTED_CONCURRENCIES_FOR_RESULT_SET_UNSPECIFIED
		{569, int32(concurrencyReadOnlyBit)},  // SQL_SUPPORTED_CONCURRENCIES_FOR_RESULT_SET_FORWARD_ONLY
		{570, int32(0)},                       // SQL_SUPPORTED_CONCURRENCIES_FOR_RESULT_SET_SCROLL_SENSITIVE
		{571, int32(0)},                       // SQL_SUPPORTED_CONCURRENCIES_FOR_RESULT_SET_SCROLL_INSENSITIVE
		{572, false},                          // SQL_BATCH_UPDATES_SUPPORTED
		{573, false},                          // SQL_SAVEPOINTS_SUPPORTED
		{574, false},                          // SQL_NAMED_PARAMETERS_SUPPORTED
		{575, false},                          // SQL_LOCATORS_UPDATE_COPY
		{576, false},                          // SQL_STORED_FUNCTIONS_USING_CALL_SYNTAX_SUPPORTED
	}
}

// sqlInfoTable is the static answers, built once per Service: the record of
// all of them (a request naming no ids) and each id's row in it.
type sqlInfoTable struct {
	all  arrow.RecordBatch
	rows []sqlInfoValue
	row  map[uint32]int
}

func newSqlInfoTable(mem memory.Allocator, serverName, version string, timeout time.Duration) (*sqlInfoTable, error) {
	rows := staticSqlInfo(serverName, version, timeout)
	t := &sqlInfoTable{rows: rows, row: make(map[uint32]int, len(rows))}
	for i, r := range rows {
		t.row[r.id] = i
	}
	all, err := buildSqlInfo(mem, rows)
	if err != nil {
		return nil, err
	}
	t.all = all
	return t, nil
}

// GetFlightInfoSqlInfo implements flightsql.Server.
func (s *Service) GetFlightInfoSqlInfo(ctx context.Context, _ flightsql.GetSqlInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(ctx, desc, schema_ref.SqlInfo)
}

// DoGetSqlInfo answers the requested ids lake knows, each once, in the
// order first asked; unknown ids are ignored (the spec's rule). No ids
// means every Flight SQL id lake describes (not the custom ones). The
// request's ids are de-duplicated against the known set before anything is
// built, so a request of a million repeated ids costs a set lookup each.
// The custom ids describe the caller's own tenant, read from the blob's
// index (no tenant is prepared).
func (s *Service) DoGetSqlInfo(ctx context.Context, cmd flightsql.GetSqlInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	want := cmd.GetInfo()
	if len(want) == 0 {
		s.sqlInfo.all.Retain()
		ch, err := stream(ctx, schema_ref.SqlInfo, []arrow.RecordBatch{s.sqlInfo.all})
		return schema_ref.SqlInfo, ch, err
	}
	info, has := v.index.tenant(tenant)
	var rows []sqlInfoValue
	seen := make(map[uint32]bool, min(len(want), len(s.sqlInfo.rows)+3))
	for _, id := range want {
		if seen[id] {
			continue
		}
		var r sqlInfoValue
		switch i, known := s.sqlInfo.row[id]; {
		case known:
			r = s.sqlInfo.rows[i]
		case id == wire.SqlInfoSnapshotGeneration:
			r = sqlInfoValue{id, int64(info.Generation)}
		case id == wire.SqlInfoTenantTables:
			r = sqlInfoValue{id, int64(info.Tables)}
		case id == wire.SqlInfoSnapshotCreatedAt && has:
			r = sqlInfoValue{id, info.ChangedAt.UTC().Format(time.RFC3339Nano)}
		default:
			continue
		}
		seen[id] = true
		rows = append(rows, r)
	}
	rec, err := buildSqlInfo(s.mem, rows)
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "sql info: %v", err)
	}
	ch, err := stream(ctx, schema_ref.SqlInfo, []arrow.RecordBatch{rec})
	return schema_ref.SqlInfo, ch, err
}

// buildSqlInfo lays rows out in the GetSqlInfo result schema.
func buildSqlInfo(mem memory.Allocator, rows []sqlInfoValue) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(mem, schema_ref.SqlInfo)
	defer b.Release()
	names := b.Field(0).(*array.Uint32Builder)
	vals := b.Field(1).(*array.DenseUnionBuilder)
	for _, r := range rows {
		names.Append(r.id)
		switch v := r.val.(type) {
		case string:
			vals.Append(0)
			vals.Child(0).(*array.StringBuilder).Append(v)
		case bool:
			vals.Append(1)
			vals.Child(1).(*array.BooleanBuilder).Append(v)
		case int64:
			vals.Append(2)
			vals.Child(2).(*array.Int64Builder).Append(v)
		case int32:
			vals.Append(3)
			vals.Child(3).(*array.Int32Builder).Append(v)
		case []string:
			vals.Append(4)
			lb := vals.Child(4).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).AppendValues(v, nil)
		case map[int32][]int32:
			vals.Append(5)
			mb := vals.Child(5).(*array.MapBuilder)
			mb.Append(true)
			keys := make([]int32, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				mb.KeyBuilder().(*array.Int32Builder).Append(k)
				lb := mb.ItemBuilder().(*array.ListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.Int32Builder).AppendValues(v[k], nil)
			}
		default:
			return nil, fmt.Errorf("sql info %d: unsupported value %T", r.id, v)
		}
	}
	return b.NewRecordBatch(), nil
}
