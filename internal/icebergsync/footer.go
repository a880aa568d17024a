package icebergsync

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// firstRead is how much of a file's end the first request fetches before
// Sync has seen a footer of the location: the footer of a small file
// whole. Later files start from the largest footer seen so far
// (firstReadFor), as files of one table tend to have alike footers.
const firstRead = 8 << 10

// firstReadFor is the first request's size when the largest footer seen so
// far is seen bytes (0: none yet): a quarter more, at least 1 KiB.
func firstReadFor(seen int64) int64 {
	if seen == 0 {
		return firstRead
	}
	return max(seen+seen/4+8, 1<<10)
}

// errNotFooter is a read below a file's footer: Sync reads footers only.
var errNotFooter = errors.New("a read outside the Parquet footer")

// skipError is a file left out of the table, with the reason.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

func skipf(format string, args ...any) error { return &skipError{reason: fmt.Sprintf(format, args...)} }

// readTail fetches the end of o holding its Parquet footer: one request
// when the footer is in the last first bytes, two otherwise. A file that
// does not end like Parquet, or whose footer is over maxFooter, is a
// *skipError. It returns the bytes and how many were read.
func readTail(ctx context.Context, data Files, o Object, first, maxFooter int64) ([]byte, int64, error) {
	if o.Size < 12 {
		return nil, 0, skipf("not Parquet: %d bytes, too short", o.Size)
	}
	n := min(o.Size, max(first, 12))
	tail := make([]byte, n)
	if err := data.ReadAt(ctx, o, tail, o.Size-n); err != nil {
		return nil, 0, err
	}
	read := n
	if string(tail[n-4:]) != "PAR1" {
		return nil, read, skipf("not Parquet: the file does not end in PAR1")
	}
	flen := int64(binary.LittleEndian.Uint32(tail[n-8 : n-4]))
	if flen > o.Size-12 {
		return nil, read, skipf("not Parquet: a footer of %d bytes in a file of %d", flen, o.Size)
	}
	if flen > maxFooter {
		return nil, read, skipf("footer of %d bytes, limit %d", flen, maxFooter)
	}
	if flen+8 > n {
		tail = make([]byte, flen+8)
		if err := data.ReadAt(ctx, o, tail, o.Size-flen-8); err != nil {
			return nil, read, err
		}
		read += flen + 8
	}
	return tail, read, nil
}

// footerTail is the end of a Parquet file of size bytes: reads within it
// are served, reads below it fail with errNotFooter.
type footerTail struct {
	size int64
	tail []byte
}

