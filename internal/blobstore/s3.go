package blobstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// s3API is the part of the S3 client the store calls.
type s3API interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	PutObjectTagging(context.Context, *s3.PutObjectTaggingInput, ...func(*s3.Options)) (*s3.PutObjectTaggingOutput, error)
}

// S3 keeps the blob in one S3 object and its segments in objects under
// the blob's key and SegmentsSuffix.
type S3 struct {
	client      s3API
	bucket, key string
	// MaxBytes bounds a blob read; 0 means 8 GiB.
	maxBytes int64
}

var _ Store = (*S3)(nil)

// NewS3 returns a store for s3://bucket/key. maxBytes bounds a read (0: 8 GiB).
func NewS3(client s3API, bucket, key string, maxBytes int64) (*S3, error) {
	if bucket == "" || key == "" {
		return nil, errors.New("blobstore: S3 bucket and key are required")
	}
	if maxBytes <= 0 {
		maxBytes = 8 << 30
	}
	return &S3{client: client, bucket: bucket, key: key, maxBytes: maxBytes}, nil
}

// Location implements Store.
func (s *S3) Location() string { return "s3://" + s.bucket + "/" + s.key }

func statusOf(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func (s *S3) mapErr(op string, err error) error { return s.mapErrAt(op, s.Location(), err) }

func (s *S3) mapErrAt(op, location string, err error) error {
	var nsk *types.NoSuchKey
	switch code := statusOf(err); {
	case errors.As(err, &nsk) || code == http.StatusNotFound:
		return fmt.Errorf("blobstore: %s %s: %w", op, location, ErrNotFound)
	case code == http.StatusNotModified:
		// The SDK surfaces 304 as an error; it is the expected answer.
		return ErrNotModified
	case code == http.StatusPreconditionFailed || code == http.StatusConflict:
		return fmt.Errorf("blobstore: %s %s: %w", op, location, ErrPreconditionFailed)
	}
	return fmt.Errorf("blobstore: %s %s: %w", op, location, err)
}

func (s *S3) get(ctx context.Context, in *s3.GetObjectInput, limit int64) (Blob, error) {
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return Blob{}, s.mapErr("get", err)
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	if out.ContentLength != nil && *out.ContentLength > 0 && *out.ContentLength <= limit {
		buf.Grow(int(*out.ContentLength))
	}
	n, err := io.Copy(&buf, io.LimitReader(out.Body, limit+1))
	if err != nil {
		return Blob{}, fmt.Errorf("blobstore: read %s: %w", s.Location(), err)
	}
	if n > limit && in.Range == nil {
		return Blob{}, fmt.Errorf("blobstore: %s is larger than the %d-byte limit", s.Location(), limit)
	}
	return Blob{Data: buf.Bytes()[:min(n, limit)], ETag: aws.ToString(out.ETag), Size: objectSize(out.ContentRange, out.ContentLength, n)}, nil
}

// objectSize is the whole object's size: the total of a ranged answer's
// Content-Range ("bytes 0-119/3594"), else its Content-Length, else what was
// read.
func objectSize(contentRange *string, contentLength *int64, read int64) int64 {
	if cr := aws.ToString(contentRange); cr != "" {
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
				return n
			}
		}
	}
	if contentLength != nil {
		return *contentLength
	}
	return read
}

// Get implements Store with a conditional GetObject.
func (s *S3) Get(ctx context.Context, ifNoneMatch string) (Blob, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &s.key}
	if ifNoneMatch != "" {
		in.IfNoneMatch = aws.String(ifNoneMatch)
	}
	return s.get(ctx, in, s.maxBytes)
}

// GetPrefix implements Store with a ranged GetObject.
func (s *S3) GetPrefix(ctx context.Context, n int) (Blob, error) {
	if n <= 0 {
		return Blob{}, errors.New("blobstore: prefix length must be positive")
	}
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &s.key, Range: aws.String(fmt.Sprintf("bytes=0-%d", n-1))}
	b, err := s.get(ctx, in, int64(n))
	if statusOf(errors.Unwrap(err)) == http.StatusRequestedRangeNotSatisfiable {
		// An empty object has no byte 0.
		return s.Get(ctx, "")
	}
	return b, err
}

// Put implements Store with a conditional PutObject (If-Match or
// If-None-Match: *).
func (s *S3) Put(ctx context.Context, data []byte, cond Condition) (string, error) {
	in := &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &s.key,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String("application/vnd.lake.snapshot"),
	}
	if cond.IfMatch != "" {
		in.IfMatch = aws.String(cond.IfMatch)
	}
	if cond.IfNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		err = s.mapErr("put", err)
		if errors.Is(err, ErrNotFound) {
			// S3 answers If-Match on a missing object with 404: the version
			// the writer named is not there.
			err = fmt.Errorf("blobstore: put %s: %w", s.Location(), ErrPreconditionFailed)
		}
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

func (s *S3) segmentKey(name string) string { return s.key + SegmentsSuffix + name }

// SegmentLocation implements Store.
func (s *S3) SegmentLocation(name string) string {
	return "s3://" + s.bucket + "/" + s.segmentKey(name)
}

// PutSegment implements Store with an unconditional PutObject: the bytes
// under a name never differ, and a new object carries no release tag.
func (s *S3) PutSegment(ctx context.Context, name string, data []byte) error {
	if err := ValidSegmentName(name); err != nil {
		return err
	}
	key := s.segmentKey(name)
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &key,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String("application/vnd.lake.segment"),
	})
	if err != nil {
		return s.mapErrAt("put", s.SegmentLocation(name), err)
	}
	return nil
}

// GetSegment implements Store.
func (s *S3) GetSegment(ctx context.Context, name string, maxBytes int) ([]byte, error) {
	if err := ValidSegmentName(name); err != nil {
		return nil, err
	}
	key := s.segmentKey(name)
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return nil, s.mapErrAt("get", s.SegmentLocation(name), err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > int64(maxBytes) {
		return nil, fmt.Errorf("blobstore: %s has %d bytes, over the %d expected", s.SegmentLocation(name), *out.ContentLength, maxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(out.Body, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("blobstore: read %s: %w", s.SegmentLocation(name), err)
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("blobstore: %s is over the %d bytes expected", s.SegmentLocation(name), maxBytes)
	}
	return b, nil
}

// ReleaseSegments implements Store: each segment gets SegmentReleasedTag
// (one PutObjectTagging each). A segment already gone is released.
func (s *S3) ReleaseSegments(ctx context.Context, names []string) error {
	k, v, _ := strings.Cut(SegmentReleasedTag, "=")
	for _, name := range names {
		if err := ValidSegmentName(name); err != nil {
			return err
		}
		key := s.segmentKey(name)
		_, err := s.client.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &s.bucket, Key: &key,
			Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String(k), Value: aws.String(v)}}}})
		if err != nil {
			if err := s.mapErrAt("tag", s.SegmentLocation(name), err); !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	return nil
}
