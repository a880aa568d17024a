package apiclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// Preview reads a table's first rows over the real API from a Parquet
// file under the Door's data root: the limit and columns asked, in that
// order; a column the table lacks is ErrInvalidQuery naming it, once.
func TestPreview(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(s, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "acme", "orders")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-0.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{Authorize: tokenAuthorizer, Log: slog.New(slog.DiscardHandler),
		Door: &vending.Door{DataRoot: root}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, "ok-acme")
	ctx := context.Background()
	if _, _, err := c.Register(ctx, orders, apiclient.Spec{Location: "file://" + dir + "/", SchemaIPC: ipc(t, s)}); err != nil {
		t.Fatal(err)
	}

	p, err := c.Preview(ctx, orders, 2, []string{"name", "id"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Columns) != 2 || p.Columns[0].Name != "name" || p.Columns[0].Type != "utf8" || !p.Columns[0].Nullable || p.Columns[1].Type != "int64" {
		t.Errorf("columns = %+v, want name utf8 nullable, id int64", p.Columns)
	}
	if len(p.Rows) != 2 || !p.Truncated || p.Rows[0][0] != "a" || p.Rows[0][1] != json.Number("1") || p.Rows[1][0] != nil || p.Limit != 2 {
		t.Errorf("rows = %v (truncated %v, limit %d), want [[a 1] [<nil> 2]], truncated, limit 2", p.Rows, p.Truncated, p.Limit)
	}
	if p, err := c.Preview(ctx, orders, 0, nil); err != nil || len(p.Rows) != 3 || p.Truncated || p.Limit != 100 || p.Stats.FilesOpened != 1 {
		t.Errorf("Preview with the defaults = %+v, %v; want 3 rows of 100, one file", p, err)
	}

	_, err = c.Preview(ctx, orders, 0, []string{"price"})
	if !errors.Is(err, apiclient.ErrInvalidQuery) || err.Error() != `acme/sales/orders: invalid request: the table has no column "price"` {
		t.Fatalf("Preview of an unknown column: %v, want ErrInvalidQuery naming it", err)
	}
	_, err = c.Preview(ctx, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "nope"}, 0, nil)
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Preview of no table: %v, want ErrNotFound", err)
	}
}
