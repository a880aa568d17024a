package registerapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/schemajson"
	"github.com/lake-catalog/lake/pkg/wire"
)

const base = "/v1/tenants/acme/namespaces/sales/tables"

func newAPI(tb testing.TB, opts registerapi.Options) http.Handler {
	tb.Helper()
	st := memstore.New(memstore.Options{})
	tb.Cleanup(func() { st.Close() })
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(tb testing.TB, h http.Handler, method, path, contentType string, body []byte, hdr ...string) response {
	tb.Helper()
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return response{w.Code, w.Header(), w.Body.Bytes()}
}

func ipcB64(s *arrow.Schema) string {
	return base64.StdEncoding.EncodeToString(flight.SerializeSchema(s, memory.DefaultAllocator))
}

func body(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func errorCode(tb testing.TB, r response) string {
	tb.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		tb.Fatalf("error body %q is not {error:{code,message}}: %v", r.body, err)
	}
	return e.Error.Code
}

// etagPattern is the ETag of a registration with a creation id.
var etagPattern = regexp.MustCompile(`^"[0-9a-f]{16}-[1-9][0-9]*"$`)

// An ETag names one state of one registration: after a drop and a new
// registration of the same table, a stale If-Match (the old ETag, same
// version number) neither updates nor drops the new one; DELETE honours
// If-Match too.
func TestETagsAreNotReplayedAcrossRecreation(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	req := body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipcB64(catalogtest.WideSchema(1, 3))})
	r := do(t, h, "POST", base, "application/json", req)
	old := r.header.Get("ETag")
	if r.status != http.StatusCreated || !etagPattern.MatchString(old) {
		t.Fatalf("register: %d %s (ETag %q)", r.status, r.body, old)
	}
	if r := do(t, h, "DELETE", base+"/orders", "", nil, "If-Match", old); r.status != http.StatusNoContent {
		t.Fatalf("drop with the current ETag: %d %s, want 204", r.status, r.body)
	}
	newOwner := body(t, map[string]any{"name": "orders", "location": "s3://lake/new-owner/", "schema": ipcB64(catalogtest.WideSchema(2, 3))})
	r = do(t, h, "POST", base, "application/json", newOwner)
	fresh := r.header.Get("ETag")
	if r.status != http.StatusCreated || fresh == old || !strings.HasSuffix(fresh, `-1"`) {
		t.Fatalf("register again: %d, ETag %q (old %q): want 201 and another ETag at version 1", r.status, fresh, old)
	}
	stale := body(t, map[string]any{"location": "s3://lake/stale-writer/", "schema": ipcB64(catalogtest.WideSchema(3, 3))})
	for _, tc := range []struct {
		method string
		body   []byte
	}{{"PUT", stale}, {"DELETE", nil}} {
		ct := ""
		if tc.body != nil {
			ct = "application/json"
		}
		if r := do(t, h, tc.method, base+"/orders", ct, tc.body, "If-Match", old); r.status != http.StatusPreconditionFailed || errorCode(t, r) != "version_mismatch" {
			t.Fatalf("%s with the old ETag: %d %s, want 412 version_mismatch", tc.method, r.status, r.body)
		}
	}
	r = do(t, h, "GET", base+"/orders", "", nil)
	if got := decodeTable(t, r); got.Location != "s3://lake/new-owner/" || got.Version != 1 || r.header.Get("ETag") != fresh {
		t.Fatalf("the new registration changed: %+v, ETag %s", got, r.header.Get("ETag"))
	}
	if r := do(t, h, "DELETE", base+"/orders", "", nil, "If-Match", fresh); r.status != http.StatusNoContent {
		t.Fatalf("drop with the fresh ETag: %d %s, want 204", r.status, r.body)
	}
}

func decodeTable(tb testing.TB, r response) wire.Table {
	tb.Helper()
	var t wire.Table
	if err := json.Unmarshal(r.body, &t); err != nil {
		tb.Fatalf("response %q: %v", r.body, err)
	}
	return t
}

