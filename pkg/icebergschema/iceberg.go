package icebergschema

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/lake-catalog/lake/pkg/arrowtype"
)

// MaxTypeBytes bounds UnsupportedError.ArrowType: a longer type is cut at
// its end with "…" (arrowtype.Short).
const MaxTypeBytes = 256

// UnsupportedError is ToIceberg's refusal of a field whose Arrow type has
// no Iceberg (format version 2) type: Path is the field's path (as Paths
// spells it) and ArrowType its type (arrowtype's spelling, at most
// MaxTypeBytes), Reason what Iceberg lacks.
type UnsupportedError struct {
	Path      string
	ArrowType string
	Reason    string
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("icebergschema: column %q: Arrow type %s has no Iceberg v2 type", e.Path, e.ArrowType)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg
}

// uuidExtension is the name of Arrow's canonical UUID extension type.
const uuidExtension = "arrow.uuid"

// isUUID reports whether f is Arrow's UUID extension type: decoded as the
// extension (when arrow-go's extensions package is registered) or as its
// storage, fixed_size_binary(16), with the extension's name in the field's
// metadata.
func isUUID(f arrow.Field) bool {
	if e, ok := f.Type.(arrow.ExtensionType); ok {
		return e.ExtensionName() == uuidExtension
	}
	if b, ok := f.Type.(*arrow.FixedSizeBinaryType); ok && b.ByteWidth == 16 {
		name, ok := f.Metadata.GetValue("ARROW:extension:name")
		return ok && name == uuidExtension
	}
	return false
}

// ToIceberg returns s as the Iceberg schema schemaID, its fields numbered
// by ids (Assign's for s): every field optional when nullable and required
// when not, its doc the Arrow field's "comment" metadata, else its "doc".
// Types map as the package comment's table says. A field whose type has no
// Iceberg v2 type is an *UnsupportedError naming the first such field in
// Paths order; ids that are not as many as s's paths, or not positive and
// unique, are an error too.
func ToIceberg(s *arrow.Schema, ids FieldIDs, schemaID int) (*iceberg.Schema, error) {
	if err := checkIDs(s, ids); err != nil {
		return nil, err
	}
	c := converter{ids: ids.IDs}
	fields := make([]iceberg.NestedField, len(s.Fields()))
	for i, f := range s.Fields() {
		nf, err := c.field(f.Name, f)
		if err != nil {
			return nil, err
		}
		fields[i] = nf
	}
	return iceberg.NewSchema(schemaID, fields...), nil
}

// checkIDs checks that ids can number s's fields: one per path, positive,
// unique, none above LastColumnID.
func checkIDs(s *arrow.Schema, ids FieldIDs) error {
	n := 0
	walk(s, func(string, arrow.Field) { n++ })
	if n != len(ids.IDs) {
		return fmt.Errorf("icebergschema: %d field ids for %d fields", len(ids.IDs), n)
	}
	seen := make(map[int32]bool, n)
	for _, id := range ids.IDs {
		switch {
		case id <= 0 || id > ids.LastColumnID:
			return fmt.Errorf("icebergschema: field id %d outside 1 to last column id %d", id, ids.LastColumnID)
		case seen[id]:
			return fmt.Errorf("icebergschema: field id %d given twice", id)
		}
		seen[id] = true
	}
	return nil
}

// converter numbers fields with ids in Paths order as it converts them.
type converter struct {
	ids  []int32
	next int
}

func (c *converter) id() int {
	id := c.ids[c.next]
	c.next++
	return int(id)
}

// field converts f, at path, taking its id and then its children's.
func (c *converter) field(path string, f arrow.Field) (iceberg.NestedField, error) {
	nf := iceberg.NestedField{ID: c.id(), Name: f.Name, Required: !f.Nullable, Doc: doc(f)}
	t, err := c.typ(path, f)
	if err != nil {
		return iceberg.NestedField{}, err
	}
	nf.Type = t
	return nf, nil
}

// doc is f's "comment" metadata, else its "doc", else "".
func doc(f arrow.Field) string {
	for _, k := range []string{"comment", "doc"} {
		if v, ok := f.Metadata.GetValue(k); ok {
			return v
		}
	}
	return ""
}

