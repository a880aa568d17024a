package local_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/wire"
)

// lake local --data-root: a table registered over a Parquet file under the
// root previews its rows on the registration API with a write token and
// with the catalog browser's read-only dev token (which still cannot
// read or write the registration), and through the browser's
// /api/preview with the token the page gets; another tenant's dev token
// finds no such table. Flight SQL reads the same rows.
func TestLocalPreview(t *testing.T) {
	dataDir, root := filepath.Join(t.TempDir(), "data"), t.TempDir()
	in, err := local.Start(context.Background(), local.Config{
		DataDir: dataDir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "127.0.0.1:0",
		RefreshInterval: time.Hour, DataRoot: root, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	dir := filepath.Join(root, "acme", "sales", "orders")
	writeParquet(t, filepath.Join(dir, "part-0.parquet"), 1, 2, 3)
	acme, _ := in.Token("acme", time.Hour)
	ep := in.Endpoints()
	table := ep.API + "/v1/tenants/acme/namespaces/sales/tables/orders"
	schema := map[string]any{"fields": []any{map[string]any{"name": "id", "type": "int64"}, map[string]any{"name": "name", "type": "utf8", "nullable": true}}}
	if code, b := call(t, "POST", ep.API+"/v1/tenants/acme/namespaces/sales/tables", acme, map[string]any{"name": "orders", "location": "file://" + dir + "/", "schema": schema}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	if _, err := in.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	browserBase := strings.TrimSuffix(ep.Browser, "/")
	devToken := func(tenant string) string {
		t.Helper()
		status, body := send(t, http.MethodPost, browserBase+"/api/dev-token?tenant="+tenant, "", map[string]string{"Origin": browserBase})
		var got struct{ Token string }
		if err := json.Unmarshal(body, &got); status != http.StatusOK || err != nil || got.Token == "" {
			t.Fatalf("dev token: %d %s", status, body)
		}
		return got.Token
	}
	dev := devToken("acme")
	preview := func(url, token string) wire.Preview {
		t.Helper()
		code, b := call(t, "GET", url, token, nil)
		var p wire.Preview
		if err := json.Unmarshal(b, &p); code != http.StatusOK || err != nil {
			t.Fatalf("GET %s: %d %s", url, code, b)
		}
		return p
	}
	for _, tc := range []struct{ name, url, token string }{
		{"API, write token", table + "/preview?limit=2", acme},
		{"API, browser dev token", table + "/preview?limit=2", dev},
		{"browser", browserBase + "/api/preview?namespace=sales&name=orders&limit=2", dev},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := preview(tc.url, tc.token)
			if got, want := mustJSON(t, p.Rows), `[[1,"n1"],[2,"n2"]]`; got != want || !p.Truncated || len(p.Columns) != 2 || p.Columns[1].Type != "utf8" || p.Stats.FilesOpened != 1 {
				t.Fatalf("preview = %+v, want rows %s, truncated, 2 columns, one file", p, want)
			}
		})
	}
	// The dev token is still refused everywhere else on the API.
	if code, b := call(t, "GET", table, dev, nil); code != http.StatusUnauthorized {
		t.Fatalf("GET the table with the dev token: %d %s, want 401", code, b)
	}
	if code, b := call(t, "GET", browserBase+"/api/preview?namespace=sales&name=orders", devToken("globex"), nil); code != http.StatusNotFound || strings.Contains(string(b), "rows") {
		t.Fatalf("globex's dev token previews acme's table: %d %s, want 404", code, b)
	}
	if code, b := call(t, "GET", browserBase+"/api/preview?namespace=sales&name=orders&columns=price", dev, nil); code != http.StatusBadRequest || !strings.Contains(string(b), `no column \"price\"`) {
		t.Fatalf("browser preview of an unknown column: %d %s, want 400 naming it", code, b)
	}

	// Flight SQL reads the same rows through the same Door.
	client, err := flightsql.NewClient(strings.TrimPrefix(ep.FlightSQL, "grpc://"), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+acme)
	info, err := client.Execute(ctx, "SELECT name, id FROM sales.orders WHERE id >= 2 LIMIT 10")
	if err != nil {
		t.Fatalf("Flight SQL over sales.orders: %v", err)
	}
	rdr, err := client.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var got []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			got = append(got, rec.Column(0).ValueStr(i)+":"+rec.Column(1).ValueStr(i))
		}
	}
	if strings.Join(got, " ") != "n2:2 n3:3" || !arrow.TypeEqual(rdr.Schema().Field(1).Type, arrow.PrimitiveTypes.Int64) {
		t.Fatalf("Flight SQL rows %q, schema %s; want n2:2 n3:3, id int64", got, rdr.Schema())
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
