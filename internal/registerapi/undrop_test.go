package registerapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Through the API: every write records its caller; a DELETE keeps a
// tombstone with who dropped the table; POST …/undrop with its creation id
// restores it (200, op undrop, version history continued); a second undrop
// is 404, an undrop over a name registered again 409, a bad body 400.
func TestUndropThroughTheAPI(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	cat := catalog.New(st, catalog.Options{})
	h, err := registerapi.New(cat, registerapi.Options{Authorize: registerapi.AllowAll(func(r *http.Request) string { return r.Header.Get("X-Test-Caller") })})
	if err != nil {
		t.Fatal(err)
	}
	as := func(method, path, caller string, b []byte) response {
		t.Helper()
		ct := ""
		if b != nil {
			ct = "application/json"
		}
		return do(t, h, method, path, ct, b, "X-Test-Caller", caller)
	}
	schema := ipcB64(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	r := as("POST", base, "alice", body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": schema}))
	created := decodeTable(t, r)
	if r.status != http.StatusCreated || created.UpdatedBy != "alice" || created.Op != "create" {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	if r := as("DELETE", base+"/orders", "bob", nil); r.status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	dropped, err := cat.Dropped(context.Background(), "acme")
	if err != nil || len(dropped) != 1 || dropped[0].DroppedBy != "bob" {
		t.Fatalf("dropped %+v, %v", dropped, err)
	}
	id := dropped[0].Registration.CreationID()
	for _, bad := range []string{`{}`, `{"creation_id":"XYZ"}`, `{"creation_id":1}`, `nope`} {
		if r := as("POST", base+"/orders/undrop", "carol", []byte(bad)); r.status != http.StatusBadRequest {
			t.Errorf("undrop with body %s: %d %s, want 400", bad, r.status, r.body)
		}
	}
	r = as("POST", base+"/orders/undrop", "carol", body(t, map[string]any{"creation_id": id}))
	restored := decodeTable(t, r)
	if r.status != http.StatusOK || restored.Op != "undrop" || restored.UpdatedBy != "carol" || restored.Version != 3 ||
		!strings.HasPrefix(restored.ETag, `"`+id+"-") || !restored.CreatedAt.Equal(created.CreatedAt) {
		t.Fatalf("undrop: %d %s", r.status, r.body)
	}
	if r := as("POST", base+"/orders/undrop", "carol", body(t, map[string]any{"creation_id": id})); r.status != http.StatusNotFound || errorCode(t, r) != "not_found" {
		t.Fatalf("a second undrop: %d %s, want 404", r.status, r.body)
	}
	// Dropped again, the name taken by another registration: 409.
	if r := as("DELETE", base+"/orders", "bob", nil); r.status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	if r := as("POST", base, "dave", body(t, map[string]any{"name": "orders", "location": "s3://lake/other/", "schema": schema})); r.status != http.StatusCreated {
		t.Fatalf("register again: %d %s", r.status, r.body)
	}
	r = as("POST", base+"/orders/undrop", "carol", body(t, map[string]any{"creation_id": id}))
	if want := `{"error":{"code":"exists","message":"acme/sales/orders: cannot restore the drop: another table has been registered under this name since; drop that table (or register it elsewhere) first, then undrop"}}`; r.status != http.StatusConflict || strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("undrop over a registered name: %d %s, want 409 %s", r.status, r.body, want)
	}
	if r := as("GET", base+"/orders", "", nil); decodeTable(t, r).Location != "s3://lake/other/" {
		t.Fatalf("the refused undrop changed the table: %s", r.body)
	}
}

// GET …/versions pages the kept versions newest first, each with who made
// it and how; GET …/versions/{v} answers one; bad queries are 400, a
// version not kept 404.
func TestVersionsThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(func(*http.Request) string { return "alice" })})
	one := ipcB64(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	two := ipcB64(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
	if r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": one})); r.status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	if r := do(t, h, "PUT", base+"/orders", "application/json", body(t, map[string]any{"schema": two})); r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	r := do(t, h, "GET", base+"/orders/versions?limit=1", "", nil)
	var page wire.VersionPage
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != http.StatusOK || len(page.Versions) != 1 || page.Versions[0].Version != 2 ||
		page.Versions[0].Op != "update" || page.Versions[0].UpdatedBy != "alice" || page.NextBefore != 2 {
		t.Fatalf("first page: %d %s", r.status, r.body)
	}
	r = do(t, h, "GET", base+"/orders/versions?before=2&limit=1", "", nil)
	page = wire.VersionPage{}
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Versions) != 1 || page.Versions[0].Version != 1 || page.Versions[0].Op != "create" || page.NextBefore != 0 {
		t.Fatalf("second page: %d %s", r.status, r.body)
	}
	if r := do(t, h, "GET", base+"/orders/versions/1", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"version":1`) || strings.Contains(string(r.body), "note") {
		t.Fatalf("version 1: %d %s", r.status, r.body)
	}
	if r := do(t, h, "GET", base+"/orders/versions/9", "", nil); r.status != http.StatusNotFound {
		t.Fatalf("version 9: %d %s, want 404", r.status, r.body)
	}
	// The diff of two versions, field by field; to defaults to the newest.
	for _, q := range []string{"?from=1&to=2", "?from=1"} {
		r := do(t, h, "GET", base+"/orders/diff"+q, "", nil)
		var d wire.Diff
		if err := json.Unmarshal(r.body, &d); err != nil || r.status != http.StatusOK || d.From != 1 || d.To != 2 || len(d.SchemaChanges) != 1 ||
			d.SchemaChanges[0] != (wire.SchemaChange{Path: "note", Change: "added", To: "utf8", Nullable: true}) ||
			len(d.Changes) != 0 || len(d.Lines) != 1 || d.Lines[0] != "note: added (nullable utf8)" {
			t.Fatalf("diff%s: %d %s", q, r.status, r.body)
		}
	}
	if r := do(t, h, "GET", base+"/orders/diff?from=2&to=1", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"change":"removed"`) {
		t.Fatalf("diff from 2 to 1: %d %s", r.status, r.body)
	}
	if r := do(t, h, "GET", base+"/orders/diff?from=9", "", nil); r.status != http.StatusNotFound {
		t.Fatalf("diff from a version not kept: %d %s, want 404", r.status, r.body)
	}
	for _, q := range []string{"/versions?limit=0", "/versions?limit=101", "/versions?before=x", "/versions?creation_id=XYZ", "/versions/0", "/versions/abc",
		"/diff", "/diff?from=0", "/diff?from=x", "/diff?from=1&to=0", "/diff?from=1&to=", "/diff?from=1&creation_id=XYZ"} {
		if r := do(t, h, "GET", base+"/orders"+q, "", nil); r.status != http.StatusBadRequest {
			t.Errorf("GET …%s: %d %s, want 400", q, r.status, r.body)
		}
	}
}

