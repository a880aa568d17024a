package functions_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// streamBatch is the DynamoDB Streams batch AWS would hand the refresh
// function for these changes (KEYS_ONLY view, aws-lambda-go's types).
func streamBatch(changes ...[2]string) events.DynamoDBEvent {
	var ev events.DynamoDBEvent
	for i, c := range changes {
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{
			EventID: strconv.Itoa(i), EventName: c[0], EventSource: "aws:dynamodb", EventVersion: "1.1", AWSRegion: "us-east-1",
			EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/Registrations/stream/2026-12-03T00:00:00.000",
			Change: events.DynamoDBStreamRecord{
				Keys:           map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(c[1])},
				SequenceNumber: strconv.Itoa(100 + i), SizeBytes: 40, StreamViewType: "KEYS_ONLY",
			},
		})
	}
	return ev
}

// invokeWith invokes the refresh function with ev and decodes its result.
func invokeWith(t testing.TB, fn *testenv.Lambda, ev any) (refresh.Result, error) {
	t.Helper()
	out, err := fn.Invoke(context.Background(), ev)
	if err != nil {
		return refresh.Result{}, err
	}
	var res refresh.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("refresh response %s: %v", out, err)
	}
	return res, nil
}

// The stream path through the real bootstraps: a registration written by
// the register function reaches the blob through a stream batch applied
// incrementally (its key re-read, no scan); a drop's REMOVE record removes
// the table; records of keys outside tbl/ (the change counter, the quota)
// change nothing; a malformed batch fails the invocation and publishes
// nothing.
func TestStreamBatchesRefreshIncrementally(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg, fn := s.register(t), s.refresher(t)
	registerTable(t, reg, "acme", "orders", ipcB64(t, 1))
	if res, err := invokeRefresh(t, fn); err != nil || res.Outcome != refresh.Published || !res.Scanned {
		t.Fatalf("first scheduled refresh = %+v, %v", res, err)
	}

	registerTable(t, reg, "acme", "returns", ipcB64(t, 2))
	res, err := invokeWith(t, fn, streamBatch([2]string{"INSERT", "tbl/acme/sales/returns"}, [2]string{"MODIFY", catalog.ChangesKey}, [2]string{"INSERT", "quota/acme"}))
	// Three reads: the table's key, acme's settings (tenant/acme), which
	// every tenant a batch rewrites reads once, and the new row's Iceberg
	// state (iceberg/acme/sales/returns), which a row new to the segment
	// reads once.
	if err != nil || !res.Incremental || res.Scanned || res.Reads != 3 || res.Outcome != refresh.Published || res.Generation != 2 {
		t.Fatalf("stream batch = %+v, %v; want an incremental publish of generation 2 after 3 reads", res, err)
	}
	if snap, _ := s.blob(t); len(snap.Tenant("acme")) != 2 {
		t.Fatalf("blob after the batch has %d acme tables, want 2", len(snap.Tenant("acme")))
	}

	drop := invokeAPI(t, reg, apiEvent("DELETE", "/v1/tenants/acme/namespaces/sales/tables/orders", nil))
	if drop.StatusCode != http.StatusNoContent {
		t.Fatalf("drop: %d %s", drop.StatusCode, drop.Body)
	}
	if res, err := invokeWith(t, fn, streamBatch([2]string{"REMOVE", "tbl/acme/sales/orders"})); err != nil || res.Generation != 3 {
		t.Fatalf("REMOVE batch = %+v, %v", res, err)
	}
	snap, etag := s.blob(t)
	if tables := snap.Tenant("acme"); len(tables) != 1 || tables[0].Name != "returns" {
		t.Fatalf("blob after the REMOVE: %v", tables)
	}

	// The scheduled safety net is now idle: the batches recorded the counter.
	if res, err := invokeRefresh(t, fn); err != nil || res.Scanned || res.Outcome != refresh.Unchanged {
		t.Fatalf("scheduled refresh after the batches = %+v, %v; want idle", res, err)
	}

	for name, ev := range map[string]any{
		"a record without a key": json.RawMessage(`{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{}}}]}`),
		"neither event":          map[string]any{"hello": "world"},
	} {
		if _, err := invokeWith(t, fn, ev); err == nil {
			t.Fatalf("%s: the invocation succeeded, want a function error (the batch goes to the on-failure queue)", name)
		}
		if _, now := s.blob(t); now != etag {
			t.Fatalf("%s: the blob changed", name)
		}
	}
}

// The sequence through the real bootstraps (issue 24, finding 5):
// W1 is written and its stream batch fails (the invocation errs; the event
// source mapping gives it up to the on-failure queue); W2, another
// tenant's, is written and its batch applied. The next scheduled run must
// scan and publish W1, not answer unchanged until the daily reconciliation.
func TestFailedStreamBatchIsSeenByTheSchedule(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg, fn := s.register(t), s.refresher(t)
	registerTable(t, reg, "acme", "orders", ipcB64(t, 1))
	if res, err := invokeRefresh(t, fn); err != nil || res.Outcome != refresh.Published || !res.Scanned {
		t.Fatalf("first scheduled refresh = %+v, %v", res, err)
	}

	registerTable(t, reg, "acme", "w1", ipcB64(t, 2))
	// W1's batch fails: a record the function cannot read fails the
	// invocation, and the mapping never delivers it again.
	if _, err := invokeWith(t, fn, json.RawMessage(`{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{}}}]}`)); err == nil {
		t.Fatal("W1's failing batch succeeded")
	}
	registerTable(t, reg, "globex", "w2", ipcB64(t, 3))
	res, err := invokeWith(t, fn, streamBatch([2]string{"INSERT", "tbl/globex/sales/w2"}, [2]string{"MODIFY", catalog.ChangesKey}, [2]string{"INSERT", "quota/globex"}))
	if err != nil || !res.Incremental || res.Outcome != refresh.Published {
		t.Fatalf("W2's batch = %+v, %v; want an incremental publish", res, err)
	}

	res, err = invokeRefresh(t, fn)
	if err != nil || !res.Scanned || res.Outcome != refresh.Published {
		t.Fatalf("scheduled refresh after W1's failed batch = %+v, %v; want a scan that publishes W1", res, err)
	}
	snap, _ := s.blob(t)
	if !slices.ContainsFunc(snap.Tenant("acme"), func(t snapshot.Table) bool { return t.Name == "w1" }) {
		t.Fatalf("W1 is not in the blob: acme has %v", snap.Tenant("acme"))
	}
	if res, err := invokeRefresh(t, fn); err != nil || res.Scanned || res.Outcome != refresh.Unchanged {
		t.Fatalf("the scheduled refresh after = %+v, %v; want idle", res, err)
	}
}
