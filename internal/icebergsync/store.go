package icebergsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Errors from Files and MetaStore name the operation and the location
// ("read s3://bucket/key: …") without the package; Sync adds it with the
// table. ErrNotFound and ErrExists are wrapped with the location.

// ErrNotFound is MetaStore.Get's answer for a key with no object, and
// Files.ReadAt's for an object that is gone.
var ErrNotFound = errors.New("not found")

// ErrExists is MetaStore.Put's answer when the key already holds an object:
// lake never overwrites its metadata, so two syncs racing on one table
// version fail one of them rather than lose a write.
var ErrExists = errors.New("already exists")

// Object is one file at a table's location.
type Object struct {
	// Key names the object to its Files: the S3 key, or the path
	// relative to the local root with slashes.
	Key string
	// Size is its length in bytes.
	Size int64
	// Version tells one content of the key from another: the S3 ETag, or
	// the local file's modification time in nanoseconds.
	Version string
}

// Files is the read-only data side of a table: the objects under its
// location. Implementations are safe for concurrent use.
type Files interface {
	// List calls visit for every object under the location, in key order
	// for S3 and lexical path order locally; an error from visit stops the
	// listing and is returned. Folders and objects whose base name starts
	// with "_" or "." (_SUCCESS, .crc files) are not visited.
	List(ctx context.Context, visit func(Object) error) error
	// ReadAt reads len(p) bytes of o at off. It fails (wrapping
	// ErrNotFound when the object is gone) rather than read another
	// version of o than the one listed, where the store can tell (S3's
	// If-Match).
	ReadAt(ctx context.Context, o Object, p []byte, off int64) error
	// Location is the URI engines read key at: s3://bucket/key or
	// file:///abs/path.
	Location(key string) string
}

// MetaStore is where lake writes a table's Iceberg metadata: a prefix lake
// owns, never the tenant's data. Implementations are safe for concurrent
// use.
type MetaStore interface {
	// Put writes b at key; ErrExists (wrapped) when key already holds an
	// object. b is not retained.
	Put(ctx context.Context, key string, b []byte) error
	// Get returns the object at key, read in full (the caller owns the
	// slice); ErrNotFound (wrapped) when there is none. Objects over
	// maxBytes are an error.
	Get(ctx context.Context, key string, maxBytes int64) ([]byte, error)
	// Location is the URI engines read key at (as Files.Location).
	Location(key string) string
}

// s3API is the part of the S3 client the stores call.
type s3API interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	s3.ListObjectsV2APIClient
}

// S3Files reads the objects under a prefix of a bucket, with whatever
// credentials its client holds (a table's vended credentials).
type S3Files struct {
	client         s3API
	bucket, prefix string
}

var (
	_ Files     = (*S3Files)(nil)
	_ Files     = (*LocalFiles)(nil)
	_ MetaStore = (*S3MetaStore)(nil)
	_ MetaStore = (*LocalMetaStore)(nil)
)

// NewS3Files returns the objects under prefix (a key prefix, normally
// ending in "/") in bucket.
func NewS3Files(client s3API, bucket, prefix string) *S3Files {
	return &S3Files{client: client, bucket: bucket, prefix: prefix}
}