func (t footerTail) ReadAt(p []byte, off int64) (int, error) {
	start := t.size - int64(len(t.tail))
	if off < start {
		return 0, errNotFooter
	}
	if off >= t.size {
		return 0, io.EOF
	}
	n := copy(p, t.tail[off-start:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// footerFile is a Parquet file of which only the end is at hand (an
// io.SectionReader over its footerTail gives it Read and Seek). It is
// what parquetschema and iceberg-go's FileToDataFile read, so that
// neither can fetch data pages.
type footerFile struct {
	*io.SectionReader
	name string
	tail footerTail
}

func newFooterFile(name string, t footerTail) *footerFile {
	return &footerFile{SectionReader: io.NewSectionReader(t, 0, t.size), name: name, tail: t}
}

var _ iceio.File = (*footerFile)(nil)

func (f *footerFile) Close() error               { return nil }
func (f *footerFile) Stat() (fs.FileInfo, error) { return footerInfo{f}, nil }

type footerInfo struct{ f *footerFile }

func (i footerInfo) Name() string       { return i.f.name }
func (i footerInfo) Size() int64        { return i.f.tail.size }
func (i footerInfo) Mode() fs.FileMode  { return 0o444 }
func (i footerInfo) ModTime() time.Time { return time.Time{} }
func (i footerInfo) IsDir() bool        { return false }
func (i footerInfo) Sys() any           { return nil }

// footerIO is the iceberg-go IO FileToDataFile opens one file through.
type footerIO struct{ f *footerFile }

func (o footerIO) Open(name string) (iceio.File, error) {
	if name != o.f.name {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return newFooterFile(o.f.name, o.f.tail), nil
}

func (footerIO) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrPermission}
}

// dataFile turns one file's footer into its Iceberg DataFile: the file's
// Arrow schema is checked against the table's (checkSchema), then
// iceberg-go's FileToDataFile takes the record count and the column
// statistics from the footer, mapped to the table's field ids by column
// name. A file that cannot be in the table is a *skipError.
func dataFile(ctx context.Context, loc string, o Object, tail []byte, t Table, sc *iceberg.Schema, props iceberg.Properties) (iceberg.DataFile, error) {
	f := newFooterFile(loc, footerTail{size: o.Size, tail: tail})
	got, err := parquetschema.FromReader(f)
	if err != nil {
		// "not a readable Parquet file: …" or "footer or schema over the
		// limits: …".
		return nil, skipf("%s", strings.TrimPrefix(err.Error(), "parquetschema: "))
	}
	if err := checkSchema(t.Schema, got); err != nil {
		return nil, err
	}
	df, err := table.FileToDataFile(ctx, footerIO{f}, loc, sc, *iceberg.UnpartitionedSpec, 0, props)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		msg := err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, skipf("iceberg-go refused its footer: %s", msg)
	}
	return df, nil
}

// checkSchema checks a file's Arrow schema against the registration's,
// column by column at the top level, by name:
//
//   - a registered column the file lacks is fine when it is nullable (its
//     rows read as null) and refused when it is not;
//   - a column of both must have the same Iceberg type in both, or a type
//     Iceberg promotes the file's to (int to long, float to double, a
//     decimal to a wider precision of the same scale); so int32 and int64,
//     string and large_string are one; struct, list and map columns must
//     have the same Arrow type but for nullability and field metadata;
//   - a column nullable in the file but required in the registration is
//     refused (the file could hold nulls the table says it has not);
//   - a column only in the file is refused: iceberg-go's FileToDataFile
//     refuses a file with a column the table's name mapping lacks, as
//     PyIceberg's and Java's add_files do.
//
// The refusal is a *skipError naming the column.
func checkSchema(reg, file *arrow.Schema) error {
	for _, ff := range file.Fields() {
		if !reg.HasField(ff.Name) {
			return skipf("column %q: in the file, not in the table", ff.Name)
		}
	}
	for _, rf := range reg.Fields() {
		idx := file.FieldIndices(rf.Name)
		if len(idx) == 0 {
			if !rf.Nullable {
				return skipf("column %q: required by the table, missing from the file", rf.Name)
			}
			continue
		}
		ff := file.Field(idx[0])
		if ff.Nullable && !rf.Nullable {
			return skipf("column %q: nullable in the file, required by the table", rf.Name)
		}
		if !compatible(rf, ff) {
			return skipf("column %q: the file's type %s conflicts with the table's %s", rf.Name, ff.Type, rf.Type)
		}
	}
	return nil
}

// compatible reports whether a file's column ff may be read as the table's
// rf (checkSchema's rules).
func compatible(rf, ff arrow.Field) bool {
	if nested(rf.Type) || nested(ff.Type) {
		return sameType(rf.Type, ff.Type)
	}
	rt, err1 := primitive(rf)
	ft, err2 := primitive(ff)
	if err1 != nil || err2 != nil {
		return false
	}
	if rt.Equals(ft) {
		return true
	}
	_, err := iceberg.PromoteType(ft, rt)
	return err == nil
}

// primitive is f's Iceberg type, by icebergschema's mapping.
func primitive(f arrow.Field) (iceberg.Type, error) {
	f.Nullable = true
	s := arrow.NewSchema([]arrow.Field{f}, nil)
	sc, err := icebergschema.ToIceberg(s, icebergschema.Assign(nil, icebergschema.FieldIDs{}, s), 0)
	if err != nil {
		return nil, err
	}
	return sc.Field(0).Type, nil
}

func nested(t arrow.DataType) bool {
	switch t.(type) {
	case *arrow.StructType, *arrow.MapType, arrow.ListLikeType:
		return true
	}
	return false
}

// sameType is arrow.TypeEqual but for the nullability and metadata of
// nested fields.
func sameType(a, b arrow.DataType) bool {
	switch at := a.(type) {
	case *arrow.StructType:
		bt, ok := b.(*arrow.StructType)
		if !ok || at.NumFields() != bt.NumFields() {
			return false
		}
		for i := range at.NumFields() {
			if at.Field(i).Name != bt.Field(i).Name || !sameType(at.Field(i).Type, bt.Field(i).Type) {
				return false
			}
		}
		return true
	case *arrow.MapType:
		bt, ok := b.(*arrow.MapType)
		return ok && sameType(at.KeyType(), bt.KeyType()) && sameType(at.ItemType(), bt.ItemType())
	case arrow.ListLikeType:
		bt, ok := b.(arrow.ListLikeType)
		return ok && a.ID() == b.ID() && sameType(at.Elem(), bt.Elem())
	}
	return arrow.TypeEqual(a, b)
}
