package browser_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lake-catalog/lake/pkg/wire"
)

// ordersRows is how many rows acme's sales.orders holds.
const ordersRows = 24

// ordersFileSchema is acme's sales.orders after its updates.
var ordersFileSchema = arrow.NewSchema([]arrow.Field{
	{Name: "customer_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "placed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true},
}, nil)

// writeOrders writes ordersRows rows of ordersFileSchema at path, in row
// groups of 8; every fifth amount is null.
func writeOrders(path string) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, ordersFileSchema)
	defer b.Release()
	start := time.Date(2026, 11, 2, 8, 15, 0, 0, time.UTC)
	for i := range ordersRows {
		b.Field(0).(*array.Int64Builder).Append(int64(4100 + i*7%23))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(start.Add(time.Duration(i) * 97 * time.Minute).UnixMicro()))
		if i%5 == 4 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(1250 + i*i*137)))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := pqarrow.NewFileWriter(ordersFileSchema, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(8)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		return err
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// GET /api/preview answers the registration API's preview of the token's
// tenant's table: the rows of acme's sales.orders (under the data root),
// the limit; the API's refusals with their codes and messages (a table in
// s3://b/, which local mode may not read; another tenant's token finds no
// such table); bad parameters 400; no token 401.
func TestPreviewAPI(t *testing.T) {
	var p wire.Preview
	getJSON(t, "/api/preview?namespace=sales&name=orders&limit=10", "acme", http.StatusOK, &p)
	if len(p.Rows) != 10 || !p.Truncated || len(p.Columns) != 3 || p.Columns[2].Type != "decimal128(18, 2)" || p.Stats.FilesOpened != 1 {
		t.Fatalf("preview = %d rows (truncated %v) of %+v, stats %+v; want 10 of 3 columns, truncated, one file", len(p.Rows), p.Truncated, p.Columns, p.Stats)
	}
	if got, want := p.Rows[0], []any{float64(4100), "2026-11-02T08:15:00Z", "12.50"}; mustJSON(t, got) != mustJSON(t, want) {
		t.Fatalf("first row = %v, want %v", got, want)
	}
	getJSON(t, "/api/preview?namespace=sales&name=orders", "acme", http.StatusOK, &p)
	if len(p.Rows) != ordersRows || p.Truncated || p.Limit != wire.DefaultPreviewLimit {
		t.Fatalf("preview = %d rows (truncated %v, limit %d), want all %d", len(p.Rows), p.Truncated, p.Limit, ordersRows)
	}
	for _, tc := range []struct {
		name, path, tenant string
		status             int
		code, says         string
	}{
		{"a table local mode may not read", "/api/preview?namespace=nested&name=rich", "acme", http.StatusForbidden, wire.CodeLocationNotAllowed, "acme/nested/rich"},
		{"another tenant's table", "/api/preview?namespace=sales&name=orders", "globex", http.StatusNotFound, wire.CodeNotFound, "table not found"},
		{"an unknown column", "/api/preview?namespace=sales&name=orders&columns=price", "acme", http.StatusBadRequest, wire.CodeInvalidQuery, `no column "price"`},
		{"a limit too high", "/api/preview?namespace=sales&name=orders&limit=5000", "acme", http.StatusBadRequest, wire.CodeInvalidQuery, "limit must be 1 to 1000"},
		{"no name", "/api/preview?namespace=sales", "acme", http.StatusBadRequest, "invalid", "namespace and name are required"},
		{"no token", "/api/preview?namespace=sales&name=orders", "", http.StatusUnauthorized, wire.CodeUnauthenticated, "token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e wire.ErrorResponse
			getJSON(t, tc.path, tc.tenant, tc.status, &e)
			if e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.says) {
				t.Fatalf("got %+v, want %s saying %q", e.Error, tc.code, tc.says)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
