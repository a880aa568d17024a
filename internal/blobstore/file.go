package blobstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// File keeps the blob in a local file, for local mode, and its segments in
// the folder beside it named by the file's path and SegmentsSuffix. Writes
// are atomic (temp file, fsync, rename, fsync of the folder) and the blob's
// are conditional under an exclusive flock, so concurrent writers, in one
// process or several, behave like S3's conditional writes. The ETag is the
// SHA-256 of the content.
//
// A read remembers the file's version (its inode, size and modification
// time) with its ETag, so a conditional read of a file that has not changed
// since answers ErrNotModified from one stat, as S3 answers 304, instead of
// reading and hashing the whole file again: discovery names the ETag of the
// blob it serves, or of one it rejected, at every poll. A version is
// remembered only once the file is older than racyWindow, since a change
// within one tick of the file system's clock could keep the size and the
// modification time.
type File struct {
	path string
	mu   sync.Mutex
	now  func() time.Time

	seenMu sync.Mutex
	seen   seenVersion // guarded by seenMu
}

// seenVersion is the version of the file a read found, and its ETag.
type seenVersion struct {
	info fs.FileInfo // nil when none is remembered
	etag string
}

// racyWindow is how old a file must be before its version is remembered:
// longer than any file system's timestamp granularity (FAT's is 2 s).
const racyWindow = 3 * time.Second

var _ Store = (*File)(nil)

// NewFile returns a store for the blob at path; its folder must exist.
func NewFile(path string) *File { return &File{path: path, now: time.Now} }

// Location implements Store.
func (f *File) Location() string { return f.path }

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

func (f *File) read() (Blob, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return Blob{}, fmt.Errorf("blobstore: %s: %w", f.path, ErrNotFound)
	}
	if err != nil {
		return Blob{}, fmt.Errorf("blobstore: %w", err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return Blob{}, fmt.Errorf("blobstore: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(int(info.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(fh); err != nil {
		return Blob{}, fmt.Errorf("blobstore: read %s: %w", f.path, err)
	}
	b := buf.Bytes()
	blob := Blob{Data: b, ETag: etagOf(b), Size: int64(len(b))}
	f.seenMu.Lock()
	f.seen = seenVersion{}
	if int64(len(b)) == info.Size() && f.now().Sub(info.ModTime()) >= racyWindow {
		f.seen = seenVersion{info: info, etag: blob.ETag}
	}
	f.seenMu.Unlock()
	return blob, nil
}

// unchanged returns the remembered ETag when the file is still the version
// a read found ("" when it is not, or none is remembered), from one stat.
func (f *File) unchanged() string {
	info, err := os.Stat(f.path)
	if err != nil {
		return ""
	}
	f.seenMu.Lock()
	defer f.seenMu.Unlock()
	seen := f.seen.info
	if seen == nil || !os.SameFile(seen, info) || seen.Size() != info.Size() || !seen.ModTime().Equal(info.ModTime()) {
		return ""
	}
	return f.seen.etag
}

// Get implements Store. Naming the ETag of a version the store read before
// and that has not changed since costs one stat.
func (f *File) Get(ctx context.Context, ifNoneMatch string) (Blob, error) {
	if err := ctx.Err(); err != nil {
		return Blob{}, err
	}
	if ifNoneMatch != "" && f.unchanged() == ifNoneMatch {
		return Blob{}, ErrNotModified
	}
	b, err := f.read()
	if err != nil {
		return Blob{}, err
	}
	if ifNoneMatch != "" && b.ETag == ifNoneMatch {
		return Blob{}, ErrNotModified
	}
	return b, nil
}

// GetPrefix implements Store. The ETag needs the whole file: it reads the
// prefix alone when the file is a version it read before, else the whole.
func (f *File) GetPrefix(ctx context.Context, n int) (Blob, error) {
	if err := ctx.Err(); err != nil {
		return Blob{}, err
	}
	if etag := f.unchanged(); etag != "" {
		if b, ok := f.prefix(n, etag); ok {
			return b, nil
		}
	}
	b, err := f.read()
	if err != nil {
		return Blob{}, err
	}
	b.Data = b.Data[:min(n, len(b.Data))]
	return b, nil
}

// prefix reads the first n bytes of the file, whose version was etag at the
// stat before; ok false when the file changed meanwhile (or cannot be read):
// the caller reads it whole.
func (f *File) prefix(n int, etag string) (Blob, bool) {
	fh, err := os.Open(f.path)
	if err != nil {
		return Blob{}, false
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return Blob{}, false
	}
	b := make([]byte, min(int64(max(n, 0)), info.Size()))
	if _, err := io.ReadFull(fh, b); err != nil {
		return Blob{}, false
	}
	f.seenMu.Lock()
	seen := f.seen
	f.seenMu.Unlock()
	if seen.info == nil || seen.etag != etag || !os.SameFile(seen.info, info) || seen.info.Size() != info.Size() || !seen.info.ModTime().Equal(info.ModTime()) {
		return Blob{}, false
	}
	return Blob{Data: b, ETag: etag, Size: info.Size()}, true
}

// Put implements Store.
func (f *File) Put(ctx context.Context, data []byte, cond Condition) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := f.lock()
	if err != nil {
		return "", err
	}
	defer unlock()

	cur, err := f.read()
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", err
	}
	switch {
	case cond.IfNoneMatch && exists:
		return "", fmt.Errorf("blobstore: %s exists: %w", f.path, ErrPreconditionFailed)
	case cond.IfMatch != "" && (!exists || cur.ETag != cond.IfMatch):
		return "", fmt.Errorf("blobstore: %s changed: %w", f.path, ErrPreconditionFailed)
	}
	if err := writeAtomic(f.path, data); err != nil {
		return "", err
	}
	return etagOf(data), nil
}

