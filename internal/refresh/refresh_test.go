package refresh_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	"github.com/lake-catalog/lake/pkg/snapshot"
)

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*catalog.Catalog, *refresh.Publisher, *blobstore.File) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	blobs := blobstore.NewFile(filepath.Join(t.TempDir(), "catalog.lakesnap"))
	return catalog.New(st, catalog.Options{}), &refresh.Publisher{Store: st, Blobs: blobs, Now: func() time.Time { return now }}, blobs
}

func register(t *testing.T, c *catalog.Catalog, name string, seed int) {
	t.Helper()
	ref := catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: name}
	if _, _, err := c.Register(context.Background(), ref, catalog.TableSpec{Location: "/d/" + name, Schema: catalogtest.WideSchema(seed, 4)}); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, p *refresh.Publisher) refresh.Result {
	t.Helper()
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// published is what the current blob holds.
type published struct {
	Generation uint64
	CreatedAt  time.Time
	Counts     catalog.Counts
	// Tables are the tables in order.
	Tables []catalog.TableRef
}

// Tenant lists a tenant's table names.
func (p published) Tenant(tenant string) []string {
	var out []string
	for _, r := range p.Tables {
		if r.Tenant == tenant {
			out = append(out, r.Name)
		}
	}
	return out
}

func current(t *testing.T, blobs blobstore.Store) published {
	t.Helper()
	b, err := blobs.Get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return readPublished(t, blobs, b.Data)
}

// load opens a published blob: its manifest, with each segment from
// blobs (or a one-file blob), every segment read and checked once.
func load(t *testing.T, blobs blobstore.Store, data []byte) *snapshot.Reader {
	t.Helper()
	r, err := snapshot.Open(data, snapshot.ReaderOptions{Fetch: func(ctx context.Context, e snapshot.Entry) ([]byte, error) {
		return blobs.GetSegment(ctx, hex.EncodeToString(e.Address[:]), e.StoredBytes)
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Entries() {
		seg, err := r.Tenant(context.Background(), e.Tenant)
		if err != nil {
			t.Fatal(err)
		}
		seg.Release()
	}
	return r
}

func readPublished(t *testing.T, blobs blobstore.Store, data []byte) published {
	t.Helper()
	r := load(t, blobs, data)
	h := r.Header()
	out := published{Generation: h.Generation, CreatedAt: h.CreatedAt, Counts: h.Counts}
	for _, e := range r.Entries() {
		seg, err := r.Tenant(context.Background(), e.Tenant)
		if err != nil {
			t.Fatal(err)
		}
		for i := range seg.NumTables() {
			out.Tables = append(out.Tables, catalog.TableRef{Tenant: e.Tenant, Namespace: seg.Tables.Namespace.Value(i), Name: seg.Tables.Name.Value(i)})
		}
		seg.Release()
	}
	return out
}

// buildBlob is a full build of store's catalog, as another refresh would
// publish it.
func buildBlob(t *testing.T, store metastore.Store, opts scan.BuildOptions) []byte {
	t.Helper()
	b, err := scan.Build(context.Background(), store, opts)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := b.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

func TestPublishesOnlyChanges(t *testing.T) {
	t.Parallel()
	c, p, blobs := setup(t)
	register(t, c, "a", 1)
	if res := run(t, p); res.Outcome != refresh.Published || res.Generation != 1 || res.Counts.Tables != 1 || res.BlobBytes == 0 {
		t.Fatalf("first run = %+v", res)
	}
	if res := run(t, p); res.Outcome != refresh.Unchanged || res.Generation != 1 {
		t.Fatalf("run with no change = %+v", res)
	}
	register(t, c, "b", 2)
	if res := run(t, p); res.Outcome != refresh.Published || res.Generation != 2 {
		t.Fatalf("run after a change = %+v", res)
	}
	if s := current(t, blobs); s.Generation != 2 || s.Counts.Tables != 2 || !s.CreatedAt.Equal(now) {
		t.Fatalf("blob = generation %d, %d tables, created %v", s.Generation, s.Counts.Tables, s.CreatedAt)
	}
}

// A current blob that is not a snapshot is replaced, and the generation
// still grows (it comes from the clock).
func TestReplacesUnreadableBlob(t *testing.T) {
	t.Parallel()
	c, p, blobs := setup(t)
	register(t, c, "a", 1)
	if _, err := blobs.Put(context.Background(), []byte("garbage, not a snapshot"), blobstore.Condition{IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	res := run(t, p)
	if res.Outcome != refresh.Published || res.Generation != uint64(now.Unix()) {
		t.Fatalf("run over garbage = %+v, want published at generation %d", res, now.Unix())
	}
	if s := current(t, blobs); s.Counts.Tables != 1 {
		t.Fatalf("blob has %d tables", s.Counts.Tables)
	}
}

// racingBlobs lets another writer publish between this run's read and its
// write: the fault a single test process cannot time otherwise.
type racingBlobs struct {
	blobstore.Store
	other []byte
}

func (r *racingBlobs) Put(ctx context.Context, data []byte, cond blobstore.Condition) (string, error) {
	if r.other != nil {
		cur, _ := r.Store.GetPrefix(ctx, 1)
		if _, err := r.Store.Put(ctx, r.other, blobstore.Condition{IfMatch: cur.ETag}); err != nil {
			return "", err
		}
		r.other = nil
	}
	return r.Store.Put(ctx, data, cond)
}

func TestSupersededNeverOverwrites(t *testing.T) {
	t.Parallel()
	c, p, blobs := setup(t)
	register(t, c, "a", 1)
	run(t, p)
	register(t, c, "b", 2)
	// The other writer publishes generation 2 with the current tables.
	otherBlob := buildBlob(t, p.Store, scan.BuildOptions{Generation: 2, CreatedAt: now})
	p.Blobs = &racingBlobs{Store: blobs, other: otherBlob}
	register(t, c, "c", 3)
	res := run(t, p)
	if res.Outcome != refresh.Superseded {
		t.Fatalf("run that lost the race = %+v, want superseded", res)
	}
	got, _ := blobs.Get(context.Background(), "")
	if !bytes.Equal(got.Data, otherBlob) {
		t.Fatal("the losing run overwrote the other writer's blob")
	}
}

type failingBlobs struct{ blobstore.Store }

func (failingBlobs) Put(context.Context, []byte, blobstore.Condition) (string, error) {
	return "", errors.New("injected upload failure")
}

func TestUploadErrorPublishesNothing(t *testing.T) {
	t.Parallel()
	c, p, blobs := setup(t)
	register(t, c, "a", 1)
	p.Blobs = failingBlobs{blobs}
	if _, err := p.Run(context.Background()); err == nil {
		t.Fatal("Run with a failing upload succeeded")
	}
	if _, err := blobs.Get(context.Background(), ""); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("a blob exists after a failed upload: %v", err)
	}
}

func TestEMFLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	res := refresh.Result{Outcome: refresh.Published, Generation: 3, Scanned: true, Counts: catalog.Counts{Tables: 7, SchemaUnavailable: 1}, BlobBytes: 1234, SegmentsRepaired: 2,
		VersionsPurged: 5, HistoriesLeft: 1}
	if err := res.WriteEMF(&buf, "lake", now); err != nil {
		t.Fatal(err)
	}
	var line struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace string
				Metrics   []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Tables, SchemaUnavailable, Published, Scanned, BlobBytes, SegmentsRepaired int
		VersionsPurged, HistoriesLeft                                              int
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("EMF line %s: %v", buf.Bytes(), err)
	}
	m := line.AWS.CloudWatchMetrics
	if line.AWS.Timestamp != now.UnixMilli() || len(m) != 1 || m[0].Namespace != "lake" || len(m[0].Metrics) != 11 ||
		line.Tables != 7 || line.SchemaUnavailable != 1 || line.Published != 1 || line.Scanned != 1 || line.BlobBytes != 1234 || line.SegmentsRepaired != 2 ||
		line.VersionsPurged != 5 || line.HistoriesLeft != 1 {
		t.Fatalf("EMF line = %s", buf.Bytes())
	}
}
