package blobstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/testenv"
)

// conformance runs the same cases against any Store.
func conformance(t *testing.T, newStore func(t *testing.T) blobstore.Store) {
	ctx := context.Background()
	t.Run("missing", func(t *testing.T) {
		st := newStore(t)
		if _, err := st.Get(ctx, ""); !errors.Is(err, blobstore.ErrNotFound) {
			t.Fatalf("Get of a missing blob error = %v, want ErrNotFound", err)
		}
		if _, err := st.GetPrefix(ctx, 8); !errors.Is(err, blobstore.ErrNotFound) {
			t.Fatalf("GetPrefix of a missing blob error = %v, want ErrNotFound", err)
		}
		if _, err := st.Put(ctx, []byte("x"), blobstore.Condition{IfMatch: `"nope"`}); !errors.Is(err, blobstore.ErrPreconditionFailed) {
			t.Fatalf("If-Match on a missing blob error = %v, want ErrPreconditionFailed", err)
		}
	})
	t.Run("conditional_writes_and_reads", func(t *testing.T) {
		st := newStore(t)
		tag1, err := st.Put(ctx, []byte("first version"), blobstore.Condition{IfNoneMatch: true})
		if err != nil || tag1 == "" {
			t.Fatalf("create: %q, %v", tag1, err)
		}
		if _, err := st.Put(ctx, []byte("again"), blobstore.Condition{IfNoneMatch: true}); !errors.Is(err, blobstore.ErrPreconditionFailed) {
			t.Fatalf("second create error = %v, want ErrPreconditionFailed", err)
		}
		b, err := st.Get(ctx, "")
		if err != nil || string(b.Data) != "first version" || b.ETag != tag1 {
			t.Fatalf("Get = %q %q, %v", b.Data, b.ETag, err)
		}
		if _, err := st.Get(ctx, tag1); !errors.Is(err, blobstore.ErrNotModified) {
			t.Fatalf("Get If-None-Match current error = %v, want ErrNotModified", err)
		}
		p, err := st.GetPrefix(ctx, 5)
		if err != nil || string(p.Data) != "first" || p.ETag != tag1 {
			t.Fatalf("GetPrefix = %q %q, %v", p.Data, p.ETag, err)
		}
		tag2, err := st.Put(ctx, []byte("second version"), blobstore.Condition{IfMatch: tag1})
		if err != nil || tag2 == tag1 {
			t.Fatalf("replace: %q, %v", tag2, err)
		}
		if _, err := st.Put(ctx, []byte("stale writer"), blobstore.Condition{IfMatch: tag1}); !errors.Is(err, blobstore.ErrPreconditionFailed) {
			t.Fatalf("stale If-Match error = %v, want ErrPreconditionFailed", err)
		}
		b, err = st.Get(ctx, tag1)
		if err != nil || string(b.Data) != "second version" || b.ETag != tag2 {
			t.Fatalf("Get with an old ETag = %q %q, %v; want the new blob", b.Data, b.ETag, err)
		}
	})
	t.Run("racing_writers_one_wins", func(t *testing.T) {
		st := newStore(t)
		tag, err := st.Put(ctx, []byte("base"), blobstore.Condition{IfNoneMatch: true})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 6 {
			wg.Go(func() {
				_, err := st.Put(ctx, []byte{byte('a' + i)}, blobstore.Condition{IfMatch: tag})
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errors.Is(err, blobstore.ErrPreconditionFailed):
					t.Errorf("racing put: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d racing conditional writes won, want exactly 1", wins)
		}
	})
}

func TestFile(t *testing.T) {
	conformance(t, func(t *testing.T) blobstore.Store {
		return blobstore.NewFile(filepath.Join(t.TempDir(), "catalog.lakesnap"))
	})
}

func TestS3(t *testing.T) {
	srv := testenv.StartS3(t)
	n := 0
	conformance(t, func(t *testing.T) blobstore.Store {
		n++
		bucket := "blobs-" + string(rune('a'+n))
		srv.CreateBucket(t, bucket)
		st, err := blobstore.NewS3(srv.Client(), bucket, "snapshots/catalog.lakesnap", 0)
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}
