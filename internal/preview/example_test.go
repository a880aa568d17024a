package preview_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/preview"
)

// Read the first rows of the id column of a table whose one file has row
// groups of 100 rows, with the filter id > 250: the row groups whose
// statistics rule it out are skipped, and the rows of the others are
// returned unfiltered (the caller applies its predicate).
func ExampleRead() {
	dir, err := os.MkdirTemp("", "preview-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	data, err := encode(schema, 100, rowsFrom(0, 1000, 0))
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-0.parquet"), data, 0o644); err != nil {
		panic(err)
	}

	batches, st, err := preview.Read(context.Background(), icebergsync.NewLocalFiles(dir), preview.Request{
		Table:   "sales.orders",
		Schema:  schema,
		Columns: []int{0},
		Limit:   3,
		Filters: []preview.Filter{{Column: 0, Op: preview.OpGt, Value: int64(250)}},
	}, preview.Limits{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range batches {
		fmt.Println(b.Schema().Field(0).Name, b.Column(0).(*array.Int64).Int64Values())
		b.Release()
	}
	fmt.Printf("row groups read %d, skipped %d; rows %d\n", st.RowGroupsRead, st.RowGroupsSkipped, st.Rows)
	// Output:
	// id [200 201 202]
	// row groups read 1, skipped 2; rows 3
}
