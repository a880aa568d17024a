package refresh_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// streamEvent is a DynamoDB Streams batch as AWS hands it to Lambda
// (KEYS_ONLY view), built with aws-lambda-go's types.
func streamEvent(t *testing.T, changes ...[2]string) json.RawMessage {
	t.Helper()
	var ev events.DynamoDBEvent
	for i, c := range changes {
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{
			EventID: "id" + string(rune('0'+i)), EventName: c[0], EventSource: "aws:dynamodb", EventVersion: "1.1", AWSRegion: "us-east-1",
			EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/Registrations/stream/2026-12-03T00:00:00.000",
			Change: events.DynamoDBStreamRecord{
				Keys:           map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(c[1])},
				SequenceNumber: "1", SizeBytes: 40, StreamViewType: "KEYS_ONLY",
			},
		})
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseEvent(t *testing.T) {
	t.Parallel()
	scheduled := json.RawMessage(`{"version":"0","id":"x","detail-type":"Scheduled Event","source":"aws.events","account":"1","time":"2026-12-03T00:00:00Z","region":"us-east-1","resources":[],"detail":{}}`)
	tests := []struct {
		name       string
		event      json.RawMessage
		wantKeys   []string
		wantStream bool
		wantErr    string
	}{
		{"scheduled", scheduled, nil, false, ""},
		{"stream", streamEvent(t, [2]string{"INSERT", "tbl/acme/ns/a"}, [2]string{"MODIFY", catalog.ChangesKey}, [2]string{"REMOVE", "tbl/acme/ns/b"}),
			[]string{"tbl/acme/ns/a", catalog.ChangesKey, "tbl/acme/ns/b"}, true, ""},
		{"not JSON", json.RawMessage(`nope`), nil, false, "not a JSON object"},
		{"another event", json.RawMessage(`{"source":"aws.s3","detail-type":"Object Created"}`), nil, false, "neither a DynamoDB Streams batch"},
		{"empty batch", json.RawMessage(`{"Records":[]}`), nil, true, "without records"},
		{"record without a key", json.RawMessage(`{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{}}}]}`), nil, true, `has no string key "pk"`},
		{"numeric key", json.RawMessage(`{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"pk":{"N":"7"}}}}]}`), nil, true, `has no string key "pk"`},
		{"from another source", json.RawMessage(`{"Records":[{"eventID":"1","eventSource":"aws:kinesis","dynamodb":{"Keys":{"pk":{"S":"tbl/a/b/c"}}}}]}`), nil, true, "not aws:dynamodb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			keys, stream, err := refresh.ParseEvent(tt.event)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v, %v; want an error containing %q", keys, stream, err, tt.wantErr)
				}
				return
			}
			if err != nil || stream != tt.wantStream || strings.Join(keys, ",") != strings.Join(tt.wantKeys, ",") {
				t.Fatalf("got %v, %v, %v; want %v, %v", keys, stream, err, tt.wantKeys, tt.wantStream)
			}
		})
	}
}

