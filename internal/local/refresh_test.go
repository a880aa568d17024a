package local_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
)

// POST /v1/refresh answers the caller's own tenant alone: the outcome, the
// generation and its table count; never the catalog-wide counts or the
// skipped keys, which name other tenants' tables.
func TestRefreshEndpointAnswersOnlyTheCallersTenant(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, local.MetaDir), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := rocksdb.Open(filepath.Join(dir, local.MetaDir), rocksdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A malformed registration of globex's: its key would be among the
	// skipped keys.
	err = st.Put(context.Background(), "tbl/globex/hidden_ns/hidden_table", []byte("not json"))
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	in, err := local.Start(context.Background(), local.Config{
		DataDir: dir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		RefreshInterval: time.Hour, Demo: true, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()

	for _, tc := range []struct {
		tenant     string
		wantTables float64
	}{{"acme", 4}, {"globex", 2}, {"nobody", 0}} {
		t.Run(tc.tenant, func(t *testing.T) {
			tok, err := in.Token(tc.tenant, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, in.Endpoints().API+"/v1/refresh", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 || got["tenant"] != tc.tenant || got["tenant_tables"] != tc.wantTables || got["outcome"] == nil || got["generation"] == nil {
				t.Fatalf("got %s, want outcome, generation, tenant %s and tenant_tables %v alone", body, tc.tenant, tc.wantTables)
			}
			for _, other := range []string{"hidden", "skipped", "counts", "Counts"} {
				if strings.Contains(string(body), other) {
					t.Fatalf("answer %s mentions %q", body, other)
				}
			}
		})
	}
}
