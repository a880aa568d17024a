package discovery

import (
	"cmp"
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Lake stores no keys: GetPrimaryKeys, GetImportedKeys, GetExportedKeys and
// GetCrossReference answer the spec's result schema with no rows, after the
// same authentication and snapshot checks as every other command (so a
// caller learns nothing about any table, its own or another tenant's).

// emptyAnswer checks the caller and answers schema with no rows.
func (s *Service) emptyAnswer(ctx context.Context, schema *arrow.Schema) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if _, _, err := s.begin(ctx); err != nil {
		return nil, nil, err
	}
	ch, err := stream(ctx, schema, []arrow.RecordBatch{emptyRecord(s.mem, schema)})
	return schema, ch, err
}

// emptyRecord is a batch of schema with no rows.
func emptyRecord(mem memory.Allocator, schema *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
	}
	rec := array.NewRecordBatch(schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// GetFlightInfoPrimaryKeys implements flightsql.Server.
func (s *Service) GetFlightInfoPrimaryKeys(ctx context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(ctx, desc, schema_ref.PrimaryKeys)
}

// DoGetPrimaryKeys answers no primary keys.
func (s *Service) DoGetPrimaryKeys(ctx context.Context, _ flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyAnswer(ctx, schema_ref.PrimaryKeys)
}

// GetFlightInfoImportedKeys implements flightsql.Server.
func (s *Service) GetFlightInfoImportedKeys(ctx context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(ctx, desc, schema_ref.ImportedKeys)
}

// DoGetImportedKeys answers no foreign keys.
func (s *Service) DoGetImportedKeys(ctx context.Context, _ flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyAnswer(ctx, schema_ref.ImportedKeys)
}

// GetFlightInfoExportedKeys implements flightsql.Server.
func (s *Service) GetFlightInfoExportedKeys(ctx context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(ctx, desc, schema_ref.ExportedKeys)
}

// DoGetExportedKeys answers no foreign keys.
func (s *Service) DoGetExportedKeys(ctx context.Context, _ flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyAnswer(ctx, schema_ref.ExportedKeys)
}

// GetFlightInfoCrossReference implements flightsql.Server.
func (s *Service) GetFlightInfoCrossReference(ctx context.Context, _ flightsql.CrossTableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(ctx, desc, schema_ref.CrossReference)
}

// DoGetCrossReference answers no foreign keys.
func (s *Service) DoGetCrossReference(ctx context.Context, _ flightsql.CrossTableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyAnswer(ctx, schema_ref.CrossReference)
}

// XDBC type codes (FlightSql.proto XdbcDataType, the ODBC/JDBC codes) and
// datetime subcodes (XdbcDatetimeSubcode).
const (
	xdbcUnknown       = 0
	xdbcDecimal       = 3
	xdbcInteger       = 4
	xdbcSmallint      = 5
	xdbcFloat         = 6
	xdbcReal          = 7
	xdbcDouble        = 8
	xdbcDatetime      = 9
	xdbcInterval      = 10
	xdbcVarchar       = 12
	xdbcDate          = 91
	xdbcTime          = 92
	xdbcTimestamp     = 93
	xdbcLongVarchar   = -1
	xdbcBinary        = -2
	xdbcVarbinary     = -3
	xdbcLongVarbinary = -4
	xdbcBigint        = -5
	xdbcTinyint       = -6
	xdbcBit           = -7

	subcodeDate      = 1
	subcodeTime      = 2
	subcodeTimestamp = 3

	sqlNullable     = 1 // Nullable.NULLABILITY_NULLABLE
	searchableNone  = 0 // Searchable.SEARCHABLE_NONE: lake runs no WHERE
	decimalRadix    = 10
	binaryRadix     = 2
	maxDecimal256   = 76
	maxDecimalScale = 76
)

// xdbcType is one GetXdbcTypeInfo row: an Arrow type family a registered
// schema can hold, described in ODBC/JDBC terms. Zero pointers are nulls.
type xdbcType struct {
	name        string // Arrow's name for the family (arrow.DataType.Name)
	dataType    int32  // concise XDBC type
	sqlDataType int32  // verbose XDBC type (DATETIME, INTERVAL for those families)
	subcode     *int32
	columnSize  *int32
	params      []string
	unsigned    *bool
	caseSens    bool
	minScale    *int32
	maxScale    *int32
	radix       *int32
}

func i32(v int32) *int32 { return &v }
func boolp(v bool) *bool { return &v }

// xdbcTypes answers GetXdbcTypeInfo: every Arrow type family lake serves,
// sorted by data_type then type_name as the spec asks. Nested, dictionary,
// union, run-end encoded, view and null types have no ODBC/JDBC counterpart
// and are rows of XDBC_UNKNOWN_TYPE (0), so a tool can still name them.
func xdbcTypes() []xdbcType {
	num := func(name string, dt int32, size int32, unsigned bool, radix int32) xdbcType {
		return xdbcType{name: name, dataType: dt, sqlDataType: dt, columnSize: i32(size), unsigned: boolp(unsigned), radix: i32(radix)}
	}
	dt := func(name string, dt, sub int32) xdbcType {
		return xdbcType{name: name, dataType: dt, sqlDataType: xdbcDatetime, subcode: i32(sub)}
	}
	other := func(name string, dt int32) xdbcType { return xdbcType{name: name, dataType: dt, sqlDataType: dt} }
	text := func(name string, dt int32) xdbcType {
		return xdbcType{name: name, dataType: dt, sqlDataType: dt, caseSens: true}
	}
	types := []xdbcType{
		num("bool", xdbcBit, 1, false, binaryRadix),
		num("int8", xdbcTinyint, 3, false, decimalRadix),
		num("uint8", xdbcTinyint, 3, true, decimalRadix),
		num("int16", xdbcSmallint, 5, false, decimalRadix),
		num("uint16", xdbcSmallint, 5, true, decimalRadix),
		num("int32", xdbcInteger, 10, false, decimalRadix),
		num("uint32", xdbcInteger, 10, true, decimalRadix),
		num("int64", xdbcBigint, 19, false, decimalRadix),
		num("uint64", xdbcBigint, 20, true, decimalRadix),
		num("float16", xdbcFloat, 11, false, binaryRadix),
		num("float32", xdbcReal, 24, false, binaryRadix),
		num("float64", xdbcDouble, 53, false, binaryRadix),
		{name: "decimal32", dataType: xdbcDecimal, sqlDataType: xdbcDecimal, columnSize: i32(9), params: []string{"precision", "scale"}, unsigned: boolp(false), minScale: i32(0), maxScale: i32(9), radix: i32(decimalRadix)},
		{name: "decimal64", dataType: xdbcDecimal, sqlDataType: xdbcDecimal, columnSize: i32(18), params: []string{"precision", "scale"}, unsigned: boolp(false), minScale: i32(0), maxScale: i32(18), radix: i32(decimalRadix)},
		{name: "decimal", dataType: xdbcDecimal, sqlDataType: xdbcDecimal, columnSize: i32(38), params: []string{"precision", "scale"}, unsigned: boolp(false), minScale: i32(0), maxScale: i32(38), radix: i32(decimalRadix)},
		{name: "decimal256", dataType: xdbcDecimal, sqlDataType: xdbcDecimal, columnSize: i32(maxDecimal256), params: []string{"precision", "scale"}, unsigned: boolp(false), minScale: i32(0), maxScale: i32(maxDecimalScale), radix: i32(decimalRadix)},
		text("utf8", xdbcVarchar),
		text("large_utf8", xdbcLongVarchar),
		text("string_view", xdbcLongVarchar),
		other("binary", xdbcVarbinary),
		other("large_binary", xdbcLongVarbinary),
		other("binary_view", xdbcLongVarbinary),
		{name: "fixed_size_binary", dataType: xdbcBinary, sqlDataType: xdbcBinary, params: []string{"byte_width"}},
		dt("date32", xdbcDate, subcodeDate),
		dt("date64", xdbcDate, subcodeDate),
		dt("time32", xdbcTime, subcodeTime),
		dt("time64", xdbcTime, subcodeTime),
		{name: "timestamp", dataType: xdbcTimestamp, sqlDataType: xdbcDatetime, subcode: i32(subcodeTimestamp), params: []string{"unit", "timezone"}},
		other("month_interval", xdbcInterval),
		other("day_time_interval", xdbcInterval),
		other("month_day_nano_interval", xdbcInterval),
		{name: "duration", dataType: xdbcInterval, sqlDataType: xdbcInterval, params: []string{"unit"}},
	}
	for _, name := range []string{"null", "list", "large_list", "list_view", "large_list_view", "fixed_size_list",
		"struct", "map", "dense_union", "sparse_union", "dictionary", "run_end_encoded", "extension"} {
		types = append(types, other(name, xdbcUnknown))
	}
	slices.SortFunc(types, func(a, b xdbcType) int {
		return cmp.Or(cmp.Compare(a.dataType, b.dataType), cmp.Compare(a.name, b.name))
	})
	return types
}

// GetFlightInfoXdbcTypeInfo implements flightsql.Server.
func (s *Service) GetFlightInfoXdbcTypeInfo(ctx context.Context, _ flightsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(ctx, desc, schema_ref.XdbcTypeInfo)
}

// DoGetXdbcTypeInfo answers the types lake serves, or those of one
// data_type when the request names it.
func (s *Service) DoGetXdbcTypeInfo(ctx context.Context, cmd flightsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if _, _, err := s.begin(ctx); err != nil {
		return nil, nil, err
	}
	b := array.NewRecordBuilder(s.mem, schema_ref.XdbcTypeInfo)
	defer b.Release()
	for _, t := range xdbcTypes() {
		if want := cmd.GetDataType(); want != nil && *want != t.dataType {
			continue
		}
		appendXdbc(b, t)
	}
	rec := b.NewRecordBatch()
	ch, err := stream(ctx, schema_ref.XdbcTypeInfo, []arrow.RecordBatch{rec})
	return schema_ref.XdbcTypeInfo, ch, err
}

func appendXdbc(b *array.RecordBuilder, t xdbcType) {
	optI32 := func(i int, v *int32) {
		fb := b.Field(i).(*array.Int32Builder)
		if v == nil {
			fb.AppendNull()
		} else {
			fb.Append(*v)
		}
	}
	b.Field(0).(*array.StringBuilder).Append(t.name)
	b.Field(1).(*array.Int32Builder).Append(t.dataType)
	optI32(2, t.columnSize)
	b.Field(3).(*array.StringBuilder).AppendNull() // literal_prefix: no SQL literals
	b.Field(4).(*array.StringBuilder).AppendNull() // literal_suffix
	params := b.Field(5).(*array.ListBuilder)
	if t.params == nil {
		params.AppendNull()
	} else {
		params.Append(true)
		params.ValueBuilder().(*array.StringBuilder).AppendValues(t.params, nil)
	}
	b.Field(6).(*array.Int32Builder).Append(sqlNullable)
	b.Field(7).(*array.BooleanBuilder).Append(t.caseSens)
	b.Field(8).(*array.Int32Builder).Append(searchableNone)
	if t.unsigned == nil {
		b.Field(9).(*array.BooleanBuilder).AppendNull()
	} else {
		b.Field(9).(*array.BooleanBuilder).Append(*t.unsigned)
	}
	b.Field(10).(*array.BooleanBuilder).Append(false) // fixed_prec_scale: no money types
	b.Field(11).(*array.BooleanBuilder).Append(false) // auto_increment
	b.Field(12).(*array.StringBuilder).Append(t.name) // local_type_name
	optI32(13, t.minScale)
	optI32(14, t.maxScale)
	b.Field(15).(*array.Int32Builder).Append(t.sqlDataType)
	optI32(16, t.subcode)
	optI32(17, t.radix)
	b.Field(18).(*array.Int32Builder).AppendNull() // interval_precision
}