// lock takes an exclusive flock on path.lock.
func (f *File) lock() (func(), error) {
	lf, err := os.OpenFile(f.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("blobstore: lock: %w", err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		lf.Close()
		return nil, fmt.Errorf("blobstore: lock: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
		lf.Close()
	}, nil
}

// writeAtomic writes data to path so that a reader sees the old file or the
// new one, never a part, and the new one survives a crash once it returns.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("blobstore: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("blobstore: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("blobstore: fsync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("blobstore: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("blobstore: rename into %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("blobstore: fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("blobstore: fsync %s: %w", dir, err)
	}
	return nil
}

func (f *File) segmentPath(name string) string { return f.path + SegmentsSuffix + name }

// SegmentLocation implements Store.
func (f *File) SegmentLocation(name string) string { return f.segmentPath(name) }

// PutSegment implements Store. A segment already stored with the same
// bytes is left as it is (no write, no fsync).
func (f *File) PutSegment(ctx context.Context, name string, data []byte) error {
	if err := ValidSegmentName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	path := f.segmentPath(name)
	if cur, err := os.ReadFile(path); err == nil && string(cur) == string(data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("blobstore: %w", err)
	}
	return writeAtomic(path, data)
}

// GetSegment implements Store.
func (f *File) GetSegment(ctx context.Context, name string, maxBytes int) ([]byte, error) {
	if err := ValidSegmentName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := f.segmentPath(name)
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blobstore: %s: %w", path, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("blobstore: read %s: %w", path, err)
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("blobstore: %s is over the %d bytes expected", path, maxBytes)
	}
	return b, nil
}

// ReleaseSegments implements Store: the files are deleted (one already
// gone is released). A discovery loading a manifest that named one fails
// that poll and takes the newer manifest at the next.
func (f *File) ReleaseSegments(ctx context.Context, names []string) error {
	for _, name := range names {
		if err := ValidSegmentName(name); err != nil {
			return err
		}
		if err := os.Remove(f.segmentPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("blobstore: release a segment: %w", err)
		}
	}
	return nil
}
