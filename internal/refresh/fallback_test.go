package refresh_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// busRecorder is an EventBridge endpoint that records the PutEvents
// requests the SDK's client sends (AWS JSON 1.1) and accepts them, as the
// localstack suite's does: refresh's real announcer is checked on the wire.
type busRecorder struct {
	mu      sync.Mutex
	details []refresh.EventDetail
}

func (b *busRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var in struct{ Entries []struct{ Detail string } }
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" || json.Unmarshal(body, &in) != nil {
		http.Error(w, `{"__type":"SerializationException"}`, http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		var d refresh.EventDetail
		_ = json.Unmarshal([]byte(e.Detail), &d)
		b.details = append(b.details, d)
		ids[i] = fmt.Sprintf(`{"EventId":"%d"}`, len(b.details))
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fmt.Fprintf(w, `{"FailedEntryCount":0,"Entries":[%s]}`, strings.Join(ids, ","))
}

// announced lists what the bus was told, sorted: "op tenant/ns/table vN at G".
func (b *busRecorder) announced() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, d := range b.details {
		out = append(out, fmt.Sprintf("%s %s/%s/%s v%d at %d", d.Op, d.Tenant, d.Namespace, d.Table, d.Version, d.Generation))
	}
	slices.Sort(out)
	return out
}

// withBus gives p refresh's EventBridge announcer, its SDK client sending to
// a recorder.
func withBus(t *testing.T, p *refresh.Publisher) *busRecorder {
	t.Helper()
	bus := &busRecorder{}
	srv := httptest.NewServer(bus)
	t.Cleanup(srv.Close)
	client := eventbridge.New(eventbridge.Options{BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", Credentials: aws.AnonymousCredentials{}})
	p.Events = &refresh.EventBridge{Client: client, Bus: "lake-changes"}
	return bus
}

// A stream batch that falls back to a full scan (over MaxIncremental keys,
// or with the reconciliation due) still announces the changes its keys
// brought into the snapshot, at the generation the scan published, as an
// incremental batch does (issue 38, row 11: 0 of 6 and 0 of 1 were).
func TestFullScanFallbackAnnouncesTheBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("over MaxIncremental", func(t *testing.T) {
		t.Parallel()
		c, _, p, _, clk := counted(t)
		bus := withBus(t, p)
		p.MaxIncremental = 4
		register(t, c, "a", 1)
		run(t, p)
		keys := []string{catalog.ChangesKey, "quota/acme"}
		var want []string
		for i := range 5 {
			name := fmt.Sprintf("b%d", i)
			register(t, c, name, i+2)
			keys = append(keys, "tbl/acme/ns/"+name)
			want = append(want, fmt.Sprintf("create acme/ns/%s v1 at 2", name))
		}
		if _, err := c.Update(ctx, catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: "a"},
			catalog.TableSpec{Location: "/d/a", Schema: catalogtest.WideSchema(9, 4)}, catalog.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, "tbl/acme/ns/a")
		want = append(want, "update acme/ns/a v2 at 2")
		slices.Sort(want)
		clk.t = clk.t.Add(time.Second)
		res, err := p.Apply(ctx, keys)
		if err != nil || !res.Scanned || res.Incremental || res.Outcome != refresh.Published || res.Generation != 2 {
			t.Fatalf("apply of %d keys over a limit of 4 = %+v, %v; want a published full scan at generation 2", len(keys), res, err)
		}
		if got := bus.announced(); res.Announced != 6 || res.AnnounceError != "" || !slices.Equal(got, want) {
			t.Fatalf("announced %d (%q):\n%s\nwant 6:\n%s", res.Announced, res.AnnounceError, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("reconciliation due", func(t *testing.T) {
		t.Parallel()
		c, _, p, _, clk := counted(t)
		bus := withBus(t, p)
		p.Reconcile = time.Hour
		register(t, c, "a", 1)
		run(t, p)
		register(t, c, "b", 2)
		clk.t = clk.t.Add(2 * time.Hour)
		res, err := p.Apply(ctx, []string{"tbl/acme/ns/b", catalog.ChangesKey})
		if err != nil || !res.Scanned || res.Outcome != refresh.Published {
			t.Fatalf("apply past the reconciliation interval = %+v, %v; want a published full scan", res, err)
		}
		want := []string{fmt.Sprintf("create acme/ns/b v1 at %d", res.Generation)}
		if got := bus.announced(); res.Announced != 1 || res.AnnounceError != "" || !slices.Equal(got, want) {
			t.Fatalf("announced %d (%q): %q; want %q", res.Announced, res.AnnounceError, got, want)
		}
	})
}
