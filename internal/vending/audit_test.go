package vending_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/internal/vending"
)

func vend(i int) vending.Vend {
	return vending.Vend{Who: "alice", Tenant: "acme", Namespace: "sales", Table: "orders",
		Location:   vending.Location{Bucket: "tenant-data", Prefix: "acme/orders/"},
		Expiration: time.Date(2026, 12, 6, 10, i, 0, 0, time.UTC), Cached: i%2 == 1}
}

// Every vend is an event on the bus, as the real SDK client sends it:
// source lake.catalog, detail-type "Credentials Vended", who, tenant,
// table, location and expiry in the detail.
func TestEventObserverPutsEveryVend(t *testing.T) {
	bus := testenv.StartEventBridge(t)
	client := eventbridge.New(eventbridge.Options{Region: "us-east-1", BaseEndpoint: aws.String(bus.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AK", "SK", "")})
	obs := vending.NewEventObserver(client, "lake-changes", nil)
	const n = 23
	for i := range n {
		obs.Vended(context.Background(), vend(i))
	}
	obs.Close()
	got := bus.Entries()
	if len(got) != n || obs.Put() != n || obs.Dropped() != 0 {
		t.Fatalf("entries = %d, put %d, dropped %d; want %d, %d, 0", len(got), obs.Put(), obs.Dropped(), n, n)
	}
	for i, e := range got {
		var d vending.EventDetail
		if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
			t.Fatal(err)
		}
		want := vending.EventDetail{Who: "alice", Tenant: "acme", Namespace: "sales", Table: "orders",
			Location: "s3://tenant-data/acme/orders/", Expiration: vend(i).Expiration, Cached: i%2 == 1}
		if e.EventBusName != "lake-changes" || e.Source != vending.EventSource || e.DetailType != vending.EventDetailType || d != want {
			t.Fatalf("entry %d = %+v, detail %+v; want %+v", i, e, d, want)
		}
	}
}

// A synchronous observer (a Lambda's) has put the event when Vended returns.
func TestSyncEventObserver(t *testing.T) {
	bus := testenv.StartEventBridge(t)
	client := eventbridge.New(eventbridge.Options{Region: "us-east-1", BaseEndpoint: aws.String(bus.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AK", "SK", "")})
	obs := vending.NewSyncEventObserver(client, "lake-changes", nil)
	obs.Vended(context.Background(), vend(0))
	if n := len(bus.Entries()); n != 1 || obs.Put() != 1 {
		t.Fatalf("entries = %d, put %d right after Vended; want 1, 1", n, obs.Put())
	}
}

// A bus that cannot be reached loses the events, counted, and the vend
// does not wait for it.
func TestEventObserverCountsWhatItCannotPut(t *testing.T) {
	client := eventbridge.New(eventbridge.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials: credentials.NewStaticCredentialsProvider("AK", "SK", ""), RetryMaxAttempts: 1})
	var logs bytes.Buffer
	obs := vending.NewEventObserver(client, "lake-changes", slog.New(slog.NewJSONHandler(&logs, nil)))
	obs.Vended(context.Background(), vend(0))
	obs.Close()
	if obs.Put() != 0 || obs.Dropped() != 1 || !strings.Contains(logs.String(), "vend events not put") {
		t.Fatalf("put %d, dropped %d, log %s; want 0, 1 and a warning", obs.Put(), obs.Dropped(), logs.String())
	}
}

// The log line names the vend and never the credentials.
func TestLogObserver(t *testing.T) {
	var logs bytes.Buffer
	vending.Observers(nil, vending.LogObserver{Log: slog.New(slog.NewJSONHandler(&logs, nil))}).Vended(context.Background(), vend(1))
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["msg"] != "credentials vended" || line["who"] != "alice" || line["tenant"] != "acme" || line["table"] != "orders" ||
		line["location"] != "s3://tenant-data/acme/orders/" || line["cached"] != true || line["expiration"] != "2026-12-06T10:01:00Z" {
		t.Fatalf("log line = %v", line)
	}
}
