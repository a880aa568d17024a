package registerapi_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lake-catalog/lake/internal/preview"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/wire"
)

// previewSchema is the schema of the preview tests' tables.
var previewSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "placed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
}, nil)

// placedAt is row id's placed_at.
func placedAt(id int64) time.Time {
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(id) * time.Hour)
}

// writePreviewParquet writes rows first..first+n-1 of previewSchema (row id
// i: name "n<i>", null for every third; amount i × 1.25) at path, in row
// groups of rowGroup rows.
func writePreviewParquet(tb testing.TB, path string, first, n, rowGroup int64) {
	tb.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, previewSchema)
	defer b.Release()
	for id := first; id < first+n; id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		if id%3 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append("n" + strconv.FormatInt(id, 10))
		}
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(placedAt(id).UnixMicro()))
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(id * 125))
	}
	writeRecord(tb, path, b.NewRecordBatch(), rowGroup)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// writeRecord writes rec (and releases it) as a Parquet file at path.
func writeRecord(tb testing.TB, path string, rec arrow.RecordBatch, rowGroup int64) {
	tb.Helper()
	defer rec.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rowGroup)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// tenantToken authorizes "Bearer <tenant>" for that tenant alone: another
// tenant's token is refused (403), none is 401.
func tenantToken(r *http.Request, tenant string) (string, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || tok == "":
		return "", registerapi.ErrUnauthenticated
	case tok != tenant:
		return "", errors.New("token of another tenant")
	}
	return "tenant:" + tok, nil
}

// previewAPI serves the API with a Door reading local paths under root and
// opts (Authorize and Door set here), registering acme's sales.orders
// over root/acme/orders/.
func previewAPI(t *testing.T, root string, opts registerapi.Options) http.Handler {
	t.Helper()
	opts.Authorize, opts.Log = tenantToken, slog.New(slog.DiscardHandler)
	if opts.Door == nil {
		opts.Door = &vending.Door{DataRoot: root}
	}
	h := newAPI(t, opts)
	registerWith(t, h, "acme", "orders", "file://"+filepath.Join(root, "acme", "orders")+"/")
	return h
}

func registerWith(t *testing.T, h http.Handler, tenant, name, location string) {
	t.Helper()
	r := do(t, h, "POST", "/v1/tenants/"+tenant+"/namespaces/sales/tables", "application/json",
		body(t, map[string]any{"name": name, "location": location, "schema": ipcB64(previewSchema)}), "Authorization", "Bearer "+tenant)
	if r.status != http.StatusCreated {
		t.Fatalf("register %s/%s: %d %s", tenant, name, r.status, r.body)
	}
}

func decodePreview(t *testing.T, r response) wire.Preview {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("preview: %d %s", r.status, r.body)
	}
	var p wire.Preview
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("preview %s: %v", r.body, err)
	}
	return p
}

// GET …/preview reads a table's first rows from real Parquet files under
// the data root: the registered types, JSON values as wire.Preview says
// (timestamps RFC 3339, decimals as strings, nulls), the limit (with
// truncated), columns by name in the order asked, the stats, no-store;
// every batch read is released.
func TestPreviewRoute(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "acme", "orders")
	writePreviewParquet(t, filepath.Join(dir, "part-0.parquet"), 0, 6, 2)
	writePreviewParquet(t, filepath.Join(dir, "part-1.parquet"), 6, 4, 2)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	h := previewAPI(t, root, registerapi.Options{Preview: registerapi.PreviewOptions{Allocator: mem}})
	acme := []string{"Authorization", "Bearer acme"}

	r := do(t, h, "GET", base+"/orders/preview", "", nil, acme...)
	p := decodePreview(t, r)
	if got := r.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	wantCols := []wire.PreviewColumn{{Name: "id", Type: "int64"}, {Name: "name", Type: "utf8", Nullable: true},
		{Name: "placed_at", Type: "timestamp[us, tz=UTC]", Nullable: true}, {Name: "amount", Type: "decimal128(10, 2)", Nullable: true}}
	if mustJSONString(p.Columns) != mustJSONString(wantCols) {
		t.Errorf("columns = %+v, want %+v", p.Columns, wantCols)
	}
	if len(p.Rows) != 10 || p.Truncated || p.Limit != wire.DefaultPreviewLimit {
		t.Fatalf("got %d rows (truncated %v, limit %d), want all 10 of them, not truncated, limit %d", len(p.Rows), p.Truncated, p.Limit, wire.DefaultPreviewLimit)
	}
	if got, want := mustJSONString(p.Rows[0]), `[0,null,"2026-01-02T03:04:05Z","0.00"]`; got != want {
		t.Errorf("row 0 = %s, want %s", got, want)
	}
	if got, want := mustJSONString(p.Rows[7]), `[7,"n7","2026-01-02T10:04:05Z","8.75"]`; got != want {
		t.Errorf("row 7 = %s, want %s", got, want)
	}
	if p.Tenant != "acme" || p.Namespace != "sales" || p.Table != "orders" || !strings.HasPrefix(p.Location, "file://") {
		t.Errorf("preview names %s/%s/%s at %s", p.Tenant, p.Namespace, p.Table, p.Location)
	}
	if p.Stats.FilesOpened != 2 || p.Stats.RowGroupsRead < 5 || p.Stats.BytesRead <= 0 {
		t.Errorf("stats = %+v, want 2 files, 5 row groups and some bytes", p.Stats)
	}

	for _, tc := range []struct {
		query     string
		rows      int
		truncated bool
		cols      string
		first     string
	}{
		{"?limit=3", 3, true, "id,name,placed_at,amount", `[0,null,"2026-01-02T03:04:05Z","0.00"]`},
		{"?limit=10", 10, false, "id,name,placed_at,amount", `[0,null,"2026-01-02T03:04:05Z","0.00"]`},
		{"?limit=1&columns=amount,id", 1, true, "amount,id", `["0.00",0]`},
		{"?columns=name", 10, false, "name", `[null]`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			p := decodePreview(t, do(t, h, "GET", base+"/orders/preview"+tc.query, "", nil, acme...))
			var names []string
			for _, c := range p.Columns {
				names = append(names, c.Name)
			}
			if len(p.Rows) != tc.rows || p.Truncated != tc.truncated || strings.Join(names, ",") != tc.cols || mustJSONString(p.Rows[0]) != tc.first {
				t.Fatalf("got %d rows (truncated %v) of %v, first %s; want %d (truncated %v) of %s, first %s",
					len(p.Rows), p.Truncated, names, mustJSONString(p.Rows[0]), tc.rows, tc.truncated, tc.cols, tc.first)
			}
		})
	}
}

