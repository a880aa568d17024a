// Package catalogtest holds schemas and fixtures shared by lake's tests and
// benchmarks (production code does not import it; local mode's demo catalog
// has its own copy in internal/local): a schema with every Arrow type the catalog
// promises to keep exactly, and generated wide schemas.
package catalogtest

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// RichSchema returns a schema with every type lake round-trips exactly:
// every primitive type, decimal128/256, timestamps in all units with and
// without a time zone, date32/64, time32/64, durations, intervals,
// fixed-size binary, large string/binary, views, list, large list, list
// view, fixed-size list, struct, map, dense and sparse unions,
// dictionary-encoded string, run-end encoded, field and schema metadata,
// non-nullable fields and Unicode names.
func RichSchema() *arrow.Schema {
	f := func(name string, t arrow.DataType, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: nullable}
	}
	fields := []arrow.Field{
		f("null", arrow.Null, true),
		f("bool", arrow.FixedWidthTypes.Boolean, false),
		f("int8", arrow.PrimitiveTypes.Int8, true),
		f("int16", arrow.PrimitiveTypes.Int16, true),
		f("int32", arrow.PrimitiveTypes.Int32, true),
		f("int64", arrow.PrimitiveTypes.Int64, false),
		f("uint8", arrow.PrimitiveTypes.Uint8, true),
		f("uint16", arrow.PrimitiveTypes.Uint16, true),
		f("uint32", arrow.PrimitiveTypes.Uint32, true),
		f("uint64", arrow.PrimitiveTypes.Uint64, true),
		f("float16", arrow.FixedWidthTypes.Float16, true),
		f("float32", arrow.PrimitiveTypes.Float32, true),
		f("float64", arrow.PrimitiveTypes.Float64, true),
		f("utf8", arrow.BinaryTypes.String, true),
		f("binary", arrow.BinaryTypes.Binary, true),
		f("large_utf8", arrow.BinaryTypes.LargeString, true),
		f("large_binary", arrow.BinaryTypes.LargeBinary, true),
		f("utf8_view", arrow.BinaryTypes.StringView, true),
		f("binary_view", arrow.BinaryTypes.BinaryView, true),
		f("fixed_size_binary", &arrow.FixedSizeBinaryType{ByteWidth: 16}, true),
		f("decimal128", &arrow.Decimal128Type{Precision: 38, Scale: 10}, true),
		f("decimal256", &arrow.Decimal256Type{Precision: 76, Scale: -5}, true),
		f("date32", arrow.FixedWidthTypes.Date32, true),
		f("date64", arrow.FixedWidthTypes.Date64, true),
		f("time32_s", arrow.FixedWidthTypes.Time32s, true),
		f("time32_ms", arrow.FixedWidthTypes.Time32ms, true),
		f("time64_us", arrow.FixedWidthTypes.Time64us, true),
		f("time64_ns", arrow.FixedWidthTypes.Time64ns, true),
		f("duration_s", arrow.FixedWidthTypes.Duration_s, true),
		f("duration_ms", arrow.FixedWidthTypes.Duration_ms, true),
		f("duration_us", arrow.FixedWidthTypes.Duration_us, true),
		f("duration_ns", arrow.FixedWidthTypes.Duration_ns, true),
		f("interval_months", arrow.FixedWidthTypes.MonthInterval, true),
		f("interval_day_time", arrow.FixedWidthTypes.DayTimeInterval, true),
		f("interval_month_day_nano", arrow.FixedWidthTypes.MonthDayNanoInterval, true),
		f("list", arrow.ListOf(arrow.PrimitiveTypes.Int32), true),
		f("list_non_null_items", arrow.ListOfNonNullable(arrow.BinaryTypes.String), false),
		f("large_list", arrow.LargeListOf(arrow.PrimitiveTypes.Float64), true),
		f("list_view", arrow.ListViewOf(arrow.PrimitiveTypes.Int16), true),
		f("fixed_size_list", arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), true),
		f("struct", arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "nested", Type: arrow.StructOf(arrow.Field{Name: "deep", Type: arrow.ListOf(arrow.FixedWidthTypes.Date32), Nullable: true}), Nullable: true},
		), true),
		f("map", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), true),
		f("dense_union", arrow.DenseUnionOf([]arrow.Field{
			{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		}, []arrow.UnionTypeCode{0, 5}), true),
		f("sparse_union", arrow.SparseUnionOf([]arrow.Field{
			{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		}, []arrow.UnionTypeCode{2, 7}), true),
		f("dictionary_utf8", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, true),
		f("dictionary_ordered", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.LargeString, Ordered: true}, true),
		f("run_end_encoded", arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String), true),
		f("日本語の列 ✓", arrow.BinaryTypes.String, true),
		{Name: "with_metadata", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"comment", "unit", "ключ"}, []string{"field comment", "ms", "значение"})},
	}
	for _, unit := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
		fields = append(fields,
			f("ts_"+unit.String(), &arrow.TimestampType{Unit: unit}, true),
			f("ts_"+unit.String()+"_utc", &arrow.TimestampType{Unit: unit, TimeZone: "UTC"}, true),
			f("ts_"+unit.String()+"_tz", &arrow.TimestampType{Unit: unit, TimeZone: "America/New_York"}, true),
		)
	}
	md := arrow.NewMetadata([]string{"owner", "description"}, []string{"data-eng", "every type lake keeps exactly"})
	return arrow.NewSchema(fields, &md)
}