func TestRegisterLifecycle(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	schema := catalogtest.RichSchema()
	req := body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipcB64(schema)})

	r := do(t, h, "POST", base, "application/json", req)
	if r.status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	got := decodeTable(t, r)
	back, err := catalog.DecodeSchema(got.SchemaIPC)
	if err != nil || !catalog.SchemaEqual(back, schema) || got.Version != 1 || got.TableType != "TABLE" ||
		!etagPattern.MatchString(r.header.Get("ETag")) || !strings.HasSuffix(r.header.Get("ETag"), `-1"`) || got.ETag != r.header.Get("ETag") {
		t.Fatalf("registered table = %+v (%v)", got, err)
	}
	if fromJSON, err := schemajson.Parse(got.Schema); err != nil || !catalog.SchemaEqual(fromJSON, schema) {
		t.Fatalf("the response's JSON schema form does not parse back: %v", err)
	}

	if r := do(t, h, "POST", base, "application/json; charset=utf-8", req); r.status != http.StatusOK {
		t.Fatalf("identical retry: %d %s, want 200", r.status, r.body)
	}
	other := body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipcB64(catalogtest.WideSchema(1, 2))})
	if r := do(t, h, "POST", base, "application/json", other); r.status != http.StatusConflict || errorCode(t, r) != "exists" {
		t.Fatalf("conflicting register: %d %s, want 409 exists", r.status, r.body)
	}

	if r := do(t, h, "GET", base+"/orders", "", nil); r.status != http.StatusOK || decodeTable(t, r).Name != "orders" {
		t.Fatalf("get: %d %s", r.status, r.body)
	}

	// Update with the JSON form, at the right version.
	newSchema := catalogtest.WideSchema(2, 4)
	js, _ := schemajson.Format(newSchema)
	upd := body(t, map[string]any{"schema": json.RawMessage(js)})
	stale := strings.Replace(got.ETag, `-1"`, `-7"`, 1)
	if r := do(t, h, "PUT", base+"/orders", "application/json", upd, "If-Match", stale); r.status != http.StatusPreconditionFailed || errorCode(t, r) != "version_mismatch" {
		t.Fatalf("update at a stale version: %d %s, want 412", r.status, r.body)
	}
	r = do(t, h, "PUT", base+"/orders", "application/json", upd, "If-Match", got.ETag)
	if r.status != http.StatusOK || decodeTable(t, r).Version != 2 || r.header.Get("ETag") != strings.Replace(got.ETag, `-1"`, `-2"`, 1) {
		t.Fatalf("update: %d %s (ETag %s)", r.status, r.body, r.header.Get("ETag"))
	}

	if r := do(t, h, "DELETE", base+"/orders", "", nil); r.status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	if r := do(t, h, "GET", base+"/orders", "", nil); r.status != http.StatusNotFound || errorCode(t, r) != "not_found" {
		t.Fatalf("get after drop: %d %s", r.status, r.body)
	}
	if r := do(t, h, "DELETE", base+"/orders", "", nil); r.status != http.StatusNotFound {
		t.Fatalf("second drop: %d %s", r.status, r.body)
	}
}

func TestRegisterRejectsBadInput(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	good := ipcB64(catalogtest.WideSchema(1, 3))
	huge := base64.StdEncoding.EncodeToString(make([]byte, catalog.MaxSchemaIPCBytes+1))
	tests := []struct {
		name, method, path, ct, body string
		status                       int
		code                         string
	}{
		{"malformed json", "POST", base, "application/json", `{"name":`, 400, "invalid_json"},
		{"unknown member", "POST", base, "application/json", `{"name":"t","location":"/x","schema":"` + good + `","colour":1}`, 400, "invalid_json"},
		{"bad table name", "POST", base, "application/json", `{"name":"a/b","location":"/x","schema":"` + good + `"}`, 400, "invalid_name"},
		{"empty table name", "POST", base, "application/json", `{"location":"/x","schema":"` + good + `"}`, 400, "invalid_name"},
		{"control in tenant", "POST", "/v1/tenants/ac%0Ame/namespaces/s/tables", "application/json", `{"name":"t","location":"/x","schema":"` + good + `"}`, 400, "invalid_name"},
		{"slash in tenant", "POST", "/v1/tenants/a%2Fb/namespaces/s/tables", "application/json", `{"name":"t","location":"/x","schema":"` + good + `"}`, 400, "invalid_name"},
		{"bad base64", "POST", base, "application/json", `{"name":"t","location":"/x","schema":"@@@"}`, 400, "invalid_base64"},
		{"not ipc", "POST", base, "application/json", `{"name":"t","location":"/x","schema":"aGVsbG8gd29ybGQ="}`, 400, "invalid_schema"},
		{"no schema", "POST", base, "application/json", `{"name":"t","location":"/x"}`, 400, "invalid_schema"},
		{"schema number", "POST", base, "application/json", `{"name":"t","location":"/x","schema":5}`, 400, "invalid_schema"},
		{"bad json schema", "POST", base, "application/json", `{"name":"t","location":"/x","schema":{"fields":[{"name":"a","type":"int128"}]}}`, 400, "invalid_schema"},
		{"duplicate fields", "POST", base, "application/json", `{"name":"t","location":"/x","schema":{"fields":[{"name":"a","type":"int8"},{"name":"a","type":"int8"}]}}`, 400, "invalid_schema"},
		{"no location", "POST", base, "application/json", `{"name":"t","schema":"` + good + `"}`, 400, "invalid_registration"},
		{"schema too large", "POST", base, "application/json", `{"name":"t","location":"/x","schema":"` + huge + `"}`, 413, "too_large"},
		{"body too large", "POST", base, "application/json", `{"name":"` + strings.Repeat("x", registerapi.MaxBodyBytes) + `"}`, 413, "too_large"},
		{"wrong content type", "POST", base, "text/plain", `{}`, 415, "unsupported_media_type"},
		{"no content type", "POST", base, "", `{}`, 415, "unsupported_media_type"},
		{"missing table", "GET", base + "/nope", "", ``, 404, "not_found"},
		{"update missing", "PUT", base + "/nope", "application/json", `{"schema":"` + good + `"}`, 404, "not_found"},
		{"bad if-match", "PUT", base + "/t", "application/json", `{"schema":"` + good + `"}`, 400, "invalid_if_match"},
		{"no route", "GET", "/v2/whatever", "", ``, 404, "no_route"},
		{"wrong method", "PATCH", base + "/t", "application/json", `{}`, 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hdr []string
			if tt.code == "invalid_if_match" {
				hdr = []string{"If-Match", "latest"}
			}
			r := do(t, h, tt.method, tt.path, tt.ct, []byte(tt.body), hdr...)
			if r.status != tt.status || errorCode(t, r) != tt.code {
				t.Fatalf("%s %s: %d %s, want %d %s", tt.method, tt.path, r.status, r.body, tt.status, tt.code)
			}
		})
	}
}

