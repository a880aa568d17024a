package browser

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/arrowtype"
)

// RemarksKey is the field metadata key Flight SQL uses for a column
// comment.
const RemarksKey = "ARROW:FLIGHT:SQL:REMARKS"

// Schema is a table's schema as the page shows it: a tree of fields.
type Schema struct {
	Fields   []Field           `json:"fields"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Field is one node of the tree: a column, or a nested type's child (a
// struct's or union's field, a list's item, a map's key and value, a
// dictionary's indices and values, a run-end encoded array's run ends and
// values).
type Field struct {
	Name string `json:"name"`
	// Type is the exact type, every parameter and child included (see
	// arrowtype.String), e.g. "decimal128(38, 10)", "list<item: int32>".
	Type string `json:"type"`
	// Kind is the type's name alone, e.g. "decimal128", "list".
	Kind     string            `json:"kind"`
	Nullable bool              `json:"nullable"`
	Comment  string            `json:"comment,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Children []Field           `json:"children,omitempty"`
}

// SchemaTree returns s as a tree with every nested type expanded.
func SchemaTree(s *arrow.Schema) *Schema {
	md := s.Metadata()
	return &Schema{Fields: fields(s.Fields()), Metadata: metadataMap(md)}
}

func fields(fs []arrow.Field) []Field {
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = field(f)
	}
	return out
}

func field(f arrow.Field) Field {
	out := Field{Name: f.Name, Type: arrowtype.String(f.Type), Kind: arrowtype.Name(f.Type), Nullable: f.Nullable, Metadata: metadataMap(f.Metadata)}
	out.Comment = out.Metadata[RemarksKey]
	out.Children = fields(children(f.Type))
	if len(out.Children) == 0 {
		out.Children = nil
	}
	return out
}

// children are a type's child fields, as the tree shows them.
func children(t arrow.DataType) []arrow.Field {
	switch t := t.(type) {
	case *arrow.MapType:
		return []arrow.Field{t.KeyField(), t.ItemField()}
	case *arrow.DictionaryType:
		return []arrow.Field{{Name: "indices", Type: t.IndexType}, {Name: "values", Type: t.ValueType, Nullable: true}}
	case *arrow.RunEndEncodedType:
		return []arrow.Field{{Name: "run_ends", Type: t.RunEnds()}, {Name: "values", Type: t.Encoded(), Nullable: t.ValueNullable}}
	case arrow.ExtensionType:
		return []arrow.Field{{Name: "storage", Type: t.StorageType(), Nullable: true}}
	case arrow.NestedType:
		return t.Fields()
	}
	return nil
}

func metadataMap(md arrow.Metadata) map[string]string {
	if md.Len() == 0 {
		return nil
	}
	m := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		m[k] = md.Values()[i]
	}
	return m
}
