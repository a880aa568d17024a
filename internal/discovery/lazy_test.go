package discovery_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/wire"
)

// answers is every tenant's GetTables with schemas, in a comparable form.
func answers(t *testing.T, e *env, tenants []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tenant := range tenants {
		rows, err := e.tables(as(t, tenant), &flightsql.GetTablesOpts{IncludeSchema: true})
		if err != nil {
			t.Fatalf("GetTables as %s: %v", tenant, err)
		}
		var b bytes.Buffer
		for _, r := range rows {
			fmt.Fprintf(&b, "%s/%s/%s %s %x\n", r.catalog, r.ns, r.name, r.typ, r.schema)
		}
		out[tenant] = b.String()
	}
	return out
}

// A cache budget far below one tenant's prepared size still answers every
// tenant exactly (each request rebuilds from the compressed segment).
func TestTinyCacheStillAnswersExactly(t *testing.T) {
	t.Parallel()
	var tenants []string
	build := func(e *env) {
		for i := range 6 {
			tenant := fmt.Sprintf("tenant%d", i)
			for j := range 5 + i {
				e.register(tenant, fmt.Sprintf("ns%d", j%2), fmt.Sprintf("t%02d", j), wide(i*10+j))
			}
		}
		e.publish()
	}
	for i := range 6 {
		tenants = append(tenants, fmt.Sprintf("tenant%d", i))
	}
	roomy := newEnv(t, discovery.Options{CacheBytes: 1 << 30})
	build(roomy)
	tiny := newEnv(t, discovery.Options{CacheBytes: 1})
	build(tiny)
	want := answers(t, roomy, tenants)
	for round := range 2 {
		got := answers(t, tiny, tenants)
		for _, tenant := range tenants {
			if got[tenant] != want[tenant] {
				t.Fatalf("round %d, %s under a 1-byte cache:\n%s\nwant\n%s", round, tenant, got[tenant], want[tenant])
			}
		}
	}
	if st := tiny.svc.CacheStats(); st.Evictions == 0 || st.Builds < uint64(2*len(tenants)) {
		t.Fatalf("tiny cache stats %+v: want evictions and a rebuild per request", st)
	}
}

// A new blob in which only one tenant changed rebuilds only that tenant;
// the others keep their prepared state. GetSqlInfo's generation and change
// time are each tenant's own, so the unchanged tenant's stay put.
func TestReloadRebuildsOnlyChangedTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.register("globex", "finance", "ledger", wide(2))
	e.publish()
	_ = answers(t, e, []string{"acme", "globex"})
	before := e.svc.CacheStats()
	acme1, globex1 := sqlInfo(t, e, "acme"), sqlInfo(t, e, "globex")

	e.register("acme", "sales", "returns", wide(3))
	e.publish()
	_ = answers(t, e, []string{"acme", "globex"})
	after := e.svc.CacheStats()
	if got := after.Builds - before.Builds; got != 1 {
		t.Fatalf("%d tenants rebuilt after a reload where one changed, want 1", got)
	}
	acme2, globex2 := sqlInfo(t, e, "acme"), sqlInfo(t, e, "globex")
	if acme2[wire.SqlInfoSnapshotGeneration] == acme1[wire.SqlInfoSnapshotGeneration] ||
		acme2[wire.SqlInfoSnapshotCreatedAt] == acme1[wire.SqlInfoSnapshotCreatedAt] {
		t.Fatalf("changed tenant's freshness %v → %v, want a new generation and time", acme1, acme2)
	}
	if globex2[wire.SqlInfoSnapshotGeneration] != globex1[wire.SqlInfoSnapshotGeneration] ||
		globex2[wire.SqlInfoSnapshotCreatedAt] != globex1[wire.SqlInfoSnapshotCreatedAt] {
		t.Fatalf("unchanged tenant's freshness %v → %v: it reveals another tenant's write", globex1, globex2)
	}
}

// sqlInfo returns the custom freshness ids of the caller's tenant.
func sqlInfo(t *testing.T, e *env, tenant string) map[uint32]string {
	t.Helper()
	ctx := as(t, tenant)
	_, recs, err := e.fetch(ctx)(e.client.GetSqlInfo(ctx, []flightsql.SqlInfo{wire.SqlInfoSnapshotGeneration, wire.SqlInfoSnapshotCreatedAt}))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]string{}
	for _, rec := range recs {
		ids := rec.Column(0).(*array.Uint32)
		vals := rec.Column(1).(*array.DenseUnion)
		for i := 0; i < int(rec.NumRows()); i++ {
			child := vals.Field(vals.ChildID(i))
			out[ids.Value(i)] = child.ValueStr(int(vals.ValueOffset(i)))
		}
		rec.Release()
	}
	if len(out) != 2 {
		t.Fatalf("GetSqlInfo as %s answered %v, want both freshness ids", tenant, out)
	}
	return out
}

