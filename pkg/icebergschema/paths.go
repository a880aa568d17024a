package icebergschema

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Paths returns every field path of s in depth-first pre-order: each
// top-level field in schema order, each followed by the fields nested in
// it before the next: a struct's fields in order, a list's element, a
// map's key and then its value (through a dictionary, its value type's).
// Paths are spelled as schemadiff spells them: dotted, a list's element
// "element" ("tags.element") and a map's key and value "key" and "value"
// ("attrs.value"), whatever the Arrow child fields are named. This is the
// order FieldIDs.IDs are recorded in. The caller owns the slice.
func Paths(s *arrow.Schema) []string {
	var out []string
	walk(s, func(path string, _ arrow.Field) { out = append(out, path) })
	return out
}

// walk calls visit for every field of s, with its path, in Paths order.
func walk(s *arrow.Schema, visit func(path string, f arrow.Field)) {
	var rec func(prefix string, f arrow.Field)
	rec = func(prefix string, f arrow.Field) {
		visit(prefix, f)
		for _, c := range children(f.Type) {
			rec(prefix+"."+c.Name, c)
		}
	}
	for _, f := range s.Fields() {
		rec(f.Name, f)
	}
}

// children returns the fields nested in t, each named as its path segment:
// a struct's fields, a list's element ("element"), a map's key and value
// ("key", "value"), a dictionary's value type's; nil for any other type.
func children(t arrow.DataType) []arrow.Field {
	switch t := t.(type) {
	case *arrow.DictionaryType:
		return children(t.ValueType)
	case *arrow.StructType:
		return t.Fields()
	case *arrow.MapType:
		return []arrow.Field{renamed(t.KeyField(), "key"), renamed(t.ItemField(), "value")}
	}
	if e, ok := listElem(t); ok {
		return []arrow.Field{renamed(e, "element")}
	}
	return nil
}

// listElem returns the element field of a list-like type: list,
// large_list, list_view, large_list_view, fixed_size_list.
func listElem(t arrow.DataType) (arrow.Field, bool) {
	switch t := t.(type) {
	case *arrow.ListType:
		return t.ElemField(), true
	case *arrow.LargeListType:
		return t.ElemField(), true
	case *arrow.ListViewType:
		return t.ElemField(), true
	case *arrow.LargeListViewType:
		return t.ElemField(), true
	case *arrow.FixedSizeListType:
		return t.ElemField(), true
	}
	return arrow.Field{}, false
}

// renamed is f under its path segment's fixed name.
func renamed(f arrow.Field, name string) arrow.Field {
	f.Name = name
	return f
}