// typ converts the type of f, at path (ids of f's children are taken in
// order).
func (c *converter) typ(path string, f arrow.Field) (iceberg.Type, error) {
	refuse := func(reason string) (iceberg.Type, error) {
		return nil, &UnsupportedError{Path: path, ArrowType: arrowtype.Short(f.Type, MaxTypeBytes), Reason: reason}
	}
	if isUUID(f) {
		return iceberg.PrimitiveTypes.UUID, nil
	}
	if e, ok := listElem(f.Type); ok {
		ep := path + ".element"
		id := c.id()
		et, err := c.typ(ep, e)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: et, ElementRequired: !e.Nullable}, nil
	}
	switch t := f.Type.(type) {
	case *arrow.DictionaryType:
		return c.typ(path, arrow.Field{Name: f.Name, Type: t.ValueType, Nullable: f.Nullable, Metadata: f.Metadata})
	case *arrow.StructType:
		fields := make([]iceberg.NestedField, len(t.Fields()))
		for i, cf := range t.Fields() {
			nf, err := c.field(path+"."+cf.Name, cf)
			if err != nil {
				return nil, err
			}
			fields[i] = nf
		}
		return &iceberg.StructType{FieldList: fields}, nil
	case *arrow.MapType:
		kf, vf := t.KeyField(), t.ItemField()
		kid := c.id()
		kt, err := c.typ(path+".key", kf)
		if err != nil {
			return nil, err
		}
		vid := c.id()
		vt, err := c.typ(path+".value", vf)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt, ValueRequired: !vf.Nullable}, nil
	case *arrow.BooleanType:
		return iceberg.PrimitiveTypes.Bool, nil
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return iceberg.PrimitiveTypes.Int32, nil
	case *arrow.Int64Type, *arrow.Uint32Type:
		return iceberg.PrimitiveTypes.Int64, nil
	case *arrow.Uint64Type:
		return refuse("its values above 2^63-1 fit no Iceberg integer")
	case *arrow.Float16Type:
		return refuse("Iceberg has no 16-bit float")
	case *arrow.Float32Type:
		return iceberg.PrimitiveTypes.Float32, nil
	case *arrow.Float64Type:
		return iceberg.PrimitiveTypes.Float64, nil
	case arrow.DecimalType:
		p, s := int(t.GetPrecision()), int(t.GetScale())
		switch {
		case p < 1 || p > 38:
			return refuse("Iceberg decimals have a precision of 1 to 38")
		case s < 0 || s > p:
			return refuse("Iceberg decimals have a scale of 0 to their precision")
		}
		return iceberg.DecimalTypeOf(p, s), nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return iceberg.PrimitiveTypes.String, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return iceberg.PrimitiveTypes.Binary, nil
	case *arrow.FixedSizeBinaryType:
		if t.ByteWidth < 1 {
			return refuse("Iceberg fixed types have a length of at least 1")
		}
		return iceberg.FixedTypeOf(t.ByteWidth), nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return iceberg.PrimitiveTypes.Date, nil
	case *arrow.Time32Type:
		return iceberg.PrimitiveTypes.Time, nil
	case *arrow.Time64Type:
		if t.Unit == arrow.Nanosecond {
			return refuse("Iceberg time is microseconds")
		}
		return iceberg.PrimitiveTypes.Time, nil
	case *arrow.TimestampType:
		if t.Unit == arrow.Nanosecond {
			return refuse("nanosecond timestamps are Iceberg v3")
		}
		if t.TimeZone != "" {
			return iceberg.PrimitiveTypes.TimestampTz, nil
		}
		return iceberg.PrimitiveTypes.Timestamp, nil
	}
	return refuse("")
}

// NameMapping returns the JSON of s's Iceberg name mapping with ids (the
// table property schema.name-mapping.default), so that engines give
// fields ids in data files written without them: for each field
// {"field-id": id, "names": [name]} with the fields nested in it under
// "fields", a list's element named "element" and a map's key and value
// "key" and "value" (as iceberg-go's Schema.NameMapping names them), each
// also under its Arrow field's own name when that differs (a list's
// "item"), which is what Parquet files written from the Arrow schema call
// it. Every field is mapped, whatever its type. ids must number s's fields
// as ToIceberg requires.
func NameMapping(s *arrow.Schema, ids FieldIDs) ([]byte, error) {
	if err := checkIDs(s, ids); err != nil {
		return nil, err
	}
	i := 0
	var rec func(fs []arrow.Field, arrowNames []string) []iceberg.MappedField
	rec = func(fs []arrow.Field, arrowNames []string) []iceberg.MappedField {
		out := make([]iceberg.MappedField, len(fs))
		for j, f := range fs {
			id := int(ids.IDs[i])
			i++
			names := []string{f.Name}
			if arrowNames != nil && arrowNames[j] != f.Name {
				names = append(names, arrowNames[j])
			}
			kids, kidNames := children(f.Type), childNames(f.Type)
			out[j] = iceberg.MappedField{Names: names, FieldID: &id, Fields: rec(kids, kidNames)}
		}
		return out
	}
	return json.Marshal(iceberg.NameMapping(rec(s.Fields(), nil)))
}

// childNames returns the Arrow names of the fields children(t) returns
// under their path segments.
func childNames(t arrow.DataType) []string {
	switch t := t.(type) {
	case *arrow.DictionaryType:
		return childNames(t.ValueType)
	case *arrow.MapType:
		return []string{t.KeyField().Name, t.ItemField().Name}
	}
	if e, ok := listElem(t); ok {
		return []string{e.Name}
	}
	return nil
}
