//go:build integration

package localstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// A stream batch through the real refresh bootstrap announces each change
// it published on the bus LAKE_EVENT_BUS names: source lake.catalog,
// detail-type "Table Changed", the tenant, op, version and who in the
// detail (a create by the producer's role, a drop by the admin who made
// it); the scheduled full refresh before it announces nothing.
func TestChangeEventsThroughTheRefreshBootstrap(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	// No EventBridge emulator runs on these machines (LocalStack needs
	// Docker): testenv's endpoint records what the real SDK client sends.
	bus := testenv.StartEventBridge(t)
	reg := c.register(t)
	fn := testenv.StartLambda(t, testenv.Binary(t, "refresh"), c.env("", "LAKE_EVENT_BUS=lake-changes", "AWS_ENDPOINT_URL_EVENTBRIDGE="+bus.URL)...)
	ipc, _ := catalog.EncodeSchema(catalogtest.WideSchema(1, 3))
	registerTable(t, reg, "acme", "sales", "orders", ipc)
	if res := runRefresh(t, fn); res.Outcome != refresh.Published || res.Announced != 0 {
		t.Fatalf("scheduled refresh = %+v, want published and nothing announced", res)
	}
	registerTable(t, reg, "acme", "sales", "returns", ipc)
	out, err := reg.Invoke(context.Background(), testenv.APIGatewayEvent("DELETE", "/v1/tenants/acme/namespaces/sales/tables/orders", nil, "arn:aws:iam::123456789012:user/alice"))
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("drop: %d %s (%v)", resp.StatusCode, resp.Body, err)
	}
	// The stream batch AWS sends for those writes (keys only): the new
	// table, the dropped one's removal and its tombstone.
	var batch events.DynamoDBEvent
	tombstones, err := c.ddbKeys(t, catalog.TombstonePrefix)
	if err != nil || len(tombstones) != 1 {
		t.Fatalf("tombstones %q, %v", tombstones, err)
	}
	for _, key := range []string{"tbl/acme/sales/returns", "tbl/acme/sales/orders", tombstones[0]} {
		batch.Records = append(batch.Records, events.DynamoDBEventRecord{EventID: key, EventName: "INSERT", EventSource: "aws:dynamodb",
			Change: events.DynamoDBStreamRecord{Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(key)}, StreamViewType: "KEYS_ONLY"}})
	}
	out, err = fn.Invoke(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	var res refresh.Result
	if err := json.Unmarshal(out, &res); err != nil || res.Outcome != refresh.Published || !res.Incremental || res.Announced != 2 || res.AnnounceError != "" {
		t.Fatalf("stream batch = %+v, %v; want published incrementally with 2 changes announced", res, err)
	}
	var got []string
	for _, e := range bus.Entries() {
		var d refresh.EventDetail
		if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
			t.Fatal(err)
		}
		if e.EventBusName != "lake-changes" || e.Source != refresh.EventSource || e.DetailType != refresh.EventDetailType || d.Generation == 0 {
			t.Fatalf("entry %+v", e)
		}
		got = append(got, fmt.Sprintf("%s %s/%s/%s v%d by %s", d.Op, d.Tenant, d.Namespace, d.Table, d.Version, d.By))
	}
	slices.Sort(got) // one entry per change, in no order the test needs
	want := []string{"create acme/sales/returns v1 by arn:aws:iam::123456789012:role/acme-producer", "drop acme/sales/orders v2 by arn:aws:iam::123456789012:user/alice"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events on the bus:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// ddbKeys lists the keys under prefix in the cloud's table (one
// consistent scan: a test's table is small).
func (c *cloud) ddbKeys(t *testing.T, prefix string) ([]string, error) {
	t.Helper()
	out, err := c.ddb.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(c.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, item := range out.Items {
		if k, ok := item["pk"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(k.Value, prefix) {
			keys = append(keys, k.Value)
		}
	}
	return keys, nil
}
