// Package parquetschema reads a table's Arrow schema from a Parquet file's
// footer, locally or in S3 (ranged reads: only the footer is fetched).
package parquetschema

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// ErrNoParquet: the location holds no .parquet file.
var ErrNoParquet = errors.New("parquetschema: no .parquet file at the location")

// ErrInvalid wraps a file that is not readable Parquet.
var ErrInvalid = errors.New("parquetschema: not a readable Parquet file")

// ErrTooLarge wraps a file whose footer or schema is over the limits
// (MaxFooterBytes, MaxSchemaElements, MaxSchemaDepth): it is refused before
// the footer is read, or before its schema is converted.
var ErrTooLarge = errors.New("parquetschema: footer or schema over the limits")

// Limits on what a Parquet footer, written by a tenant and read with the
// operator's credentials, may make a reader allocate. Thrift refuses a list
// longer than the bytes left, so the footer's size bounds its decoding.
const (
	// MaxFooterBytes bounds the footer (the file metadata) read.
	MaxFooterBytes = 16 << 20
	// MaxSchemaElements bounds the Parquet schema's elements (groups and
	// columns, the root included).
	MaxSchemaElements = 10_000
	// MaxSchemaDepth bounds the schema's nesting, the root being level 1.
	MaxSchemaDepth = 64
)

// FromReader reads the Arrow schema from the footer of the Parquet data in
// r: exactly the schema the writer stored in the ARROW:schema metadata
// (pyarrow and arrow-go store it by default), else one converted from the
// Parquet schema, without the placeholder field ids the conversion adds. A
// malformed file is an error wrapping ErrInvalid, never a panic; one over
// the limits wraps ErrTooLarge.
func FromReader(r parquet.ReaderAtSeeker) (s *arrow.Schema, err error) {
	defer func() {
		if v := recover(); v != nil {
			s, err = nil, fmt.Errorf("%w: %v", ErrInvalid, v)
		}
	}()
	if err := checkFooterSize(r); err != nil {
		return nil, err
	}
	pf, err := file.NewParquetReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	defer pf.Close()
	if err := checkSchemaSize(pf.MetaData().Schema.Root()); err != nil {
		return nil, err
	}
	if stored := pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema"); stored != nil {
		// A stored schema that does not decode under catalog's bounded
		// checks is refused: falling through to pqarrow would decode the
		// same bytes again, unchecked (a forged one made it ask for tens
		// of gigabytes).
		raw, err := base64.StdEncoding.DecodeString(*stored)
		if err != nil {
			return nil, fmt.Errorf("%w: the stored Arrow schema (ARROW:schema) is not base64: %v", ErrInvalid, err)
		}
		s, err := catalog.DecodeSchema(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: the stored Arrow schema (ARROW:schema) does not decode: %v", ErrInvalid, err)
		}
		return s, nil
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	s, err = fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	md := s.Metadata()
	return arrow.NewSchema(stripFieldIDs(s.Fields()), &md), nil
}

// checkFooterSize reads the footer length from the file's last 8 bytes (a
// little-endian length and "PAR1") and refuses one over MaxFooterBytes,
// before anything of that length is read.
func checkFooterSize(r parquet.ReaderAtSeeker) error {
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if size < 12 {
		return fmt.Errorf("%w: %d bytes, too short for Parquet", ErrInvalid, size)
	}
	tail := make([]byte, 8)
	if _, err := r.ReadAt(tail, size-8); err != nil {
		return fmt.Errorf("%w: read the footer length: %v", ErrInvalid, err)
	}
	if string(tail[4:]) != "PAR1" {
		return fmt.Errorf("%w: the file does not end in PAR1", ErrInvalid)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return fmt.Errorf("%w: a footer of %d bytes in a file of %d", ErrInvalid, n, size)
	}
	if n > MaxFooterBytes {
		return fmt.Errorf("%w: footer of %d bytes, limit %d", ErrTooLarge, n, MaxFooterBytes)
	}
	return nil
}

