package blobstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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
		_, err := st.Put(ctx, []byte("x"), blobstore.Condition{IfMatch: `"nope"`})
		if !errors.Is(err, blobstore.ErrPreconditionFailed) {
			t.Fatalf("If-Match on a missing blob error = %v, want ErrPreconditionFailed", err)
		}
		// Each error says its package once ("blobstore: get s3://b/k: no
		// blob", not "…: blobstore: no blob").
		_, gerr := st.Get(ctx, "")
		for _, e := range []error{gerr, err} {
			if n := strings.Count(e.Error(), "blobstore:"); n != 1 {
				t.Errorf("%q says blobstore: %d times, want once", e, n)
			}
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
		if err != nil || string(b.Data) != "first version" || b.ETag != tag1 || b.Size != 13 {
			t.Fatalf("Get = %q %q size %d, %v", b.Data, b.ETag, b.Size, err)
		}
		if _, err := st.Get(ctx, tag1); !errors.Is(err, blobstore.ErrNotModified) {
			t.Fatalf("Get If-None-Match current error = %v, want ErrNotModified", err)
		}
		p, err := st.GetPrefix(ctx, 5)
		if err != nil || string(p.Data) != "first" || p.ETag != tag1 || p.Size != 13 {
			t.Fatalf("GetPrefix = %q %q size %d, %v; want the whole blob's size, 13", p.Data, p.ETag, p.Size, err)
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
	t.Run("segments", func(t *testing.T) {
		st := newStore(t)
		name := strings.Repeat("ab", 32)
		if _, err := st.GetSegment(ctx, name, 10); !errors.Is(err, blobstore.ErrNotFound) {
			t.Fatalf("GetSegment of a missing segment error = %v, want ErrNotFound", err)
		}
		for _, bad := range []string{"", "../x", strings.Repeat("AB", 32), strings.Repeat("a", 63), strings.Repeat("a", 63) + "/"} {
			if err := st.PutSegment(ctx, bad, []byte("x")); !errors.Is(err, blobstore.ErrBadSegmentName) {
				t.Errorf("PutSegment(%q) error = %v, want ErrBadSegmentName", bad, err)
			}
			if _, err := st.GetSegment(ctx, bad, 1); !errors.Is(err, blobstore.ErrBadSegmentName) {
				t.Errorf("GetSegment(%q) error = %v, want ErrBadSegmentName", bad, err)
			}
		}
		for range 2 { // storing a name again is no conflict
			if err := st.PutSegment(ctx, name, []byte("segment bytes")); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := st.GetSegment(ctx, name, 13); err != nil || string(b) != "segment bytes" {
			t.Fatalf("GetSegment = %q, %v", b, err)
		}
		if b, err := st.GetSegment(ctx, name, 12); err == nil {
			t.Fatalf("GetSegment over its bound = %q, want an error", b)
		}
		// The blob is apart from its segments.
		if _, err := st.Get(ctx, ""); !errors.Is(err, blobstore.ErrNotFound) {
			t.Fatalf("Get after segments were stored error = %v, want ErrNotFound", err)
		}
		if err := st.ReleaseSegments(ctx, []string{name, strings.Repeat("cd", 32)}); err != nil {
			t.Fatalf("ReleaseSegments (one of them never stored): %v", err)
		}
		if err := st.PutSegment(ctx, name, []byte("segment bytes")); err != nil {
			t.Fatalf("PutSegment after its release: %v", err)
		}
		if b, err := st.GetSegment(ctx, name, 13); err != nil || string(b) != "segment bytes" {
			t.Fatalf("GetSegment after it was stored again = %q, %v", b, err)
		}
		if !strings.Contains(st.SegmentLocation(name), ".segments/"+name) {
			t.Errorf("SegmentLocation = %q", st.SegmentLocation(name))
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

func TestMain(m *testing.M) { testenv.Main(m, nil) }

// Every URI form Open accepts gives a store that passes the conformance
// suite: a path, a file:// URI, and an s3:// URI opened with the default AWS
// configuration (the SDK's environment pointing at versitygw) and
// path-style addressing, as the discovery program and the refresh Lambda
// open theirs.
func TestOpenConformance(t *testing.T) {
	t.Run("path", func(t *testing.T) {
		conformance(t, func(t *testing.T) blobstore.Store {
			return open(t, filepath.Join(t.TempDir(), "catalog.lakesnap"), blobstore.OpenOptions{})
		})
	})
	t.Run("file URI", func(t *testing.T) {
		conformance(t, func(t *testing.T) blobstore.Store {
			return open(t, "file://"+filepath.ToSlash(filepath.Join(t.TempDir(), "catalog.lakesnap")), blobstore.OpenOptions{})
		})
	})
	t.Run("s3 URI", func(t *testing.T) {
		srv := testenv.SharedS3(t)
		t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
		t.Setenv("AWS_ACCESS_KEY_ID", srv.Access)
		t.Setenv("AWS_SECRET_ACCESS_KEY", srv.Secret)
		t.Setenv("AWS_REGION", "us-east-1")
		conformance(t, func(t *testing.T) blobstore.Store {
			return open(t, "s3://"+srv.NewBucket(t)+"/snapshots/catalog.lakesnap", blobstore.OpenOptions{S3PathStyle: true})
		})
	})
}

func open(t *testing.T, uri string, opts blobstore.OpenOptions) blobstore.Store {
	t.Helper()
	st, err := blobstore.Open(t.Context(), uri, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", uri, err)
	}
	return st
}

func TestFile(t *testing.T) {
	conformance(t, func(t *testing.T) blobstore.Store {
		return blobstore.NewFile(filepath.Join(t.TempDir(), "catalog.lakesnap"))
	})
	// A released segment's file is deleted.
	st := blobstore.NewFile(filepath.Join(t.TempDir(), "catalog.lakesnap"))
	name := strings.Repeat("0f", 32)
	if err := st.PutSegment(t.Context(), name, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseSegments(t.Context(), []string{name}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetSegment(t.Context(), name, 1); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("GetSegment of a released segment error = %v, want ErrNotFound", err)
	}
}

func TestS3(t *testing.T) {
	srv := testenv.SharedS3(t)
	conformance(t, func(t *testing.T) blobstore.Store {
		st, err := blobstore.NewS3(srv.Client(), srv.NewBucket(t), "snapshots/catalog.lakesnap", 0)
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
	// A released segment is tagged for the lifecycle rule, not deleted; a
	// segment stored again is untagged.
	bucket := srv.NewBucket(t)
	st, err := blobstore.NewS3(srv.Client(), bucket, "snapshots/catalog.lakesnap", 0)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("0f", 32)
	key := "snapshots/catalog.lakesnap.segments/" + name
	tags := func() []string {
		t.Helper()
		out, err := srv.Client().GetObjectTagging(t.Context(), &s3.GetObjectTaggingInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatalf("GetObjectTagging %s: %v", key, err)
		}
		var kv []string
		for _, tag := range out.TagSet {
			kv = append(kv, aws.ToString(tag.Key)+"="+aws.ToString(tag.Value))
		}
		return kv
	}
	if err := st.PutSegment(t.Context(), name, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := tags(); len(got) != 0 {
		t.Fatalf("a stored segment's tags: %q, want none", got)
	}
	if err := st.ReleaseSegments(t.Context(), []string{name}); err != nil {
		t.Fatal(err)
	}
	if got := tags(); len(got) != 1 || got[0] != blobstore.SegmentReleasedTag {
		t.Fatalf("a released segment's tags: %q, want %q", got, blobstore.SegmentReleasedTag)
	}
	if b, err := st.GetSegment(t.Context(), name, 1); err != nil || string(b) != "x" {
		t.Fatalf("a released segment before its expiry: %q, %v", b, err)
	}
	if err := st.PutSegment(t.Context(), name, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := tags(); len(got) != 0 {
		t.Fatalf("a segment stored again after its release: tags %q, want none", got)
	}
}

// The CDK stack's lifecycle rule and IAM statements name these (infra/cdk:
// SegmentsPrefix, the ReleasedSegments rule): they change together.
func TestSegmentNamesTheStackUses(t *testing.T) {
	if blobstore.SegmentsSuffix != ".segments/" || blobstore.SegmentReleasedTag != "lake-segment=released" {
		t.Fatalf("segments under %q, released tag %q: change infra/cdk/stack.go with them", blobstore.SegmentsSuffix, blobstore.SegmentReleasedTag)
	}
}
