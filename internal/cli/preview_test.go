package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/wire"
)

// writeOrders writes three rows of ordersSchema at path: a list, a map, a
// null and a tag longer than a table cell among them.
func writeOrders(t *testing.T, path string) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, ordersSchema)
	defer b.Release()
	tags := b.Field(3).(*array.ListBuilder)
	attrs := b.Field(4).(*array.MapBuilder)
	for i, tag := range []string{"gift", "", strings.Repeat("very long tag ", 5)} {
		b.Field(0).(*array.Int64Builder).Append(int64(1001 + i))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 3, 1, 9, 30, i, 0, time.UTC).UnixMicro()))
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(1999 + i*1000)))
		if tag == "" {
			tags.AppendNull()
			attrs.AppendNull()
			continue
		}
		tags.Append(true)
		tags.ValueBuilder().(*array.StringBuilder).Append(tag)
		attrs.Append(true)
		attrs.KeyBuilder().(*array.StringBuilder).Append("channel")
		attrs.ItemBuilder().(*array.StringBuilder).Append("web")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(ordersSchema, f, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// lake preview against local mode with --data-root, over a table
// registered from its Parquet file (so its list's child is "element"): a table with each column's name and
// exact type, aligned rows (nested values as JSON, null, a long value cut
// with …) and the footer; --limit and --columns; --json is the API's
// answer; a column the table lacks is refused naming it.
func TestPreviewCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l := startLocalWith(t, local.Config{DataDir: filepath.Join(t.TempDir(), "data"), DataRoot: root})
	file := filepath.Join(root, "acme", "orders", "part-0.parquet")
	writeOrders(t, file)
	ref := []string{"--tenant", "acme", "-n", "sales", "-t", "orders"}
	l.must(append(ref, "register", "--parquet", file)...)

	out := l.must(append(ref, "preview")...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("lake preview printed %d lines, want names, types, a rule, 3 rows and the footer:\n%s", len(lines), out)
	}
	for i, want := range []string{"order_id  placed_at  ", "int64     timestamp[us, tz=UTC]  decimal128(18, 2)  list<element: utf8>", "────────  ─────"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d = %q, want it to start %q", i+1, lines[i], want)
		}
	}
	for i, want := range []string{`1001      2026-03-01T09:30:00Z   19.99              ["gift"]`, `1002      2026-03-01T09:30:01Z   29.99              null`, `["very long tag very long tag very long…`} {
		if !strings.Contains(lines[3+i], want) {
			t.Errorf("row %d = %q, want it to hold %q", i+1, lines[3+i], want)
		}
	}
	if !strings.Contains(lines[3], `[{"key":"channel","value":"web"}]`) {
		t.Errorf("row 1 = %q, want its map as JSON", lines[3])
	}
	if want := "3 rows (limit 100) · 1 file, 1 row group read, 0 skipped, "; !strings.HasPrefix(lines[6], want) || !strings.HasSuffix(lines[6], " bytes read") {
		t.Errorf("footer = %q, want it to start %q", lines[6], want)
	}

	out = l.must(append(ref, "preview", "--limit", "1", "--columns", "amount,order_id")...)
	if want := "amount             order_id\ndecimal128(18, 2)  int64\n─────────────────  ────────\n19.99              1001\n1 row (limit 1; more follow) · "; !strings.HasPrefix(out, want) {
		t.Errorf("preview --limit 1 --columns amount,order_id:\n%s\nwant it to start\n%s", out, want)
	}

	js := l.must(append(ref, "preview", "--json", "--limit", "2")...)
	if !strings.Contains(js, `"type": "list<element: utf8>"`) {
		t.Errorf("--json escapes the types' brackets:\n%s", js)
	}
	var p wire.Preview
	if err := json.Unmarshal([]byte(js), &p); err != nil || len(p.Rows) != 2 || !p.Truncated || p.Columns[2].Type != "decimal128(18, 2)" {
		t.Fatalf("--json: %+v, %v", p, err)
	}

	if _, stderr, code := l.run(append(ref, "preview", "--columns", "price")...); code != 1 || stderr != "lake: acme/sales/orders: invalid request: the table has no column \"price\"\n" {
		t.Fatalf("preview of an unknown column: exit %d, %q", code, stderr)
	}
	if _, stderr, code := l.run(append(ref, "preview", "--limit", "1001")...); code != 1 || !strings.Contains(stderr, "--limit 1001: want 1 to 1000") {
		t.Fatalf("preview --limit 1001: exit %d, %q", code, stderr)
	}
}
