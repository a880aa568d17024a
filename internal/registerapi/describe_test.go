package registerapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/wire"
)

// errorMessage returns an error answer's message.
func errorMessage(tb testing.TB, r response) string {
	tb.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		tb.Fatalf("error body %q: %v", r.body, err)
	}
	return e.Error.Message
}

func tableOf(tb testing.TB, r response) wire.Table {
	tb.Helper()
	var t wire.Table
	if err := json.Unmarshal(r.body, &t); err != nil {
		tb.Fatalf("answer %q: %v", r.body, err)
	}
	return t
}

func properties(n, size int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("k%03d", i)] = strings.Repeat("v", size)
	}
	return m
}

// POST takes a description and properties within the limits, answers them
// (and GET does), and refuses what is beyond with 400 invalid_registration
// and a message naming the limit.
func TestRegisterDescriptionAndProperties(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	schema := ipcB64(catalogtest.WideSchema(1, 3))
	tests := []struct {
		name        string
		description any
		properties  any
		wantStatus  int
		wantMessage string // for errors, after "acme/sales/<name>: "
	}{
		{"accepted", "Orders, one per row.\nOwned by sales.", map[string]string{"owner": "sales", "retention": "90d"}, http.StatusCreated, ""},
		{"none", nil, nil, http.StatusCreated, ""},
		{"too long", strings.Repeat("d", catalog.MaxDescriptionBytes+1), nil, http.StatusBadRequest,
			"invalid registration: description of 4097 bytes, limit 4096"},
		{"control characters", "bell\x07", nil, http.StatusBadRequest,
			"invalid registration: description contains control character U+0007 at byte 4 (only newline and tab are allowed)"},
		{"too many properties", nil, properties(catalog.MaxProperties+1, 1), http.StatusBadRequest,
			"invalid registration: 65 properties, limit 64"},
		{"bad key", nil, map[string]string{"a\tb": "x"}, http.StatusBadRequest,
			`invalid registration: property key "a\tb" contains a non-printable character`},
		{"empty key", nil, map[string]string{"": "x"}, http.StatusBadRequest,
			"invalid registration: a property key is empty"},
		{"value too long", nil, map[string]string{"k": strings.Repeat("v", catalog.MaxPropertyValueBytes+1)}, http.StatusBadRequest,
			`invalid registration: property "k": value of 1025 bytes, limit 1024`},
		{"properties not strings", nil, map[string]any{"k": 1}, http.StatusBadRequest, ""},
	}
	// In order: the retries after the loop need t0 registered.
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("t%d", i)
			req := map[string]any{"name": name, "location": "s3://lake/t/", "schema": schema}
			if tt.description != nil {
				req["description"] = tt.description
			}
			if tt.properties != nil {
				req["properties"] = tt.properties
			}
			r := do(t, h, "POST", base, "application/json", body(t, req))
			if r.status != tt.wantStatus {
				t.Fatalf("got %d %s, want %d", r.status, r.body, tt.wantStatus)
			}
			if r.status >= 400 {
				if got := errorCode(t, r); got != "invalid_registration" && got != "invalid_json" {
					t.Errorf("got code %q, want invalid_registration", got)
				}
				if tt.wantMessage != "" {
					if got, want := errorMessage(t, r), "acme/sales/"+name+": "+tt.wantMessage; got != want {
						t.Errorf("got message %q, want %q", got, want)
					}
				}
				if g := do(t, h, "GET", base+"/"+name, "", nil); g.status != http.StatusNotFound {
					t.Errorf("GET after a refused POST: got %d, want 404", g.status)
				}
				return
			}
			wantDesc, _ := tt.description.(string)
			wantProps, _ := tt.properties.(map[string]string)
			for _, got := range []wire.Table{tableOf(t, r), tableOf(t, do(t, h, "GET", base+"/"+name, "", nil))} {
				if got.Description != wantDesc || !maps.Equal(got.Properties, wantProps) {
					t.Errorf("got %q, %v; want %q, %v", got.Description, got.Properties, wantDesc, wantProps)
				}
			}
			if tt.description == nil && (strings.Contains(string(r.body), `"description"`) || strings.Contains(string(r.body), `"properties"`)) {
				t.Errorf("answer %s names a description or properties the table lacks", r.body)
			}
		})
	}

	// An identical retry is 200; another description is 409 exists.
	req := map[string]any{"name": "t0", "location": "s3://lake/t/", "schema": schema,
		"description": "Orders, one per row.\nOwned by sales.", "properties": map[string]string{"owner": "sales", "retention": "90d"}}
	if r := do(t, h, "POST", base, "application/json", body(t, req)); r.status != http.StatusOK {
		t.Fatalf("identical retry: got %d %s, want 200", r.status, r.body)
	}
	req["description"] = "something else"
	if r := do(t, h, "POST", base, "application/json", body(t, req)); r.status != http.StatusConflict || errorCode(t, r) != "exists" {
		t.Fatalf("another description: got %d %s, want 409 exists", r.status, r.body)
	}
}

