package schemajson

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

var simpleNames = func() map[arrow.Type]string {
	m := make(map[arrow.Type]string, len(simple))
	for name, t := range simple {
		m[t.ID()] = name
	}
	return m
}()

var unitNames = map[arrow.TimeUnit]string{arrow.Second: "s", arrow.Millisecond: "ms", arrow.Microsecond: "us", arrow.Nanosecond: "ns"}

// Format encodes s in the JSON form, indented, such that Parse gives back an
// equal schema. It fails only for types the form does not cover (extension
// types).
func Format(s *arrow.Schema) ([]byte, error) {
	fs, err := formatFields(s.Fields())
	if err != nil {
		return nil, err
	}
	out := Schema{Fields: fs}
	if md := s.Metadata(); md.Len() > 0 {
		out.Metadata = metadataMap(md)
	}
	return json.MarshalIndent(out, "", "  ")
}

func metadataMap(md arrow.Metadata) map[string]string {
	m := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		m[k] = md.Values()[i]
	}
	return m
}

func formatFields(fs []arrow.Field) ([]Field, error) {
	out := make([]Field, len(fs))
	for i, f := range fs {
		jf, err := formatField(f)
		if err != nil {
			return nil, err
		}
		out[i] = jf
	}
	return out, nil
}

func formatField(f arrow.Field) (Field, error) {
	t, err := formatType(f.Type)
	if err != nil {
		return Field{}, fmt.Errorf("field %q: %w", f.Name, err)
	}
	out := Field{Name: f.Name, Type: t}
	if !f.Nullable {
		out.Nullable = new(bool)
	}
	if f.Metadata.Len() > 0 {
		out.Metadata = metadataMap(f.Metadata)
	}
	return out, nil
}

func mustRaw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func formatType(dt arrow.DataType) (json.RawMessage, error) {
	if name, ok := simpleNames[dt.ID()]; ok {
		return mustRaw(name), nil
	}
	var t typeJSON
	field := func(f arrow.Field) (*Field, error) {
		jf, err := formatField(f)
		return &jf, err
	}
	var err error
	switch dt := dt.(type) {
	case *arrow.Decimal128Type:
		t = typeJSON{Name: "decimal128", Precision: &dt.Precision, Scale: &dt.Scale}
	case *arrow.Decimal256Type:
		t = typeJSON{Name: "decimal256", Precision: &dt.Precision, Scale: &dt.Scale}
	case *arrow.TimestampType:
		t = typeJSON{Name: "timestamp", Unit: unitNames[dt.Unit], Timezone: dt.TimeZone}
	case *arrow.Time32Type:
		t = typeJSON{Name: "time32", Unit: unitNames[dt.Unit]}
	case *arrow.Time64Type:
		t = typeJSON{Name: "time64", Unit: unitNames[dt.Unit]}
	case *arrow.DurationType:
		t = typeJSON{Name: "duration", Unit: unitNames[dt.Unit]}
	case *arrow.MonthIntervalType:
		t = typeJSON{Name: "interval", Unit: "month"}
	case *arrow.DayTimeIntervalType:
		t = typeJSON{Name: "interval", Unit: "day_time"}
	case *arrow.MonthDayNanoIntervalType:
		t = typeJSON{Name: "interval", Unit: "month_day_nano"}
	case *arrow.FixedSizeBinaryType:
		t = typeJSON{Name: "fixed_size_binary", ByteWidth: &dt.ByteWidth}
	case *arrow.ListType:
		t.Name = "list"
		t.Item, err = field(dt.ElemField())
	case *arrow.LargeListType:
		t.Name = "large_list"
		t.Item, err = field(dt.ElemField())
	case *arrow.ListViewType:
		t.Name = "list_view"
		t.Item, err = field(dt.ElemField())
	case *arrow.LargeListViewType:
		t.Name = "large_list_view"
		t.Item, err = field(dt.ElemField())
	case *arrow.FixedSizeListType:
		n := dt.Len()
		t = typeJSON{Name: "fixed_size_list", Size: &n}
		t.Item, err = field(dt.ElemField())
	case *arrow.StructType:
		t.Name = "struct"
		t.Fields, err = formatFields(dt.Fields())
		if t.Fields == nil {
			t.Fields = []Field{}
		}
	case *arrow.MapType:
		t = typeJSON{Name: "map", KeysSorted: dt.KeysSorted}
		if t.Key, err = field(dt.KeyField()); err == nil {
			t.Key.Nullable = nil // keys are never nullable
			var v *Field
			if v, err = field(dt.ItemField()); err == nil {
				t.Value = mustRaw(v)
			}
		}
	case arrow.UnionType:
		t = typeJSON{Name: "union", Mode: "sparse"}
		if dt.Mode() == arrow.DenseMode {
			t.Mode = "dense"
		}
		for _, c := range dt.TypeCodes() {
			t.TypeCodes = append(t.TypeCodes, int8(c))
		}
		t.Fields, err = formatFields(dt.Fields())
	case *arrow.DictionaryType:
		t = typeJSON{Name: "dictionary", Ordered: dt.Ordered}
		if t.Index, err = formatType(dt.IndexType); err == nil {
			t.Value, err = formatType(dt.ValueType)
		}
	case *arrow.RunEndEncodedType:
		t.Name = "run_end_encoded"
		if !dt.ValueNullable {
			t.ValuesNullable = new(bool)
		}
		if t.RunEnds, err = formatType(dt.RunEnds()); err == nil {
			t.Values, err = formatType(dt.Encoded())
		}
	default:
		return nil, fmt.Errorf("schemajson: type %s has no JSON form", dt)
	}
	if err != nil {
		return nil, err
	}
	return mustRaw(t), nil
}
