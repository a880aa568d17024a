package icebergschema

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/arrowtype"
)

// FieldIDs is the Iceberg field ids of one schema: IDs[i] is the id of
// Paths(s)[i], and LastColumnID the highest id ever assigned to the table
// (Iceberg's last-column-id), which never decreases from one schema to the
// next. Ids are positive and unique within a schema.
type FieldIDs struct {
	IDs          []int32
	LastColumnID int32
}

// Assign returns the field ids of s, the table's next schema, given the
// previous schema prevSchema and its ids prev (see the package comment): a
// field of s whose path is in prevSchema with the same shape keeps its id,
// and every other field gets the next id after prev.LastColumnID, in Paths
// order. A field removed and added back is new: the id it had is never
// given again. With prevSchema nil or prev without ids nothing matches, so
// Assign(nil, FieldIDs{}, s) is the fresh assignment: 1 to N in Paths
// order, LastColumnID N.
//
// Ids in prev that cannot be the ids of prevSchema (another count than its
// paths) match nothing, an id not positive matches no field and one given
// twice only the first field in Paths order; prev.LastColumnID is still the floor of the new ids. Assign is
// deterministic: the same arguments give the same ids. It does not modify
// prev; the caller owns the result.
func Assign(prevSchema *arrow.Schema, prev FieldIDs, s *arrow.Schema) FieldIDs {
	var root []*node
	if prevSchema != nil && len(prev.IDs) > 0 {
		root = tree(prevSchema, prev.IDs)
	}
	// First the ids kept, then the new ones above every id in use.
	var ids []int32
	used := map[int32]bool{}
	last := max(prev.LastColumnID, 0)
	var rec func(f arrow.Field, match *node)
	rec = func(f arrow.Field, match *node) {
		sh := shape(f)
		idx := len(ids)
		ids = append(ids, 0)
		var kids []*node
		if match != nil && match.shape == sh {
			kids = match.kids
			if match.id > 0 && !used[match.id] {
				ids[idx] = match.id
				used[match.id] = true
				last = max(last, match.id)
			}
		}
		pairs(children(f.Type), kids, rec)
	}
	pairs(s.Fields(), root, rec)
	for i, id := range ids {
		if id == 0 {
			last++
			ids[i] = last
		}
	}
	return FieldIDs{IDs: ids, LastColumnID: last}
}

// node is one field of the previous schema: its path segment, shape, id
// and the fields nested in it.
type node struct {
	name  string
	shape string
	id    int32
	kids  []*node
}

// tree builds the nodes of s with ids in Paths order; nil when ids are
// not as many as s's paths.
func tree(s *arrow.Schema, ids []int32) []*node {
	i := 0
	var rec func(fs []arrow.Field) []*node
	rec = func(fs []arrow.Field) []*node {
		out := make([]*node, len(fs))
		for j, f := range fs {
			n := &node{name: f.Name, shape: shape(f)}
			if i < len(ids) {
				n.id = ids[i]
			}
			i++
			n.kids = rec(children(f.Type))
			out[j] = n
		}
		return out
	}
	root := rec(s.Fields())
	if i != len(ids) {
		return nil
	}
	return root
}

// pairs calls visit for each of fs with the node of the same name among
// prev (the n-th field of a name with the n-th node of that name), or nil.
func pairs(fs []arrow.Field, prev []*node, visit func(arrow.Field, *node)) {
	byName := map[string][]*node{}
	for _, n := range prev {
		byName[n.name] = append(byName[n.name], n)
	}
	for _, f := range fs {
		var match *node
		if ns := byName[f.Name]; len(ns) > 0 {
			match, byName[f.Name] = ns[0], ns[1:]
		}
		visit(f, match)
	}
}

// shape is what a field must keep to keep its id (the package comment's
// table): the Iceberg type it maps to, with the types Iceberg promotes one
// into another (int to long, float to double, a decimal's precision) and
// the Arrow encodings of one type (string, large_string, string_view) as
// one; a nested type's kind alone (struct, list, map), its children
// matched on their own; for a type Iceberg has no type for, the exact
// Arrow type.
func shape(f arrow.Field) string {
	t := f.Type
	if d, ok := t.(*arrow.DictionaryType); ok {
		return shape(arrow.Field{Type: d.ValueType, Metadata: f.Metadata})
	}
	if isUUID(f) {
		return "uuid"
	}
	if _, ok := listElem(t); ok {
		return "list"
	}
	switch t := t.(type) {
	case *arrow.StructType:
		return "struct"
	case *arrow.MapType:
		return "map"
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		return "integer"
	case *arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type:
		return "floating"
	case arrow.DecimalType:
		return fmt.Sprintf("decimal(scale %d)", t.GetScale())
	case *arrow.BooleanType:
		return "boolean"
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "string"
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return "binary"
	case *arrow.FixedSizeBinaryType:
		return fmt.Sprintf("fixed[%d]", t.ByteWidth)
	case *arrow.Date32Type, *arrow.Date64Type:
		return "date"
	case *arrow.Time32Type, *arrow.Time64Type:
		return "time"
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return "timestamptz"
		}
		return "timestamp"
	}
	return "arrow " + arrowtype.String(t)
}