// LAKE_TOMBSTONE_RETENTION and LAKE_HISTORY_VERSIONS: unset keeps the
// defaults, off keeps none, anything else out of range is refused with
// the variable named.
func TestMemoryFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retention, versions string
		want                registerapi.Memory
		err                 string
	}{
		{"", "", registerapi.Memory{}, ""},
		{"72h", "20", registerapi.Memory{TombstoneRetention: 72 * time.Hour, HistoryVersions: 20}, ""},
		{"off", "off", registerapi.Memory{TombstoneRetention: -1, HistoryVersions: -1}, ""},
		{"30m", "", registerapi.Memory{}, "LAKE_TOMBSTONE_RETENTION"},
		{"a week", "", registerapi.Memory{}, "LAKE_TOMBSTONE_RETENTION"},
		{"", "0", registerapi.Memory{}, "LAKE_HISTORY_VERSIONS"},
		{"", "100001", registerapi.Memory{}, "LAKE_HISTORY_VERSIONS"},
		{"", "", registerapi.Memory{}, ""},
	} {
		got, err := registerapi.MemoryFromEnv(func(k string) string {
			return map[string]string{"LAKE_TOMBSTONE_RETENTION": tc.retention, "LAKE_HISTORY_VERSIONS": tc.versions}[k]
		})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %q: %v, want an error naming %s", tc.retention, tc.versions, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q %q: %+v, %v; want %+v", tc.retention, tc.versions, got, err, tc.want)
		}
	}
}

