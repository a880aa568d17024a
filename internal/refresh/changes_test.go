package refresh_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// countingStore counts the reads (Get and Counter) and scans a run makes
// of the real store.
type countingStore struct {
	metastore.Store
	gets, scans int
	// afterScan, when set, runs once right after the next scan has read
	// the store, before the run publishes.
	afterScan func()
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.gets++
	return s.Store.Get(ctx, key)
}

func (s *countingStore) Counter(ctx context.Context, key string) (uint64, error) {
	s.gets++
	return s.Store.Counter(ctx, key)
}

func (s *countingStore) ScanPrefix(ctx context.Context, prefix string) ([]metastore.Entry, error) {
	s.scans++
	es, err := s.Store.ScanPrefix(ctx, prefix)
	if f := s.afterScan; f != nil {
		s.afterScan = nil
		f()
	}
	return es, err
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func counted(t *testing.T) (*catalog.Catalog, *countingStore, *refresh.Publisher, *blobstore.File, *clock) {
	t.Helper()
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	blobs := blobstore.NewFile(filepath.Join(t.TempDir(), "catalog.lakesnap"))
	clk := &clock{now}
	return catalog.New(st, catalog.Options{}), st, &refresh.Publisher{Store: st, Blobs: blobs, Now: clk.now}, blobs, clk
}

// A run after no write reads the change counter once and scans nothing.
func TestIdleRunReadsOnlyTheCounter(t *testing.T) {
	t.Parallel()
	c, st, p, _, clk := counted(t)
	register(t, c, "a", 1)
	if res := run(t, p); res.Outcome != refresh.Published || !res.Scanned || res.Changes != 1 {
		t.Fatalf("first run = %+v", res)
	}
	clk.t = clk.t.Add(time.Minute)
	st.gets, st.scans = 0, 0
	res := run(t, p)
	if res.Outcome != refresh.Unchanged || res.Scanned || res.Generation != 1 || st.scans != 0 || st.gets != 1 {
		t.Fatalf("idle run = %+v with %d reads and %d scans; want unchanged, 1 read, no scan", res, st.gets, st.scans)
	}
	register(t, c, "b", 2)
	if res := run(t, p); res.Outcome != refresh.Published || !res.Scanned || res.Generation != 2 || res.Counts.Tables != 2 {
		t.Fatalf("run after a write = %+v", res)
	}
}

// A write that lands after a run's scan read the store, before it
// publishes, is seen by the next run: the run recorded the counter it read
// before its scan, and the write's bump moved the counter past it.
func TestWriteDuringTheScanIsSeenByTheNextRun(t *testing.T) {
	t.Parallel()
	c, st, p, blobs, clk := counted(t)
	register(t, c, "a", 1)
	run(t, p)
	register(t, c, "b", 2)
	st.afterScan = func() { register(t, c, "late", 3) }
	if res := run(t, p); res.Counts.Tables != 2 {
		t.Fatalf("the run whose scan missed the late write = %+v, want 2 tables", res)
	}
	clk.t = clk.t.Add(time.Minute)
	res := run(t, p)
	if !res.Scanned {
		t.Fatalf("run after a write during the last scan = %+v, want a scan", res)
	}
	if s := current(t, blobs); s.Counts.Tables != 3 {
		t.Fatalf("blob has %d tables, want 3 (the late write included)", s.Counts.Tables)
	}
}

// A write whose bump was lost (written past the catalog here) is healed by
// the reconciliation: idle runs miss it until the interval passes, then a
// full scan publishes it.
func TestReconciliationHealsALostBump(t *testing.T) {
	t.Parallel()
	c, st, p, blobs, clk := counted(t)
	p.Reconcile = time.Hour
	register(t, c, "a", 1)
	run(t, p)
	reg, _ := catalog.NewRegistration(catalog.TableSpec{Location: "/d/x", Schema: catalogtest.WideSchema(9, 3)}, now)
	val, _ := reg.MarshalJSON()
	if err := st.Put(context.Background(), "tbl/acme/ns/unbumped", val); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(59 * time.Minute)
	if res := run(t, p); res.Scanned {
		t.Fatalf("run within the interval = %+v, want idle", res)
	}
	clk.t = clk.t.Add(2 * time.Minute)
	if res := run(t, p); !res.Scanned || res.Outcome != refresh.Published || res.Counts.Tables != 2 {
		t.Fatalf("run past the interval = %+v, want a published full scan with 2 tables", res)
	}
	if s := current(t, blobs); s.Counts.Tables != 2 {
		t.Fatalf("blob has %d tables, want 2", s.Counts.Tables)
	}
}

// A blob whose header is intact but whose body is cut short is detected by
// its size and republished (not answered unchanged forever).
func TestTruncatedBlobIsRepublished(t *testing.T) {
	t.Parallel()
	c, _, p, blobs, _ := counted(t)
	register(t, c, "a", 1)
	run(t, p)
	path := blobs.Location()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-10], 0o600); err != nil {
		t.Fatal(err)
	}
	res := run(t, p)
	if res.Outcome != refresh.Published || res.Generation != 2 {
		t.Fatalf("run over a truncated blob = %+v, want published at generation 2", res)
	}
	if s := current(t, blobs); s.Counts.Tables != 1 {
		t.Fatalf("blob has %d tables", s.Counts.Tables)
	}
}

// A blob deleted after generation 3 restarts above 3, not at 1 (discovery
// refuses a generation older than the one it serves).
func TestMissingBlobRestartsAboveThePublishedGenerations(t *testing.T) {
	t.Parallel()
	c, _, p, blobs, _ := counted(t)
	for i, name := range []string{"a", "b", "c"} {
		register(t, c, name, i)
		run(t, p)
	}
	if err := os.Remove(blobs.Location()); err != nil {
		t.Fatal(err)
	}
	if res := run(t, p); res.Outcome != refresh.Published || res.Generation != 4 {
		t.Fatalf("run over a missing blob = %+v, want published at generation 4", res)
	}
}

// A conditional write refused because an older blob was put in place is an
// error, not superseded: nothing newer is serving.
func TestPreconditionFromAnOlderBlobIsAnError(t *testing.T) {
	t.Parallel()
	c, _, p, blobs, _ := counted(t)
	register(t, c, "a", 1)
	run(t, p)
	register(t, c, "b", 2)
	olderBlob := buildBlob(t, p.Store, scan.BuildOptions{Generation: 1, CreatedAt: now})
	p.Blobs = &racingBlobs{Store: blobs, other: olderBlob}
	res, err := p.Run(context.Background())
	if err == nil || res.Outcome == refresh.Superseded {
		t.Fatalf("run refused by an older blob = %+v, %v; want an error", res, err)
	}
}