func TestAuthorizerScopesTenants(t *testing.T) {
	t.Parallel()
	var writes int
	h := newAPI(t, registerapi.Options{
		Authorize: func(r *http.Request, tenant string) (string, error) {
			switch r.Header.Get("Authorization") {
			case "":
				return "", registerapi.ErrUnauthenticated
			case "acme":
				if tenant == "acme" {
					return "acme-producer", nil
				}
			}
			return "", errors.New("other tenant")
		},
		OnWrite: func() { writes++ },
	})
	req := body(t, map[string]any{"name": "t", "location": "/x", "schema": ipcB64(catalogtest.WideSchema(1, 1))})
	if r := do(t, h, "POST", base, "application/json", req); r.status != 401 || errorCode(t, r) != "unauthenticated" {
		t.Fatalf("no credentials: %d %s", r.status, r.body)
	}
	if r := do(t, h, "POST", "/v1/tenants/globex/namespaces/s/tables", "application/json", req, "Authorization", "acme"); r.status != 403 {
		t.Fatalf("other tenant: %d %s", r.status, r.body)
	}
	if r := do(t, h, "POST", base, "application/json", req, "Authorization", "acme"); r.status != 201 {
		t.Fatalf("own tenant: %d %s", r.status, r.body)
	}
	if writes != 1 {
		t.Fatalf("OnWrite ran %d times, want 1", writes)
	}
	// Every route, with acme's credentials on globex's paths (names acme
	// holds, so an answer would tell): 403, and nothing of acme's leaks.
	if r := do(t, h, "DELETE", base+"/t", "", nil, "Authorization", "acme"); r.status != 204 {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	other := "/v1/tenants/globex/namespaces/sales/tables"
	for _, rt := range []struct{ method, path, body string }{
		{"POST", other, `{"name":"t","location":"/x"}`},
		{"GET", other + "/t", ""},
		{"PUT", other + "/t", `{"location":"/y"}`},
		{"DELETE", other + "/t", ""},
		{"POST", other + "/t/undrop", `{"creation_id":"0123456789abcdef"}`},
		{"GET", other + "/t/versions", ""},
		{"GET", other + "/t/versions/1", ""},
		{"GET", other + "/t/diff?from=1", ""},
		{"GET", "/v1/tenants/globex/dropped", ""},
	} {
		ct := ""
		if rt.body != "" {
			ct = "application/json"
		}
		for _, cred := range []string{"acme", ""} {
			r := do(t, h, rt.method, rt.path, ct, []byte(rt.body), "Authorization", cred)
			if want := map[string]int{"acme": 403, "": 401}[cred]; r.status != want || strings.Contains(string(r.body), `"t"`) {
				t.Errorf("%s %s with credentials %q: %d %s, want %d and nothing of acme's", rt.method, rt.path, cred, r.status, r.body, want)
			}
		}
	}
	if writes != 2 {
		t.Fatalf("OnWrite ran %d times, want 2 (acme's register and drop)", writes)
	}
}

// FuzzRegisterRequest sends arbitrary path names and bodies: no panic, and
// every rejection is a 4xx with a JSON error body.
func FuzzRegisterRequest(f *testing.F) {
	good := ipcB64(catalogtest.WideSchema(1, 3))
	f.Add("acme", "sales", "POST", "", `{"name":"t","location":"/x","schema":"`+good+`"}`)
	f.Add("acme", "sales", "PUT", "orders", `{"schema":{"fields":[{"name":"a","type":"int8"}]}}`)
	f.Add("a%2F", "%00", "GET", "x", ``)
	f.Add("t", "n", "POST", "", `{"name":"t","location":"s3://b","schema":"/////w=="}`)
	f.Add("acme", "sales", "POST", "", "{\"name\":\"t\xff\",\"location\":\"/x\",\"schema\":\""+good+"\"}")
	f.Add("ac%2A", "s%E2%80%AE", "POST", "", `{"name":"cafe\u0301","location":"/x","schema":"`+good+`"}`)
	f.Add("acme", "sales", "POST", "", `{"name":"t","location":"/x","schema":"`+good+`","compatibility":"Backward","protected":true}`)
	f.Add("acme", "sales", "PUT", "t", `{"schema":"`+good+`","compatibility":"full","protected":false}`)
	f.Add("acme", "sales", "PUT", "t", `{"schema":"`+good+`","compatibility":"sideways","protected":"yes"}`)
	h := newAPI(f, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	f.Fuzz(func(t *testing.T, tenant, namespace, method, table, reqBody string) {
		path := "/v1/tenants/" + tenant + "/namespaces/" + namespace + "/tables"
		if table != "" {
			path += "/" + table
		}
		r, err := http.NewRequest(method, "http://lake"+path, strings.NewReader(reqBody))
		if err != nil {
			return // not a request a client could send
		}
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, path, reqBody, w.Code, w.Body)
		}
		if (method == http.MethodPost || method == http.MethodPut) && w.Code < 300 && !utf8.ValidString(reqBody) {
			t.Fatalf("%s %s accepted a body that is not UTF-8: %d %s", method, path, w.Code, w.Body)
		}
		if w.Code == http.StatusCreated {
			var tbl wire.Table
			if err := json.Unmarshal(w.Body.Bytes(), &tbl); err != nil {
				t.Fatal(err)
			}
			if err := (catalog.TableRef{Tenant: tbl.Tenant, Namespace: tbl.Namespace, Name: tbl.Name}).Validate(); err != nil {
				t.Fatalf("registered an invalid name: %v", err)
			}
		}
		if w.Code >= 400 {
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code == "" {
				t.Fatalf("rejection without a JSON error body: %d %q", w.Code, w.Body)
			}
		}
	})
}

