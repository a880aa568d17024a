package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// demoTable is one table of the demo catalog.
type demoTable struct {
	Ref    catalog.TableRef
	Schema *arrow.Schema
}

// demoCatalog returns the tables `lake local` registers on first start: two
// tenants with rich types, so a new user sees tables at once.
func demoCatalog() []demoTable {
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	f := func(name string, t arrow.DataType, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: nullable}
	}
	md := func(kv ...string) *arrow.Metadata {
		m := arrow.NewMetadata([]string{kv[0]}, []string{kv[1]})
		return &m
	}
	return []demoTable{
		{catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}, arrow.NewSchema([]arrow.Field{
			f("order_id", arrow.PrimitiveTypes.Int64, false),
			f("customer_id", arrow.PrimitiveTypes.Int64, false),
			f("ordered_at", ts, false),
			f("status", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, false),
			f("total", &arrow.Decimal128Type{Precision: 18, Scale: 2}, false),
			f("items", arrow.ListOf(arrow.StructOf(
				arrow.Field{Name: "sku", Type: arrow.BinaryTypes.String},
				arrow.Field{Name: "quantity", Type: arrow.PrimitiveTypes.Int32},
				arrow.Field{Name: "unit_price", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}},
			)), true),
			f("shipping_address", arrow.StructOf(
				arrow.Field{Name: "street", Type: arrow.BinaryTypes.String, Nullable: true},
				arrow.Field{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true},
				arrow.Field{Name: "country", Type: &arrow.FixedSizeBinaryType{ByteWidth: 2}, Nullable: true},
			), true),
		}, md("description", "one row per order"))},
		{catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "customers"}, arrow.NewSchema([]arrow.Field{
			f("customer_id", arrow.PrimitiveTypes.Int64, false),
			f("name", arrow.BinaryTypes.String, false),
			f("email", arrow.BinaryTypes.String, true),
			f("signed_up", arrow.FixedWidthTypes.Date32, false),
			f("attributes", arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), true),
		}, nil)},
		{catalog.TableRef{Tenant: "acme", Namespace: "marketing", Name: "campaign_events"}, arrow.NewSchema([]arrow.Field{
			f("event_time", &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, false),
			f("campaign", arrow.BinaryTypes.String, false),
			f("duration", arrow.FixedWidthTypes.Duration_ms, true),
			f("payload", arrow.BinaryTypes.LargeBinary, true),
		}, nil)},
		{catalog.TableRef{Tenant: "acme", Namespace: "reference", Name: "every_type"}, everyTypeSchema()},
		{catalog.TableRef{Tenant: "globex", Namespace: "finance", Name: "ledger"}, arrow.NewSchema([]arrow.Field{
			f("entry_id", arrow.BinaryTypes.String, false),
			f("booked_on", arrow.FixedWidthTypes.Date32, false),
			f("account", arrow.BinaryTypes.String, false),
			f("amount", &arrow.Decimal256Type{Precision: 40, Scale: 6}, false),
			f("currency", &arrow.FixedSizeBinaryType{ByteWidth: 3}, false),
		}, md("owner", "finance-data"))},
		{catalog.TableRef{Tenant: "globex", Namespace: "iot", Name: "sensor_readings"}, arrow.NewSchema([]arrow.Field{
			f("device_id", arrow.BinaryTypes.String, false),
			f("read_at", &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Berlin"}, false),
			f("temperature_c", arrow.PrimitiveTypes.Float32, true),
			f("vector", arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float64), true),
			f("tags", arrow.ListOf(arrow.BinaryTypes.String), true),
		}, nil)},
	}
}

// seedDemo registers the demo catalog once per data folder.
func (in *Instance) seedDemo(ctx context.Context) error {
	marker := filepath.Join(in.cfg.DataDir, seededFile)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	for _, t := range demoCatalog() {
		loc := fmt.Sprintf("s3://demo-lake/%s/%s/%s/", t.Ref.Tenant, t.Ref.Namespace, t.Ref.Name)
		_, _, err := in.cat.Register(ctx, t.Ref, catalog.TableSpec{Location: loc, Schema: t.Schema})
		if err != nil && !errors.Is(err, catalog.ErrExists) {
			return fmt.Errorf("local: demo catalog: %w", err)
		}
	}
	return os.WriteFile(marker, []byte("the demo catalog was registered; delete this file to register it again\n"), 0o600)
}

// everyTypeSchema is the demo's acme/reference/every_type: every Arrow type
// lake keeps exactly (primitives, decimals, temporal types in every unit,
// views, lists, struct, map, unions, dictionaries, run-end encoded, field
// and schema metadata, a Unicode name), so a new user sees how each one
// reads in their SQL tool.
func everyTypeSchema() *arrow.Schema {
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
	md := arrow.NewMetadata([]string{"owner", "description"}, []string{"data-eng", "every type lake keeps exactly (demo)"})
	return arrow.NewSchema(fields, &md)
}
