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
)

// countingStore is a blob store that counts the bytes its Gets return and
// its Puts write.
type countingStore struct {
	blobstore.Store
	read, written atomic.Int64
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
// the read path (issue 25, item 2, "measure first"): over heapSize
// registrations (1M in the full run) after a full build, a batch of one new
// table in each of 1, 10 and 100 tenants is applied by the real refresh
// code (Publisher.Apply, as the stream trigger calls it) to a file blob
// store, and a discovery Source polling the same file loads the result.
// Bytes are counted at the blob store: what refresh reads and writes, and
// what one discovery task fetches.
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

	r.printf("## 9. Publish cost of one stream batch (issue 25: measured before segments are stored apart)\n\n")
	r.printf("%d registrations over %d tenants in a memstore, published in full (a %.2f MB blob). Each batch adds one table to each of N tenants and is applied by refresh's Publisher.Apply (the stream trigger's path: read the current blob, re-encode the batch's tenants, conditional PUT of the whole blob) to a file blob store; then a discovery Source polling that file loads the new blob. Bytes are counted at the blob store.\n\n",
		c.heapSize, tenants, float64(full.BlobBytes)/1e6)
	r.printf("| tenants changed | refresh reads MB | refresh writes MB | refresh s | refresh peak heap MB | discovery fetches MB per task | discovery reload s |\n|---|---|---|---|---|---|---|\n")
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
		blobs.read.Store(0)
		blobs.written.Store(0)
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
		task.read.Store(0)
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
		r.printf("| %d | %.2f | %.2f | %.3f | %.0f | %.2f | %.3f |\n", n, float64(blobs.read.Load())/1e6, float64(blobs.written.Load())/1e6,
			applied.Seconds(), float64(peak)/1e6, float64(task.read.Load())/1e6, reload.Seconds())
	}
	r.printf("\nToday's layout moves the whole blob on every change, on both sides: the bytes follow the catalog, not the batch.\n\n")
	if oneWrite >= 0 && c.heapSize == 1_000_000 {
		size := "1M tables"
		r.target("bytes written by refresh per stream batch, 1 tenant changed, "+size, "≈ 24 MB (whole blob)", "≤ 1 MB", oneWrite <= 1e6, "%.2f MB", float64(oneWrite)/1e6)
		r.target("bytes fetched per discovery task per change, 1 tenant changed, "+size, "≈ 24 MB", "≤ 1 MB", oneFetch <= 1e6, "%.2f MB", float64(oneFetch)/1e6)
	}
	return nil
}
