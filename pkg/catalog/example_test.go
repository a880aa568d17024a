package catalog_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// Register a table, build a snapshot from one scan, and carry it through the
// blob that refresh publishes and discovery loads.
func Example() {
	store := memstore.New(memstore.Options{})
	cat := catalog.New(store, catalog.Options{})
	ctx := context.Background()

	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "order_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "total", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true},
	}, nil)
	reg, created, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/sales/orders/", Schema: schema})
	if err != nil {
		panic(err)
	}
	fmt.Println("created:", created, "version:", reg.Version())

	snap, _, err := catalog.Refresh(ctx, store, 1, time.Now())
	if err != nil {
		panic(err)
	}
	blob, err := catalog.EncodeBlob(snap)
	if err != nil {
		panic(err)
	}
	loaded, err := catalog.DecodeBlob(blob, catalog.DecodeOptions{})
	if err != nil {
		panic(err)
	}
	tbl := loaded.Tenant(ref.Tenant)[0]
	got, _ := tbl.Schema()
	fmt.Println("tables:", loaded.Counts.Tables, "exact schema:", catalog.SchemaEqual(got, schema))
	// Output:
	// created: true version: 1
	// tables: 1 exact schema: true
}
