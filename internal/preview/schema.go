package preview

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// readable reports whether a file's column of type file may be returned as
// the registered type reg without converting a value: the same Arrow type
// but for field metadata, the names of list and map elements, and the
// nullability of nested fields, where a nested field may be required in
// the file and nullable in the registration but not the other way round
// (the file could hold nulls the table says it has not). Nothing else is
// accepted: not even an int32 file column for an int64 table column, which
// Iceberg promotes; a preview never casts.
func readable(file, reg arrow.DataType) bool {
	switch rt := reg.(type) {
	case *arrow.StructType:
		ft, ok := file.(*arrow.StructType)
		if !ok || ft.NumFields() != rt.NumFields() {
			return false
		}
		for i := range rt.NumFields() {
			r, f := rt.Field(i), ft.Field(i)
			if r.Name != f.Name || (f.Nullable && !r.Nullable) || !readable(f.Type, r.Type) {
				return false
			}
		}
		return true
	case *arrow.MapType:
		ft, ok := file.(*arrow.MapType)
		return ok && ft.KeysSorted == rt.KeysSorted && readable(ft.Elem(), rt.Elem())
	case *arrow.FixedSizeListType:
		ft, ok := file.(*arrow.FixedSizeListType)
		return ok && ft.Len() == rt.Len() && elemReadable(ft, rt)
	case arrow.ListLikeType:
		ft, ok := file.(arrow.ListLikeType)
		return ok && file.ID() == reg.ID() && elemReadable(ft, rt)
	}
	return arrow.TypeEqual(file, reg)
}

func elemReadable(file, reg arrow.ListLikeType) bool {
	f, r := file.ElemField(), reg.ElemField()
	return (!f.Nullable || r.Nullable) && readable(f.Type, r.Type)
}

// relabel returns data with type t, which readable accepted for data's
// type: the same buffers, only the field names and nullability in the type
// differ. The caller releases the result.
func relabel(data arrow.ArrayData, t arrow.DataType) arrow.ArrayData {
	if arrow.TypeEqual(data.DataType(), t) {
		data.Retain()
		return data
	}
	children := data.Children()
	out := make([]arrow.ArrayData, len(children))
	for i, c := range children {
		var ct arrow.DataType
		switch tt := t.(type) {
		case *arrow.StructType:
			ct = tt.Field(i).Type
		case arrow.ListLikeType:
			ct = tt.Elem()
		default:
			panic(fmt.Sprintf("preview: relabel a child of %s", t))
		}
		out[i] = relabel(c, ct)
	}
	d := array.NewData(t, data.Len(), data.Buffers(), out, data.NullN(), data.Offset())
	for _, c := range out {
		c.Release()
	}
	return d
}
