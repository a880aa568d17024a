package icebergrest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/wire"
)

// fakeSource holds two tenants: acme (sales, big with 250 tables, empty,
// and namespaces whose lookups fail) and globex (hr).
type fakeSource struct {
	tables map[string]map[string]map[string]icebergrest.Table // tenant → ns → name
}

func (f *fakeSource) Namespaces(_ context.Context, tenant string) ([]string, error) {
	var out []string
	for ns := range f.tables[tenant] {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out, nil
}

func (f *fakeSource) Tables(_ context.Context, tenant, ns string) ([]string, bool, error) {
	switch ns {
	case "down":
		return nil, false, fmt.Errorf("fake: snapshot not loaded: %w", icebergrest.ErrUnavailable)
	case "broken":
		return nil, false, errors.New("fake: broken")
	}
	tbls, ok := f.tables[tenant][ns]
	if !ok {
		return nil, false, nil
	}
	var out []string
	for n := range tbls {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, true, nil
}

func (f *fakeSource) Table(_ context.Context, tenant, ns, name string) (icebergrest.Table, bool, error) {
	t, ok := f.tables[tenant][ns][name]
	return t, ok, nil
}

func (f *fakeSource) Credentials(_ context.Context, tenant, ns, name string) (wire.Credentials, error) {
	t := f.tables[tenant][ns][name]
	switch name {
	case "orders":
		return wire.Credentials{
			Tenant: tenant, Namespace: ns, Table: name, Location: t.Location, Access: wire.AccessVended,
			AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "session",
			Expiration: time.UnixMilli(1900000000000), Region: "eu-west-1",
		}, nil
	case "local":
		return wire.Credentials{Tenant: tenant, Namespace: ns, Table: name, Location: t.Location, Access: wire.AccessPath}, nil
	case "elsewhere":
		return wire.Credentials{}, &vending.GuardError{Tenant: tenant, Location: t.Location, Reason: vending.ErrNotAllowed}
	case "stsdown":
		return wire.Credentials{}, errors.New("fake: sts: connection refused")
	}
	return wire.Credentials{}, fmt.Errorf("fake: %w", vending.ErrNotConfigured)
}

// ordersSchema is acme/sales/orders' schema: version 3, ids up to 6,
// last column id 8 (two dropped columns).
func ordersSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(3, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String, Doc: "who ordered"},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 4, Name: "tags", Type: &iceberg.ListType{ElementID: 5, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 6, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	)
}

func ordersNameMapping(tb testing.TB) []byte {
	tb.Helper()
	id := func(i int) *int { return &i }
	b, err := json.Marshal(iceberg.NameMapping{
		{Names: []string{"id"}, FieldID: id(1)},
		{Names: []string{"customer"}, FieldID: id(2)},
		{Names: []string{"amount"}, FieldID: id(3)},
		{Names: []string{"tags"}, FieldID: id(4), Fields: []iceberg.MappedField{{Names: []string{"element"}, FieldID: id(5)}}},
		{Names: []string{"at"}, FieldID: id(6)},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

var ordersUpdated = time.UnixMilli(1765000000123)

const ordersUUID = "0f5c3a1e-2b7d-4c8e-9f10-112233445566"

func newFakeSource(tb testing.TB) *fakeSource {
	tb.Helper()
	small := func(loc string) icebergrest.Table {
		return icebergrest.Table{
			Location: loc,
			Schema:   iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int32}),
			Version:  1, LastColumnID: 1,
		}
	}
	big := map[string]icebergrest.Table{}
	for i := range 250 {
		big[fmt.Sprintf("t%03d", i)] = small(fmt.Sprintf("s3://acme-data/big/t%03d/", i))
	}
	return &fakeSource{tables: map[string]map[string]map[string]icebergrest.Table{
		"acme": {
			"sales": {
				"orders": {
					UUID: ordersUUID, Location: "s3://acme-data/sales/orders/", Schema: ordersSchema(),
					LastColumnID: 8, Properties: map[string]string{"owner": "team-sales", "format-version": "9"},
					Description: "orders placed", UpdatedAt: ordersUpdated, Version: 3, NameMapping: ordersNameMapping(tb),
				},
				"local":     small("file:///data/sales/local/"),
				"elsewhere": small("s3://other/sales/elsewhere/"),
				"stsdown":   small("s3://acme-data/sales/stsdown/"),
				"plain":     small("s3://acme-data/sales/plain/"),
				"legacy":    {Location: "s3://acme-data/sales/legacy/", Version: 1},
				"nanos": {
					Location: "s3://acme-data/sales/nanos/", Version: 1, LastColumnID: 1,
					Schema: iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "at", Type: iceberg.PrimitiveTypes.TimestampNs}),
				},
			},
			"big":   big,
			"empty": {},
		},
		"globex": {
			"hr": {"people": small("s3://globex-data/hr/people/")},
		},
	}}
}

