package local_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
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
			req.Header.Set("X-Lake-Request", "1")
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

// POST /v1/refresh answers the generation of the caller's own tenant (the
// snapshot generation in which its tables last changed), not the blob's:
// another tenant's write moves the blob's generation, and answering it
// would let a tenant time another's writes (issue 24, finding 7).
func TestRefreshEndpointAnswersTheCallersTenantGeneration(t *testing.T) {
	in, err := local.Start(context.Background(), local.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		RefreshInterval: time.Hour, Demo: true, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	acme, globex := token(t, in, "acme"), token(t, in, "globex")

	before := refreshGeneration(t, in, acme)
	// globex registers a table; the refresh acme asks for publishes it.
	schema := base64.StdEncoding.EncodeToString(flight.SerializeSchema(catalogtest.WideSchema(1, 2), memory.DefaultAllocator))
	reg, _ := json.Marshal(map[string]any{"name": "new_table", "location": "s3://globex/new/", "schema": schema})
	status, body := do(t, http.MethodPost, in.Endpoints().API+"/v1/tenants/globex/namespaces/sales/tables", globex, string(reg))
	if status != http.StatusCreated {
		t.Fatalf("register: status %d: %s", status, body)
	}
	if got := refreshGeneration(t, in, acme); got != before {
		t.Fatalf("got generation %d for acme after globex's write, want acme's own %d", got, before)
	}
	if got := refreshGeneration(t, in, globex); got <= before {
		t.Fatalf("got generation %d for globex after its write, want more than %d", got, before)
	}
}

func token(t testing.TB, in *local.Instance, tenant string) string {
	t.Helper()
	tok, err := in.Token(tenant, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// POST /v1/refresh's outcome speaks of the caller's tenant: "published"
// when the run published a change of its tables, "unchanged" when it did
// not — also when the run published another tenant's write, which the
// caller must not learn of (issue 38, row 11).
func TestRefreshEndpointOutcomeIsTheCallersTenants(t *testing.T) {
	in, err := local.Start(context.Background(), local.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		// Only the requests below refresh: no timer, no debounced refresh
		// after a write.
		RefreshInterval: time.Hour, Debounce: time.Hour, Demo: true, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	acme, globex := token(t, in, "acme"), token(t, in, "globex")
	register := func(tenant, tok, name string) {
		t.Helper()
		schema := base64.StdEncoding.EncodeToString(flight.SerializeSchema(catalogtest.WideSchema(1, 2), memory.DefaultAllocator))
		reg, _ := json.Marshal(map[string]any{"name": name, "location": "s3://" + tenant + "/new/", "schema": schema})
		if status, body := do(t, http.MethodPost, in.Endpoints().API+"/v1/tenants/"+tenant+"/namespaces/sales/tables", tok, string(reg)); status != http.StatusCreated {
			t.Fatalf("register %s: status %d: %s", name, status, body)
		}
	}
	steps := []struct {
		name  string
		write func()
		tok   string
		want  string
	}{
		{"acme, nothing written", nil, acme, "unchanged"},
		{"acme, after globex wrote", func() { register("globex", globex, "g1") }, acme, "unchanged"},
		{"globex, its write already published by acme's refresh", nil, globex, "unchanged"},
		{"globex, after it wrote", func() { register("globex", globex, "g2") }, globex, "published"},
		{"acme, after it wrote", func() { register("acme", acme, "a1") }, acme, "published"},
		{"globex, after acme wrote", func() { register("acme", acme, "a2") }, globex, "unchanged"},
	}
	for _, st := range steps {
		if st.write != nil {
			st.write()
		}
		status, body := do(t, http.MethodPost, in.Endpoints().API+"/v1/refresh", st.tok, "")
		if status != http.StatusOK {
			t.Fatalf("%s: refresh: status %d: %s", st.name, status, body)
		}
		var got struct{ Outcome string }
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Outcome != st.want {
			t.Errorf("%s: outcome %q, want %q (%s)", st.name, got.Outcome, st.want, body)
		}
	}
}

// do sends a request the way the lake command does (bearer token, the
// X-Lake-Request header) and returns the status and body.
func do(t testing.TB, method, url, tok, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Lake-Request", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func refreshGeneration(t testing.TB, in *local.Instance, tok string) uint64 {
	t.Helper()
	status, body := do(t, http.MethodPost, in.Endpoints().API+"/v1/refresh", tok, "")
	if status != http.StatusOK {
		t.Fatalf("refresh: status %d: %s", status, body)
	}
	var got struct{ Generation uint64 }
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	return got.Generation
}