// New refuses to build a handler without an Authorizer: a forgotten one
// fails closed at construction instead of allowing every request.
func TestNewRefusesMissingAuthorizer(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{Log: slog.New(slog.DiscardHandler)})
	if h != nil || err == nil {
		t.Fatalf("New without an Authorize: got %v, %v; want nil and an error", h, err)
	}
	if got, want := err.Error(), "registerapi: no Authorizer: pass one, or AllowAll where authorization ran in front of the API"; got != want {
		t.Fatalf("got error %q, want %q", got, want)
	}
}

// AllowAll allows every tenant and names the caller it is given.
func TestAllowAll(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/", nil)
	for _, tc := range []struct {
		name   string
		caller func(*http.Request) string
		want   string
	}{
		{"no caller", nil, ""},
		{"IAM-like caller", func(*http.Request) string { return "arn:aws:iam::1:role/p" }, "arn:aws:iam::1:role/p"},
	} {
		got, err := registerapi.AllowAll(tc.caller)(r, "any-tenant")
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q, nil", tc.name, got, err, tc.want)
		}
	}
	// Through the handler: any tenant's request reaches the catalog.
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil), Log: slog.New(slog.DiscardHandler)})
	for _, tenant := range []string{"acme", "globex"} {
		p := "/v1/tenants/" + tenant + "/namespaces/sales/tables"
		if r := do(t, h, "POST", p, "application/json", []byte(`{"name":"t","location":"/x","schema":"`+ipcB64(catalogtest.WideSchema(1, 2))+`"}`)); r.status != http.StatusCreated {
			t.Errorf("POST %s with AllowAll: got %d %s, want 201", p, r.status, r.body)
		}
	}
}

