package snapshot_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// Write a tenant's table with the one writer, as refresh publishes it
// (the manifest alone, each segment apart), and read the tenant's segment
// with the one reader, as discovery does.
func Example() {
	schema := arrow.NewSchema([]arrow.Field{{Name: "order_id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ipc, err := catalog.EncodeSchema(schema)
	if err != nil {
		panic(err)
	}
	now := time.Now()
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 1, CreatedAt: now})
	if err != nil {
		panic(err)
	}
	orders := snapshot.Table{Namespace: "sales", Name: "orders", TableType: catalog.DefaultTableType, SchemaIPC: ipc,
		Location: "s3://lake/sales/orders/", Version: 1, CreatedAt: now, UpdatedAt: now}
	// A refused tenant would stick: Finish would report it.
	if err := w.AddTenant("acme", []snapshot.Table{orders}, nil); err != nil {
		panic(err)
	}
	written, err := w.Finish()
	if err != nil {
		panic(err)
	}
	segments := map[[32]byte][]byte{}
	for i, e := range written.Entries {
		segments[e.Address] = written.Segments[i]
	}
	r, err := snapshot.Open(written.Manifest, snapshot.ReaderOptions{Fetch: func(_ context.Context, e snapshot.Entry) ([]byte, error) {
		return segments[e.Address], nil
	}})
	if err != nil {
		panic(err)
	}
	seg, err := r.Tenant(context.Background(), "acme")
	if err != nil {
		panic(err)
	}
	defer seg.Release()
	got, _ := catalog.DecodeSchema(seg.Schema(0))
	fmt.Println("version:", r.Header().Version, r.Form(), "tables:", seg.NumTables(), seg.Tables.Namespace.Value(0)+"."+seg.Tables.Name.Value(0),
		"exact schema:", catalog.SchemaEqual(got, schema))
	// Output:
	// version: 10 manifest alone tables: 1 sales.orders exact schema: true
}