// The blob fixtures of every version a deployed discovery may meet
// (pkg/snapshot/testdata: versions 4 and 5, what earlier releases' refresh
// wrote, and version 6, this release's, in its one-file form) load and
// serve exactly what they hold.
func TestBlobFixturesServe(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"v4.lakesnap", "v5.lakesnap", "v6.lakesnap"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fixture, err := os.ReadFile(filepath.Join("..", "..", "pkg", "snapshot", "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			want, err := snapshot.Open(fixture, snapshot.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, discovery.Options{})
			if _, err := e.blobs.Put(context.Background(), fixture, blobstore.Condition{IfNoneMatch: true}); err != nil {
				t.Fatal(err)
			}
			if loaded, err := e.src.Poll(context.Background()); err != nil || !loaded {
				t.Fatalf("poll of the %s fixture: %v %v", name, loaded, err)
			}
			for _, entry := range want.Entries() {
				seg, err := want.Tenant(context.Background(), entry.Tenant)
				if err != nil {
					t.Fatal(err)
				}
				defer seg.Release()
				for _, include := range []bool{false, true} {
					rows, err := e.tables(as(t, entry.Tenant), &flightsql.GetTablesOpts{IncludeSchema: include})
					if include && seg.Tables.SchemaRef.NullN() > 0 {
						if codeOf(err) != codes.FailedPrecondition {
							t.Fatalf("%s with schemas: %v, want FailedPrecondition (a table has none)", entry.Tenant, err)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					if len(rows) != seg.NumTables() {
						t.Fatalf("%s: %d rows, want %d", entry.Tenant, len(rows), seg.NumTables())
					}
					for i, r := range rows {
						want := seg.Table(i)
						if r.ns != want.Namespace || r.name != want.Name || r.typ != want.TableType || include && !bytes.Equal(r.schema, want.SchemaIPC) {
							t.Fatalf("%s row %d = %s.%s %s, want %s.%s %s", entry.Tenant, i, r.ns, r.name, r.typ, want.Namespace, want.Name, want.TableType)
						}
					}
				}
			}
		})
	}
}

// Every single-bit flip of a blob, and of one tenant's segment, is
// rejected at load while the last good snapshot keeps serving.
func TestDamagedBlobsKeepTheLastGoodServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.register("globex", "finance", "ledger", wide(2))
	e.publish()
	good, err := e.blobs.Get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	want := answers(t, e, []string{"acme", "globex"})
	etag := good.ETag
	for i := 10; i < len(good.Data); i += max(1, len(good.Data)/120) {
		bad := bytes.Clone(good.Data)
		bad[i] ^= 0x04
		var err error
		if etag, err = e.blobs.Put(context.Background(), bad, blobstore.Condition{IfMatch: etag}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.src.Poll(context.Background()); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Fatalf("flip at byte %d of %d: poll %v, want ErrCorrupt", i, len(good.Data), err)
		}
		if got := answers(t, e, []string{"acme", "globex"}); got["acme"] != want["acme"] || got["globex"] != want["globex"] {
			t.Fatalf("after a rejected blob (flip at %d) the answers changed", i)
		}
	}
	// Every single-bit flip of one tenant's segment in a one-file blob is
	// rejected at load.
	built, err := scan.Build(context.Background(), e.store, scan.BuildOptions{Generation: e.gen + 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	one, err := built.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	index := built.Written.Entries
	start := snapshot.HeaderSize + int(built.Written.Header.ManifestBytes)
	for i := start; i < start+index[0].StoredBytes; i++ {
		for bit := range 8 {
			bad := bytes.Clone(one)
			bad[i] ^= 1 << bit
			if etag, err = e.blobs.Put(context.Background(), bad, blobstore.Condition{IfMatch: etag}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.src.Poll(context.Background()); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("flip of bit %d at byte %d of %s's segment: poll %v, want ErrCorrupt", bit, i-start, index[0].Tenant, err)
			}
		}
		if (i-start)%97 == 0 {
			if got := answers(t, e, []string{"acme", "globex"}); got["acme"] != want["acme"] || got["globex"] != want["globex"] {
				t.Fatalf("after a rejected segment flip at %d the answers changed", i-start)
			}
		}
	}
	for _, n := range []int{0, 50, 104, len(good.Data) / 2, len(good.Data) - 1} {
		var err error
		if etag, err = e.blobs.Put(context.Background(), good.Data[:n], blobstore.Condition{IfMatch: etag}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.src.Poll(context.Background()); err == nil {
			t.Fatalf("truncation to %d bytes loaded", n)
		}
	}
	if got := answers(t, e, []string{"acme", "globex"}); got["acme"] != want["acme"] || got["globex"] != want["globex"] {
		t.Fatal("after rejected truncations the answers changed")
	}
}

// A manifest whose new segment of one tenant is missing, then damaged, is
// taken for every other tenant while that tenant keeps its last good state
// (it was rejected whole, and never taken while it named the segment);
// stored right, the segment loads at the next attempt, and a load fetches
// only the segment the serving view lacks.
func TestSegmentsApartDamagedOrMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, discovery.Options{})
	clk := &fakeClock{time.Now()}
	e.src.Now = clk.now
	e.register("acme", "sales", "orders", wide(1))
	e.register("globex", "finance", "ledger", wide(2))
	e.publish()
	if st := e.src.Status(); st.SegmentsFetched != 2 {
		t.Fatalf("first load fetched %d segments, want 2", st.SegmentsFetched)
	}
	want := answers(t, e, []string{"acme", "globex"})
	e.register("acme", "sales", "returns", wide(3))
	next, err := scan.Build(ctx, e.store, scan.BuildOptions{Generation: e.gen + 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	w := next.Written
	acme := hex.EncodeToString(w.Entries[0].Address[:])
	if w.Entries[0].Tenant != "acme" {
		t.Fatalf("first tenant %q", w.Entries[0].Tenant)
	}
	cur, err := e.blobs.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, seg := range w.Segments[1:] {
		if err := e.blobs.PutSegment(ctx, hex.EncodeToString(w.Entries[i+1].Address[:]), seg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.blobs.Put(ctx, w.Manifest, blobstore.Condition{IfMatch: cur.ETag}); err != nil {
		t.Fatal(err)
	}
	state := func(wantState string) {
		t.Helper()
		st := e.src.Status()
		if len(st.DegradedTenants) != 1 || st.DegradedTenants[0].Tenant != "acme" || st.DegradedTenants[0].State != wantState ||
			st.DegradedTenants[0].Serving != discovery.ServingLastGood {
			t.Fatalf("degraded tenants %+v; want acme, %s, serving its last good state", st.DegradedTenants, wantState)
		}
		if got := answers(t, e, []string{"acme", "globex"}); got["acme"] != want["acme"] || got["globex"] != want["globex"] {
			t.Fatal("answers changed while acme's segment did not load")
		}
	}
	// Missing: the manifest is taken; acme keeps its last good state.
	if loaded, err := e.src.Poll(ctx); !loaded || err != nil {
		t.Fatalf("poll of a manifest whose segment is missing: %v, %v; want a load", loaded, err)
	}
	state(discovery.SegmentMissing)
	// Damaged: still degraded at the next attempt.
	bad := bytes.Clone(w.Segments[0])
	bad[len(bad)/2] ^= 1
	if err := e.blobs.PutSegment(ctx, acme, bad); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(discovery.DefaultSegmentRetryMin)
	if _, err := e.src.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	state(discovery.SegmentDamaged)
	// Stored right, it loads at the attempt after, fetching acme's
	// segment alone (globex's is held).
	if err := e.blobs.PutSegment(ctx, acme, w.Segments[0]); err != nil {
		t.Fatal(err)
	}
	fetched := e.src.Status().SegmentsFetched
	clk.t = clk.t.Add(2 * discovery.DefaultSegmentRetryMin)
	if loaded, err := e.src.Poll(ctx); !loaded || err != nil {
		t.Fatalf("poll once the segment is stored right: %v, %v", loaded, err)
	}
	if n := e.src.Status().SegmentsFetched - fetched; n != 1 {
		t.Fatalf("the load fetched %d segments, want 1 (acme's; globex's is held)", n)
	}
	if got := answers(t, e, []string{"acme"}); got["acme"] == want["acme"] {
		t.Fatal("acme's answer did not change with its new table")
	}
}