// A stream batch is applied to the current blob without a scan: only the
// keys' registrations and their tenant's settings item are read, and the
// result is what a full scan gives.
func TestApplyIsIncremental(t *testing.T) {
	t.Parallel()
	c, st, p, blobs, clk := counted(t)
	register(t, c, "a", 1)
	register(t, c, "b", 2)
	run(t, p)
	register(t, c, "new", 3)
	if err := c.Drop(context.Background(), catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Second)
	st.gets, st.scans = 0, 0
	res, err := p.Apply(context.Background(), []string{"tbl/acme/ns/new", catalog.ChangesKey, "tbl/acme/ns/a", "quota/acme"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Incremental || res.Scanned || st.scans != 0 || res.Reads != 4 || res.Outcome != refresh.Published || res.Generation != 2 {
		t.Fatalf("apply = %+v with %d scans; want incremental, 4 reads (2 keys, the new table's iceberg state and acme's settings), no scan, published generation 2", res, st.scans)
	}
	got := current(t, blobs)
	want := readPublished(t, nil, buildBlob(t, st, scan.BuildOptions{Generation: 2, CreatedAt: clk.t}))
	if got.Counts != want.Counts || !slices.Equal(got.Tables, want.Tables) || !slices.Equal(got.Tenant("acme"), []string{"b", "new"}) {
		t.Fatalf("blob after apply: %+v %v; want b and new as a full build has them", got.Counts, got.Tables)
	}
	// The blob recorded the counter: the next scheduled run is idle.
	if res := run(t, p); res.Scanned || res.Outcome != refresh.Unchanged {
		t.Fatalf("scheduled run after the apply = %+v, want idle", res)
	}
}

// Apply falls back to a full scan without a usable blob, for a batch over
// MaxIncremental keys, and when the reconciliation is due.
func TestApplyFallsBackToAFullScan(t *testing.T) {
	t.Parallel()
	t.Run("no blob", func(t *testing.T) {
		t.Parallel()
		c, _, p, _, _ := counted(t)
		register(t, c, "a", 1)
		if res, err := p.Apply(context.Background(), []string{"tbl/acme/ns/a"}); err != nil || !res.Scanned || res.Incremental || res.Outcome != refresh.Published {
			t.Fatalf("apply without a blob = %+v, %v; want a published full scan", res, err)
		}
	})
	t.Run("large batch", func(t *testing.T) {
		t.Parallel()
		c, _, p, _, _ := counted(t)
		p.MaxIncremental = 2
		register(t, c, "a", 1)
		run(t, p)
		register(t, c, "b", 2)
		if res, err := p.Apply(context.Background(), []string{"tbl/acme/ns/b", catalog.ChangesKey, "quota/acme"}); err != nil || !res.Scanned || res.Incremental {
			t.Fatalf("apply of 3 keys over a limit of 2 = %+v, %v; want a full scan", res, err)
		}
	})
	t.Run("reconciliation due", func(t *testing.T) {
		t.Parallel()
		c, _, p, _, clk := counted(t)
		p.Reconcile = time.Hour
		register(t, c, "a", 1)
		run(t, p)
		register(t, c, "b", 2)
		clk.t = clk.t.Add(2 * time.Hour)
		if res, err := p.Apply(context.Background(), []string{"tbl/acme/ns/b"}); err != nil || !res.Scanned {
			t.Fatalf("apply past the reconciliation interval = %+v, %v; want a full scan", res, err)
		}
	})
}

// An incremental apply that loses its conditional write to a full refresh
// applies its batch again to the newer blob: no key is lost, and the
// generation only grows.
func TestApplyLosingARaceAppliesAgain(t *testing.T) {
	t.Parallel()
	c, _, p, blobs, _ := counted(t)
	register(t, c, "a", 1)
	run(t, p)
	// Another refresh publishes generation 2 (without "late") between this
	// apply's read and its write.
	otherBlob := buildBlob(t, p.Store, scan.BuildOptions{Generation: 2, CreatedAt: now, Marker: snapshot.Marker{Changes: 1, FullScanAt: now}})
	register(t, c, "late", 2)
	p.Blobs = &racingBlobs{Store: blobs, other: otherBlob}
	res, err := p.Apply(context.Background(), []string{"tbl/acme/ns/late"})
	if err != nil || res.Outcome != refresh.Published || res.Generation != 3 {
		t.Fatalf("apply that lost a race = %+v, %v; want published at generation 3", res, err)
	}
	if s := current(t, blobs); s.Counts.Tables != 2 || s.Generation != 3 {
		t.Fatalf("blob = generation %d with %d tables, want 3 with 2", s.Generation, s.Counts.Tables)
	}
}

// ParseEvent takes any bytes a Lambda invocation can carry: it never
// panics, and what it accepts is one of its two events — a stream batch
// with one non-empty key per record, or a scheduled event with none.
func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"detail-type":"Scheduled Event","source":"aws.events","detail":{}}`))
	f.Add([]byte(`{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"pk":{"S":"tbl/a/b/c"}}}}]}`))
	f.Add([]byte(`{"Records":[{"eventSource":"aws:dynamodb","dynamodb":{"Keys":{"pk":{"N":"1"}}}}]}`))
	f.Add([]byte(`{"Records":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, stream, err := refresh.ParseEvent(json.RawMessage(b))
		if err != nil {
			return
		}
		if !stream && keys != nil {
			t.Fatalf("a scheduled event with keys %v", keys)
		}
		if stream {
			if len(keys) == 0 {
				t.Fatal("an accepted stream batch without keys")
			}
			for _, k := range keys {
				if k == "" {
					t.Fatal("an accepted stream record with an empty key")
				}
			}
		}
	})
}

