package registerapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/wire"
)

// GET /v1/tenants/{tenant}/dropped lists the tenant's drops in retention,
// newest first, with who dropped each and the creation id undrop takes;
// another tenant's list holds none of them.
func TestDroppedThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(func(r *http.Request) string { return r.Header.Get("X-Caller") })})
	for _, name := range []string{"orders", "returns"} {
		if r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": name, "location": "s3://lake/" + name + "/", "schema": ipcB64(catalogtest.WideSchema(1, 2))})); r.status != http.StatusCreated {
			t.Fatalf("register %s: %d %s", name, r.status, r.body)
		}
	}
	if r := do(t, h, "DELETE", base+"/orders", "", nil, "X-Caller", "alice"); r.status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	time.Sleep(2 * time.Millisecond) // the two drops' times apart
	if r := do(t, h, "DELETE", base+"/returns", "", nil, "X-Caller", "bob"); r.status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	r := do(t, h, "GET", "/v1/tenants/acme/dropped", "", nil)
	var page wire.DroppedPage
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != http.StatusOK || len(page.Dropped) != 2 || page.Tenant != "acme" || page.Total != 2 {
		t.Fatalf("dropped: %d %s", r.status, r.body)
	}
	if d := page.Dropped[0]; d.Table != "returns" || d.DroppedBy != "bob" || d.Version != 2 || len(d.CreationID) != 16 || !d.ExpiresAt.After(d.DroppedAt) {
		t.Fatalf("newest drop %+v, want returns, by bob, at version 2", d)
	}
	if d := page.Dropped[1]; d.Table != "orders" || d.DroppedBy != "alice" {
		t.Fatalf("older drop %+v, want orders by alice", d)
	}
	r = do(t, h, "POST", base+"/orders/undrop", "application/json", body(t, map[string]any{"creation_id": page.Dropped[1].CreationID}))
	if r.status != http.StatusOK {
		t.Fatalf("undrop of the listed creation id: %d %s", r.status, r.body)
	}
	if r := do(t, h, "GET", "/v1/tenants/globex/dropped", "", nil); r.status != http.StatusOK || string(r.body) != `{"tenant":"globex","total":0,"dropped":[]}`+"\n" {
		t.Fatalf("globex's dropped: %d %s", r.status, r.body)
	}
	if r := do(t, h, "GET", "/v1/tenants/ac*/dropped", "", nil); r.status != http.StatusBadRequest {
		t.Fatalf("an invalid tenant: %d %s, want 400", r.status, r.body)
	}
}