// FuzzHistoryRoutes sends arbitrary queries to the history routes
// (versions, one version, diff, dropped) and arbitrary undrop bodies over
// a table with history and a drop: no 5xx, a 4xx always a JSON error, and
// a 200 always the answer's shape.
func FuzzHistoryRoutes(f *testing.F) {
	for _, seed := range []struct{ route, query, body string }{
		{"versions", "limit=1&before=2", ""},
		{"versions", "limit=0&before=-1&creation_id=XYZ", ""},
		{"version", "1", ""},
		{"version", "99999999999999999999", ""},
		{"diff", "from=1&to=2", ""},
		{"diff", "from=1&to=&creation_id=0123456789abcdef", ""},
		{"dropped", "", ""},
		{"undrop", "", `{"creation_id":"0123456789abcdef"}`},
		{"undrop", "", `{"creation_id":["x"],"extra":1}`},
	} {
		f.Add(seed.route, seed.query, seed.body)
	}
	h := newAPI(f, registerapi.Options{Authorize: registerapi.AllowAll(func(*http.Request) string { return "fuzz" })})
	schema := ipcB64(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	for _, name := range []string{"orders", "returns"} {
		if r := do(f, h, "POST", base, "application/json", body(f, map[string]any{"name": name, "location": "s3://lake/" + name + "/", "schema": schema})); r.status != http.StatusCreated {
			f.Fatalf("register: %d %s", r.status, r.body)
		}
	}
	if r := do(f, h, "PUT", base+"/orders", "application/json", body(f, map[string]any{"schema": schema, "description": "v2"})); r.status != http.StatusOK {
		f.Fatalf("update: %d %s", r.status, r.body)
	}
	if r := do(f, h, "DELETE", base+"/returns", "", nil); r.status != http.StatusNoContent {
		f.Fatalf("drop: %d %s", r.status, r.body)
	}
	f.Fuzz(func(t *testing.T, route, query, reqBody string) {
		var method, target string
		switch route {
		case "versions":
			method, target = "GET", base+"/orders/versions?"+query
		case "version":
			method, target = "GET", base+"/orders/versions/"+query
		case "diff":
			method, target = "GET", base+"/orders/diff?"+query
		case "dropped":
			method, target = "GET", "/v1/tenants/acme/dropped?"+query
		case "undrop":
			method, target = "POST", base+"/returns/undrop"
		default:
			return
		}
		r, err := http.NewRequest(method, "http://lake"+target, strings.NewReader(reqBody))
		if err != nil {
			return // not a request a client could send
		}
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch {
		case w.Code >= 500:
			t.Fatalf("%s %s %q: %d %s", method, target, reqBody, w.Code, w.Body)
		case w.Code >= 400:
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%s %s: %d with body %q, want a JSON error", method, target, w.Code, w.Body)
			}
		case w.Code == http.StatusOK:
			var out any
			switch route {
			case "versions":
				out = &wire.VersionPage{}
			case "diff":
				out = &wire.Diff{}
			case "dropped":
				out = &wire.DroppedPage{}
			default:
				out = &wire.Table{}
			}
			if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
				t.Fatalf("%s %s: 200 with %q: %v", method, target, w.Body, err)
			}
		}
	})
}

// A version number at the top of int64's range is a version like any
// other: GET …/versions/9223372036854775807 (and a diff from it) is 404
// naming the version, not a 400 about a query nobody sent; one past the
// range is a 400 naming the range.
func TestVersionAtTheEndOfTheRange(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	one := ipcB64(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": one})); r.status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/orders/versions/9223372036854775807", "/orders/diff?from=9223372036854775807", "/orders/diff?from=1&to=9223372036854775807"} {
		r := do(t, h, "GET", base+path, "", nil)
		if code := errorCode(t, r); r.status != http.StatusNotFound || code != "not_found" || !strings.Contains(string(r.body), "version 9223372036854775807 is not kept") {
			t.Errorf("GET …%s: %d %s, want 404 not_found saying version 9223372036854775807 is not kept", path, r.status, r.body)
		}
	}
	for _, path := range []string{"/orders/versions/9223372036854775808", "/orders/diff?from=9223372036854775808", "/orders/versions?before=9223372036854775808"} {
		r := do(t, h, "GET", base+path, "", nil)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "1 to 9223372036854775807") {
			t.Errorf("GET …%s: %d %s, want 400 naming the range 1 to 9223372036854775807", path, r.status, r.body)
		}
	}
}
