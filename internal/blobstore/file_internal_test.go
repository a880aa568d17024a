package blobstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocated is how many bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A conditional Get of a file that has not changed since the store read it
// reads nothing: discovery names the ETag of the blob it serves, or of one
// it rejected, at every poll, and a rejected manifest of 512 MiB cost 0.65
// CPU-s per second when each poll read and hashed it again (issue 38, row
// 11). A file changed in place, replaced, or written within the racy
// window is read again.
func TestFileNotModifiedReadsNothing(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "catalog.lakesnap")
	data := bytes.Repeat([]byte("lake"), 8<<20) // 32 MiB
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f := NewFile(path)
	f.now = func() time.Time { return time.Now().Add(time.Hour) } // every file is past the racy window
	first, err := f.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var err error
		if n := allocated(func() { _, err = f.Get(ctx, first.ETag) }); !errors.Is(err, ErrNotModified) || n > 1<<20 {
			t.Fatalf("Get %d naming the ETag of the unchanged file: got %v after allocating %d bytes; want ErrNotModified without reading the %d bytes",
				i, err, n, len(data))
		}
	}
	prefix, err := f.GetPrefix(ctx, 8)
	if err != nil || prefix.ETag != first.ETag || prefix.Size != int64(len(data)) || string(prefix.Data) != "lakelake" {
		t.Fatalf("GetPrefix of the unchanged file: got %q, ETag %s, size %d, %v; want lakelake, %s, %d", prefix.Data, prefix.ETag, prefix.Size, err, first.ETag, len(data))
	}

	// The same size written in place (a later modification time), then
	// replaced by a rename: each is read, and its ETag is the new content's.
	changed := bytes.Clone(data)
	changed[len(changed)/2] = 'X'
	if err := os.WriteFile(path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	got, err := f.Get(ctx, first.ETag)
	if err != nil || !bytes.Equal(got.Data, changed) || got.ETag == first.ETag {
		t.Fatalf("Get after a change in place: got %d bytes, ETag %s, %v; want the changed content under a new ETag", len(got.Data), got.ETag, err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Get(ctx, got.ETag); err != nil || got.ETag != first.ETag {
		t.Fatalf("Get after a replace: got ETag %s, %v; want %s", got.ETag, err, first.ETag)
	}

	// Within the racy window (the real clock: the file was just written),
	// a file is read at every Get, since a change in the same tick of the
	// file system's clock would keep its size and modification time.
	f.now = time.Now
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Get(ctx, first.ETag); err != nil || !bytes.Equal(got.Data, changed) {
		t.Fatalf("Get of a file changed within the racy window: got %d bytes, %v; want the changed content", len(got.Data), err)
	}
}

// A folder where the blob should be is an error that says so, as reading
// the file whole said it (discovery's /status shows it).
func TestFileFolderInPlaceOfTheBlob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.lakesnap")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, get := range []func() error{
		func() error { _, err := NewFile(path).Get(t.Context(), ""); return err },
		func() error { _, err := NewFile(path).GetPrefix(t.Context(), 8); return err },
	} {
		if err := get(); err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("got %v, want an error saying the blob is a directory", err)
		}
	}
}