// PUT without description or properties keeps them; given, they replace
// them; "" and {} clear them; beyond the limits is 400.
func TestUpdateDescriptionAndProperties(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	schema := ipcB64(catalogtest.WideSchema(1, 3))
	r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": "orders", "location": "s3://lake/o/", "schema": schema,
		"description": "orders", "properties": map[string]string{"owner": "sales"}}))
	if r.status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	tests := []struct {
		name        string
		body        string // members after "schema"
		wantStatus  int
		wantVersion int64
		wantDesc    string
		wantProps   map[string]string
	}{
		{"left out keeps", ``, 200, 1, "orders", map[string]string{"owner": "sales"}},
		{"null properties keeps", `,"properties":null`, 200, 1, "orders", map[string]string{"owner": "sales"}},
		{"description replaced", `,"description":"all orders"`, 200, 2, "all orders", map[string]string{"owner": "sales"}},
		{"properties replaced whole", `,"properties":{"tier":"gold"}`, 200, 3, "all orders", map[string]string{"tier": "gold"}},
		{"too long", `,"description":"` + strings.Repeat("x", catalog.MaxDescriptionBytes+1) + `"`, 400, 3, "all orders", map[string]string{"tier": "gold"}},
		{"bad key", `,"properties":{"":"x"}`, 400, 3, "all orders", map[string]string{"tier": "gold"}},
		{"description cleared", `,"description":""`, 200, 4, "", map[string]string{"tier": "gold"}},
		{"properties cleared", `,"properties":{}`, 200, 5, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, h, "PUT", base+"/orders", "application/json", []byte(`{"schema":"`+schema+`"`+tt.body+`}`))
			if r.status != tt.wantStatus {
				t.Fatalf("got %d %s, want %d", r.status, r.body, tt.wantStatus)
			}
			if r.status == 400 && errorCode(t, r) != "invalid_registration" {
				t.Errorf("got code %q, want invalid_registration", errorCode(t, r))
			}
			got := tableOf(t, do(t, h, "GET", base+"/orders", "", nil))
			if got.Version != tt.wantVersion || got.Description != tt.wantDesc || !maps.Equal(got.Properties, tt.wantProps) {
				t.Fatalf("got version %d, %q, %v; want version %d, %q, %v",
					got.Version, got.Description, got.Properties, tt.wantVersion, tt.wantDesc, tt.wantProps)
			}
		})
	}
}

// A registration stored before descriptions and properties existed still
// answers GET, without them, and can be given them with PUT.
func TestOldRegistrationWithoutDescription(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	old := `{"location":"s3://acme-lake/sales/legacy/","table_type":"TABLE","created_at":"2024-03-01T12:00:00Z","version":3}`
	if err := st.Put(ctx, "tbl/acme/sales/legacy", []byte(old)); err != nil {
		t.Fatal(err)
	}
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, h, "GET", base+"/legacy", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET: got %d %s, want 200", r.status, r.body)
	}
	if got := tableOf(t, r); got.Description != "" || got.Properties != nil || got.Version != 3 || got.Location != "s3://acme-lake/sales/legacy/" {
		t.Fatalf("got %+v, want version 3 at its location without description or properties", got)
	}
	r = do(t, h, "PUT", base+"/legacy", "application/json", body(t, map[string]any{"schema": ipcB64(catalogtest.WideSchema(1, 2)),
		"description": "backfilled", "properties": map[string]string{"source": "legacy"}}))
	if got := tableOf(t, r); r.status != http.StatusOK || got.Description != "backfilled" || got.Properties["source"] != "legacy" || got.Version != 4 {
		t.Fatalf("PUT: got %d %s, want 200 at version 4 with the description and properties", r.status, r.body)
	}
}