// The API's answers to each error kind: status, stable code, and a message
// built from the kind and the table that says each thing once and carries
// no package prefix of an internal error chain.
func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	good := ipcB64(catalogtest.WideSchema(1, 3))
	other := ipcB64(catalogtest.WideSchema(2, 3))
	huge := base64.StdEncoding.EncodeToString(make([]byte, catalog.MaxSchemaIPCBytes+1))
	if r := do(t, h, "POST", base, "application/json", []byte(`{"name":"orders","location":"/x","schema":"`+good+`"}`)); r.status != 201 {
		t.Fatalf("setup: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		name, method, path, body, ifMatch string
		status                            int
		code, message                     string
	}{
		{"not found", "GET", base + "/missing", "", "", 404, "not_found", "acme/sales/missing: table not found"},
		{"drop missing", "DELETE", base + "/missing", "", "", 404, "not_found", "acme/sales/missing: table not found"},
		{"update missing", "PUT", base + "/missing", `{"schema":"` + good + `"}`, "", 404, "not_found", "acme/sales/missing: table not found"},
		{"exists", "POST", base, `{"name":"orders","location":"/y","schema":"` + other + `"}`, "", 409, "exists",
			"acme/sales/orders: already registered with a different location, type, schema, description or properties: at version 1; change it with PUT"},
		{"version mismatch", "PUT", base + "/orders", `{"schema":"` + other + `"}`, `"7"`, 412, "version_mismatch",
			"acme/sales/orders: the registration changed since it was read: that state is of another registration of this table (dropped and registered again since)"},
		{"malformed If-Match", "PUT", base + "/orders", `{"schema":"` + other + `"}`, `"x-1"`, 400, "invalid_if_match",
			`If-Match must be one ETag this API sent, such as "9f3a61c2d4b5e607-3", got "\"x-1\""`},
		{"only if no schema", "PUT", base + "/orders", `{"schema":"` + other + `","only_if_no_schema":true}`, "", 409, "conflict",
			"acme/sales/orders: the registration changed meanwhile: it has a schema now"},
		{"invalid name", "POST", base, `{"name":"a/b","location":"/x","schema":"` + good + `"}`, "", 400, "invalid_name",
			`invalid table name "a/b": contains '/'`},
		{"invalid tenant", "GET", "/v1/tenants/a%0Ab/namespaces/sales/tables/t", "", "", 400, "invalid_name",
			`invalid tenant name "a\nb": contains a control character`},
		{"invalid IPC schema", "POST", base, `{"name":"t","location":"/x","schema":"aGVsbG8gd29ybGQ="}`, "", 400, "invalid_schema",
			"acme/sales/t: invalid schema: not an Arrow IPC schema message: message metadata length 1819043176 outside the 7 bytes given"},
		{"invalid JSON schema", "POST", base, `{"name":"t","location":"/x","schema":{"fields":[{"name":"a","type":"int8"},{"name":"a","type":"int8"}]}}`, "", 400, "invalid_schema",
			`acme/sales/t: invalid schema: duplicate top-level field name "a"`},
		{"invalid registration", "POST", base, `{"name":"t","location":"rel","schema":"` + good + `"}`, "", 400, "invalid_registration",
			`acme/sales/t: invalid registration: location "rel" is neither a URI with a scheme (s3://bucket/path) nor an absolute path`},
		{"schema too large", "POST", base, `{"name":"t","location":"/x","schema":"` + huge + `"}`, "", 413, "too_large",
			fmt.Sprintf("schema IPC of %d bytes exceeds the %d-byte limit", catalog.MaxSchemaIPCBytes+1, catalog.MaxSchemaIPCBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var hdr []string
			if tc.ifMatch != "" {
				hdr = []string{"If-Match", tc.ifMatch}
			}
			ct := ""
			if tc.body != "" {
				ct = "application/json"
			}
			r := do(t, h, tc.method, tc.path, ct, []byte(tc.body), hdr...)
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatalf("body %q: %v", r.body, err)
			}
			if r.status != tc.status || e.Error.Code != tc.code || e.Error.Message != tc.message {
				t.Fatalf("got (%d, %q, %q), want (%d, %q, %q)", r.status, e.Error.Code, e.Error.Message, tc.status, tc.code, tc.message)
			}
			if strings.Contains(e.Error.Message, "catalog:") || strings.Contains(e.Error.Message, "schemajson:") {
				t.Fatalf("message %q carries an internal package prefix", e.Error.Message)
			}
		})
	}
}