func mustJSONString(v any) string { return string(mustJSON(v)) }

// The preview route's refusals: bad parameters 400 naming what is wrong,
// another tenant's table 404 to its own token (403 on the other's path),
// never rows; no Door 501; a file that does not match the schema 422
// naming it; the tenant's concurrent previews 429.
func TestPreviewRouteRefusals(t *testing.T) {
	root := t.TempDir()
	writePreviewParquet(t, filepath.Join(root, "acme", "orders", "part-0.parquet"), 0, 3, 10)
	// A file whose id is a string, not the registered int64.
	bad := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	bb := array.NewRecordBuilder(memory.DefaultAllocator, bad)
	bb.Field(0).(*array.StringBuilder).Append("x")
	writeRecord(t, filepath.Join(root, "acme", "strings", "part-0.parquet"), bb.NewRecordBatch(), 10)
	bb.Release()
	gate := preview.NewGate(1, 0)
	h := previewAPI(t, root, registerapi.Options{Preview: registerapi.PreviewOptions{Gate: gate}})
	registerWith(t, h, "acme", "strings", "file://"+filepath.Join(root, "acme", "strings")+"/")
	registerWith(t, h, "acme", "outside", "s3://data/acme/outside/")
	acme, globex := []string{"Authorization", "Bearer acme"}, []string{"Authorization", "Bearer globex"}

	for _, tc := range []struct {
		name, path string
		hdr        []string
		status     int
		code, says string
	}{
		{"limit 0", base + "/orders/preview?limit=0", acme, 400, wire.CodeInvalidQuery, "limit must be 1 to 1000"},
		{"limit too high", base + "/orders/preview?limit=1001", acme, 400, wire.CodeInvalidQuery, `got "1001"`},
		{"limit not a number", base + "/orders/preview?limit=ten", acme, 400, wire.CodeInvalidQuery, `got "ten"`},
		{"unknown column", base + "/orders/preview?columns=id,price", acme, 400, wire.CodeInvalidQuery, `no column "price"`},
		{"column twice", base + "/orders/preview?columns=id,id", acme, 400, wire.CodeInvalidQuery, `"id" is named twice`},
		{"empty column", base + "/orders/preview?columns=", acme, 400, wire.CodeInvalidQuery, "an empty name"},
		{"no table", base + "/nope/preview", acme, 404, wire.CodeNotFound, "table not found"},
		{"another tenant's path", base + "/orders/preview", globex, 403, wire.CodeForbidden, `tenant "acme"`},
		{"another tenant's own path", "/v1/tenants/globex/namespaces/sales/tables/orders/preview", globex, 404, wire.CodeNotFound, "table not found"},
		{"no token", base + "/orders/preview", nil, 401, wire.CodeUnauthenticated, "credentials"},
		{"schema mismatch", base + "/strings/preview", acme, 422, wire.CodeSchemaMismatch, filepath.Join(root, "acme", "strings", "part-0.parquet")},
		{"s3 without vending", base + "/outside/preview", acme, 403, wire.CodeLocationNotAllowed, "not under a prefix allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, h, "GET", tc.path, "", nil, tc.hdr...)
			var e wire.ErrorResponse
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatalf("%d %s: %v", r.status, r.body, err)
			}
			if r.status != tc.status || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.says) || strings.Contains(string(r.body), `"rows"`) {
				t.Fatalf("got %d %s, want %d %s saying %q", r.status, r.body, tc.status, tc.code, tc.says)
			}
		})
	}

	release, err := gate.Enter("acme")
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, h, "GET", base+"/orders/preview", "", nil, acme...)
	if r.status != http.StatusTooManyRequests || errorCode(t, r) != wire.CodePreviewLimit || !strings.Contains(string(r.body), "concurrent previews") {
		t.Fatalf("a preview past the tenant's cap: %d %s, want 429 preview_limit", r.status, r.body)
	}
	if r := do(t, h, "GET", "/v1/tenants/globex/namespaces/sales/tables/orders/preview", "", nil, globex...); r.status != http.StatusNotFound {
		t.Fatalf("another tenant during acme's preview: %d %s, want its own 404", r.status, r.body)
	}
	release()
	decodePreview(t, do(t, h, "GET", base+"/orders/preview", "", nil, acme...))

	noDoor := newAPI(t, registerapi.Options{Authorize: tenantToken, Log: slog.New(slog.DiscardHandler)})
	registerWith(t, noDoor, "acme", "orders", "file://"+filepath.Join(root, "acme", "orders")+"/")
	if r := do(t, noDoor, "GET", base+"/orders/preview", "", nil, acme...); r.status != http.StatusNotImplemented || errorCode(t, r) != wire.CodeVendingNotConfigured {
		t.Fatalf("an API without a Door: %d %s, want 501 vending_not_configured", r.status, r.body)
	}
}

