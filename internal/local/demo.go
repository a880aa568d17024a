package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// DemoTable is one table of the demo catalog.
type DemoTable struct {
	Ref    catalog.TableRef
	Schema *arrow.Schema
}

// DemoCatalog returns the tables `lake local` registers on first start: two
// tenants with rich types, so a new user sees tables at once.
func DemoCatalog() []DemoTable {
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	f := func(name string, t arrow.DataType, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: nullable}
	}
	md := func(kv ...string) *arrow.Metadata {
		m := arrow.NewMetadata([]string{kv[0]}, []string{kv[1]})
		return &m
	}
	return []DemoTable{
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
		{catalog.TableRef{Tenant: "acme", Namespace: "reference", Name: "every_type"}, catalogtest.RichSchema()},
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
	for _, t := range DemoCatalog() {
		loc := fmt.Sprintf("s3://demo-lake/%s/%s/%s/", t.Ref.Tenant, t.Ref.Namespace, t.Ref.Name)
		_, _, err := in.cat.Register(ctx, t.Ref, catalog.TableSpec{Location: loc, Schema: t.Schema})
		if err != nil && !errors.Is(err, catalog.ErrExists) {
			return fmt.Errorf("local: demo catalog: %w", err)
		}
	}
	return os.WriteFile(marker, []byte("the demo catalog was registered; delete this file to register it again\n"), 0o600)
}
