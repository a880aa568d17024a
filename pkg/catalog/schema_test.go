package catalog_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

func TestEncodeSchemaIsExactAndChecked(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*arrow.Schema{"rich": catalogtest.RichSchema(), "wide": catalogtest.WideSchema(5, 200)} {
		b, err := catalog.EncodeSchema(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := catalog.DecodeSchema(b)
		if err != nil || !catalog.SchemaEqual(back, s) {
			t.Fatalf("%s: decode = %v, %v", name, back, err)
		}
	}
	// The bytes are exactly what Flight SQL servers send as table_schema.
	rich := catalogtest.RichSchema()
	if b, _ := catalog.EncodeSchema(rich); !bytes.Equal(b, flight.SerializeSchema(rich, memory.DefaultAllocator)) {
		t.Fatal("EncodeSchema bytes differ from flight.SerializeSchema's")
	}
	// Schema metadata counts: a schema differing only there is not equal.
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	a := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int8}}, nil)
	b := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int8}}, &md)
	if catalog.SchemaEqual(a, b) {
		t.Fatal("SchemaEqual ignores schema metadata")
	}
}

func TestEncodeSchemaTooLarge(t *testing.T) {
	t.Parallel()
	if _, err := catalog.EncodeSchema(catalogtest.WideSchema(1, 5000)); !errors.Is(err, catalog.ErrTooLarge) {
		t.Fatalf("5,000-column schema error = %v, want ErrTooLarge", err)
	}
}

func TestDecodeSchemaRejects(t *testing.T) {
	t.Parallel()
	valid, _ := catalog.EncodeSchema(catalogtest.WideSchema(1, 3))
	for name, b := range map[string][]byte{
		"empty":     nil,
		"garbage":   []byte("definitely not arrow"),
		"truncated": valid[:len(valid)/2],
		"header":    {0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0},
	} {
		if s, err := catalog.DecodeSchema(b); !errors.Is(err, catalog.ErrInvalidSchema) {
			t.Errorf("%s: DecodeSchema = %v, %v; want ErrInvalidSchema", name, s, err)
		}
	}
}

func FuzzDecodeSchema(f *testing.F) {
	for _, s := range []*arrow.Schema{catalogtest.RichSchema(), catalogtest.WideSchema(2, 8)} {
		b, err := catalog.EncodeSchema(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := catalog.DecodeSchema(b)
		if err != nil {
			if !errors.Is(err, catalog.ErrInvalidSchema) && !errors.Is(err, catalog.ErrTooLarge) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// A decodable schema either fails lake's rules (EncodeSchema checks
		// them) or re-encodes exactly.
		enc, err := catalog.EncodeSchema(s)
		if err != nil {
			if !errors.Is(err, catalog.ErrInvalidSchema) && !errors.Is(err, catalog.ErrTooLarge) {
				t.Fatalf("re-encode untyped error %v", err)
			}
			return
		}
		back, err := catalog.DecodeSchema(enc)
		if err != nil || !catalog.SchemaEqual(back, s) {
			t.Fatalf("re-encode round trip: %v, %v", back, err)
		}
	})
}

// A field name longer than catalog.MaxFieldNameBytes, at any depth, is an
// invalid schema (issue 24, finding 3: a 200,000-byte field name made one
// search burn 32 s of CPU).
func TestEncodeSchemaBoundsFieldNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1025)
	ok := strings.Repeat("x", 1024)
	leaf := func(name string) arrow.Field { return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int8} }
	tests := []struct {
		name string
		s    *arrow.Schema
		ok   bool
	}{
		{"top level", arrow.NewSchema([]arrow.Field{leaf(long)}, nil), false},
		{"in a struct", arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.StructOf(leaf("a"), leaf(long))}}, nil), false},
		{"a list's item", arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOfField(leaf(long))}}, nil), false},
		{"in a map's value", arrow.NewSchema([]arrow.Field{{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(leaf(long)))}}, nil), false},
		{"at the limit", arrow.NewSchema([]arrow.Field{leaf(ok), {Name: "s", Type: arrow.StructOf(leaf(ok))}}, nil), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := catalog.EncodeSchema(tt.s)
			if tt.ok {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if !errors.Is(err, catalog.ErrInvalidSchema) || !strings.Contains(err.Error(), "1025 bytes") {
				t.Fatalf("got %v, want ErrInvalidSchema naming the 1025-byte name", err)
			}
		})
	}
}
