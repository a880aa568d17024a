package testenv

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// IcebergS3IO is an iceberg-go IO that reads s3://bucket/key objects whole
// with Client, for the scans that prove an engine reads what lake wrote
// (iceberg-go's own S3 IO, io/gocloud, needs modules lake does not have).
// OnRead, when set, is told of every read and its outcome. It removes
// nothing.
type IcebergS3IO struct {
	Client *s3.Client
	OnRead func(name string, err error)
}

// Open reads the object name names.
func (o IcebergS3IO) Open(name string) (iceio.File, error) {
	b, err := o.get(context.Background(), name)
	if o.OnRead != nil {
		o.OnRead(name, err)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{Reader: bytes.NewReader(b), name: name}, nil
}

func (o IcebergS3IO) get(ctx context.Context, name string) ([]byte, error) {
	rest, ok := strings.CutPrefix(name, "s3://")
	bucket, key, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return nil, fs.ErrInvalid
	}
	out, err := o.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// Remove refuses: the scans only read.
func (IcebergS3IO) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrPermission}
}

// memFile is an object read whole.
type memFile struct {
	*bytes.Reader
	name string
}

func (f *memFile) Close() error               { return nil }
func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f}, nil }

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return i.f.name }
func (i memInfo) Size() int64        { return i.f.Size() }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