// WideSchema returns a generated schema of cols columns of common types; seed
// varies names and types so schemas differ between tables.
func WideSchema(seed, cols int) *arrow.Schema {
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int64,
		arrow.BinaryTypes.String,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		&arrow.Decimal128Type{Precision: 18, Scale: 2},
		arrow.PrimitiveTypes.Float64,
		arrow.FixedWidthTypes.Boolean,
		arrow.FixedWidthTypes.Date32,
		arrow.ListOf(arrow.BinaryTypes.String),
	}
	fields := make([]arrow.Field, cols)
	for i := range fields {
		fields[i] = arrow.Field{
			Name:     fmt.Sprintf("col_%d_%d", seed%97, i),
			Type:     types[(seed+i)%len(types)],
			Nullable: (seed+i)%3 != 0,
		}
	}
	return arrow.NewSchema(fields, nil)
}

// DeepBreakingSchemas returns two schemas whose diff is as large as a
// small schema can make it: depth structs nested in one another, each
// named by nameBytes bytes, the innermost holding leaves required int64
// fields (f0000, f0001, …) in old and the same fields as utf8 in new. Every
// leaf is a retyped change that breaks every compatibility mode but none,
// at a dotted path of about depth × nameBytes bytes.
func DeepBreakingSchemas(depth, leaves, nameBytes int) (old, new *arrow.Schema) {
	build := func(leaf arrow.DataType) *arrow.Schema {
		fields := make([]arrow.Field, leaves)
		for i := range fields {
			fields[i] = arrow.Field{Name: fmt.Sprintf("f%04d", i), Type: leaf}
		}
		t := arrow.StructOf(fields...)
		for level := depth - 1; level >= 1; level-- {
			t = arrow.StructOf(arrow.Field{Name: deepName(level, nameBytes), Type: t, Nullable: true})
		}
		return arrow.NewSchema([]arrow.Field{{Name: deepName(0, nameBytes), Type: t, Nullable: true}}, nil)
	}
	return build(arrow.PrimitiveTypes.Int64), build(arrow.BinaryTypes.String)
}

// deepName is level's struct name, padded to n bytes.
func deepName(level, n int) string {
	name := fmt.Sprintf("s%02d_", level)
	return name + strings.Repeat("x", max(n-len(name), 0))
}
