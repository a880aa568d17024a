package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// countingStore is a blob store that counts the bytes its Gets return and
// its Puts write, the blob's and the segments' alike, and the segments
// moved.
type countingStore struct {
	blobstore.Store
	read, written         atomic.Int64
	segsRead, segsWritten atomic.Int64
}

func (c *countingStore) reset() {
	c.read.Store(0)
	c.written.Store(0)
	c.segsRead.Store(0)
	c.segsWritten.Store(0)
}

func (c *countingStore) GetSegment(ctx context.Context, name string, maxBytes int) ([]byte, error) {
	b, err := c.Store.GetSegment(ctx, name, maxBytes)
	c.read.Add(int64(len(b)))
	c.segsRead.Add(1)
	return b, err
}

func (c *countingStore) PutSegment(ctx context.Context, name string, data []byte) error {
	err := c.Store.PutSegment(ctx, name, data)
	if err == nil {
		c.written.Add(int64(len(data)))
		c.segsWritten.Add(1)
	}
	return err
}

func (c *countingStore) Get(ctx context.Context, ifNoneMatch string) (blobstore.Blob, error) {
	b, err := c.Store.Get(ctx, ifNoneMatch)
	c.read.Add(int64(len(b.Data)))
	return b, err
}

func (c *countingStore) GetPrefix(ctx context.Context, n int) (blobstore.Blob, error) {
	b, err := c.Store.GetPrefix(ctx, n)
	c.read.Add(int64(len(b.Data)))
	return b, err
}

func (c *countingStore) Put(ctx context.Context, data []byte, cond blobstore.Condition) (string, error) {
	etag, err := c.Store.Put(ctx, data, cond)
	if err == nil {
		c.written.Add(int64(len(data)))
	}
	return etag, err
}

