// Package blobstore keeps the snapshot that refresh publishes and discovery
// loads: its manifest, the one blob, in an S3 object (AWS) or a local file
// (local mode), with the same conditional-write and conditional-read
// semantics; and the tenant segments the manifest names, immutable objects
// beside it, each named by its content address.
//
// A blob's version is its ETag. A write names the ETag it replaces (or
// that there must be no blob), so an older writer can never overwrite a
// newer blob; a read can name the ETag it already has and get
// ErrNotModified instead of the bytes.
package blobstore

import (
	"context"
	"errors"
)

// Errors every implementation maps to. ErrNotFound and
// ErrPreconditionFailed are always wrapped with the package, the operation
// and the location ("blobstore: get s3://b/k: no blob"), so their own text
// carries no prefix; ErrNotModified, an answer rather than a failure, is
// returned bare and carries it.
var (
	// ErrNotFound: there is no blob yet.
	ErrNotFound = errors.New("no blob")
	// ErrNotModified: the blob still has the ETag the reader named.
	ErrNotModified = errors.New("blobstore: not modified")
	// ErrPreconditionFailed: a conditional write found another version.
	ErrPreconditionFailed = errors.New("blob changed (precondition failed)")
)

// Blob is one version of the blob.
type Blob struct {
	Data []byte
	ETag string
	// Size is the whole blob's size in bytes, also when Data is a prefix
	// (GetPrefix), so a reader can tell a truncated blob from its header.
	Size int64
}

// Condition qualifies a write.
type Condition struct {
	// IfMatch replaces only the blob with this ETag.
	IfMatch string
	// IfNoneMatch creates the blob only if there is none.
	IfNoneMatch bool
}

// Store reads and conditionally writes one blob. Implementations are safe
// for concurrent use.
type Store interface {
	// Get returns the blob. With ifNoneMatch set to the current ETag it
	// returns ErrNotModified and no bytes. ErrNotFound when there is none.
	Get(ctx context.Context, ifNoneMatch string) (Blob, error)
	// GetPrefix returns at most the first n bytes of the blob and the ETag of
	// the whole blob (ErrNotFound when there is none): enough to read a
	// header without fetching everything.
	GetPrefix(ctx context.Context, n int) (Blob, error)
	// Put writes data under cond and returns the new ETag, or
	// ErrPreconditionFailed when cond does not hold.
	Put(ctx context.Context, data []byte, cond Condition) (string, error)
	// Location names the blob for logs (s3://bucket/key or a path).
	Location() string

	// PutSegment stores an immutable segment under name (its content
	// address, ValidSegmentName). Storing a name again stores the same
	// bytes, so it is never a conflict, and it makes a released segment
	// live again.
	PutSegment(ctx context.Context, name string, data []byte) error
	// GetSegment returns the segment stored under name, refusing one over
	// maxBytes; ErrNotFound when there is none.
	GetSegment(ctx context.Context, name string, maxBytes int) ([]byte, error)
	// ReleaseSegments says that the published manifest names these
	// segments no more: S3 tags each (SegmentReleasedTag) for the bucket's
	// lifecycle rule to expire after its grace period; a file store deletes
	// them.
	ReleaseSegments(ctx context.Context, names []string) error
	// SegmentLocation names a segment for logs.
	SegmentLocation(name string) string
}

// SegmentsSuffix is what a blob's location takes to name the folder (S3:
// the key prefix) of its segments: s3://b/snapshots/catalog.lakesnap keeps
// them under snapshots/catalog.lakesnap.segments/.
const SegmentsSuffix = ".segments/"

// SegmentReleasedTag is the S3 object tag (key=value) a released segment
// gets; the stack's lifecycle rule expires objects with it.
const SegmentReleasedTag = "lake-segment=released"

// ErrBadSegmentName: a segment name that is not 64 lowercase hex digits.
var ErrBadSegmentName = errors.New("blobstore: a segment name is 64 lowercase hex digits")

// ValidSegmentName checks a segment's name: the hex SHA-256 of its bytes.
func ValidSegmentName(name string) error {
	if len(name) != 64 {
		return ErrBadSegmentName
	}
	for i := range len(name) {
		if c := name[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ErrBadSegmentName
		}
	}
	return nil
}
