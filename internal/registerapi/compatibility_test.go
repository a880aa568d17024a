package registerapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/wire"
)

// A table registered with "compatibility": "backward" refuses a PUT whose
// schema breaks it: 409 incompatible_schema listing each breaking change
// with its path, nothing stored. "compatibility": "none" in the same PUT
// changes it anyway; a bad mode is 400.
func TestIncompatibleUpdateIs409WithEachChange(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	v1 := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	}, nil)
	r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipcB64(v1), "compatibility": "backward"}))
	if r.status != http.StatusCreated || decodeTable(t, r).Compatibility != "backward" {
		t.Fatalf("register under backward: %d %s", r.status, r.body)
	}
	v2 := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String},
	}, nil)
	r = do(t, h, "PUT", base+"/orders", "application/json", body(t, map[string]any{"schema": ipcB64(v2)}))
	if r.status != http.StatusConflict || errorCode(t, r) != "incompatible_schema" {
		t.Fatalf("incompatible update: %d %s, want 409 incompatible_schema", r.status, r.body)
	}
	var e struct {
		Error struct {
			Message         string                `json:"message"`
			BreakingChanges []wire.BreakingChange `json:"breaking_changes"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	want := []wire.BreakingChange{
		{Path: "customer.zip", Change: "retyped", From: "utf8", To: "int32", Reason: "the values of one type are not values of the other"},
		{Path: "region", Change: "added", To: "utf8", Reason: "a new field must be nullable: data written before it has no value for it"},
	}
	if len(e.Error.BreakingChanges) != len(want) {
		t.Fatalf("breaking changes %+v, want %+v", e.Error.BreakingChanges, want)
	}
	for i := range want {
		if e.Error.BreakingChanges[i] != want[i] {
			t.Errorf("breaking change %d = %+v, want %+v", i, e.Error.BreakingChanges[i], want[i])
		}
	}
	if !strings.Contains(e.Error.Message, "acme/sales/orders: the schema breaks the table's compatibility mode: 2 changes break backward compatibility") {
		t.Errorf("message %q", e.Error.Message)
	}
	if r := do(t, h, "GET", base+"/orders", "", nil); decodeTable(t, r).Version != 1 {
		t.Fatalf("the refused update was stored: %s", r.body)
	}

	r = do(t, h, "PUT", base+"/orders", "application/json", body(t, map[string]any{"schema": ipcB64(v2), "compatibility": "none"}))
	if r.status != http.StatusOK || decodeTable(t, r).Version != 2 || decodeTable(t, r).Compatibility != "" {
		t.Fatalf("update with compatibility none: %d %s, want 200 at version 2 with no mode", r.status, r.body)
	}
	r = do(t, h, "PUT", base+"/orders", "application/json", body(t, map[string]any{"schema": ipcB64(v2), "compatibility": "sideways"}))
	if r.status != http.StatusBadRequest || errorCode(t, r) != "invalid_registration" || !strings.Contains(string(r.body), "want none, backward, forward or full") {
		t.Fatalf("bad mode: %d %s, want 400 invalid_registration naming the modes", r.status, r.body)
	}
}

// A protected table's DELETE is 409 protected until a PUT of
// "protected": false; GET says the flag.
func TestProtectedTableDeleteIs409(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	schema := ipcB64(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": schema, "protected": true})); r.status != http.StatusCreated || !decodeTable(t, r).Protected {
		t.Fatalf("register protected: %d %s", r.status, r.body)
	}
	r := do(t, h, "DELETE", base+"/orders", "", nil)
	if r.status != http.StatusConflict || errorCode(t, r) != "protected" || !strings.Contains(string(r.body), `acme/sales/orders: the table is protected; unset it first with a PUT of \"protected\": false`) {
		t.Fatalf("delete of a protected table: %d %s, want 409 protected", r.status, r.body)
	}
	if r := do(t, h, "GET", base+"/orders", "", nil); r.status != http.StatusOK || !decodeTable(t, r).Protected {
		t.Fatalf("after the refused delete: %d %s", r.status, r.body)
	}
	if r := do(t, h, "PUT", base+"/orders", "application/json", body(t, map[string]any{"schema": schema})); r.status != http.StatusOK || !decodeTable(t, r).Protected {
		t.Fatalf("a PUT naming no flag: %d %s, want it kept", r.status, r.body)
	}
	if r := do(t, h, "PUT", base+"/orders", "application/json", body(t, map[string]any{"schema": schema, "protected": false})); r.status != http.StatusOK || decodeTable(t, r).Protected {
		t.Fatalf("unprotect: %d %s", r.status, r.body)
	}
	if r := do(t, h, "DELETE", base+"/orders", "", nil); r.status != http.StatusNoContent {
		t.Fatalf("delete after unprotecting: %d %s", r.status, r.body)
	}
}
