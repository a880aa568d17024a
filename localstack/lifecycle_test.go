//go:build integration

package localstack_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/wire"
)

// The catalog's memory through the real bootstraps: each write records the
// IAM principal API Gateway authorized; the history lists create, update,
// drop and undrop with who made each; the diff answers field by field; the
// dropped list comes from the catalog (the register function reads the
// tenant's index of dropped tables and its tombstones with Gets, never
// scanning the table); undrop restores the listed creation id.
func TestLifecycleThroughTheBootstraps(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	reg := c.register(t)
	ref := c.refresher(t)
	const producer, admin = "arn:aws:iam::123456789012:role/acme-producer", "arn:aws:iam::123456789012:user/alice"
	call := func(method, path, caller string, body map[string]any) (int, []byte) {
		t.Helper()
		return callAPI(t, reg, method, path, caller, body)
	}
	ipc := func(fields ...arrow.Field) string { return ipcBase64(t, fields...) }
	id32 := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32}
	id64 := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	const tables = "/v1/tenants/acme/namespaces/sales/tables"
	if code, body := call("POST", tables, producer, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipc(id32)}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
	}
	if code, body := call("PUT", tables+"/orders", producer, map[string]any{"schema": ipc(id64)}); code != http.StatusOK {
		t.Fatalf("update: %d %s", code, body)
	}
	if code, body := call("DELETE", tables+"/orders", admin, nil); code != http.StatusNoContent {
		t.Fatalf("drop: %d %s", code, body)
	}
	if res := runRefresh(t, ref); res.Outcome == "" {
		t.Fatalf("refresh: %+v", res)
	}
	code, body := call("GET", "/v1/tenants/acme/dropped", producer, nil)
	var dropped wire.DroppedPage
	if err := json.Unmarshal(body, &dropped); err != nil || code != http.StatusOK || len(dropped.Dropped) != 1 ||
		dropped.Dropped[0].Table != "orders" || dropped.Dropped[0].DroppedBy != admin || dropped.Dropped[0].Version != 3 {
		t.Fatalf("dropped: %d %s, want orders dropped by %s at version 3", code, body, admin)
	}
	if code, body := call("GET", "/v1/tenants/globex/dropped", "arn:aws:iam::123456789012:role/globex-producer", nil); code != http.StatusOK || string(body) != `{"tenant":"globex","total":0,"dropped":[]}`+"\n" {
		t.Fatalf("globex's dropped: %d %s", code, body)
	}
	cid := dropped.Dropped[0].CreationID
	if code, body := call("POST", tables+"/orders/undrop", admin, map[string]any{"creation_id": cid}); code != http.StatusOK {
		t.Fatalf("undrop: %d %s", code, body)
	}
	code, body = call("GET", tables+"/orders/versions", producer, nil)
	var page wire.VersionPage
	if err := json.Unmarshal(body, &page); err != nil || code != http.StatusOK || len(page.Versions) != 4 {
		t.Fatalf("versions: %d %s", code, body)
	}
	for i, want := range []struct{ op, by string }{{"undrop", admin}, {"drop", admin}, {"update", producer}, {"create", producer}} {
		if v := page.Versions[i]; v.Op != want.op || v.UpdatedBy != want.by || v.Version != int64(4-i) {
			t.Fatalf("version %d: %s by %s, want %s by %s", v.Version, v.Op, v.UpdatedBy, want.op, want.by)
		}
	}
	code, body = call("GET", tables+"/orders/diff?from=1&to=2", producer, nil)
	var d wire.Diff
	if err := json.Unmarshal(body, &d); err != nil || code != http.StatusOK || len(d.SchemaChanges) != 1 ||
		d.SchemaChanges[0] != (wire.SchemaChange{Path: "id", Change: "promoted", From: "int32", To: "int64"}) {
		t.Fatalf("diff 1→2: %d %s", code, body)
	}
}