// checkSchemaSize refuses a schema of more than MaxSchemaElements elements
// or nested deeper than MaxSchemaDepth (walked with a stack of its own).
func checkSchemaSize(root schema.Node) error {
	type item struct {
		n     schema.Node
		depth int
	}
	stack := []item{{root, 1}}
	elements := 0
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		elements++
		if elements > MaxSchemaElements {
			return fmt.Errorf("%w: over %d schema elements", ErrTooLarge, MaxSchemaElements)
		}
		if it.depth > MaxSchemaDepth {
			return fmt.Errorf("%w: schema nested %d levels deep, limit %d", ErrTooLarge, it.depth, MaxSchemaDepth)
		}
		if g, ok := it.n.(*schema.GroupNode); ok {
			for i := range g.NumFields() {
				stack = append(stack, item{g.Field(i), it.depth + 1})
			}
		}
	}
	return nil
}

// stripFieldIDs drops the "PARQUET:field_id" = "-1" metadata the conversion
// puts on fields that have no id; real ids stay.
func stripFieldIDs(fs []arrow.Field) []arrow.Field {
	out := make([]arrow.Field, len(fs))
	for i, f := range fs {
		if v, ok := f.Metadata.GetValue("PARQUET:field_id"); ok && v == "-1" {
			var keys, vals []string
			for j, k := range f.Metadata.Keys() {
				if k != "PARQUET:field_id" {
					keys, vals = append(keys, k), append(vals, f.Metadata.Values()[j])
				}
			}
			f.Metadata = arrow.NewMetadata(keys, vals)
		}
		if st, ok := f.Type.(*arrow.StructType); ok {
			f.Type = arrow.StructOf(stripFieldIDs(st.Fields())...)
		}
		out[i] = f
	}
	return out
}

// FromFile reads the schema of one local Parquet file.
func FromFile(path string) (*arrow.Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("parquetschema: %w", err)
	}
	defer f.Close()
	s, err := FromReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// S3API is what FromLocation needs of an S3 client.
type S3API interface {
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// FromLocation reads the schema of the first .parquet file (in name order)
// at a table location: a local file or folder (file:// or a path), or an S3
// prefix (s3://bucket/prefix/). It returns the file it read.
func FromLocation(ctx context.Context, location string, client S3API) (*arrow.Schema, string, error) {
	u, err := url.Parse(location)
	if err == nil && (u.Scheme == "s3" || u.Scheme == "s3a") {
		if client == nil {
			return nil, "", fmt.Errorf("parquetschema: %s needs an S3 client", location)
		}
		return fromS3(ctx, client, u.Host, strings.TrimPrefix(u.Path, "/"))
	}
	path := location
	if err == nil && u.Scheme == "file" {
		path = u.Path
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("parquetschema: %w", err)
	}
	if !st.IsDir() {
		s, err := FromFile(path)
		return s, path, err
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("parquetschema: %w", err)
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("%w: %s", ErrNoParquet, location)
	}
	sort.Strings(files)
	s, err := FromFile(files[0])
	return s, files[0], err
}

func fromS3(ctx context.Context, client S3API, bucket, prefix string) (*arrow.Schema, string, error) {
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	var key string
	for p.HasMorePages() && key == "" {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("parquetschema: list s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			if strings.HasSuffix(aws.ToString(o.Key), ".parquet") {
				key = aws.ToString(o.Key)
				break
			}
		}
	}
	if key == "" {
		return nil, "", fmt.Errorf("%w: s3://%s/%s", ErrNoParquet, bucket, prefix)
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, "", fmt.Errorf("parquetschema: head s3://%s/%s: %w", bucket, key, err)
	}
	r := &s3ReaderAt{ctx: ctx, client: client, bucket: bucket, key: key, size: aws.ToInt64(head.ContentLength)}
	s, err := FromReader(r)
	name := "s3://" + bucket + "/" + key
	if err != nil {
		return nil, name, fmt.Errorf("%s: %w", name, err)
	}
	return s, name, nil
}

// s3ReaderAt reads an object with ranged GETs.
type s3ReaderAt struct {
	ctx         context.Context
	client      S3API
	bucket, key string
	size, pos   int64
}

func (r *s3ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), r.size) - 1
	out, err := r.client.GetObject(r.ctx, &s3.GetObjectInput{Bucket: &r.bucket, Key: &r.key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end))})
	if err != nil {
		return 0, err
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p[:end-off+1])
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func (r *s3ReaderAt) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	return n, err
}

func (r *s3ReaderAt) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += r.pos
	case io.SeekEnd:
		off += r.size
	}
	if off < 0 {
		return 0, errors.New("parquetschema: negative seek")
	}
	r.pos = off
	return off, nil
}
