package discovery_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// freshTask is a new discovery task (its own Service, Source, metrics and
// server) reading e's blob store: a deploy, a scale-out or a restart.
func (e *env) freshTask(t *testing.T) *env {
	t.Helper()
	task := newEnv(t, discovery.Options{})
	task.blobs = e.blobs
	task.src = discovery.NewSource(e.blobs, task.svc, task.metrics, quietLog())
	return task
}

// segmentName is the object name of tenant's segment in the published
// manifest.
func (e *env) segmentName(t *testing.T, tenant string) string {
	t.Helper()
	cur, err := e.blobs.Get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entry, ok := m.Entry(tenant)
	if !ok {
		t.Fatalf("the manifest names no segment of %s", tenant)
	}
	return hex.EncodeToString(entry.Address[:])
}

// damage makes the stored segment of tenant that the published manifest
// names no longer match its address (or, missing, deletes it), as a bad
// copy, an operator's mistake or a wrong release would. It returns a
// function that stores the segment right again, as refresh's repair does.
func (e *env) damage(t *testing.T, tenant string, missing bool) (repair func()) {
	t.Helper()
	ctx := context.Background()
	name := e.segmentName(t, tenant)
	good, err := e.blobs.GetSegment(ctx, name, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	repair = func() {
		t.Helper()
		if err := e.blobs.PutSegment(ctx, name, good); err != nil {
			t.Fatal(err)
		}
	}
	if missing {
		if err := e.blobs.ReleaseSegments(ctx, []string{name}); err != nil {
			t.Fatal(err)
		}
		return repair
	}
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x10
	if err := e.blobs.PutSegment(ctx, name, bad); err != nil {
		t.Fatal(err)
	}
	return repair
}

// fakeClock is a Source's clock that moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// publishStoring builds the next generation and publishes it as refresh
// does, except that each segment is stored as store returns it (nil: not
// stored), and polls it in. It returns the written blob.
func (e *env) publishStoring(t *testing.T, store func(tenant string, seg []byte) []byte) *snapshot.Written {
	t.Helper()
	ctx := context.Background()
	cur, err := e.blobs.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	prev, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.gen++
	b, err := scan.Build(ctx, e.store, scan.BuildOptions{Generation: e.gen, CreatedAt: time.Now(), Previous: prev.Entries()})
	if err != nil {
		t.Fatal(err)
	}
	w := b.Written
	for i, seg := range w.Segments {
		if seg = store(w.Entries[i].Tenant, seg); seg != nil {
			if err := e.blobs.PutSegment(ctx, hex.EncodeToString(w.Entries[i].Address[:]), seg); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := e.blobs.Put(ctx, w.Manifest, blobstore.Condition{IfMatch: cur.ETag}); err != nil {
		t.Fatal(err)
	}
	return w
}

// applyBatch publishes the next generation as a stream batch does
// (scan.Apply of keys to the published manifest: every other tenant's
// entry carried as it is) and stores the segments it wrote.
func (e *env) applyBatch(t *testing.T, keys ...string) {
	t.Helper()
	ctx := context.Background()
	cur, err := e.blobs.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	base, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{Fetch: func(ctx context.Context, entry snapshot.Entry) ([]byte, error) {
		return e.blobs.GetSegment(ctx, hex.EncodeToString(entry.Address[:]), entry.StoredBytes)
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.gen++
	applied, err := scan.Apply(ctx, e.store, base, keys, scan.ApplyOptions{Generation: e.gen, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	w := applied.Written
	for i, seg := range w.Segments {
		if seg != nil {
			if err := e.blobs.PutSegment(ctx, hex.EncodeToString(w.Entries[i].Address[:]), seg); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := e.blobs.Put(ctx, w.Manifest, blobstore.Condition{IfMatch: cur.ETag}); err != nil {
		t.Fatal(err)
	}
}

// metricValue sums metric's samples (gauges and counters) that carry the
// label pairs given.
func metricValue(t testing.TB, reg *prometheus.Registry, metric string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, fam := range families {
		if fam.GetName() != metric {
			continue
		}
	samples:
		for _, m := range fam.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				if !found {
					continue samples
				}
			}
			total += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return total
}

// admin answers a GET of path from the task's admin handler.
func (e *env) admin(t *testing.T, path string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	discovery.AdminHandler(e.src, e.reg).ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Code, w.Body.String()
}

// degradedStatus is what /status says of the degraded tenants.
type degradedStatus struct {
	Degraded []struct {
		Tenant, State, Serving string
		ServingGeneration      uint64 `json:"serving_generation"`
		Attempts               int
	} `json:"degraded_tenants"`
	SegmentFailures uint64 `json:"segment_failures"`
}

func (e *env) degraded(t *testing.T) degradedStatus {
	t.Helper()
	code, body := e.admin(t, "/status")
	var st degradedStatus
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil {
		t.Fatalf("/status: %d %s (%v)", code, body, err)
	}
	return st
}

// A new task over a snapshot in which one tenant's segment is damaged or
// missing serves every other tenant exactly, and answers that tenant
// UNAVAILABLE naming its state; /status, the metrics and /healthz say so
// (issue 38, row 6: the new task served no tenant at all).
func TestNewTaskServesEveryTenantWhoseSegmentVerifies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state   string
		missing bool
	}{{"damaged", false}, {"missing", true}} {
		t.Run(tc.state, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, discovery.Options{})
			e.register("acme", "sales", "orders", wide(1))
			e.register("globex", "finance", "ledger", wide(2))
			e.register("initech", "ops", "tickets", wide(3))
			e.publish()
			want := answers(t, e, []string{"acme", "globex", "initech"})
			repair := e.damage(t, "globex", tc.missing)

			task := e.freshTask(t)
			clk := &fakeClock{time.Now()}
			task.src.Now = clk.now
			if loaded, err := task.src.Poll(ctx); !loaded || err != nil {
				t.Fatalf("the new task's first poll: loaded %v, %v; want a load", loaded, err)
			}
			if got := answers(t, task, []string{"acme", "initech"}); got["acme"] != want["acme"] || got["initech"] != want["initech"] {
				t.Fatalf("the new task's answers differ from the published snapshot's:\n%v\nwant\n%v", got, want)
			}
			_, err := task.tables(as(t, "globex"), &flightsql.GetTablesOpts{})
			if s, _ := status.FromError(err); s.Code() != codes.Unavailable || !strings.Contains(s.Message(), `"globex"`) || !strings.Contains(s.Message(), tc.state) {
				t.Fatalf("globex: got %v; want UNAVAILABLE naming globex and its segment's state (%s)", err, tc.state)
			}
			st := task.degraded(t)
			if len(st.Degraded) != 1 || st.Degraded[0].Tenant != "globex" || st.Degraded[0].State != tc.state || st.Degraded[0].Serving != "unavailable" || st.SegmentFailures != 1 {
				t.Fatalf("/status: got %+v; want globex alone, %s, unavailable, 1 failure", st, tc.state)
			}
			if got := metricValue(t, task.reg, "lake_discovery_degraded_tenants"); got != 1 {
				t.Fatalf("lake_discovery_degraded_tenants = %v, want 1", got)
			}
			if got := metricValue(t, task.reg, "lake_discovery_segment_failures_total", "reason", tc.state); got != 1 {
				t.Fatalf("lake_discovery_segment_failures_total{reason=%q} = %v, want 1", tc.state, got)
			}
			if code, body := task.admin(t, "/healthz"); code != http.StatusOK || !strings.Contains(body, "1 of 3 tenants degraded") {
				t.Fatalf("/healthz: %d %q; want 200 saying 1 of 3 tenants degraded", code, body)
			}

			// Repaired in the store, the segment loads at the first poll
			// after its wait, and globex is served as published.
			repair()
			clk.t = clk.t.Add(discovery.DefaultSegmentRetryMin)
			if loaded, err := task.src.Poll(ctx); !loaded || err != nil {
				t.Fatalf("the poll after the repair: loaded %v, %v; want a load", loaded, err)
			}
			if got := answers(t, task, []string{"globex"}); got["globex"] != want["globex"] {
				t.Fatalf("globex after the repair:\n%s\nwant\n%s", got["globex"], want["globex"])
			}
			if st := task.src.Status(); len(st.DegradedTenants) != 0 || metricValue(t, task.reg, "lake_discovery_degraded_tenants") != 0 {
				t.Fatalf("after the repair: degraded %+v; want none", st.DegradedTenants)
			}
			if code, body := task.admin(t, "/healthz"); code != http.StatusOK || body != "ok\n" {
				t.Fatalf("/healthz after the repair: %d %q; want 200 ok", code, body)
			}
		})
	}
}

// A running task given a manifest whose new segment of one tenant is
// damaged takes the manifest for every other tenant and keeps serving that
// tenant's last good state; a later manifest naming the same damaged
// segment is taken too, without fetching it again before its retry is due
// (issue 38, row 6: every later manifest naming it was rejected).
func TestRunningTaskKeepsTheLastGoodStateOfADamagedTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, discovery.Options{})
	clk := &fakeClock{time.Now()}
	e.src.Now, e.src.SegmentRetryMin, e.src.SegmentRetryMax = clk.now, 10*time.Second, 40*time.Second
	e.register("acme", "sales", "orders", wide(1))
	e.register("globex", "finance", "ledger", wide(2))
	e.publish()
	first := answers(t, e, []string{"acme", "globex"})

	e.register("acme", "sales", "returns", wide(3))
	e.register("globex", "finance", "budget", wide(4))
	var globexSegment []byte
	e.publishStoring(t, func(tenant string, seg []byte) []byte {
		if tenant != "globex" {
			return seg
		}
		globexSegment = seg
		bad := bytes.Clone(seg)
		bad[len(bad)/2] ^= 0x10
		return bad
	})
	_, _ = e.src.Poll(ctx)
	second := answers(t, e, []string{"acme", "globex"})
	if second["acme"] == first["acme"] || !strings.Contains(second["acme"], "returns") {
		t.Fatalf("acme after the manifest with globex's damaged segment:\n%s\nwant its new table returns", second["acme"])
	}
	if second["globex"] != first["globex"] {
		t.Fatalf("globex after its damaged segment:\n%s\nwant its last good state\n%s", second["globex"], first["globex"])
	}
	st := e.degraded(t)
	if len(st.Degraded) != 1 || st.Degraded[0].Tenant != "globex" || st.Degraded[0].State != "damaged" ||
		st.Degraded[0].Serving != "last_good" || st.Degraded[0].ServingGeneration != 1 {
		t.Fatalf("/status: got %+v; want globex damaged, serving its last good state of generation 1", st)
	}

	// A later manifest names the same damaged segment: acme moves on, and
	// globex's segment is not fetched again before its retry is due.
	e.register("acme", "sales", "refunds", wide(5))
	fetched := e.src.Status().SegmentsFetched
	e.applyBatch(t, "tbl/acme/sales/refunds") // as a stream batch: globex's entry, and its damaged bytes, stay
	_, _ = e.src.Poll(ctx)
	third := answers(t, e, []string{"acme", "globex"})
	if !strings.Contains(third["acme"], "refunds") || third["globex"] != first["globex"] {
		t.Fatalf("after a later manifest: acme\n%s\nglobex\n%s\nwant acme with refunds, globex at its last good state", third["acme"], third["globex"])
	}
	if n := e.src.Status().SegmentsFetched - fetched; n != 1 {
		t.Fatalf("the later manifest's load fetched %d segments, want 1 (acme's; globex's retry is not due)", n)
	}

	// Fetched again only once each wait is over: 10 s after the first
	// failure, 20 s after the second, …, at most 40 s.
	poll := func(advance time.Duration, wantFetches int) {
		t.Helper()
		clk.t = clk.t.Add(advance)
		before := e.src.Status().SegmentsFetched
		if _, err := e.src.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		if n := e.src.Status().SegmentsFetched - before; n != uint64(wantFetches) {
			t.Fatalf("a poll %v on fetched %d segments, want %d", advance, n, wantFetches)
		}
	}
	poll(5*time.Second, 0)
	poll(5*time.Second, 1) // 10 s after the first failure
	if st := e.degraded(t); len(st.Degraded) != 1 || st.Degraded[0].Attempts != 2 || st.SegmentFailures != 2 {
		t.Fatalf("/status after the retry: %+v; want globex after 2 attempts", st)
	}
	poll(19*time.Second, 0)
	poll(time.Second, 1) // 20 s after the second
	poll(39*time.Second, 0)
	poll(time.Second, 1) // 40 s after the third: the longest wait
	poll(39*time.Second, 0)

	// Repaired in the store, it loads at the next attempt.
	if err := e.blobs.PutSegment(ctx, e.segmentName(t, "globex"), globexSegment); err != nil {
		t.Fatal(err)
	}
	poll(time.Second, 1)
	if got := answers(t, e, []string{"globex"}); !strings.Contains(got["globex"], "budget") {
		t.Fatalf("globex after its segment was repaired:\n%s\nwant its table budget", got["globex"])
	}
	if st := e.degraded(t); len(st.Degraded) != 0 || metricValue(t, e.reg, "lake_discovery_degraded_tenants") != 0 {
		t.Fatalf("/status after the repair: %+v; want no degraded tenant", st)
	}
	poll(time.Hour, 0)
}

// A task whose every tenant is degraded without a last good state serves
// nothing: health says so (503), so that a deploy whose tasks cannot read
// the segments goes no further; once a segment loads it is healthy.
func TestTaskServingNoTenantIsUnhealthy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	repair := e.damage(t, "acme", false)
	task := e.freshTask(t)
	clk := &fakeClock{time.Now()}
	task.src.Now = clk.now
	if _, err := task.src.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := task.admin(t, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no tenant can be served") {
		t.Fatalf("/healthz with every tenant degraded: %d %q; want 503, no tenant can be served", code, body)
	}
	repair()
	clk.t = clk.t.Add(discovery.DefaultSegmentRetryMin)
	if _, err := task.src.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := task.admin(t, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz after the repair: %d %q; want 200 ok", code, body)
	}
}
