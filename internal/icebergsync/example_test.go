package icebergsync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// Sync a local folder of Parquet files into Iceberg metadata, then again
// with nothing changed.
func ExampleSync() {
	dir, _ := os.MkdirTemp("", "icebergsync-example-")
	defer os.RemoveAll(dir)
	data, metaDir := filepath.Join(dir, "data"), filepath.Join(dir, "meta")
	_ = os.MkdirAll(data, 0o755)

	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	f, _ := os.Create(filepath.Join(data, "part-0.parquet"))
	w, _ := pqarrow.NewFileWriter(schema, f, nil, pqarrow.DefaultWriterProps())
	_ = w.Write(rec)
	_ = w.Close()
	rec.Release()
	b.Release()
	_ = os.WriteFile(filepath.Join(data, "README.txt"), []byte("not data"), 0o644)

	t := icebergsync.Table{
		Tenant: "acme", Namespace: "sales", Name: "orders",
		UUID: "0b6f1c1a-4e2b-4d4a-9a53-0c1d2e3f4a5b", Location: "file://" + data,
		Schema: schema, IDs: icebergschema.Assign(nil, icebergschema.FieldIDs{}, schema),
	}
	files, meta := icebergsync.NewLocalFiles(data), icebergsync.NewLocalMetaStore(metaDir)
	prefix := "acme/sales/orders/0b6f1c1a/metadata/"
	r, err := icebergsync.Sync(context.Background(), t, icebergsync.State{}, files, meta, prefix, icebergsync.Limits{}, time.Now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Changed, r.Files, r.Records, filepath.Base(r.MetadataLocation))
	for _, s := range r.Skipped {
		fmt.Println("skipped", s.Key+":", s.Reason)
	}

	// lake stores r.State; the next Sync starts from it.
	again, err := icebergsync.Sync(context.Background(), t, r.State, files, meta, prefix, icebergsync.Limits{}, time.Now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(again.Changed, again.SnapshotID == r.SnapshotID)
	// Output:
	// true 1 3 v1.metadata.json
	// skipped README.txt: not Parquet: 8 bytes, too short
	// false true
}
