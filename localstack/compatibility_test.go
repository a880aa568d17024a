//go:build integration

package localstack_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/aws/aws-lambda-go/events"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// The register bootstrap, with the deployment's default mode set in its
// environment (LAKE_DEFAULT_COMPATIBILITY), refuses an update that breaks
// it with 409 incompatible_schema and each breaking change, stores
// nothing, and stores a compatible one.
func TestCompatibilityThroughTheRegisterBootstrap(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	reg := testenv.StartLambda(t, testenv.Binary(t, "register"), c.env("", "LAKE_DEFAULT_COMPATIBILITY=backward")...)
	call := func(method, path string, body map[string]any) (int, []byte) {
		t.Helper()
		return callAPI(t, reg, method, path, "arn:aws:iam::123456789012:role/acme-producer", body)
	}
	ipc := func(fields ...arrow.Field) string { return ipcBase64(t, fields...) }
	id := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	const tables = "/v1/tenants/acme/namespaces/sales/tables"
	if code, body := call("POST", tables, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipc(id)}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
	}
	code, body := call("PUT", tables+"/orders", map[string]any{"schema": ipc(id, arrow.Field{Name: "region", Type: arrow.BinaryTypes.String})})
	var e struct {
		Error struct {
			Code            string                `json:"code"`
			BreakingChanges []wire.BreakingChange `json:"breaking_changes"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || code != http.StatusConflict || e.Error.Code != "incompatible_schema" ||
		len(e.Error.BreakingChanges) != 1 || e.Error.BreakingChanges[0].Path != "region" || e.Error.BreakingChanges[0].Change != "added" {
		t.Fatalf("breaking update under the default backward: %d %s, want 409 incompatible_schema naming region", code, body)
	}
	code, body = call("PUT", tables+"/orders", map[string]any{"schema": ipc(id, arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true})})
	var tbl wire.Table
	if err := json.Unmarshal(body, &tbl); err != nil || code != http.StatusOK || tbl.Version != 2 || tbl.Compatibility != "backward" {
		t.Fatalf("compatible update: %d %s, want 200 at version 2 under backward", code, body)
	}
}

// callAPI sends one registration API request through the register
// bootstrap fn as API Gateway would, from the IAM principal caller, and
// returns the response's status and body.
func callAPI(t *testing.T, fn *testenv.Lambda, method, path, caller string, body map[string]any) (int, []byte) {
	t.Helper()
	out, err := fn.Invoke(context.Background(), testenv.APIGatewayEvent(method, path, body, caller))
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, []byte(resp.Body)
}

// ipcBase64 is a schema of fields as the API takes it: base64 Arrow IPC.
func ipcBase64(t *testing.T, fields ...arrow.Field) string {
	t.Helper()
	b, err := catalog.EncodeSchema(arrow.NewSchema(fields, nil))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}
