package parquetschema_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/parquetschema"
)

// A Parquet footer is written by a tenant and read with the operator's
// credentials: a footer over the limit is refused before it is read or
// allocated, and so is a schema of too many elements or too deep (issue 24,
// check and close).
func TestFromReaderBoundsForgedFooters(t *testing.T) {
	// A file whose last 8 bytes declare a 32 MiB footer, all of it there.
	const declared = 32 << 20
	forged := make([]byte, declared+12)
	copy(forged, "PAR1")
	binary.LittleEndian.PutUint32(forged[len(forged)-8:], declared)
	copy(forged[len(forged)-4:], "PAR1")

	wide := make([]arrow.Field, 10_001)
	for i := range wide {
		wide[i] = arrow.Field{Name: fmt.Sprint("c", i), Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	}
	deep := arrow.Field{Name: "leaf", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	for i := range 70 {
		deep = arrow.Field{Name: fmt.Sprint("s", i), Type: arrow.StructOf(deep), Nullable: true}
	}
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"a 32 MiB footer", forged, "footer of 33554432 bytes"},
		{"10,001 schema elements", write(t, arrow.NewSchema(wide, nil)), "over 10000 schema elements"},
		{"71 levels of nesting", write(t, arrow.NewSchema([]arrow.Field{deep}, nil)), "nested 65 levels deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := parquetschema.FromReader(bytes.NewReader(tt.file))
			runtime.ReadMemStats(&after)
			if len(tt.file) == len(forged) {
				got := after.TotalAlloc - before.TotalAlloc
				if got > 1<<20 {
					t.Errorf("reading the forged footer allocated %d bytes, want under 1 MiB", got)
				}
				t.Logf("reading the forged footer allocated %d bytes", got)
			}
			if !errors.Is(err, parquetschema.ErrTooLarge) || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Fatalf("got %v, want ErrTooLarge saying %q", err, tt.want)
			}
		})
	}
}

// A file whose stored Arrow schema was forged (one base64 character of a
// real file's ARROW:schema changed, found by preview's fuzzing) is refused
// as invalid: before, the bounded decode's failure fell through to
// pqarrow, which decoded the same bytes unchecked and asked for about
// 70 GB.
func TestForgedStoredSchemaIsRefused(t *testing.T) {
	_, err := parquetschema.FromFile("testdata/forged-arrow-schema.parquet")
	if !errors.Is(err, parquetschema.ErrInvalid) || !strings.Contains(err.Error(), "ARROW:schema") {
		t.Fatalf("got %v, want ErrInvalid naming the stored schema", err)
	}
}