// A body or a path cannot smuggle a name that collides with another or
// hides characters: a body that is not UTF-8 is refused before decoding
// (encoding/json would make "t\xff" and "t\xfe" both "t\ufffd"), and every
// name rule of catalog.ValidateName answers 400 invalid_name. Nothing is
// stored.
func TestRegisterRefusesNamesThatCollideOrHide(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{Authorize: registerapi.AllowAll(nil), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	good := ipcB64(catalogtest.WideSchema(1, 3))
	reg := func(name string) string { return `{"name":"` + name + `","location":"/x","schema":"` + good + `"}` }
	for _, tc := range []struct {
		name, method, path, body string
		code, message            string
	}{
		{"invalid UTF-8 name", "POST", base, reg("t\xff"), "invalid_json", "malformed JSON body: not valid UTF-8 at byte 10"},
		{"another invalid UTF-8 name", "POST", base, reg("t\xfe"), "invalid_json", "malformed JSON body: not valid UTF-8 at byte 10"},
		{"truncated UTF-8 in location", "POST", base, "{\"name\":\"t\",\"location\":\"/\xe2\x82\"}", "invalid_json", "malformed JSON body: not valid UTF-8 at byte 25"},
		{"invalid UTF-8 in an update", "PUT", base + "/t", "{\"location\":\"\xc0\xaf\"}", "invalid_json", "malformed JSON body: not valid UTF-8 at byte 13"},
		{"lone surrogate escape", "POST", base, reg(`t\udcff`), "invalid_name", "invalid table name \"t\ufffd\": contains U+FFFD, the replacement character of a decoding error"},
		{"NFD name", "POST", base, reg(`cafe\u0301`), "invalid_name", "invalid table name \"cafe\u0301\": not in Unicode NFC form; its NFC form is \"caf\\u00e9\""},
		{"zero width space", "POST", base, reg(`t\u200b`), "invalid_name", `invalid table name "t\u200b": contains the invisible format character U+200B`},
		{"right-to-left override", "POST", base, reg(`t\u202e`), "invalid_name", `invalid table name "t\u202e": contains the bidi control character U+202E`},
		{"trailing space", "POST", base, reg("t "), "invalid_name", `invalid table name "t ": ends with white space`},
		{"dot", "POST", base, reg("."), "invalid_name", `invalid table name ".": "." and ".." are reserved: no URL path can address them`},
		{"dot dot", "POST", base, reg(".."), "invalid_name", `invalid table name "..": "." and ".." are reserved: no URL path can address them`},
		{"star in tenant", "POST", "/v1/tenants/ac%2A/namespaces/sales/tables", reg("t"), "invalid_name", `invalid tenant name "ac*": contains '*', a wildcard in IAM policy patterns`},
		{"question mark in tenant", "GET", "/v1/tenants/ac%3F/namespaces/sales/tables/t", "", "invalid_name", `invalid tenant name "ac?": contains '?', a wildcard in IAM policy patterns`},
		{"bidi control in namespace", "DELETE", "/v1/tenants/acme/namespaces/s%E2%80%AE/tables/t", "", "invalid_name", `invalid namespace name "s\u202e": contains the bidi control character U+202E`},
		{"invalid UTF-8 in path", "GET", "/v1/tenants/acme/namespaces/sales/tables/t%FF", "", "invalid_name", `invalid table name "t\xff": not valid UTF-8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := ""
			if tc.body != "" {
				ct = "application/json"
			}
			r := do(t, h, tc.method, tc.path, ct, []byte(tc.body))
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatalf("body %q: %v", r.body, err)
			}
			if r.status != http.StatusBadRequest || e.Error.Code != tc.code || e.Error.Message != tc.message {
				t.Fatalf("got (%d, %q, %q), want (400, %q, %q)", r.status, e.Error.Code, e.Error.Message, tc.code, tc.message)
			}
		})
	}
	if entries, err := st.ScanPrefix(context.Background(), catalog.KeyPrefix); err != nil || len(entries) != 0 {
		t.Fatalf("got %d stored registrations (%v), want none", len(entries), err)
	}
}

// outageStore is memstore whose reads fail: a store outage.
type outageStore struct{ *memstore.Store }

func (outageStore) Get(context.Context, string) ([]byte, error) {
	return nil, errors.New("dynamo: ProvisionedThroughputExceeded on tbl/acme/sales/orders")
}

// The answers that do not come from a catalog error kind: the caller's
// credentials, the request body, and a store outage, whose cause is logged
// and never sent.
func TestErrorAnswersBeyondTheCatalog(t *testing.T) {
	t.Parallel()
	st := outageStore{memstore.New(memstore.Options{})}
	t.Cleanup(func() { st.Close() })
	var logged bytes.Buffer
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{
		Log: slog.New(slog.NewJSONHandler(&logged, nil)),
		Authorize: func(r *http.Request, tenant string) (string, error) {
			switch r.Header.Get("Authorization") {
			case "":
				return "", registerapi.ErrUnauthenticated
			case "Bearer acme":
				if tenant == "acme" {
					return "token:acme", nil
				}
			}
			return "", errors.New("token for another tenant")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, contentType, body, auth string
		status                                      int
		code, message                               string
	}{
		{"no credentials", "GET", base + "/orders", "", "", "", 401, "unauthenticated", "missing or invalid credentials"},
		{"another tenant", "GET", "/v1/tenants/globex/namespaces/sales/tables/orders", "", "", "Bearer acme", 403, "forbidden", `not allowed to act on tenant "globex"`},
		{"store outage", "GET", base + "/orders", "", "", "Bearer acme", 503, "unavailable", "the catalog store is unavailable; retry"},
		{"not JSON", "POST", base, "text/plain", "x", "Bearer acme", 415, "unsupported_media_type", `Content-Type "text/plain": send application/json`},
		{"unknown field", "POST", base, "application/json", `{"nam":"t"}`, "Bearer acme", 400, "invalid_json", `malformed JSON body: json: unknown field "nam"`},
		{"schema not base64", "POST", base, "application/json", `{"name":"t","location":"/x","schema":"%%"}`, "Bearer acme", 400, "invalid_base64",
			"schema is not standard base64: illegal base64 data at input byte 0"},
		{"no schema", "POST", base, "application/json", `{"name":"t","location":"/x"}`, "Bearer acme", 400, "invalid_schema",
			`"schema" is required: base64 Arrow IPC or a JSON schema object`},
		{"no route", "GET", "/v2/x", "", "", "Bearer acme", 404, "no_route", "no such route; see /v1/tenants/{tenant}/namespaces/{namespace}/tables[/{table}]"},
		{"method not allowed", "PATCH", base + "/orders", "", "", "Bearer acme", 405, "method_not_allowed", "PATCH is not allowed here; allowed: GET, PUT, DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.auth != "" {
				hdr = []string{"Authorization", tc.auth}
			}
			r := do(t, h, tc.method, tc.path, tc.contentType, []byte(tc.body), hdr...)
			if tc.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After")
			}
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatalf("body %q: %v", r.body, err)
			}
			if r.status != tc.status || e.Error.Code != tc.code || e.Error.Message != tc.message {
				t.Fatalf("got (%d, %q, %q), want (%d, %q, %q)", r.status, e.Error.Code, e.Error.Message, tc.status, tc.code, tc.message)
			}
		})
	}
	if !strings.Contains(logged.String(), "ProvisionedThroughputExceeded") {
		t.Errorf("the outage's cause is not in the log: %s", logged.String())
	}
}

// A registration past the tenant's quota is 403 quota_exceeded, with the
// limit in the message, and stores nothing.
func TestQuotaExceededIs403(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	h, err := registerapi.New(catalog.New(st, catalog.Options{Quota: catalog.Quota{MaxTables: 1}}), registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{http.StatusCreated, http.StatusForbidden} {
		req := body(t, map[string]any{"name": fmt.Sprint("t", i), "location": "s3://lake/t/", "schema": ipcB64(catalogtest.WideSchema(1, 2))})
		r := do(t, h, "POST", base, "application/json", req)
		if r.status != want {
			t.Fatalf("register t%d: %d %s, want %d", i, r.status, r.body, want)
		}
		if want == http.StatusForbidden {
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			_ = json.Unmarshal(r.body, &e)
			if e.Error.Code != "quota_exceeded" || e.Error.Message != "acme/sales/t1: the tenant's quota is used up: 1 tables, limit 1; drop tables or ask the operator to raise it" {
				t.Fatalf("got (%q, %q)", e.Error.Code, e.Error.Message)
			}
		}
	}
	if r := do(t, h, "GET", base+"/t1", "", nil); r.status != http.StatusNotFound {
		t.Fatalf("the refused table was stored: %d", r.status)
	}
}

// failingCounter fails every add to the change counter (fault injection),
// so every write's bump fails after the write.
type failingCounter struct{ metastore.Store }

func (s failingCounter) AddCounter(ctx context.Context, key string, delta uint64) (uint64, error) {
	if key == catalog.ChangesKey {
		return 0, errors.New("injected: the counter's partition is unavailable")
	}
	return s.Store.AddCounter(ctx, key, delta)
}

// A write whose change-counter bump failed is answered 503 unsignalled,
// not success: the producer learns that discovery may not show it before
// the next full scan (issue 24, check and close).
func TestUnsignalledWriteIsReported(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	if err := st.Put(context.Background(), catalog.ChangesKey, []byte("1")); err != nil {
		t.Fatal(err)
	}
	h, err := registerapi.New(catalog.New(failingCounter{st}, catalog.Options{}), registerapi.Options{Authorize: registerapi.AllowAll(nil), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipcB64(catalogtest.WideSchema(1, 3))}))
	if r.status != http.StatusServiceUnavailable || errorCode(t, r) != "unsignalled" {
		t.Fatalf("register: got %d %s, want 503 unsignalled", r.status, r.body)
	}
	const want = "acme/sales/orders: written, but refresh was not told of it; it may show in discovery only at the next full scan; retrying is safe"
	if got := errorMessage(t, r); got != want {
		t.Fatalf("register: got message %q, want %q", got, want)
	}
	if r := do(t, h, "GET", base+"/orders", "", nil); r.status != http.StatusOK {
		t.Fatalf("the table is not stored: %d %s", r.status, r.body)
	}
}

// failingVersionWrites fails every write of a version record (fault
// injection on that one kind of key), so each write's history side write
// fails after the write is stored.
type failingVersionWrites struct{ metastore.Store }

func (s failingVersionWrites) Put(ctx context.Context, key string, value []byte) error {
	if strings.HasPrefix(key, catalog.VersionPrefix) {
		return errors.New("injected: the version records' partition is unavailable")
	}
	return s.Store.Put(ctx, key, value)
}

// A write that is stored but whose side write failed (its version record)
// is answered as stored, not as a failure the producer would retry into a
// second write, and the failure is logged as a warning naming the write
// and the key; the catalog counts it.
func TestSideWriteFailureIsStoredAndLogged(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	var logged bytes.Buffer
	cat := catalog.New(failingVersionWrites{st}, catalog.Options{})
	h, err := registerapi.New(cat, registerapi.Options{Authorize: registerapi.AllowAll(nil), Log: slog.New(slog.NewJSONHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipcB64(catalogtest.WideSchema(1, 3))}))
	if r.status != http.StatusCreated {
		t.Fatalf("register: got %d %s, want 201", r.status, r.body)
	}
	if r := do(t, h, "DELETE", base+"/orders", "", nil); r.status != http.StatusNoContent {
		t.Fatalf("drop: got %d %s, want 204", r.status, r.body)
	}
	var warnings []map[string]any
	for line := range strings.Lines(logged.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m["level"] == "WARN" {
			warnings = append(warnings, m)
		}
	}
	if len(warnings) != 2 || warnings[0]["op"] != "register" || warnings[1]["op"] != "drop" ||
		!strings.Contains(fmt.Sprint(warnings[0]["side_writes"]), "version record "+catalog.VersionPrefix+"acme/sales/orders/") {
		t.Fatalf("warnings %v, want one for the register and one for the drop, naming the version record", warnings)
	}
	if s := cat.Stats(); s.SideWritesFailed != 2 || s.Commits != 2 {
		t.Fatalf("catalog stats %+v, want 2 commits and 2 failed side writes", s)
	}
}

// unreachableStore fails every read, as a store that cannot be reached
// would (fault injection).
type unreachableStore struct{ metastore.Store }

func (unreachableStore) Get(context.Context, string) ([]byte, error) {
	return nil, errors.New("injected: dial tcp 10.0.0.7:8000: connection refused")
}

// A store failure is answered 503 unavailable with a generic message: the
// catalog's error (operation, table, the store's own words) is logged,
// never sent.
func TestStoreFailureIsUnavailable(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	h, err := registerapi.New(catalog.New(unreachableStore{st}, catalog.Options{}), registerapi.Options{Authorize: registerapi.AllowAll(nil), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, h, "GET", base+"/orders", "", nil)
	if got, want := errorMessage(t, r), "the catalog store is unavailable; retry"; r.status != http.StatusServiceUnavailable || errorCode(t, r) != "unavailable" || got != want {
		t.Fatalf("got (%d, %s), want (503, unavailable, %q)", r.status, r.body, want)
	}
}