// A preview past its cap on bytes read is 413 preview_limit naming it.
func TestPreviewRouteBytesCap(t *testing.T) {
	root := t.TempDir()
	writePreviewParquet(t, filepath.Join(root, "acme", "orders", "part-0.parquet"), 0, 100, 10)
	h := previewAPI(t, root, registerapi.Options{Preview: registerapi.PreviewOptions{Limits: preview.Limits{MaxBytes: 64}}})
	r := do(t, h, "GET", base+"/orders/preview", "", nil, "Authorization", "Bearer acme")
	if r.status != http.StatusRequestEntityTooLarge || errorCode(t, r) != wire.CodePreviewLimit || !strings.Contains(string(r.body), "bytes read") {
		t.Fatalf("preview past 64 bytes: %d %s, want 413 preview_limit on bytes read", r.status, r.body)
	}
}

// An answer's rows stop at wire.MaxPreviewAnswerBytes of JSON, truncated,
// however many the limit allows.
func TestPreviewRouteAnswerBound(t *testing.T) {
	root := t.TempDir()
	b := array.NewRecordBuilder(memory.DefaultAllocator, previewSchema)
	long := strings.Repeat("x", 10<<10)
	for id := range int64(wire.MaxPreviewLimit) {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(long)
		b.Field(2).AppendNull()
		b.Field(3).AppendNull()
	}
	writeRecord(t, filepath.Join(root, "acme", "orders", "part-0.parquet"), b.NewRecordBatch(), 100)
	b.Release()
	h := previewAPI(t, root, registerapi.Options{})
	r := do(t, h, "GET", base+"/orders/preview?limit=1000", "", nil, "Authorization", "Bearer acme")
	p := decodePreview(t, r)
	if !p.Truncated || len(p.Rows) == 0 || len(p.Rows) >= wire.MaxPreviewLimit || len(r.body) > wire.MaxPreviewAnswerBytes+64<<10 {
		t.Fatalf("got %d rows in %d bytes (truncated %v), want fewer than %d in at most about %d bytes, truncated",
			len(p.Rows), len(r.body), p.Truncated, wire.MaxPreviewLimit, wire.MaxPreviewAnswerBytes)
	}
}

// A table registered before schemas were stored has nothing to read its
// rows as: 409 no_schema, saying how to store one.
func TestPreviewRouteLegacyTable(t *testing.T) {
	root := t.TempDir()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	legacy := `{"location":"file://` + root + `/","table_type":"TABLE","created_at":"2024-01-01T00:00:00Z","version":1}`
	if err := st.Put(t.Context(), "tbl/acme/sales/events", []byte(legacy)); err != nil {
		t.Fatal(err)
	}
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{Authorize: tenantToken, Door: &vending.Door{DataRoot: root},
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, h, "GET", base+"/events/preview", "", nil, "Authorization", "Bearer acme")
	if r.status != http.StatusConflict || errorCode(t, r) != wire.CodeNoSchema || !strings.Contains(string(r.body), "lake backfill") {
		t.Fatalf("preview of a legacy table: %d %s, want 409 no_schema", r.status, r.body)
	}
}