// The sequence (issue 24, finding 5): write W1, whose stream batch
// fails; write W2 to another tenant, whose batch is applied. The scheduled
// run must still see that W1 is not in the blob and scan, not answer
// unchanged until the daily reconciliation. A batch that only repeats a
// write the blob already has (a retried or late batch) must not hide W1
// either.
func TestFailedBatchIsNotHiddenByALaterOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		apply func(t *testing.T, c *catalog.Catalog, p *refresh.Publisher)
	}{
		{"another tenant's batch", func(t *testing.T, c *catalog.Catalog, p *refresh.Publisher) {
			w2 := catalog.TableRef{Tenant: "globex", Namespace: "ns", Name: "w2"}
			if _, _, err := c.Register(ctx, w2, catalog.TableSpec{Location: "/d/w2", Schema: catalogtest.WideSchema(3, 4)}); err != nil {
				t.Fatal(err)
			}
			if res, err := p.Apply(ctx, []string{"tbl/globex/ns/w2", catalog.ChangesKey, "quota/globex"}); err != nil || res.Outcome != refresh.Published || !res.Incremental {
				t.Fatalf("W2's batch = %+v, %v; want an incremental publish", res, err)
			}
		}},
		{"a batch the blob already has", func(t *testing.T, _ *catalog.Catalog, p *refresh.Publisher) {
			if res, err := p.Apply(ctx, []string{"tbl/acme/ns/a"}); err != nil || !res.Incremental {
				t.Fatalf("the repeated batch = %+v, %v; want it applied incrementally", res, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _, p, blobs, clk := counted(t)
			register(t, c, "a", 1)
			if res := run(t, p); !res.Scanned || res.Outcome != refresh.Published {
				t.Fatalf("first run = %+v", res)
			}
			register(t, c, "w1", 2) // its batch fails: never applied
			clk.t = clk.t.Add(time.Second)
			tc.apply(t, c, p)
			clk.t = clk.t.Add(15 * time.Minute)
			res := run(t, p)
			if !res.Scanned || res.Outcome != refresh.Published {
				t.Fatalf("scheduled run after W1's failed batch = %+v; want a scan that publishes W1", res)
			}
			if !slices.Contains(current(t, blobs).Tenant("acme"), "w1") {
				t.Fatal("W1 is not in the blob after the scheduled run")
			}
			// Then the schedule is idle again.
			if res := run(t, p); res.Scanned || res.Outcome != refresh.Unchanged {
				t.Fatalf("the run after = %+v, want idle", res)
			}
		})
	}
}

// A table written several times before its batch arrives (registered, then
// updated twice) is accounted for by the versions it moved by, so the
// scheduled run after the batch stays idle instead of scanning.
func TestBatchAccountsForEveryWriteOfATable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _, p, _, clk := counted(t)
	register(t, c, "a", 1)
	run(t, p)
	register(t, c, "x", 2)
	register(t, c, "a2", 3)
	for _, r := range []string{"x", "x", "a"} {
		ref := catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: r}
		if _, err := c.Update(ctx, ref, catalog.TableSpec{Schema: catalogtest.WideSchema(4, 4), Description: "v" + time.Now().String()}, catalog.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk.t = clk.t.Add(time.Second)
	if res, err := p.Apply(ctx, []string{"tbl/acme/ns/x", "tbl/acme/ns/x", "tbl/acme/ns/x", "tbl/acme/ns/a2", "tbl/acme/ns/a"}); err != nil || res.Outcome != refresh.Published {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	if res := run(t, p); res.Scanned || res.Outcome != refresh.Unchanged {
		t.Fatalf("scheduled run after a batch holding every write = %+v, want idle", res)
	}
}
