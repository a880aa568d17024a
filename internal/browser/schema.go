package browser

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
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
	// TypeString), e.g. "decimal128(38, 10)", "list<item: int32>".
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
	out := Field{Name: f.Name, Type: TypeString(f.Type), Kind: kind(f.Type), Nullable: f.Nullable, Metadata: metadataMap(f.Metadata)}
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

// TypeString is t written out exactly: every parameter (precision and
// scale, unit and time zone, byte width, list size, union type codes,
// dictionary index type and ordering, map key ordering) and every child's
// name, type and nullability, so two types print alike only when they are
// the same type. A child is nullable unless marked "not null". For example:
//
//	decimal128(38, 10)   timestamp[us, tz=UTC]   fixed_size_binary[16]   duration[ms]
//	list<item: utf8 not null>   fixed_size_list<item: float32>[3]
//	struct<a: int64 not null, b: utf8>   map<utf8, int64>
//	dictionary<values=large_utf8, indices=int8, ordered>
//	dense_union<i: int32=0, s: utf8=5>   run_end_encoded<run_ends: int32, values: utf8>
//
// arrow-go's own String drops the width of a 128-bit decimal ("decimal")
// and prints children with it, which is why the browser does not use it.
func TypeString(t arrow.DataType) string {
	var b strings.Builder
	writeType(&b, t)
	return b.String()
}

// kind is t's name alone: TypeString without parameters or children.
func kind(t arrow.DataType) string {
	if _, ok := t.(*arrow.Decimal128Type); ok {
		return "decimal128"
	}
	return t.Name()
}

func writeType(b *strings.Builder, t arrow.DataType) {
	switch t := t.(type) {
	case arrow.DecimalType:
		b.WriteString(kind(t) + "(" + strconv.Itoa(int(t.GetPrecision())) + ", " + strconv.Itoa(int(t.GetScale())) + ")")
	case *arrow.FixedSizeListType:
		b.WriteString("fixed_size_list<")
		writeField(b, t.ElemField(), ": ")
		b.WriteString(">[" + strconv.Itoa(int(t.Len())) + "]")
	case arrow.ListLikeType: // list, large_list, list_view, large_list_view; map is handled first below
		if m, ok := t.(*arrow.MapType); ok {
			b.WriteString("map<")
			writeType(b, m.KeyType())
			b.WriteString(", ")
			writeField(b, arrow.Field{Type: m.ItemType(), Nullable: m.ItemField().Nullable}, "")
			if m.KeysSorted {
				b.WriteString(", keys_sorted")
			}
			b.WriteString(">")
			return
		}
		b.WriteString(t.Name() + "<")
		writeField(b, t.ElemField(), ": ")
		b.WriteString(">")
	case *arrow.StructType:
		b.WriteString("struct<")
		for i, f := range t.Fields() {
			if i > 0 {
				b.WriteString(", ")
			}
			writeField(b, f, ": ")
		}
		b.WriteString(">")
	case arrow.UnionType:
		b.WriteString(t.Name() + "<")
		codes := t.TypeCodes()
		for i, f := range t.Fields() {
			if i > 0 {
				b.WriteString(", ")
			}
			writeField(b, f, ": ")
			b.WriteString("=" + strconv.Itoa(int(codes[i])))
		}
		b.WriteString(">")
	case *arrow.DictionaryType:
		b.WriteString("dictionary<values=")
		writeType(b, t.ValueType)
		b.WriteString(", indices=")
		writeType(b, t.IndexType)
		if t.Ordered {
			b.WriteString(", ordered")
		}
		b.WriteString(">")
	case *arrow.RunEndEncodedType:
		b.WriteString("run_end_encoded<run_ends: ")
		writeType(b, t.RunEnds())
		b.WriteString(", values: ")
		writeField(b, arrow.Field{Type: t.Encoded(), Nullable: t.ValueNullable}, "")
		b.WriteString(">")
	case arrow.ExtensionType:
		b.WriteString("extension<" + t.ExtensionName() + ", storage=")
		writeType(b, t.StorageType())
		b.WriteString(">")
	default:
		// Primitive, binary and string types, and those whose String is
		// exact already: timestamp[us, tz=UTC], time32[ms], duration[ms],
		// fixed_size_binary[16], the intervals.
		b.WriteString(t.String())
	}
}

// writeField writes a child: its name and sep (when sep is not empty), its
// type, and " not null" unless it is nullable.
func writeField(b *strings.Builder, f arrow.Field, sep string) {
	if sep != "" {
		b.WriteString(f.Name + sep)
	}
	writeType(b, f.Type)
	if !f.Nullable {
		b.WriteString(" not null")
	}
}
