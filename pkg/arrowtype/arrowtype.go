// Package arrowtype writes Arrow types out exactly: what lake shows
// wherever a type is shown (discovery's describe and search answers, the
// browser, the CLI, schema diffs).
package arrowtype

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// String is t written out exactly: every parameter (precision and
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
// and prints children with it, which is why lake does not use it.
func String(t arrow.DataType) string {
	b := writer{left: -1}
	writeType(&b, t)
	return b.String()
}

// Short is String(t) cut to at most n bytes: a longer one keeps its first
// bytes (whole UTF-8 sequences) and ends with "…". It writes no more than
// n bytes whatever t's size, so a type of a million nested fields costs n
// bytes, not the million. n is at least len("…").
func Short(t arrow.DataType, n int) string {
	const ellipsis = "…"
	n = max(n, len(ellipsis))
	b := writer{left: n}
	writeType(&b, t)
	if !b.cut {
		return b.String()
	}
	s := b.String()
	return trimRunes(s[:n-len(ellipsis)]) + ellipsis
}

// writer is a strings.Builder that keeps at most left bytes (left < 0: all)
// and then ignores every write, saying so in cut.
type writer struct {
	strings.Builder
	left int
	cut  bool
}

func (w *writer) WriteString(s string) {
	switch {
	case w.cut:
	case w.left < 0:
		w.Builder.WriteString(s)
	case len(s) <= w.left:
		w.Builder.WriteString(s)
		w.left -= len(s)
	default:
		w.Builder.WriteString(s[:w.left])
		w.left, w.cut = 0, true
	}
}

// trimRunes drops the bytes of an incomplete UTF-8 sequence at s's end.
func trimRunes(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}

// Name is t's name alone: String without parameters or children
// ("decimal128", "list", "timestamp"). Unlike arrow.DataType.Name it names a
// 128-bit decimal "decimal128", not "decimal".
func Name(t arrow.DataType) string {
	if _, ok := t.(*arrow.Decimal128Type); ok {
		return "decimal128"
	}
	return t.Name()
}

func writeType(b *writer, t arrow.DataType) {
	if b.cut {
		return
	}
	switch t := t.(type) {
	case arrow.DecimalType:
		b.WriteString(Name(t) + "(" + strconv.Itoa(int(t.GetPrecision())) + ", " + strconv.Itoa(int(t.GetScale())) + ")")
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
func writeField(b *writer, f arrow.Field, sep string) {
	if sep != "" {
		b.WriteString(f.Name + sep)
	}
	writeType(b, f.Type)
	if !f.Nullable {
		b.WriteString(" not null")
	}
}
