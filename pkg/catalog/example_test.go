package catalog_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// Register a table and read back its exact schema. (pkg/snapshot carries
// registrations into the blob that refresh publishes and discovery loads.)
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

	got, err := cat.Get(ctx, ref)
	if err != nil {
		panic(err)
	}
	exact, _ := got.Schema()
	fmt.Println("exact schema:", catalog.SchemaEqual(exact, schema))
	// Output:
	// created: true version: 1
	// exact schema: true
}
