package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/wire"
)

// writeParquet writes ids (and "n<id>" names) as a Parquet file at path.
func writeParquet(t *testing.T, path string, ids ...int64) {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append("n" + string(rune('0'+id%10)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(s, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The walk through local mode: a table registered over Parquet
// files under --data-root takes its file snapshot (in the background, as
// each register and update does), iceberg-go's REST client reads exactly
// its rows through the Iceberg listener, lake sync then finds nothing new,
// and a file added shows after the next sync.
func TestLocalSyncThenScanOverIcebergREST(t *testing.T) {
	dataDir, root := filepath.Join(t.TempDir(), "data"), t.TempDir()
	in, err := local.Start(context.Background(), local.Config{
		DataDir: dataDir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		IcebergListen: "127.0.0.1:0", RefreshInterval: time.Hour, DataRoot: root, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	dir := filepath.Join(root, "acme", "sales", "events")
	writeParquet(t, filepath.Join(dir, "part-0.parquet"), 1, 2, 3)
	writeParquet(t, filepath.Join(dir, "part-1.parquet"), 4, 5)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	acme, _ := in.Token("acme", time.Hour)
	api := in.Endpoints().API + "/v1/tenants/acme/namespaces/sales/tables"
	schema := map[string]any{"fields": []any{map[string]any{"name": "id", "type": "int64"}, map[string]any{"name": "name", "type": "utf8", "nullable": true}}}
	if code, b := call(t, "POST", api, acme, map[string]any{"name": "events", "location": "file://" + dir + "/", "schema": schema}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	sync := func() wire.SyncResult {
		t.Helper()
		code, b := call(t, "POST", api+"/events/sync", acme, nil)
		var res wire.SyncResult
		if err := json.Unmarshal(b, &res); err != nil || code != http.StatusOK {
			t.Fatalf("sync: %d %s", code, b)
		}
		if _, err := in.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		return res
	}
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "lake", in.Endpoints().Iceberg, rest.WithOAuthToken(acme), rest.WithWarehouseLocation("acme"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	// The registration took the first file snapshot in the background.
	deadline := time.Now().Add(30 * time.Second) // a bound against a hang, not a timing claim
	for {
		if _, err := in.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(ctx, table.Identifier{"sales", "events"})
		if err == nil && tbl.CurrentSnapshot() != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot after the registration: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ids := func() []int64 {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, table.Identifier{"sales", "events"})
		if err != nil {
			t.Fatal(err)
		}
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		defer at.Release()
		var out []int64
		tr := array.NewTableReader(at, 0)
		defer tr.Release()
		for tr.Next() {
			rec := tr.RecordBatch()
			col := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
			out = append(out, col.Int64Values()...)
		}
		slices.Sort(out)
		return out
	}
	res := sync()
	if res.Changed || res.Files != 2 || res.Records != 5 || len(res.Skipped) != 1 || res.Skipped[0].Key != "notes.txt" {
		t.Fatalf("a sync after the registration's = %+v, want unchanged: 2 files, 5 rows, notes.txt left out", res)
	}
	if got := ids(); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("scanned ids %v, want 1..5", got)
	}
	writeParquet(t, filepath.Join(dir, "part-2.parquet"), 6)
	if res := sync(); !res.Changed || res.Added != 1 || res.Files != 3 {
		t.Fatalf("a sync after a new file = %+v", res)
	}
	if got := ids(); !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("scanned ids %v, want 1..6", got)
	}
	// A schema update with no file change keeps the table's rows in
	// Iceberg: the update's sync records the same metadata for the new
	// version.
	wider := map[string]any{"fields": []any{map[string]any{"name": "id", "type": "int64"}, map[string]any{"name": "name", "type": "utf8", "nullable": true},
		map[string]any{"name": "note", "type": "utf8", "nullable": true}}}
	if code, b := call(t, "PUT", api+"/events", acme, map[string]any{"schema": wider}); code != http.StatusOK {
		t.Fatalf("update: %d %s", code, b)
	}
	if res := sync(); res.Changed || res.Files != 3 {
		t.Fatalf("a sync after a schema update alone = %+v, want unchanged, 3 files", res)
	}
	if got := ids(); !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("after a schema update, scanned ids %v, want 1..6", got)
	}
}