// benchPublish measures what one stream batch costs on the write path and
// the read path (issue 25, item 2): over heapSize registrations (1M in the
// full run) after a full build, a batch of one new table in each of 1, 10
// and 100 tenants is applied by the real refresh code (Publisher.Apply, as
// the stream trigger calls it) to a file blob store (the manifest and the
// segments beside it), and a discovery Source polling the same store loads
// the result. Bytes are counted at the blob store: what refresh reads and
// writes, and what one discovery task fetches. Beside each, what the
// previous release's one-file layout moved for the same batch: the whole
// blob, read and written by refresh and fetched by each task (its size is
// measured; that it moved it whole is the old code's rule).
func benchPublish(c config, r *report) error {
	ctx := context.Background()
	store, tenants, _, err := fillStore(ctx, c.heapSize)
	if err != nil {
		return err
	}
	// The value of one registration (fillStore's first), for the batches'
	// new tables.
	first, err := catalog.TableRef{Tenant: "tenant00000", Namespace: "ns0", Name: "t0"}.Key()
	if err != nil {
		return err
	}
	value, err := store.Get(ctx, first)
	if err != nil {
		return fmt.Errorf("publish: the store's first registration: %w", err)
	}
	dir, err := os.MkdirTemp("", "lakebench-publish-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "catalog.lakesnap")
	blobs := &countingStore{Store: blobstore.NewFile(path)}
	p := &refresh.Publisher{Store: store, Blobs: blobs}
	full, err := p.RunFull(ctx)
	if err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := discovery.NewService(discovery.Options{Log: quiet})
	task := &countingStore{Store: blobstore.NewFile(path)}
	src := discovery.NewSource(task, svc, nil, quiet)
	if loaded, err := src.Poll(ctx); err != nil || !loaded {
		return fmt.Errorf("publish: discovery's first load: loaded %v, %v", loaded, err)
	}

	r.printf("## 9. Publish cost of one stream batch (issue 25: segments stored apart)\n\n")
	r.printf("%d registrations over %d tenants in a memstore, published in full: a %.3f MB manifest and %d segments of %.2f MB (the one-file form would be %.2f MB). Each batch adds one table to each of N tenants and is applied by refresh's Publisher.Apply (the stream trigger's path: read the manifest and the batch's tenants' segments, re-encode those tenants, store their new segments, conditional PUT of the manifest, release the replaced segments) to a file blob store; then a discovery Source polling that store loads the new manifest and the segments it lacks. Bytes are counted at the blob store. The previous release's one-file layout moved the whole blob for every batch, on both sides (its column: the blob's one-file size, measured).\n\n",
		c.heapSize, tenants, float64(full.BlobBytes)/1e6, full.SegmentsWritten, float64(full.BytesWritten)/1e6, float64(full.BlobBytes+full.BytesWritten)/1e6)
	r.printf("| tenants changed | refresh reads MB (segments) | refresh writes MB (segments) | refresh s | refresh peak heap MB | discovery fetches MB per task (segments) | discovery reload s | one-file layout: refresh reads + writes, each task fetches MB |\n|---|---|---|---|---|---|---|---|\n")
	var oneWrite, oneFetch int64 = -1, -1
	for _, n := range []int{1, 10, 100} {
		if n > tenants {
			continue
		}
		keys := make([]string, n)
		for i := range keys {
			ref := catalog.TableRef{Tenant: fmt.Sprintf("tenant%05d", i*(tenants/n)), Namespace: "changed", Name: fmt.Sprintf("batch%d_%d", n, i)}
			key, err := ref.Key()
			if err != nil {
				return err
			}
			if err := store.Put(ctx, key, value); err != nil {
				return err
			}
			keys[i] = key
		}
		blobs.reset()
		var res refresh.Result
		t0 := time.Now()
		peak := testenv.PeakHeap(func() { res, err = p.Apply(ctx, keys) })
		applied := time.Since(t0)
		if err != nil {
			return fmt.Errorf("publish: apply %d tenants: %w", n, err)
		}
		if res.Outcome != refresh.Published || !res.Incremental {
			return fmt.Errorf("publish: apply %d tenants: %s (incremental %v), want an incremental publish", n, res.Outcome, res.Incremental)
		}
		task.reset()
		t1 := time.Now()
		loaded, err := src.Poll(ctx)
		reload := time.Since(t1)
		if err != nil || !loaded {
			return fmt.Errorf("publish: discovery's reload after %d tenants: loaded %v, %v", n, loaded, err)
		}
		if got := svc.View().Generation; got != res.Generation {
			return fmt.Errorf("publish: discovery serves generation %d, refresh published %d", got, res.Generation)
		}
		if n == 1 {
			oneWrite, oneFetch = blobs.written.Load(), task.read.Load()
		}
		cur, err := blobs.Store.Get(ctx, "")
		if err != nil {
			return err
		}
		h, err := snapshot.ReadHeader(cur.Data)
		if err != nil {
			return err
		}
		whole := float64(snapshot.HeaderSize+h.BodyBytes) / 1e6
		r.printf("| %d | %.3f (%d) | %.3f (%d) | %.3f | %.0f | %.3f (%d) | %.3f | %.2f + %.2f, %.2f |\n", n,
			float64(blobs.read.Load())/1e6, blobs.segsRead.Load(), float64(blobs.written.Load())/1e6, blobs.segsWritten.Load(),
			applied.Seconds(), float64(peak)/1e6, float64(task.read.Load())/1e6, task.segsRead.Load(), reload.Seconds(), whole, whole, whole)
	}
	r.printf("\nThe bytes follow the batch: the manifest (about %.0f bytes a tenant, compressed) and the changed tenants' segments.\n\n",
		float64(full.BlobBytes)/float64(max(tenants, 1)))
	if oneWrite >= 0 && c.heapSize == 1_000_000 {
		size := "1M tables"
		r.target("bytes written by refresh per stream batch, 1 tenant changed, "+size, "≈ 24 MB (whole blob)", "≤ 1 MB", oneWrite <= 1e6, "%.3f MB", float64(oneWrite)/1e6)
		r.target("bytes fetched per discovery task per change, 1 tenant changed, "+size, "≈ 24 MB", "≤ 1 MB", oneFetch <= 1e6, "%.3f MB", float64(oneFetch)/1e6)
	}
	return nil
}