func authenticate(r *http.Request) (string, error) {
	switch r.Header.Get("Authorization") {
	case "Bearer tok-acme":
		return "acme", nil
	case "Bearer tok-globex":
		return "globex", nil
	case "Bearer tok-jwks-down":
		return "", fmt.Errorf("fake: keys: %w", icebergrest.ErrUnavailable)
	}
	return "", errors.New("fake: bad token")
}

func newServer(tb testing.TB) *httptest.Server {
	tb.Helper()
	h, err := icebergrest.New(icebergrest.Options{Source: newFakeSource(tb), Authenticate: authenticate})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// call sends one request and returns the status, headers and body.
func call(tb testing.TB, srv *httptest.Server, method, path, token string, hdr map[string]string) (int, http.Header, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rsp, err := srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return rsp.StatusCode, rsp.Header, b
}

type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func TestErrors(t *testing.T) {
	srv := newServer(t)
	tests := []struct {
		name, method, path, token string
		status                    int
		typ                       string
	}{
		{"no token", "GET", "/v1/config", "", 401, "NotAuthorizedException"},
		{"bad token", "GET", "/v1/acme/namespaces", "nope", 401, "NotAuthorizedException"},
		{"keys unavailable", "GET", "/v1/acme/namespaces", "tok-jwks-down", 503, "ServiceUnavailableException"},
		{"another warehouse", "GET", "/v1/config?warehouse=globex", "tok-acme", 403, "ForbiddenException"},
		{"another tenant's prefix", "GET", "/v1/globex/namespaces", "tok-acme", 403, "ForbiddenException"},
		{"another tenant's table", "GET", "/v1/globex/namespaces/hr/tables/people", "tok-acme", 403, "ForbiddenException"},
		{"a tenant that does not exist", "GET", "/v1/nobody/namespaces/hr/tables/people", "tok-acme", 403, "ForbiddenException"},
		{"missing namespace", "GET", "/v1/acme/namespaces/nope", "tok-acme", 404, "NoSuchNamespaceException"},
		{"missing namespace's tables", "GET", "/v1/acme/namespaces/nope/tables", "tok-acme", 404, "NoSuchNamespaceException"},
		{"globex's namespace for acme", "GET", "/v1/acme/namespaces/hr/tables", "tok-acme", 404, "NoSuchNamespaceException"},
		{"missing table", "GET", "/v1/acme/namespaces/sales/tables/nope", "tok-acme", 404, "NoSuchTableException"},
		{"table of a missing namespace", "GET", "/v1/acme/namespaces/nope/tables/orders", "tok-acme", 404, "NoSuchNamespaceException"},
		{"multi-level namespace", "GET", "/v1/acme/namespaces/sales%1Forders/tables", "tok-acme", 404, "NoSuchNamespaceException"},
		{"multi-level parent", "GET", "/v1/acme/namespaces?parent=sales%1Fx", "tok-acme", 404, "NoSuchNamespaceException"},
		{"missing parent", "GET", "/v1/acme/namespaces?parent=nope", "tok-acme", 404, "NoSuchNamespaceException"},
		{"invalid namespace name", "GET", "/v1/acme/namespaces/%20sales/tables", "tok-acme", 400, "BadRequestException"},
		{"encoded slash", "GET", "/v1/acme/namespaces/sa%2Fles/tables", "tok-acme", 400, "BadRequestException"},
		{"invalid table name", "GET", "/v1/acme/namespaces/sales/tables/%E2%80%8Borders", "tok-acme", 400, "BadRequestException"},
		{"bad page token", "GET", "/v1/acme/namespaces/big/tables?pageToken=%21%21", "tok-acme", 400, "BadRequestException"},
		{"namespaces token on tables", "GET", "/v1/acme/namespaces/big/tables?pageToken=bnNhbGVz", "tok-acme", 400, "BadRequestException"},
		{"page size zero", "GET", "/v1/acme/namespaces?pageSize=0", "tok-acme", 400, "BadRequestException"},
		{"page size words", "GET", "/v1/acme/namespaces?pageSize=ten", "tok-acme", 400, "BadRequestException"},
		{"bad snapshots", "GET", "/v1/acme/namespaces/sales/tables/orders?snapshots=some", "tok-acme", 400, "BadRequestException"},
		{"malformed query", "GET", "/v1/acme/namespaces?pageSize=%zz", "tok-acme", 400, "BadRequestException"},
		{"unavailable source", "GET", "/v1/acme/namespaces/down/tables", "tok-acme", 503, "ServiceUnavailableException"},
		{"failing source", "GET", "/v1/acme/namespaces/broken/tables", "tok-acme", 500, "InternalServerError"},
		{"unknown route", "GET", "/v1/acme/namespaces/sales/views", "tok-acme", 404, "NotFoundException"},
		{"not v1", "GET", "/v2/acme/namespaces", "tok-acme", 404, "NotFoundException"},
		{"create namespace", "POST", "/v1/acme/namespaces", "tok-acme", 406, "UnsupportedOperationException"},
		{"drop namespace", "DELETE", "/v1/acme/namespaces/sales", "tok-acme", 406, "UnsupportedOperationException"},
		{"create table", "POST", "/v1/acme/namespaces/sales/tables", "tok-acme", 406, "UnsupportedOperationException"},
		{"commit table", "POST", "/v1/acme/namespaces/sales/tables/orders", "tok-acme", 406, "UnsupportedOperationException"},
		{"drop table", "DELETE", "/v1/acme/namespaces/sales/tables/orders", "tok-acme", 406, "UnsupportedOperationException"},
		{"rename", "POST", "/v1/acme/tables/rename", "tok-acme", 406, "UnsupportedOperationException"},
		{"transaction", "POST", "/v1/transactions/commit", "tok-acme", 406, "UnsupportedOperationException"},
		{"put config", "PUT", "/v1/config", "tok-acme", 406, "UnsupportedOperationException"},
		{"write to another tenant", "POST", "/v1/globex/namespaces", "tok-acme", 403, "ForbiddenException"},
		{"location not allowed", "GET", "/v1/acme/namespaces/sales/tables/elsewhere/credentials", "tok-acme", 403, "ForbiddenException"},
		{"vending not configured", "GET", "/v1/globex/namespaces/hr/tables/people/credentials", "tok-globex", 501, "UnsupportedOperationException"},
		{"vending failed", "GET", "/v1/acme/namespaces/sales/tables/stsdown/credentials", "tok-acme", 503, "ServiceUnavailableException"},
		{"table without a schema", "GET", "/v1/acme/namespaces/sales/tables/legacy", "tok-acme", 500, "InternalServerError"},
		{"credentials of a missing table", "GET", "/v1/acme/namespaces/sales/tables/nope/credentials", "tok-acme", 404, "NoSuchTableException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := call(t, srv, tt.method, tt.path, tt.token, nil)
			if status != tt.status {
				t.Fatalf("%s %s: status %d, want %d (%s)", tt.method, tt.path, status, tt.status, body)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var eb errorBody
			if err := json.Unmarshal(body, &eb); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if eb.Error.Type != tt.typ || eb.Error.Code != tt.status || eb.Error.Message == "" {
				t.Errorf("error %+v, want type %s code %d and a message", eb.Error, tt.typ, tt.status)
			}
		})
	}
}

// The answer to another tenant's prefix is the same whether the tenant
// exists or not.
func TestOtherPrefixRevealsNothing(t *testing.T) {
	srv := newServer(t)
	_, _, a := call(t, srv, "GET", "/v1/globex/namespaces/hr/tables/people", "tok-acme", nil)
	_, _, b := call(t, srv, "GET", "/v1/nobody/namespaces/hr/tables/people", "tok-acme", nil)
	if string(a) != string(b) {
		t.Errorf("existing tenant %s, missing tenant %s: want the same answer", a, b)
	}
}

func TestConfig(t *testing.T) {
	srv := newServer(t)
	for _, path := range []string{"/v1/config", "/v1/config?warehouse=acme"} {
		status, _, body := call(t, srv, "GET", path, "tok-acme", nil)
		if status != 200 {
			t.Fatalf("GET %s: status %d (%s)", path, status, body)
		}
		var got struct {
			Defaults  map[string]string `json:"defaults"`
			Overrides map[string]string `json:"overrides"`
			Endpoints []string          `json:"endpoints"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Defaults == nil || len(got.Defaults) != 0 || got.Overrides["prefix"] != "acme" || len(got.Overrides) != 1 {
			t.Errorf("GET %s: defaults %v overrides %v, want {} and prefix acme", path, got.Defaults, got.Overrides)
		}
		want := []string{
			"GET /v1/{prefix}/namespaces",
			"GET /v1/{prefix}/namespaces/{namespace}",
			"HEAD /v1/{prefix}/namespaces/{namespace}",
			"GET /v1/{prefix}/namespaces/{namespace}/tables",
			"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
			"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
			"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
		}
		if !slices.Equal(got.Endpoints, want) {
			t.Errorf("endpoints %q, want %q", got.Endpoints, want)
		}
	}
}

func TestHead(t *testing.T) {
	srv := newServer(t)
	tests := []struct {
		path   string
		status int
	}{
		{"/v1/acme/namespaces/sales", 204},
		{"/v1/namespaces/sales", 204},
		{"/v1/acme/namespaces/empty", 204},
		{"/v1/acme/namespaces/nope", 404},
		{"/v1/acme/namespaces/hr", 404},
		{"/v1/acme/namespaces/sales%1Fx", 404},
		{"/v1/acme/namespaces/sales/tables/orders", 204},
		{"/v1/namespaces/sales/tables/orders", 204},
		{"/v1/acme/namespaces/sales/tables/nope", 404},
		{"/v1/acme/namespaces/nope/tables/orders", 404},
		{"/v1/globex/namespaces/hr/tables/people", 403},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, _, body := call(t, srv, "HEAD", tt.path, "tok-acme", nil)
			if status != tt.status || len(body) != 0 {
				t.Errorf("HEAD %s: status %d body %q, want %d and none", tt.path, status, body, tt.status)
			}
		})
	}
}

func TestListNamespaces(t *testing.T) {
	srv := newServer(t)
	for _, path := range []string{"/v1/acme/namespaces", "/v1/namespaces", "/v1/acme/namespaces?pageToken="} {
		status, _, body := call(t, srv, "GET", path, "tok-acme", nil)
		if status != 200 {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		if got, want := string(body), `{"namespaces":[["big"],["empty"],["sales"]]}`; got != want {
			t.Errorf("GET %s: %s, want %s", path, got, want)
		}
	}
	status, _, body := call(t, srv, "GET", "/v1/acme/namespaces?parent=sales", "tok-acme", nil)
	if got, want := string(body), `{"namespaces":[]}`; status != 200 || got != want {
		t.Errorf("children of sales: %d %s, want 200 %s", status, got, want)
	}
	status, _, body = call(t, srv, "GET", "/v1/globex/namespaces", "tok-globex", nil)
	if got, want := string(body), `{"namespaces":[["hr"]]}`; status != 200 || got != want {
		t.Errorf("globex: %d %s, want 200 %s", status, got, want)
	}
	// Paging, one name a page.
	var got []string
	tok, pages := "", 0
	for {
		status, _, body := call(t, srv, "GET", "/v1/acme/namespaces?pageSize=1&pageToken="+tok, "tok-acme", nil)
		if status != 200 {
			t.Fatalf("page %d: %d %s", pages, status, body)
		}
		var p struct {
			Namespaces [][]string `json:"namespaces"`
			Next       string     `json:"next-page-token"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		for _, ns := range p.Namespaces {
			got = append(got, ns[0])
		}
		pages++
		if tok = p.Next; tok == "" {
			break
		}
	}
	if want := []string{"big", "empty", "sales"}; !slices.Equal(got, want) || pages != 3 {
		t.Errorf("paged namespaces %q in %d pages, want %q in 3", got, pages, want)
	}
}

// 250 tables page by page: an empty first token, DefaultPageSize a page.
func TestListTablesPaging(t *testing.T) {
	srv := newServer(t)
	type pageBody struct {
		Identifiers []struct {
			Namespace []string `json:"namespace"`
			Name      string   `json:"name"`
		} `json:"identifiers"`
		Next *string `json:"next-page-token"`
	}
	var got []string
	var sizes []int
	tok := ""
	for range 10 {
		status, _, body := call(t, srv, "GET", "/v1/acme/namespaces/big/tables?pageToken="+tok, "tok-acme", nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var p pageBody
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Identifiers))
		for _, id := range p.Identifiers {
			if !slices.Equal(id.Namespace, []string{"big"}) {
				t.Fatalf("identifier %+v, want namespace [big]", id)
			}
			got = append(got, id.Name)
		}
		if p.Next == nil {
			break
		}
		tok = *p.Next
	}
	if want := []int{100, 100, 50}; !slices.Equal(sizes, want) {
		t.Errorf("page sizes %v, want %v", sizes, want)
	}
	if len(got) != 250 || !slices.IsSorted(got) || got[0] != "t000" || got[249] != "t249" {
		t.Errorf("got %d names (%q…), want t000…t249 sorted", len(got), got[:min(3, len(got))])
	}
	// Without a token: MaxPageSize a page, all 250 at once.
	_, _, body := call(t, srv, "GET", "/v1/acme/namespaces/big/tables", "tok-acme", nil)
	var p pageBody
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Identifiers) != 250 || p.Next != nil {
		t.Errorf("no token: %d identifiers, next %v; want 250 and none", len(p.Identifiers), p.Next)
	}
	// An oversized page size is served as MaxPageSize.
	status, _, _ := call(t, srv, "GET", "/v1/acme/namespaces/big/tables?pageSize=1000000&pageToken=", "tok-acme", nil)
	if status != 200 {
		t.Errorf("pageSize=1000000: status %d, want 200", status)
	}
	// An empty namespace is an empty list.
	_, _, body = call(t, srv, "GET", "/v1/acme/namespaces/empty/tables", "tok-acme", nil)
	if got, want := string(body), `{"identifiers":[]}`; got != want {
		t.Errorf("empty namespace: %s, want %s", got, want)
	}
}

