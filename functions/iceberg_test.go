package functions_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// icebergDiscovery starts the discovery binary with -iceberg-listen over a
// snapshot of acme's and globex's tables and returns the catalog's URI.
func icebergDiscovery(t *testing.T) string {
	t.Helper()
	blob := filepath.Join(t.TempDir(), "catalog.lakesnap")
	refs := []catalog.TableRef{{Tenant: "globex", Namespace: "secret", Name: "plans"}, {Tenant: "globex", Namespace: "sales", Name: "orders"}}
	for i := range 5 {
		refs = append(refs, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "t" + strconv.Itoa(i)})
	}
	writeRefsBlob(t, blob, refs, func(ref catalog.TableRef) string { return "s3://data/" + ref.String() + "/" })
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	d := startDiscovery(t, blob, "LAKE_ICEBERG_LISTEN="+addr)
	d.proc.WaitTCP(t, addr, 30*time.Second)
	waitFor(t, 20*time.Second, "the snapshot", func() bool { return d.serving(t) == healthpb.HealthCheckResponse_SERVING })
	return "http://" + addr
}

func restToken(t *testing.T, tenant string) string {
	t.Helper()
	tok, err := auth.IssueHS256([]byte(discoverySecret), auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// restGet sends GET path with tenant's token ("" for none) and returns the
// status and the body.
func restGet(t *testing.T, uri, path, tenant string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", uri+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tenant != "" {
		req.Header.Set("Authorization", "Bearer "+restToken(t, tenant))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The Iceberg REST catalog of the real discovery binary, as iceberg-go's
// client uses it: a tenant's namespaces, paged tables and a loaded table.
func TestIcebergRESTThroughTheDiscoveryBinary(t *testing.T) {
	t.Parallel()
	uri := icebergDiscovery(t)
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "lake", uri, rest.WithOAuthToken(restToken(t, "acme")), rest.WithWarehouseLocation("acme"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil || !slices.EqualFunc(nss, []table.Identifier{{"sales"}}, slices.Equal) {
		t.Fatalf("namespaces %v, %v; want acme's [sales] alone", nss, err)
	}
	var names []string
	for id, err := range cat.ListTables(cat.SetPageSize(ctx, 2), table.Identifier{"sales"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, id[1])
	}
	if !slices.Equal(names, []string{"t0", "t1", "t2", "t3", "t4"}) {
		t.Fatalf("tables over pages of 2: %v", names)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"sales", "t3"})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Metadata().Location() != "s3://data/acme/sales/t3/" || len(tbl.Schema().Fields()) != 3 {
		t.Fatalf("loaded %s with %d fields", tbl.Metadata().Location(), len(tbl.Schema().Fields()))
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{"secret", "plans"}); err == nil || !strings.Contains(err.Error(), icecatalog.ErrNoSuchNamespace.Error()) {
		t.Fatalf("acme loading globex's table: %v, want no such namespace", err)
	}
}

// The isolation suite over REST: whatever acme sends, it sees nothing of
// globex's catalog — another warehouse, another prefix, globex's names in
// acme's prefix, a page token naming globex's tables, a forged token — and
// a request without a token sees nothing at all.
func TestIcebergRESTIsolation(t *testing.T) {
	t.Parallel()
	uri := icebergDiscovery(t)
	forged := base64.RawURLEncoding.EncodeToString([]byte("tplans"))
	for _, tt := range []struct {
		name, path, tenant string
		want               int
	}{
		{"another tenant's warehouse", "/v1/config?warehouse=globex", "acme", http.StatusForbidden},
		{"a warehouse that does not exist", "/v1/config?warehouse=nobody", "acme", http.StatusForbidden},
		{"another tenant's prefix", "/v1/globex/namespaces", "acme", http.StatusForbidden},
		{"another tenant's table by prefix", "/v1/globex/namespaces/secret/tables/plans", "acme", http.StatusForbidden},
		{"a prefix that does not exist", "/v1/nobody/namespaces", "acme", http.StatusForbidden},
		{"globex's namespace in acme's prefix", "/v1/acme/namespaces/secret", "acme", http.StatusNotFound},
		{"globex's namespace's tables in acme's prefix", "/v1/acme/namespaces/secret/tables", "acme", http.StatusNotFound},
		{"globex's table in acme's prefix", "/v1/acme/namespaces/secret/tables/plans", "acme", http.StatusNotFound},
		{"globex's credentials in acme's prefix", "/v1/acme/namespaces/secret/tables/plans/credentials", "acme", http.StatusNotFound},
		{"a page token that is not one", "/v1/acme/namespaces/sales/tables?pageToken=" + url.QueryEscape("!!not base64"), "acme", http.StatusBadRequest},
		{"no token", "/v1/acme/namespaces", "", http.StatusUnauthorized},
		{"no token, config", "/v1/config", "", http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := restGet(t, uri, tt.path, tt.tenant)
			if code != tt.want {
				t.Fatalf("%s: %d %s, want %d", tt.path, code, body, tt.want)
			}
			var e struct {
				Error struct {
					Type string `json:"type"`
					Code int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != tt.want || e.Error.Type == "" {
				t.Fatalf("%s: body %s is not the spec's error model", tt.path, body)
			}
			for _, leak := range []string{"plans", "secret", "globex"} {
				if strings.Contains(body, leak) && !strings.Contains(tt.path, leak) {
					t.Fatalf("%s: the answer names %q: %s", tt.path, leak, body)
				}
			}
		})
	}
	// A page token naming globex's table is a cursor over acme's names and
	// nothing more: the page holds acme's tables after it.
	code, body := restGet(t, uri, "/v1/acme/namespaces/sales/tables?pageToken="+url.QueryEscape(forged), "acme")
	if code != http.StatusOK || strings.Contains(body, "plans") || !strings.Contains(body, `"t0"`) {
		t.Fatalf("a page token naming globex's table: %d %s", code, body)
	}
	// globex's own view is whole: the test's refusals are not a broken catalog.
	if code, body := restGet(t, uri, "/v1/globex/namespaces/secret/tables/plans", "globex"); code != http.StatusOK {
		t.Fatalf("globex loading its own table: %d %s", code, body)
	}
}
