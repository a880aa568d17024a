// Package schemajson is lake's JSON form of an Arrow schema: what producers
// may send instead of IPC bytes, and what `lake show --json` prints. It
// covers every type the catalog keeps exactly.
//
// A schema is an object with "fields" and optional "metadata":
//
//	{"fields": [
//	   {"name": "id", "type": "int64", "nullable": false},
//	   {"name": "ts", "type": {"name": "timestamp", "unit": "us", "timezone": "UTC"}},
//	   {"name": "tags", "type": {"name": "list", "item": {"name": "item", "type": "utf8"}}}
//	 ],
//	 "metadata": {"owner": "data-eng"}}
//
// A field has "name", "type", "nullable" (default true) and "metadata". A
// type is a string for the types without parameters, or an object whose
// "name" selects the type and whose other members are its parameters:
//
//	null bool int8 int16 int32 int64 uint8 uint16 uint32 uint64
//	float16 float32 float64 utf8 binary large_utf8 large_binary
//	utf8_view binary_view date32 date64
//	{"name":"decimal128"|"decimal256", "precision":P, "scale":S}
//	{"name":"timestamp", "unit":"s"|"ms"|"us"|"ns", "timezone":"UTC"}  (timezone optional)
//	{"name":"time32", "unit":"s"|"ms"}   {"name":"time64", "unit":"us"|"ns"}
//	{"name":"duration", "unit":"s"|"ms"|"us"|"ns"}
//	{"name":"interval", "unit":"month"|"day_time"|"month_day_nano"}
//	{"name":"fixed_size_binary", "byte_width":N}
//	{"name":"list"|"large_list"|"list_view"|"large_list_view", "item":FIELD}
//	{"name":"fixed_size_list", "size":N, "item":FIELD}
//	{"name":"struct", "fields":[FIELD, …]}
//	{"name":"map", "key":FIELD, "value":FIELD, "keys_sorted":false}
//	{"name":"union", "mode":"dense"|"sparse", "fields":[FIELD, …], "type_codes":[…]}
//	{"name":"dictionary", "index":INT-TYPE, "value":TYPE, "ordered":false}
//	{"name":"run_end_encoded", "run_ends":"int16"|"int32"|"int64", "values":TYPE, "values_nullable":true}
//
// The simple names may also be written as {"name": "int64"}. Unknown type
// names, unknown members and bad parameters are errors naming the field path.
package schemajson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ErrInvalid is wrapped by every parse error.
var ErrInvalid = errors.New("schemajson: invalid schema")

// MaxDepth bounds type nesting.
const MaxDepth = 64

