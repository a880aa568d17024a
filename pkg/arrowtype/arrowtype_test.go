package arrowtype_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"

	"github.com/lake-catalog/lake/pkg/arrowtype"
)

func TestTypeString(t *testing.T) {
	tests := []struct {
		name string
		typ  arrow.DataType
		want string
	}{
		{"int64", arrow.PrimitiveTypes.Int64, "int64"},
		{"utf8", arrow.BinaryTypes.String, "utf8"},
		{"decimal32", &arrow.Decimal32Type{Precision: 9, Scale: 2}, "decimal32(9, 2)"},
		{"decimal64", &arrow.Decimal64Type{Precision: 18, Scale: 0}, "decimal64(18, 0)"},
		{"decimal128", &arrow.Decimal128Type{Precision: 38, Scale: 10}, "decimal128(38, 10)"},
		{"decimal256 negative scale", &arrow.Decimal256Type{Precision: 76, Scale: -5}, "decimal256(76, -5)"},
		{"timestamp", &arrow.TimestampType{Unit: arrow.Nanosecond}, "timestamp[ns]"},
		{"timestamp with zone", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "timestamp[us, tz=UTC]"},
		{"timestamp named zone", &arrow.TimestampType{Unit: arrow.Second, TimeZone: "America/New_York"}, "timestamp[s, tz=America/New_York]"},
		{"time32", arrow.FixedWidthTypes.Time32ms, "time32[ms]"},
		{"time64", arrow.FixedWidthTypes.Time64ns, "time64[ns]"},
		{"duration", arrow.FixedWidthTypes.Duration_ms, "duration[ms]"},
		{"fixed_size_binary", &arrow.FixedSizeBinaryType{ByteWidth: 16}, "fixed_size_binary[16]"},
		{"interval", arrow.FixedWidthTypes.MonthDayNanoInterval, "month_day_nano_interval"},
		{"list", arrow.ListOf(arrow.PrimitiveTypes.Int32), "list<item: int32>"},
		{"list of non-null", arrow.ListOfNonNullable(arrow.BinaryTypes.String), "list<item: utf8 not null>"},
		{"large_list", arrow.LargeListOf(&arrow.Decimal128Type{Precision: 5, Scale: 1}), "large_list<item: decimal128(5, 1)>"},
		{"list_view", arrow.ListViewOf(arrow.PrimitiveTypes.Int16), "list_view<item: int16>"},
		{"large_list_view", arrow.LargeListViewOf(arrow.PrimitiveTypes.Int16), "large_list_view<item: int16>"},
		{"fixed_size_list", arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), "fixed_size_list<item: float32>[3]"},
		{"struct", arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
			arrow.Field{Name: "deep", Type: arrow.StructOf(arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true}), Nullable: true},
		), "struct<a: int64 not null, ts: timestamp[ms, tz=UTC], deep: struct<d: decimal128(10, 2)>>"},
		{"map", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), "map<utf8, int64>"},
		{"map sorted, values not null", func() arrow.DataType {
			m := arrow.MapOfWithMetadata(arrow.PrimitiveTypes.Int32, arrow.Metadata{}, &arrow.Decimal128Type{Precision: 38, Scale: 10}, arrow.Metadata{})
			m.KeysSorted = true
			m.SetItemNullable(false)
			return m
		}(), "map<int32, decimal128(38, 10) not null, keys_sorted>"},
		{"dictionary", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, "dictionary<values=utf8, indices=int32>"},
		{"dictionary ordered", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Ordered: true},
			"dictionary<values=decimal128(38, 10), indices=int8, ordered>"},
		{"dense union", arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}},
			[]arrow.UnionTypeCode{0, 5}), "dense_union<i: int32=0, s: utf8=5>"},
		{"sparse union", arrow.SparseUnionOf([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}},
			[]arrow.UnionTypeCode{2, 7}), "sparse_union<f: float64=2, b: bool=7>"},
		{"run_end_encoded", arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String), "run_end_encoded<run_ends: int32, values: utf8>"},
		{"extension", extensions.NewUUIDType(), "extension<arrow.uuid, storage=fixed_size_binary[16]>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := arrowtype.String(tt.typ); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTypeName(t *testing.T) {
	tests := []struct {
		typ  arrow.DataType
		want string
	}{
		{&arrow.Decimal128Type{Precision: 38, Scale: 10}, "decimal128"},
		{&arrow.Decimal256Type{Precision: 40, Scale: 2}, "decimal256"},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "timestamp"},
		{arrow.ListOf(arrow.PrimitiveTypes.Int32), "list"},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), "map"},
	}
	for _, tt := range tests {
		if got := arrowtype.Name(tt.typ); got != tt.want {
			t.Errorf("TypeName(%s): got %q, want %q", arrowtype.String(tt.typ), got, tt.want)
		}
	}
}

// Short is String when it fits, else its first bytes (never half a UTF-8
// sequence) and "…", at most n bytes in all.
func TestShort(t *testing.T) {
	wide := arrow.StructOf(arrow.Field{Name: "ä", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})
	full := arrowtype.String(wide) // struct<ä: int64 not null, b: utf8>
	tests := []struct {
		n    int
		want string
	}{
		{len(full), full},
		{100, full},
		{len(full) - 1, "struct<ä: int64 not null, b: u…"},
		{12, "struct<ä…"}, // "struct<ä" is 9 bytes, then the ellipsis
		{11, "struct<…"},  // the ä would be cut in half
		{1, "…"},          // never shorter than the ellipsis
	}
	for _, tt := range tests {
		got := arrowtype.Short(wide, tt.n)
		if got != tt.want || len(got) > max(tt.n, len("…")) {
			t.Errorf("Short(%s, %d) = %q (%d bytes), want %q", full, tt.n, got, len(got), tt.want)
		}
	}
}