func TestLoadTableRaw(t *testing.T) {
	srv := newServer(t)
	for _, q := range []string{"", "?snapshots=all", "?snapshots=refs"} {
		status, _, body := call(t, srv, "GET", "/v1/acme/namespaces/sales/tables/orders"+q, "tok-acme", nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var got struct {
			MetadataLocation string                     `json:"metadata-location"`
			Metadata         map[string]json.RawMessage `json:"metadata"`
			Config           map[string]string          `json:"config"`
			Creds            json.RawMessage            `json:"storage-credentials"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.MetadataLocation != "s3://acme-data/sales/orders/metadata/v3.lake.metadata.json" {
			t.Errorf("metadata-location %q", got.MetadataLocation)
		}
		if got.Config == nil || len(got.Config) != 0 || got.Creds != nil {
			t.Errorf("config %v, storage-credentials %s; want {} and none without delegation", got.Config, got.Creds)
		}
		for key, want := range map[string]string{
			"format-version":        "2",
			"table-uuid":            `"` + ordersUUID + `"`,
			"location":              `"s3://acme-data/sales/orders/"`,
			"last-updated-ms":       "1765000000123",
			"last-column-id":        "8",
			"current-schema-id":     "3",
			"default-spec-id":       "0",
			"last-partition-id":     "999",
			"default-sort-order-id": "0",
			"partition-specs":       `[{"spec-id":0,"fields":[]}]`,
			"sort-orders":           `[{"order-id":0,"fields":[]}]`,
		} {
			if g := string(got.Metadata[key]); g != want {
				t.Errorf("metadata %s = %s, want %s", key, g, want)
			}
		}
		if id, ok := got.Metadata["current-snapshot-id"]; ok && string(id) != "-1" && string(id) != "null" {
			t.Errorf("current-snapshot-id %s, want absent", id)
		}
		var props map[string]string
		if err := json.Unmarshal(got.Metadata["properties"], &props); err != nil {
			t.Fatal(err)
		}
		if props["comment"] != "orders placed" || props["owner"] != "team-sales" || props["schema.name-mapping.default"] != string(ordersNameMapping(t)) {
			t.Errorf("properties %v", props)
		}
		if _, ok := props["format-version"]; ok {
			t.Errorf("properties %v hold the reserved format-version", props)
		}
	}
}

// A schema with a type format version 2 lacks is served as version 3.
func TestLoadTableFormatVersion3(t *testing.T) {
	srv := newServer(t)
	status, _, body := call(t, srv, "GET", "/v1/acme/namespaces/sales/tables/nanos", "tok-acme", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var got struct {
		Metadata struct {
			FormatVersion int `json:"format-version"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Metadata.FormatVersion != 3 {
		t.Errorf("format-version %d, want 3", got.Metadata.FormatVersion)
	}
}

func TestCredentials(t *testing.T) {
	srv := newServer(t)
	wantVended := map[string]string{
		"s3.access-key-id":               "AKIAEXAMPLE",
		"s3.secret-access-key":           "secret",
		"s3.session-token":               "session",
		"s3.session-token-expires-at-ms": "1900000000000",
		"client.region":                  "eu-west-1",
	}
	type creds struct {
		StorageCredentials []struct {
			Prefix string            `json:"prefix"`
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
		Config map[string]string `json:"config"`
	}
	tests := []struct {
		name, path string
		hdr        map[string]string
		prefix     string
		want       map[string]string
		config     bool // loadTable: want the keys in config too
	}{
		{"vended", "/v1/acme/namespaces/sales/tables/orders/credentials", nil, "s3://acme-data/sales/orders/", wantVended, false},
		{"path", "/v1/acme/namespaces/sales/tables/local/credentials", nil, "file:///data/sales/local/", map[string]string{}, false},
		{"loadTable delegated", "/v1/acme/namespaces/sales/tables/orders",
			map[string]string{"X-Iceberg-Access-Delegation": "remote-signing, vended-credentials"}, "s3://acme-data/sales/orders/", wantVended, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := call(t, srv, "GET", tt.path, "tok-acme", tt.hdr)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if cc := hdr.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", cc)
			}
			var got creds
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.StorageCredentials) != 1 || got.StorageCredentials[0].Prefix != tt.prefix {
				t.Fatalf("storage-credentials %+v, want one for %s", got.StorageCredentials, tt.prefix)
			}
			if c := got.StorageCredentials[0].Config; fmt.Sprint(c) != fmt.Sprint(tt.want) {
				t.Errorf("config %v, want %v", c, tt.want)
			}
			if tt.config && fmt.Sprint(got.Config) != fmt.Sprint(tt.want) {
				t.Errorf("loadTable config %v, want %v", got.Config, tt.want)
			}
		})
	}
	// Delegation asked of a deployment without vending: the metadata alone.
	status, _, body := call(t, srv, "GET", "/v1/globex/namespaces/hr/tables/people", "tok-globex",
		map[string]string{"X-Iceberg-Access-Delegation": "vended-credentials"})
	if status != 200 || strings.Contains(string(body), "storage-credentials") {
		t.Errorf("without vending: %d %s, want 200 and no credentials", status, body)
	}
}

// A GET's body is never read: a large one does not slow the answer or
// change it.
func TestBodyNotRead(t *testing.T) {
	srv := newServer(t)
	req, err := http.NewRequest("GET", srv.URL+"/v1/acme/namespaces", strings.NewReader(strings.Repeat("x", 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok-acme")
	rsp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	if rsp.StatusCode != 200 {
		t.Errorf("status %d, want 200", rsp.StatusCode)
	}
}

func TestNewRequiresSourceAndAuthenticator(t *testing.T) {
	if _, err := icebergrest.New(icebergrest.Options{Authenticate: authenticate}); err == nil {
		t.Error("New without a Source: no error")
	}
	if _, err := icebergrest.New(icebergrest.Options{Source: &fakeSource{}}); err == nil {
		t.Error("New without an Authenticator: no error")
	}
}
