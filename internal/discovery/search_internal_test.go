package discovery

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/like"
)

func TestMatchColumnsWalksEveryNestedType(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32,
			ValueType: arrow.StructOf(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64})}},
		{Name: "fsl", Type: arrow.FixedSizeListOf(2, arrow.StructOf(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}))},
		{Name: "ll", Type: arrow.LargeListOf(arrow.StructOf(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}))},
		{Name: "su", Type: arrow.SparseUnionOf([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, []arrow.UnionTypeCode{0})},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}))},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	ipc := flight.SerializeSchema(schema, memory.DefaultAllocator)
	tests := []struct {
		pattern string
		want    []string
	}{
		{"id", []string{"d.id", "fsl.item.id", "ll.item.id", "su.id", "m.value.id", "id"}},
		{"%.id", []string{"d.id", "fsl.item.id", "ll.item.id", "su.id", "m.value.id"}},
		{"m.%", []string{"m.key", "m.value", "m.value.id"}},
		{"nothing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			p, err := like.Compile(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			cols, err := matchColumns(context.Background(), ipc, p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cols.cols {
				got = append(got, c.Path)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzParseSearch: any body either parses or is INVALID_ARGUMENT; it never
// panics.
func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"table_pattern":"order\\_items"}`, `{"column_pattern":"%id"}`,
		`{"table_pattern":"a\\"}`, `{"x":1}`, `[]`, `{} {}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, err := parseSearch(body)
		if err != nil && status.Code(err) != codes.InvalidArgument {
			t.Fatalf("got %v, want nil or INVALID_ARGUMENT", err)
		}
	})
}