// Schema is the JSON shape of a schema.
type Schema struct {
	Fields   []Field           `json:"fields"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Field is the JSON shape of a field.
type Field struct {
	Name     string            `json:"name"`
	Type     json.RawMessage   `json:"type"`
	Nullable *bool             `json:"nullable,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// typeJSON holds every member any type object may have.
type typeJSON struct {
	Name       string          `json:"name"`
	Precision  *int32          `json:"precision,omitempty"`
	Scale      *int32          `json:"scale,omitempty"`
	Unit       string          `json:"unit,omitempty"`
	Timezone   string          `json:"timezone,omitempty"`
	ByteWidth  *int            `json:"byte_width,omitempty"`
	Size       *int32          `json:"size,omitempty"`
	Item       *Field          `json:"item,omitempty"`
	Fields     []Field         `json:"fields,omitempty"`
	Key        *Field          `json:"key,omitempty"`
	Value      json.RawMessage `json:"value,omitempty"`
	KeysSorted bool            `json:"keys_sorted,omitempty"`
	Mode       string          `json:"mode,omitempty"`
	TypeCodes  []int8          `json:"type_codes,omitempty"`
	Index      json.RawMessage `json:"index,omitempty"`
	Ordered    bool            `json:"ordered,omitempty"`
	RunEnds    json.RawMessage `json:"run_ends,omitempty"`
	Values     json.RawMessage `json:"values,omitempty"`
	// ValuesNullable is run_end_encoded's value nullability (default true).
	ValuesNullable *bool `json:"values_nullable,omitempty"`
}

var simple = map[string]arrow.DataType{
	"null":         arrow.Null,
	"bool":         arrow.FixedWidthTypes.Boolean,
	"int8":         arrow.PrimitiveTypes.Int8,
	"int16":        arrow.PrimitiveTypes.Int16,
	"int32":        arrow.PrimitiveTypes.Int32,
	"int64":        arrow.PrimitiveTypes.Int64,
	"uint8":        arrow.PrimitiveTypes.Uint8,
	"uint16":       arrow.PrimitiveTypes.Uint16,
	"uint32":       arrow.PrimitiveTypes.Uint32,
	"uint64":       arrow.PrimitiveTypes.Uint64,
	"float16":      arrow.FixedWidthTypes.Float16,
	"float32":      arrow.PrimitiveTypes.Float32,
	"float64":      arrow.PrimitiveTypes.Float64,
	"utf8":         arrow.BinaryTypes.String,
	"binary":       arrow.BinaryTypes.Binary,
	"large_utf8":   arrow.BinaryTypes.LargeString,
	"large_binary": arrow.BinaryTypes.LargeBinary,
	"utf8_view":    arrow.BinaryTypes.StringView,
	"binary_view":  arrow.BinaryTypes.BinaryView,
	"date32":       arrow.FixedWidthTypes.Date32,
	"date64":       arrow.FixedWidthTypes.Date64,
}

var units = map[string]arrow.TimeUnit{"s": arrow.Second, "ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond}

// Parse decodes the JSON form into an Arrow schema. Unknown members are
// errors, so a typo never silently changes a schema.
func Parse(b []byte) (*arrow.Schema, error) {
	var s Schema
	if err := strictUnmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if s.Fields == nil {
		return nil, fmt.Errorf("%w: no \"fields\" member", ErrInvalid)
	}
	fields, err := parseFields(s.Fields, "", 0)
	if err != nil {
		return nil, err
	}
	var md *arrow.Metadata
	if s.Metadata != nil {
		m := arrow.MetadataFrom(s.Metadata)
		md = &m
	}
	return arrow.NewSchema(fields, md), nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

func fail(path, format string, args ...any) error {
	if path == "" {
		path = "schema"
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalid, path, fmt.Sprintf(format, args...))
}

func parseFields(fs []Field, path string, depth int) ([]arrow.Field, error) {
	out := make([]arrow.Field, len(fs))
	for i, f := range fs {
		p := fmt.Sprintf("%s.fields[%d]", path, i)
		if path == "" {
			p = fmt.Sprintf("fields[%d]", i)
		}
		af, err := parseField(f, p, depth)
		if err != nil {
			return nil, err
		}
		out[i] = af
	}
	return out, nil
}

func parseField(f Field, path string, depth int) (arrow.Field, error) {
	if depth > MaxDepth {
		return arrow.Field{}, fail(path, "nested deeper than %d", MaxDepth)
	}
	if f.Name != "" {
		path += fmt.Sprintf("(%q)", f.Name)
	}
	if len(f.Type) == 0 {
		return arrow.Field{}, fail(path, "no \"type\"")
	}
	t, err := parseType(f.Type, path, depth)
	if err != nil {
		return arrow.Field{}, err
	}
	af := arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable == nil || *f.Nullable}
	if f.Metadata != nil {
		af.Metadata = arrow.MetadataFrom(f.Metadata)
	}
	return af, nil
}

func parseType(raw json.RawMessage, path string, depth int) (arrow.DataType, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, fail(path, "type: %v", err)
		}
		if t, ok := simple[name]; ok {
			return t, nil
		}
		return nil, fail(path, "unknown type %q (parameterized types are objects, e.g. {\"name\":\"timestamp\",\"unit\":\"us\"})", name)
	}
	var t typeJSON
	if err := strictUnmarshal(raw, &t); err != nil {
		return nil, fail(path, "type: %v", err)
	}
	if st, ok := simple[t.Name]; ok {
		return st, nil
	}
	unit := func(allowed ...string) (arrow.TimeUnit, error) {
		for _, a := range allowed {
			if t.Unit == a {
				return units[a], nil
			}
		}
		return 0, fail(path, "%s unit %q, want one of %s", t.Name, t.Unit, strings.Join(allowed, ", "))
	}
	item := func(f *Field, what string) (arrow.Field, error) {
		if f == nil {
			return arrow.Field{}, fail(path, "%s needs %q", t.Name, what)
		}
		return parseField(*f, path+"."+what, depth+1)
	}
	switch t.Name {
	case "decimal128", "decimal256":
		if t.Precision == nil {
			return nil, fail(path, "%s needs \"precision\"", t.Name)
		}
		scale := int32(0)
		if t.Scale != nil {
			scale = *t.Scale
		}
		maxP := int32(38)
		if t.Name == "decimal256" {
			maxP = 76
		}
		if *t.Precision < 1 || *t.Precision > maxP {
			return nil, fail(path, "%s precision %d, want 1 to %d", t.Name, *t.Precision, maxP)
		}
		if t.Name == "decimal128" {
			return &arrow.Decimal128Type{Precision: *t.Precision, Scale: scale}, nil
		}
		return &arrow.Decimal256Type{Precision: *t.Precision, Scale: scale}, nil
	case "timestamp":
		u, err := unit("s", "ms", "us", "ns")
		if err != nil {
			return nil, err
		}
		return &arrow.TimestampType{Unit: u, TimeZone: t.Timezone}, nil
	case "time32":
		u, err := unit("s", "ms")
		if err != nil {
			return nil, err
		}
		return &arrow.Time32Type{Unit: u}, nil
	case "time64":
		u, err := unit("us", "ns")
		if err != nil {
			return nil, err
		}
		return &arrow.Time64Type{Unit: u}, nil
	case "duration":
		u, err := unit("s", "ms", "us", "ns")
		if err != nil {
			return nil, err
		}
		return &arrow.DurationType{Unit: u}, nil
	case "interval":
		switch t.Unit {
		case "month":
			return arrow.FixedWidthTypes.MonthInterval, nil
		case "day_time":
			return arrow.FixedWidthTypes.DayTimeInterval, nil
		case "month_day_nano":
			return arrow.FixedWidthTypes.MonthDayNanoInterval, nil
		}
		return nil, fail(path, "interval unit %q, want month, day_time or month_day_nano", t.Unit)
	case "fixed_size_binary":
		if t.ByteWidth == nil || *t.ByteWidth < 0 || *t.ByteWidth > 1<<30 {
			return nil, fail(path, "fixed_size_binary needs a \"byte_width\" from 0 to 2^30")
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: *t.ByteWidth}, nil
	case "list", "large_list", "list_view", "large_list_view":
		f, err := item(t.Item, "item")
		if err != nil {
			return nil, err
		}
		switch t.Name {
		case "list":
			return arrow.ListOfField(f), nil
		case "large_list":
			return arrow.LargeListOfField(f), nil
		case "list_view":
			return arrow.ListViewOfField(f), nil
		}
		return arrow.LargeListViewOfField(f), nil
	case "fixed_size_list":
		if t.Size == nil || *t.Size < 0 {
			return nil, fail(path, "fixed_size_list needs a non-negative \"size\"")
		}
		f, err := item(t.Item, "item")
		if err != nil {
			return nil, err
		}
		return arrow.FixedSizeListOfField(*t.Size, f), nil
	case "struct":
		fs, err := parseFields(t.Fields, path, depth+1)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fs...), nil
	case "map":
		k, err := item(t.Key, "key")
		if err != nil {
			return nil, err
		}
		if k.Nullable && t.Key.Nullable != nil {
			return nil, fail(path, "map keys cannot be nullable")
		}
		k.Nullable = false
		var vf Field
		if err := strictUnmarshal(t.Value, &vf); err != nil || len(t.Value) == 0 {
			return nil, fail(path, "map needs a \"value\" field object")
		}
		v, err := parseField(vf, path+".value", depth+1)
		if err != nil {
			return nil, err
		}
		m := arrow.MapOfFields(k, v)
		m.KeysSorted = t.KeysSorted
		return m, nil
	case "union":
		fs, err := parseFields(t.Fields, path, depth+1)
		if err != nil {
			return nil, err
		}
		codes := t.TypeCodes
		if codes == nil {
			for i := range fs {
				codes = append(codes, int8(i))
			}
		}
		if len(codes) != len(fs) {
			return nil, fail(path, "union has %d fields and %d type_codes", len(fs), len(codes))
		}
		seen := map[int8]bool{}
		for _, c := range codes {
			if c < 0 || seen[c] {
				return nil, fail(path, "union type_codes must be distinct and non-negative")
			}
			seen[c] = true
		}
		switch t.Mode {
		case "dense":
			return arrow.DenseUnionOf(fs, codes), nil
		case "sparse":
			return arrow.SparseUnionOf(fs, codes), nil
		}
		return nil, fail(path, "union mode %q, want dense or sparse", t.Mode)
	case "dictionary":
		if len(t.Index) == 0 || len(t.Value) == 0 {
			return nil, fail(path, "dictionary needs \"index\" and \"value\" types")
		}
		idx, err := parseType(t.Index, path+".index", depth+1)
		if err != nil {
			return nil, err
		}
		if !arrow.IsInteger(idx.ID()) {
			return nil, fail(path, "dictionary index must be an integer type, not %s", idx)
		}
		val, err := parseType(t.Value, path+".value", depth+1)
		if err != nil {
			return nil, err
		}
		return &arrow.DictionaryType{IndexType: idx, ValueType: val, Ordered: t.Ordered}, nil
	case "run_end_encoded":
		if len(t.RunEnds) == 0 {
			return nil, fail(path, "run_end_encoded needs \"run_ends\"")
		}
		re, err := parseType(t.RunEnds, path+".run_ends", depth+1)
		if err != nil {
			return nil, err
		}
		switch re.ID() {
		case arrow.INT16, arrow.INT32, arrow.INT64:
		default:
			return nil, fail(path, "run_ends must be int16, int32 or int64, not %s", re)
		}
		if len(t.Values) == 0 {
			return nil, fail(path, "run_end_encoded needs \"values\"")
		}
		v, err := parseType(t.Values, path+".values", depth+1)
		if err != nil {
			return nil, err
		}
		ree := arrow.RunEndEncodedOf(re, v)
		ree.ValueNullable = t.ValuesNullable == nil || *t.ValuesNullable
		return ree, nil
	case "":
		return nil, fail(path, "type object has no \"name\"")
	}
	return nil, fail(path, "unknown type %q", t.Name)
}
