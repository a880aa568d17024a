package discovery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// errInjected is what a recordingStore's Get fails with while failing.
var errInjected = errors.New("injected read failure")

// recordingStore reads through to a Store, records every Get (the ETag it
// named and the bytes it returned), fails every Get while fail is set, and
// holds every Get while hang is set (until it is cleared or the context
// ends).
type recordingStore struct {
	blobstore.Store
	fail, hang atomic.Bool

	mu   sync.Mutex
	gets []recordedGet
}

type recordedGet struct {
	ifNoneMatch string
	bytes       int
	err         error
}

func (r *recordingStore) Get(ctx context.Context, ifNoneMatch string) (blobstore.Blob, error) {
	for r.hang.Load() {
		select {
		case <-ctx.Done():
			return blobstore.Blob{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	b, err := blobstore.Blob{}, errInjected
	if !r.fail.Load() {
		b, err = r.Store.Get(ctx, ifNoneMatch)
	}
	r.mu.Lock()
	r.gets = append(r.gets, recordedGet{ifNoneMatch: ifNoneMatch, bytes: len(b.Data), err: err})
	r.mu.Unlock()
	return b, err
}

// lastGet returns the last Get recorded.
func (r *recordingStore) lastGet(t testing.TB) recordedGet {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.gets) == 0 {
		t.Fatal("no Get recorded")
	}
	return r.gets[len(r.gets)-1]
}

// blobFile is a snapshot blob file read through a recordingStore.
type blobFile struct {
	path  string
	store *recordingStore
}

func newBlobFile(t testing.TB) *blobFile {
	path := filepath.Join(t.TempDir(), "catalog.lakesnap")
	return &blobFile{path: path, store: &recordingStore{Store: blobstore.NewFile(path)}}
}

// write publishes a blob of generation gen holding tenant acme's tables
// and returns it.
func (f *blobFile) write(t testing.TB, gen uint64, tables ...string) []byte {
	t.Helper()
	st := memstore.New(memstore.Options{})
	c := catalog.New(st, catalog.Options{})
	for i, name := range tables {
		ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: name}
		if _, _, err := c.Register(context.Background(), ref, catalog.TableSpec{Location: "/d/" + name, Schema: wide(i)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := scan.Build(context.Background(), st, scan.BuildOptions{Generation: gen, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := b.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	f.writeBytes(t, blob)
	return blob
}

func (f *blobFile) writeBytes(t testing.TB, b []byte) {
	t.Helper()
	if err := os.WriteFile(f.path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// An unchanged blob costs a poll no bytes and no decoding: every poll names
// the serving blob's ETag, the store answers not-modified with no data, the
// view stays the same one, and the poll counts as successful.
func TestUnchangedPollFetchesNoBytes(t *testing.T) {
	t.Parallel()
	f := newBlobFile(t)
	reg := prometheus.NewRegistry()
	metrics := discovery.NewMetrics(reg)
	svc := discovery.NewService(discovery.Options{Metrics: metrics})
	src := discovery.NewSource(f.store, svc, metrics, quietLog())
	ctx := context.Background()

	f.write(t, 1, "orders")
	if loaded, err := src.Poll(ctx); err != nil || !loaded {
		t.Fatalf("first poll: got loaded %v, %v; want a load", loaded, err)
	}
	if g := f.store.lastGet(t); g.ifNoneMatch != "" || g.bytes == 0 {
		t.Fatalf("first Get: got If-None-Match %q and %d bytes, want none and the blob", g.ifNoneMatch, g.bytes)
	}
	served, err := f.store.Store.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	view := svc.View()
	unchanged := func() float64 { return counter(t, reg, "lake_discovery_snapshot_loads_total", "result", "unchanged") }
	for i := range 3 {
		before := time.Now()
		loaded, err := src.Poll(ctx)
		if err != nil || loaded {
			t.Fatalf("unchanged poll %d: got loaded %v, %v; want neither", i, loaded, err)
		}
		g := f.store.lastGet(t)
		if g.ifNoneMatch != served.ETag || g.bytes != 0 || !errors.Is(g.err, blobstore.ErrNotModified) {
			t.Fatalf("unchanged poll %d: got Get(If-None-Match %q) = %d bytes, %v; want Get(If-None-Match %q) = 0 bytes, ErrNotModified",
				i, g.ifNoneMatch, g.bytes, g.err, served.ETag)
		}
		if svc.View() != view {
			t.Fatalf("unchanged poll %d swapped the view", i)
		}
		if st := src.Status(); st.LastSuccessfulPoll.Before(before) || st.LastError != "" {
			t.Fatalf("unchanged poll %d: got last successful poll %v (poll began %v), last error %q; want a success", i, st.LastSuccessfulPoll, before, st.LastError)
		}
		if got := unchanged(); got != float64(i+1) {
			t.Fatalf("unchanged polls counted: got %v, want %d", got, i+1)
		}
	}

	f.write(t, 2, "orders", "returns")
	if loaded, err := src.Poll(ctx); err != nil || !loaded {
		t.Fatalf("poll of a new blob: got loaded %v, %v; want a load", loaded, err)
	}
	if g := f.store.lastGet(t); g.ifNoneMatch != served.ETag || g.bytes == 0 {
		t.Fatalf("Get of a new blob: got If-None-Match %q and %d bytes, want %q and the blob", g.ifNoneMatch, g.bytes, served.ETag)
	}
	if got := svc.View().Generation; got != 2 {
		t.Fatalf("generation: got %d, want 2", got)
	}
}

// counter sums metric's counters labelled name=value.
func counter(t testing.TB, reg *prometheus.Registry, metric, name, value string) float64 {
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
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == name && l.GetValue() == value {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// A poll is successful when it finds the blob unchanged or loads it; a
// failed read, a missing blob and a rejected blob are not, and leave the
// last successful poll where it was.
func TestPollSuccess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		change      func(t *testing.T, f *blobFile)
		wantSuccess bool
		wantErr     error
	}{
		{name: "unchanged", change: func(*testing.T, *blobFile) {}, wantSuccess: true},
		{name: "new blob", change: func(t *testing.T, f *blobFile) { f.write(t, 3, "orders", "returns") }, wantSuccess: true},
		{name: "same generation again", change: func(t *testing.T, f *blobFile) { f.write(t, 2, "returns") }, wantSuccess: true},
		{name: "read fails", change: func(_ *testing.T, f *blobFile) { f.store.fail.Store(true) }, wantErr: errInjected},
		{name: "no blob", change: func(t *testing.T, f *blobFile) {
			if err := os.Remove(f.path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "blob is a folder", change: func(t *testing.T, f *blobFile) {
			if err := os.Remove(f.path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(f.path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "corrupt blob", change: func(t *testing.T, f *blobFile) { f.writeBytes(t, []byte("LAKESNAP but corrupt")) }, wantErr: snapshot.ErrCorrupt},
		{name: "older generation", change: func(t *testing.T, f *blobFile) { f.write(t, 1, "orders") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newBlobFile(t)
			svc := discovery.NewService(discovery.Options{})
			src := discovery.NewSource(f.store, svc, nil, quietLog())
			f.write(t, 2, "orders")
			if loaded, err := src.Poll(context.Background()); err != nil || !loaded {
				t.Fatalf("first poll: got loaded %v, %v; want a load", loaded, err)
			}
			tc.change(t, f)
			before, start := src.Status().LastSuccessfulPoll, time.Now()
			_, err := src.Poll(context.Background())
			st := src.Status()
			if gotSuccess := !st.LastSuccessfulPoll.Before(start); gotSuccess != tc.wantSuccess {
				t.Fatalf("got success %v (last successful poll %v, poll began %v), want %v; poll error %v", gotSuccess, st.LastSuccessfulPoll, start, tc.wantSuccess, err)
			}
			if tc.wantSuccess {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil || st.LastError == "" || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("got error %v, last error %q; want an error (%v) in both", err, st.LastError, tc.wantErr)
			}
			if !st.LastSuccessfulPoll.Equal(before) || st.Generation != 2 || !st.Loaded {
				t.Fatalf("got last successful poll %v, generation %d, loaded %v; want %v, 2, true", st.LastSuccessfulPoll, st.Generation, st.Loaded, before)
			}
		})
	}
}

// A rejected blob is fetched and checked once: later polls name its ETag,
// get not-modified with no bytes, and report the same rejection (no
// success) until a good blob replaces it.
func TestRejectedBlobIsNotFetchedAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		reject  func(t *testing.T, f *blobFile)
		wantErr error
	}{
		{name: "corrupt", reject: func(t *testing.T, f *blobFile) { f.writeBytes(t, []byte("LAKESNAP but corrupt")) }, wantErr: snapshot.ErrCorrupt},
		{name: "older generation", reject: func(t *testing.T, f *blobFile) { f.write(t, 1, "orders") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newBlobFile(t)
			svc := discovery.NewService(discovery.Options{})
			src := discovery.NewSource(f.store, svc, nil, quietLog())
			ctx := context.Background()
			f.write(t, 2, "orders")
			if _, err := src.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			tc.reject(t, f)
			_, first := src.Poll(ctx)
			if first == nil || (tc.wantErr != nil && !errors.Is(first, tc.wantErr)) {
				t.Fatalf("first poll of the rejected blob: got %v, want a rejection (%v)", first, tc.wantErr)
			}
			bad, err := f.store.Store.Get(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			success := src.Status().LastSuccessfulPoll
			for i := range 2 {
				_, err := src.Poll(ctx)
				g := f.store.lastGet(t)
				if g.ifNoneMatch != bad.ETag || g.bytes != 0 {
					t.Fatalf("poll %d after the rejection: got Get(If-None-Match %q) = %d bytes, want Get(If-None-Match %q) = 0 bytes", i, g.ifNoneMatch, g.bytes, bad.ETag)
				}
				if err == nil || err.Error() != first.Error() {
					t.Fatalf("poll %d after the rejection: got %v, want %v", i, err, first)
				}
				if st := src.Status(); !st.LastSuccessfulPoll.Equal(success) || st.Generation != 2 {
					t.Fatalf("poll %d after the rejection: got last successful poll %v, generation %d; want %v, 2", i, st.LastSuccessfulPoll, st.Generation, success)
				}
			}
			f.write(t, 3, "orders", "returns")
			if loaded, err := src.Poll(ctx); err != nil || !loaded {
				t.Fatalf("poll of a good blob: got loaded %v, %v; want a load", loaded, err)
			}
			if g := f.store.lastGet(t); g.ifNoneMatch != bad.ETag || g.bytes == 0 {
				t.Fatalf("Get of the good blob: got If-None-Match %q and %d bytes, want %q and the blob", g.ifNoneMatch, g.bytes, bad.ETag)
			}
			if st := src.Status(); st.Generation != 3 || st.LastError != "" {
				t.Fatalf("after the good blob: got generation %d, last error %q; want 3, none", st.Generation, st.LastError)
			}
		})
	}
}
