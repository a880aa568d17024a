package functions_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// items lists the keys of the table's items under prefix (a consistent
// Scan, as an operator would look).
func (s *stack) items(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := s.ddb.Client().Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range out.Items {
		if k, ok := it[dynamo.KeyAttr].(*types.AttributeValueMemberS); ok && strings.HasPrefix(k.Value, prefix) {
			keys = append(keys, k.Value)
		}
	}
	return keys
}

// On AWS DynamoDB's TTL deletes a dropped table's tombstone when its
// retention ends, and the version records it kept carry no expiry of their
// own (a drop leaves them as they are): through the real bootstraps, the
// refresh function that the stream hands the tombstone's REMOVE reads the
// key again, finds it gone, and deletes that table's version records,
// while a live table's history and an undropped one's (whose tombstone the
// undrop deleted, a REMOVE too) stay. The same batch again deletes
// nothing.
func TestTombstoneTTLTakesItsHistory(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg, fn := s.register(t), s.refresher(t)
	const tables = "/v1/tenants/acme/namespaces/sales/tables/"
	registerTable(t, reg, "acme", "orders", ipcB64(t, 1))
	if resp := invokeAPI(t, reg, apiEvent("PUT", tables+"orders", map[string]any{"schema": ipcB64(t, 2)})); resp.StatusCode != http.StatusOK {
		t.Fatalf("update: %d %s", resp.StatusCode, resp.Body)
	}
	registerTable(t, reg, "acme", "kept", ipcB64(t, 3))
	registerTable(t, reg, "acme", "back", ipcB64(t, 4))
	if _, err := invokeRefresh(t, fn); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders", "back"} {
		if resp := invokeAPI(t, reg, apiEvent("DELETE", tables+name, nil)); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("drop %s: %d %s", name, resp.StatusCode, resp.Body)
		}
	}
	tomb := func(name string) string {
		t.Helper()
		keys := s.items(t, catalog.TombstonePrefix+"acme/sales/"+name+"/")
		if len(keys) != 1 {
			t.Fatalf("tombstones of %s: %v, want one", name, keys)
		}
		return keys[0]
	}
	ordersTomb, backTomb := tomb("orders"), tomb("back")
	backID := backTomb[strings.LastIndexByte(backTomb, '/')+1:]
	if resp := invokeAPI(t, reg, apiEvent("POST", tables+"back/undrop", map[string]any{"creation_id": backID})); resp.StatusCode != http.StatusOK {
		t.Fatalf("undrop: %d %s", resp.StatusCode, resp.Body)
	}
	// The TTL deletes the orders tombstone (dynalite has no TTL).
	if _, err := s.ddb.Client().DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(s.table),
		Key: map[string]types.AttributeValue{dynamo.KeyAttr: &types.AttributeValueMemberS{Value: ordersTomb}}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"orders": 3, "kept": 1, "back": 3} // orders: create, update, drop; back: create, drop, undrop
	check := func(step string) {
		t.Helper()
		for name, n := range want {
			if got := s.items(t, catalog.VersionPrefix+"acme/sales/"+name+"/"); len(got) != n {
				t.Fatalf("%s: version records of %s %v, want %d", step, name, got, n)
			}
		}
	}
	check("before the batch")

	batch := streamBatch([2]string{"REMOVE", ordersTomb}, [2]string{"INSERT", "tbl/acme/sales/back"}, [2]string{"REMOVE", backTomb},
		[2]string{"MODIFY", catalog.ChangesKey})
	res, err := invokeWith(t, fn, batch)
	if err != nil {
		t.Fatal(err)
	}
	want["orders"] = 0
	check("after the batch")
	if res.VersionsPurged != 3 || res.HistoryError != "" {
		t.Fatalf("batch = %+v; want the 3 version records of orders purged, no error", res)
	}
	if res, err := invokeWith(t, fn, batch); err != nil || res.VersionsPurged != 0 || res.HistoryError != "" {
		t.Fatalf("the batch again = %+v, %v; want nothing purged", res, err)
	}
	check("after the batch again")
	// The register function measured every request (none had a side
	// write fail).
	if out := reg.Process.Output(); !strings.Contains(out, `"SideWritesFailed":0`) || strings.Contains(out, `"SideWritesFailed":1`) {
		t.Fatalf("the register function's output lacks its EMF line of side writes failed:\n%s", out)
	}
}