// List implements Files.
func (f *S3Files) List(ctx context.Context, visit func(Object) error) error {
	p := s3.NewListObjectsV2Paginator(f.client, &s3.ListObjectsV2Input{Bucket: aws.String(f.bucket), Prefix: aws.String(f.prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", f.bucket, f.prefix, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.HasSuffix(key, "/") || hidden(strings.TrimPrefix(key, f.prefix)) {
				continue
			}
			if err := visit(Object{Key: key, Size: aws.ToInt64(o.Size), Version: aws.ToString(o.ETag)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadAt implements Files with a ranged GET conditional on o's ETag.
func (f *S3Files) ReadAt(ctx context.Context, o Object, p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	in := &s3.GetObjectInput{
		Bucket: aws.String(f.bucket), Key: aws.String(o.Key),
		Range: aws.String("bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+int64(len(p))-1, 10)),
	}
	if o.Version != "" {
		in.IfMatch = aws.String(o.Version)
	}
	out, err := f.client.GetObject(ctx, in)
	if err != nil {
		return s3Err("read", "s3://"+f.bucket+"/"+o.Key, err)
	}
	defer out.Body.Close()
	if _, err := io.ReadFull(out.Body, p); err != nil {
		return fmt.Errorf("read s3://%s/%s: %w", f.bucket, o.Key, err)
	}
	return nil
}

// Location implements Files.
func (f *S3Files) Location(key string) string { return "s3://" + f.bucket + "/" + key }

// S3MetaStore keeps metadata objects in a bucket under keys the caller
// gives (Sync's metaPrefix and a name).
type S3MetaStore struct {
	client s3API
	bucket string
}

// NewS3MetaStore returns a MetaStore in bucket, written with client's
// credentials (lake's own).
func NewS3MetaStore(client s3API, bucket string) *S3MetaStore {
	return &S3MetaStore{client: client, bucket: bucket}
}

// Put implements MetaStore with If-None-Match: *.
func (m *S3MetaStore) Put(ctx context.Context, key string, b []byte) error {
	_, err := m.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(m.bucket), Key: aws.String(key), Body: bytes.NewReader(b),
		ContentLength: aws.Int64(int64(len(b))), IfNoneMatch: aws.String("*"),
	})
	if err != nil {
		return s3Err("write", m.Location(key), err)
	}
	return nil
}

// Get implements MetaStore.
func (m *S3MetaStore) Get(ctx context.Context, key string, maxBytes int64) ([]byte, error) {
	out, err := m.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(m.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, s3Err("read", m.Location(key), err)
	}
	defer out.Body.Close()
	return readBounded(out.Body, maxBytes, m.Location(key))
}

// Location implements MetaStore.
func (m *S3MetaStore) Location(key string) string { return "s3://" + m.bucket + "/" + key }

func s3Err(op, loc string, err error) error {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %s", ErrNotFound, loc)
		case http.StatusPreconditionFailed, http.StatusConflict:
			if op == "write" {
				return fmt.Errorf("%w: %s", ErrExists, loc)
			}
			return fmt.Errorf("%s changed since it was listed: %w", loc, err)
		}
	}
	return fmt.Errorf("%s %s: %w", op, loc, err)
}

func readBounded(r io.Reader, maxBytes int64, loc string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", loc, err)
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("%s is over %d bytes", loc, maxBytes)
	}
	return b, nil
}

// hidden reports whether a path relative to the location has a segment
// starting with "_" or ".": Hadoop and Spark's convention for files that
// are not data (_SUCCESS, _delta_log, .part-0.crc).
func hidden(rel string) bool {
	for seg := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(seg, "_") || strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// LocalFiles reads the files under a local folder (local mode's data
// root, or a test's).
type LocalFiles struct{ root string }

// NewLocalFiles returns the files under root, an absolute path.
func NewLocalFiles(root string) *LocalFiles { return &LocalFiles{root: filepath.Clean(root)} }

// List implements Files. Symbolic links are not followed.
func (f *LocalFiles) List(ctx context.Context, visit func(Object) error) error {
	return filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("list %s: %w", f.root, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(f.root, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && hidden(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("list %s: %w", f.root, err)
		}
		return visit(Object{Key: rel, Size: info.Size(), Version: strconv.FormatInt(info.ModTime().UnixNano(), 10)})
	})
}

// ReadAt implements Files.
func (f *LocalFiles) ReadAt(ctx context.Context, o Object, p []byte, off int64) error {
	fh, err := os.Open(f.path(o.Key))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, f.Location(o.Key))
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	if _, err := fh.ReadAt(p, off); err != nil {
		return fmt.Errorf("read %s: %w", f.Location(o.Key), err)
	}
	return nil
}

func (f *LocalFiles) path(key string) string { return filepath.Join(f.root, filepath.FromSlash(key)) }

// Location implements Files.
func (f *LocalFiles) Location(key string) string { return fileURI(f.path(key)) }

// LocalMetaStore keeps metadata objects as files under a local folder.
type LocalMetaStore struct{ root string }

// NewLocalMetaStore returns a MetaStore under root, an absolute path.
func NewLocalMetaStore(root string) *LocalMetaStore {
	return &LocalMetaStore{root: filepath.Clean(root)}
}

func (m *LocalMetaStore) path(key string) (string, error) {
	if !fs.ValidPath(key) {
		return "", fmt.Errorf("invalid metadata key %q", key)
	}
	return filepath.Join(m.root, filepath.FromSlash(key)), nil
}

// Put implements MetaStore: the file is written under a temporary name
// and linked into place, so a reader never sees half of it and an existing
// file is never replaced.
func (m *LocalMetaStore) Put(ctx context.Context, key string, b []byte) error {
	p, err := m.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-"+path.Base(key)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Link(tmp.Name(), p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, m.Location(key))
		}
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// Get implements MetaStore.
func (m *LocalMetaStore) Get(ctx context.Context, key string, maxBytes int64) ([]byte, error) {
	p, err := m.path(key)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, m.Location(key))
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return readBounded(fh, maxBytes, m.Location(key))
}

// Location implements MetaStore.
func (m *LocalMetaStore) Location(key string) string {
	return fileURI(filepath.Join(m.root, filepath.FromSlash(key)))
}

func fileURI(p string) string { return "file://" + filepath.ToSlash(p) }
