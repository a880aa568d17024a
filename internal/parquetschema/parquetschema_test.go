package parquetschema_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// write writes an empty Parquet file of schema s, storing the Arrow schema.
func write(t testing.TB, s *arrow.Schema) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(s, &buf, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	rec := b.NewRecordBatch()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var tableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

func TestFromLocationLocal(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "day=2"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"day=2/part-0.parquet", "day=1-part-0.parquet"} {
		if err := os.WriteFile(filepath.Join(dir, p), write(t, tableSchema), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, loc := range []string{dir, "file://" + dir, filepath.Join(dir, "day=2/part-0.parquet")} {
		s, file, err := parquetschema.FromLocation(context.Background(), loc, nil)
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		if !catalog.SchemaEqual(s, tableSchema) || file == "" {
			t.Fatalf("%s: schema %v from %s", loc, s, file)
		}
	}
	if _, _, err := parquetschema.FromLocation(context.Background(), t.TempDir(), nil); !errors.Is(err, parquetschema.ErrNoParquet) {
		t.Fatalf("empty folder: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	_ = os.WriteFile(bad, []byte("PAR1 not really PAR1"), 0o644)
	if _, _, err := parquetschema.FromLocation(context.Background(), bad, nil); !errors.Is(err, parquetschema.ErrInvalid) {
		t.Fatalf("corrupt file: %v", err)
	}
}

func TestFromLocationS3(t *testing.T) {
	srv := testenv.StartS3(t)
	srv.CreateBucket(t, "lake")
	c := srv.Client()
	data := write(t, tableSchema)
	for _, k := range []string{"tables/orders/_SUCCESS", "tables/orders/part-0.parquet"} {
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String(k), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	s, file, err := parquetschema.FromLocation(context.Background(), "s3://lake/tables/orders/", c)
	if err != nil || !catalog.SchemaEqual(s, tableSchema) || file != "s3://lake/tables/orders/part-0.parquet" {
		t.Fatalf("FromLocation = %v from %s, %v", s, file, err)
	}
	if _, _, err := parquetschema.FromLocation(context.Background(), "s3://lake/nothing/", c); !errors.Is(err, parquetschema.ErrNoParquet) {
		t.Fatalf("empty prefix: %v", err)
	}
}

func FuzzFromReader(f *testing.F) {
	f.Add(write(f, tableSchema))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00\x00\x00\x00\x7fPAR1")) // a footer length of 2 GiB
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		s, err := parquetschema.FromReader(bytes.NewReader(b))
		if err == nil && s == nil {
			t.Fatal("nil schema without an error")
		}
		if err != nil && !errors.Is(err, parquetschema.ErrInvalid) && !errors.Is(err, parquetschema.ErrTooLarge) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

// Without the stored Arrow schema the conversion from the Parquet schema is
// used, without placeholder field ids.
func TestFromReaderWithoutStoredSchema(t *testing.T) {
	var buf bytes.Buffer
	simple := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	w, err := pqarrow.NewFileWriter(simple, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := parquetschema.FromReader(bytes.NewReader(buf.Bytes()))
	if err != nil || !catalog.SchemaEqual(s, simple) {
		t.Fatalf("converted schema = %v, %v; want %v", s, err, simple)
	}
}
