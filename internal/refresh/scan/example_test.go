package scan_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

func ExampleBuild() {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	ctx := context.Background()
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	schema := arrow.NewSchema([]arrow.Field{{Name: "order_id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, _, err := catalog.New(store, catalog.Options{}).Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/sales/orders/", Schema: schema}); err != nil {
		panic(err)
	}
	built, err := scan.Build(ctx, store, scan.BuildOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		panic(err)
	}
	blob, err := built.Written.Blob()
	if err != nil {
		panic(err)
	}
	r, err := snapshot.Open(blob, snapshot.ReaderOptions{})
	if err != nil {
		panic(err)
	}
	seg, err := r.Tenant(context.Background(), "acme")
	if err != nil {
		panic(err)
	}
	defer seg.Release()
	got, _ := catalog.DecodeSchema(seg.Schema(0))
	fmt.Println("version:", r.Header().Version, "tables:", seg.NumTables(), seg.Tables.Namespace.Value(0)+"."+seg.Tables.Name.Value(0),
		"exact schema:", catalog.SchemaEqual(got, schema))
	// Output:
	// version: 10 tables: 1 sales.orders exact schema: true
}
