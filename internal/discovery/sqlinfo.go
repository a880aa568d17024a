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
		{uint32(flightsql.SqlInfoFlightSqlServerName), serverName},
		{uint32(flightsql.SqlInfoFlightSqlServerVersion), version},
		{uint32(flightsql.SqlInfoFlightSqlServerArrowVersion), arrow.PkgVersion},
		{uint32(flightsql.SqlInfoFlightSqlServerReadOnly), true},
		{uint32(flightsql.SqlInfoFlightSqlServerSql), true}, // read-only SQL over the catalog: sql.go
		{uint32(flightsql.SqlInfoFlightSqlServerSubstrait), false},
		{uint32(flightsql.SqlInfoFlightSqlServerTransaction), int32(transactionNone)},
		{uint32(flightsql.SqlInfoFlightSqlServerCancel), false},
		{uint32(flightsql.SqlInfoFlightSqlServerBulkIngestion), false},
		{uint32(flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported), false},
		{uint32(flightsql.SqlInfoFlightSqlServerStatementTimeout), timeoutMillis}, // each statement's budget, ms
		{uint32(flightsql.SqlInfoFlightSqlServerTransactionTimeout), int32(0)},    // no transactions
		{uint32(flightsql.SqlInfoDDLCatalog), false},
		{uint32(flightsql.SqlInfoDDLSchema), false},
		{uint32(flightsql.SqlInfoDDLTable), false},
		{uint32(flightsql.SqlInfoIdentifierCase), int32(caseSensitivityUnknown)},
		{uint32(flightsql.SqlInfoIdentifierQuoteChar), `"`},
		{uint32(flightsql.SqlInfoQuotedIdentifierCase), int32(caseSensitivityUnknown)},
		{uint32(flightsql.SqlInfoAllTablesAreASelectable), false}, // registered tables' data is not
		{uint32(flightsql.SqlInfoNullOrdering), int32(nullsSortedAtEnd)},
		{uint32(flightsql.SqlInfoKeywords), sqlKeywords}, // beyond SQL:2003
		{uint32(flightsql.SqlInfoNumericFunctions), numericFunctions},
		{uint32(flightsql.SqlInfoStringFunctions), stringFunctions},
		{uint32(flightsql.SqlInfoSystemFunctions), systemFunctions},
		{uint32(flightsql.SqlInfoDateTimeFunctions), datetimeFunctions},
		{uint32(flightsql.SqlInfoSearchStringEscape), `\`}, // the LIKE patterns' escape
		{uint32(flightsql.SqlInfoExtraNameChars), ""},
		{uint32(flightsql.SqlInfoSupportsColumnAliasing), true},
		{uint32(flightsql.SqlInfoNullPlusNullIsNull), true},
		{uint32(flightsql.SqlInfoSupportsConvert), map[int32][]int32{}}, // no conversions
		{uint32(flightsql.SqlInfoSupportsTableCorrelationNames), true},
		{uint32(flightsql.SqlInfoSupportsDifferentTableCorrelationNames), false}, // none need be different
		{uint32(flightsql.SqlInfoSupportsExpressionsInOrderBy), true},
		{uint32(flightsql.SqlInfoSupportsOrderByUnrelated), true},
		{uint32(flightsql.SqlInfoSupportedGroupBy), int32(groupByUnrelatedBit | groupByBeyondSelectBit)},
		{uint32(flightsql.SqlInfoSupportsLikeEscapeClause), true},              // SQL's LIKE … ESCAPE
		{uint32(flightsql.SqlInfoSupportsNonNullableColumns), true},            // schemas carry them
		{uint32(flightsql.SqlInfoSupportedGrammar), int32(grammarMinimumBit)},  // SELECT only
		{uint32(flightsql.SqlInfoANSI92SupportedLevel), int32(ansi92EntryBit)}, // queries
		{uint32(flightsql.SqlInfoSupportsIntegrityEnhancementFacility), false},
		{uint32(flightsql.SqlInfoOuterJoinsSupportLevel), int32(fullOuterJoins)}, // LEFT, RIGHT and FULL
		{uint32(flightsql.SqlInfoSchemaTerm), "namespace"},
		{uint32(flightsql.SqlInfoProcedureTerm), "procedure"}, // there are none
		{uint32(flightsql.SqlInfoCatalogTerm), "tenant"},
		{uint32(flightsql.SqlInfoCatalogAtStart), true}, // tenant.namespace.table
		{uint32(flightsql.SqlInfoSchemasSupportedActions), int32(0)},
		{uint32(flightsql.SqlInfoCatalogsSupportedActions), int32(0)},
		{uint32(flightsql.SqlInfoSupportedPositionedCommands), int32(0)},
		{uint32(flightsql.SqlInfoSelectForUpdateSupported), false},
		{uint32(flightsql.SqlInfoStoredProceduresSupported), false},
		{uint32(flightsql.SqlInfoSupportedSubqueries), int32(subqueriesBits)}, // comparisons, EXISTS, IN
		{uint32(flightsql.SqlInfoCorrelatedSubqueriesSupported), true},
		{uint32(flightsql.SqlInfoSupportedUnions), int32(unionBits)}, // UNION, UNION ALL
		{uint32(flightsql.SqlInfoMaxBinaryLiteralLen), int64(0)},
		{uint32(flightsql.SqlInfoMaxCharLiteralLen), int64(0)},
		{uint32(flightsql.SqlInfoMaxColumnNameLen), int64(0)}, // Arrow field names: no limit
		{uint32(flightsql.SqlInfoMaxColumnsInGroupBy), int64(0)},
		{uint32(flightsql.SqlInfoMaxColumnsInIndex), int64(0)},
		{uint32(flightsql.SqlInfoMaxColumnsInOrderBy), int64(0)},
		{uint32(flightsql.SqlInfoMaxColumnsInSelect), int64(0)},
		{uint32(flightsql.SqlInfoMaxColumnsInTable), int64(0)},
		{uint32(flightsql.SqlInfoMaxConnections), int64(0)},
		{uint32(flightsql.SqlInfoMaxCursorNameLen), int64(0)},
		{uint32(flightsql.SqlInfoMaxIndexLen), int64(0)},
		{uint32(flightsql.SqlInfoDBSchemaNameLen), maxName},
		{uint32(flightsql.SqlInfoMaxProcedureNameLen), int64(0)},
		{uint32(flightsql.SqlInfoMaxCatalogNameLen), maxName},
		{uint32(flightsql.SqlInfoMaxRowSize), int64(0)},
		{uint32(flightsql.SqlInfoMaxRowSizeIncludesBlobs), false},
		{uint32(flightsql.SqlInfoMaxStatementLen), int64(sqlcatalog.MaxSQLBytes)},
		{uint32(flightsql.SqlInfoMaxStatements), int64(1)}, // one per request
		{uint32(flightsql.SqlInfoMaxTableNameLen), maxName},
		{uint32(flightsql.SqlInfoMaxTablesInSelect), int64(0)},
		{uint32(flightsql.SqlInfoMaxUsernameLen), int64(0)},
		{uint32(flightsql.SqlInfoDefaultTransactionIsolation), int64(isolationNoneOrdinal)}, // bigint: see above
		{uint32(flightsql.SqlInfoTransactionsSupported), false},
		{uint32(flightsql.SqlInfoSupportedTransactionsIsolationlevels), int32(isolationNoneBit)},
		{uint32(flightsql.SqlInfoDataDefinitionCausesTransactionCommit), false},
		{uint32(flightsql.SqlInfoDataDefinitionsInTransactionsIgnored), false},
		{uint32(flightsql.SqlInfoSupportedResultSetTypes), int32(resultSetForwardOnlyBit)},
		{uint32(flightsql.SqlInfoSupportedConcurrenciesForResultSetUnspecified), int32(concurrencyReadOnlyBit)},
		{uint32(flightsql.SqlInfoSupportedConcurrenciesForResultSetForwardOnly), int32(concurrencyReadOnlyBit)},
		{uint32(flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollSensitive), int32(0)},
		{uint32(flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollInsensitive), int32(0)},
		{uint32(flightsql.SqlInfoBatchUpdatesSupported), false},
		{uint32(flightsql.SqlInfoSavePointsSupported), false},
		{uint32(flightsql.SqlInfoNamedParametersSupported), false},
		{uint32(flightsql.SqlInfoLocatorsUpdateCopy), false},
		{uint32(flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported), false},
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
