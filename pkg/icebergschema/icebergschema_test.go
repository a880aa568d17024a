package icebergschema_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"

	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/icebergschema"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

func field(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

func schema(fs ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fs, nil) }

// nested is a schema with every kind of nesting.
func nested() *arrow.Schema {
	return schema(
		field("id", arrow.PrimitiveTypes.Int64),
		field("customer", arrow.StructOf(
			field("name", arrow.BinaryTypes.String),
			field("address", arrow.StructOf(field("zip", arrow.BinaryTypes.String))),
		)),
		field("tags", arrow.ListOf(arrow.BinaryTypes.String)),
		field("attrs", arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Int32))),
		field("points", arrow.ListOf(arrow.StructOf(field("x", arrow.PrimitiveTypes.Float64)))),
	)
}

func TestPathsOrder(t *testing.T) {
	t.Parallel()
	got := icebergschema.Paths(nested())
	want := []string{
		"id",
		"customer", "customer.name", "customer.address", "customer.address.zip",
		"tags", "tags.element",
		"attrs", "attrs.key", "attrs.value", "attrs.value.element",
		"points", "points.element", "points.element.x",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Paths = %q, want %q", got, want)
	}
}

func TestPathsRichSchema(t *testing.T) {
	t.Parallel()
	got := icebergschema.Paths(catalogtest.RichSchema())
	for _, p := range []string{"list.element", "list_view.element", "fixed_size_list.element",
		"struct.nested.deep.element", "map.key", "map.value"} {
		if !slices.Contains(got, p) {
			t.Errorf("Paths(RichSchema) lacks %q", p)
		}
	}
	if i, j := slices.Index(got, "struct.nested"), slices.Index(got, "struct.nested.deep"); i < 0 || j != i+1 {
		t.Errorf("struct.nested at %d, struct.nested.deep at %d, want it right after", i, j)
	}
}

func ids(n ...int32) []int32 { return n }

func TestAssignFresh(t *testing.T) {
	t.Parallel()
	got := icebergschema.Assign(nil, icebergschema.FieldIDs{}, nested())
	if n := len(icebergschema.Paths(nested())); len(got.IDs) != n || got.LastColumnID != int32(n) {
		t.Fatalf("fresh = %+v, want 1..%d", got, n)
	}
	for i, id := range got.IDs {
		if id != int32(i+1) {
			t.Fatalf("fresh id %d = %d, want %d", i, id, i+1)
		}
	}
	// A previous schema with no ids at all is fresh too.
	if again := icebergschema.Assign(nested(), icebergschema.FieldIDs{}, nested()); !slices.Equal(again.IDs, got.IDs) {
		t.Fatalf("Assign with empty prev = %v, want %v", again.IDs, got.IDs)
	}
}

func TestAssignStability(t *testing.T) {
	t.Parallel()
	v1 := schema(
		field("a", arrow.PrimitiveTypes.Int32),
		field("s", arrow.StructOf(field("x", arrow.PrimitiveTypes.Int64), field("y", arrow.BinaryTypes.String))),
		field("l", arrow.ListOf(arrow.BinaryTypes.String)),
	)
	// a=1 s=2 s.x=3 s.y=4 l=5 l.element=6
	ids1 := icebergschema.Assign(nil, icebergschema.FieldIDs{}, v1)
	tests := []struct {
		name string
		next *arrow.Schema
		want icebergschema.FieldIDs
	}{
		{"unchanged", v1, ids1},
		{"added at the end", schema(append(v1.Fields(), field("b", arrow.FixedWidthTypes.Boolean))...),
			icebergschema.FieldIDs{IDs: ids(1, 2, 3, 4, 5, 6, 7), LastColumnID: 7}},
		{"added in a struct, first", schema(
			field("a", arrow.PrimitiveTypes.Int32),
			field("s", arrow.StructOf(field("w", arrow.PrimitiveTypes.Int8), field("x", arrow.PrimitiveTypes.Int64), field("y", arrow.BinaryTypes.String))),
			field("l", arrow.ListOf(arrow.BinaryTypes.String))),
			icebergschema.FieldIDs{IDs: ids(1, 2, 7, 3, 4, 5, 6), LastColumnID: 7}},
		{"removed", schema(v1.Field(0), v1.Field(2)),
			icebergschema.FieldIDs{IDs: ids(1, 5, 6), LastColumnID: 6}},
		{"reordered", schema(v1.Field(2), v1.Field(0), v1.Field(1)),
			icebergschema.FieldIDs{IDs: ids(5, 6, 1, 2, 3, 4), LastColumnID: 6}},
		{"promoted, nullability and metadata", schema(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"c"})},
			field("s", arrow.StructOf(field("x", arrow.PrimitiveTypes.Int64), field("y", arrow.BinaryTypes.LargeString))),
			field("l", arrow.LargeListOf(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}))),
			ids1},
		{"moved into a struct", schema(
			field("s", arrow.StructOf(field("x", arrow.PrimitiveTypes.Int64), field("y", arrow.BinaryTypes.String), field("a", arrow.PrimitiveTypes.Int32))),
			field("l", arrow.ListOf(arrow.BinaryTypes.String))),
			icebergschema.FieldIDs{IDs: ids(2, 3, 4, 7, 5, 6), LastColumnID: 7}},
		{"struct became int", schema(v1.Field(0), field("s", arrow.PrimitiveTypes.Int64), v1.Field(2)),
			icebergschema.FieldIDs{IDs: ids(1, 7, 5, 6), LastColumnID: 7}},
		{"int became string", schema(field("a", arrow.BinaryTypes.String), v1.Field(1), v1.Field(2)),
			icebergschema.FieldIDs{IDs: ids(7, 2, 3, 4, 5, 6), LastColumnID: 7}},
		{"list of strings became list of structs", schema(v1.Field(0), v1.Field(1),
			field("l", arrow.ListOf(arrow.StructOf(field("z", arrow.PrimitiveTypes.Int32))))),
			icebergschema.FieldIDs{IDs: ids(1, 2, 3, 4, 5, 7, 8), LastColumnID: 8}},
		{"list became map", schema(v1.Field(0), v1.Field(1), field("l", arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String))),
			icebergschema.FieldIDs{IDs: ids(1, 2, 3, 4, 7, 8, 9), LastColumnID: 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := icebergschema.Assign(v1, ids1, tt.next)
			if !slices.Equal(got.IDs, tt.want.IDs) || got.LastColumnID != tt.want.LastColumnID {
				t.Fatalf("Assign = %+v, want %+v (paths %q)", got, tt.want, icebergschema.Paths(tt.next))
			}
			if again := icebergschema.Assign(v1, ids1, tt.next); !slices.Equal(again.IDs, got.IDs) {
				t.Fatalf("second Assign = %v, want %v", again.IDs, got.IDs)
			}
		})
	}
}

// A field removed and added back is new: its old id is never given again,
// and the last column id never goes down.
func TestAssignRemovedAndReaddedGetsNewID(t *testing.T) {
	t.Parallel()
	v1 := schema(field("a", arrow.PrimitiveTypes.Int32), field("b", arrow.BinaryTypes.String))
	ids1 := icebergschema.Assign(nil, icebergschema.FieldIDs{}, v1)
	v2 := schema(field("a", arrow.PrimitiveTypes.Int32))
	ids2 := icebergschema.Assign(v1, ids1, v2)
	if !slices.Equal(ids2.IDs, ids(1)) || ids2.LastColumnID != 2 {
		t.Fatalf("after removing b: %+v, want [1] last 2", ids2)
	}
	ids3 := icebergschema.Assign(v2, ids2, v1)
	if !slices.Equal(ids3.IDs, ids(1, 3)) || ids3.LastColumnID != 3 {
		t.Fatalf("after adding b back: %+v, want [1 3] last 3", ids3)
	}
}

// Ids that cannot be the previous schema's match nothing, and the last
// column id still bounds the new ones from below.
func TestAssignIgnoresUnusableIDs(t *testing.T) {
	t.Parallel()
	v1 := schema(field("a", arrow.PrimitiveTypes.Int32), field("b", arrow.BinaryTypes.String))
	for name, prev := range map[string]icebergschema.FieldIDs{
		"too few":  {IDs: ids(1), LastColumnID: 9},
		"too many": {IDs: ids(1, 2, 3), LastColumnID: 9},
	} {
		got := icebergschema.Assign(v1, prev, v1)
		if !slices.Equal(got.IDs, ids(10, 11)) || got.LastColumnID != 11 {
			t.Errorf("%s: Assign = %+v, want [10 11] last 11", name, got)
		}
	}
	if got := icebergschema.Assign(nil, icebergschema.FieldIDs{LastColumnID: 9}, v1); !slices.Equal(got.IDs, ids(10, 11)) || got.LastColumnID != 11 {
		t.Errorf("no previous schema, last column id 9: Assign = %+v, want [10 11] last 11", got)
	}
	got := icebergschema.Assign(v1, icebergschema.FieldIDs{IDs: ids(4, 4), LastColumnID: 4}, v1)
	if !slices.Equal(got.IDs, ids(4, 5)) || got.LastColumnID != 5 {
		t.Errorf("repeated id: Assign = %+v, want [4 5] last 5", got)
	}
}

func TestToIcebergTypes(t *testing.T) {
	t.Parallel()
	P := iceberg.PrimitiveTypes
	tests := []struct {
		arrow arrow.DataType
		want  iceberg.Type
	}{
		{arrow.FixedWidthTypes.Boolean, P.Bool},
		{arrow.PrimitiveTypes.Int8, P.Int32},
		{arrow.PrimitiveTypes.Int16, P.Int32},
		{arrow.PrimitiveTypes.Int32, P.Int32},
		{arrow.PrimitiveTypes.Uint8, P.Int32},
		{arrow.PrimitiveTypes.Uint16, P.Int32},
		{arrow.PrimitiveTypes.Int64, P.Int64},
		{arrow.PrimitiveTypes.Uint32, P.Int64},
		{arrow.PrimitiveTypes.Float32, P.Float32},
		{arrow.PrimitiveTypes.Float64, P.Float64},
		{&arrow.Decimal128Type{Precision: 38, Scale: 10}, iceberg.DecimalTypeOf(38, 10)},
		{&arrow.Decimal256Type{Precision: 20, Scale: 0}, iceberg.DecimalTypeOf(20, 0)},
		{&arrow.Decimal64Type{Precision: 18, Scale: 2}, iceberg.DecimalTypeOf(18, 2)},
		{arrow.FixedWidthTypes.Date32, P.Date},
		{arrow.FixedWidthTypes.Date64, P.Date},
		{arrow.FixedWidthTypes.Time32s, P.Time},
		{arrow.FixedWidthTypes.Time32ms, P.Time},
		{arrow.FixedWidthTypes.Time64us, P.Time},
		{&arrow.TimestampType{Unit: arrow.Second}, P.Timestamp},
		{&arrow.TimestampType{Unit: arrow.Millisecond}, P.Timestamp},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, P.Timestamp},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, P.TimestampTz},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "America/New_York"}, P.TimestampTz},
		{arrow.BinaryTypes.String, P.String},
		{arrow.BinaryTypes.LargeString, P.String},
		{arrow.BinaryTypes.StringView, P.String},
		{arrow.BinaryTypes.Binary, P.Binary},
		{arrow.BinaryTypes.LargeBinary, P.Binary},
		{arrow.BinaryTypes.BinaryView, P.Binary},
		{&arrow.FixedSizeBinaryType{ByteWidth: 16}, iceberg.FixedTypeOf(16)},
		{extensions.NewUUIDType(), P.UUID},
		{&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, P.String},
		{arrow.ListOf(arrow.PrimitiveTypes.Int32), &iceberg.ListType{ElementID: 2, Element: P.Int32}},
		{arrow.LargeListOf(arrow.PrimitiveTypes.Int32), &iceberg.ListType{ElementID: 2, Element: P.Int32}},
		{arrow.ListViewOf(arrow.PrimitiveTypes.Int32), &iceberg.ListType{ElementID: 2, Element: P.Int32}},
		{arrow.FixedSizeListOfNonNullable(3, arrow.PrimitiveTypes.Float32), &iceberg.ListType{ElementID: 2, Element: P.Float32, ElementRequired: true}},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), &iceberg.MapType{KeyID: 2, KeyType: P.String, ValueID: 3, ValueType: P.Int64}},
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}),
			&iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 2, Name: "a", Type: P.Int64, Required: true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.arrow.String(), func(t *testing.T) {
			t.Parallel()
			s := schema(field("c", tt.arrow))
			got, err := icebergschema.ToIceberg(s, icebergschema.Assign(nil, icebergschema.FieldIDs{}, s), 0)
			if err != nil {
				t.Fatal(err)
			}
			if f := got.Field(0); !f.Type.Equals(tt.want) || f.ID != 1 || f.Required {
				t.Fatalf("got %s, want 1: c: optional %s", f, tt.want)
			}
		})
	}
}

func TestToIcebergRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arrow    arrow.DataType
		wantType string
	}{
		{arrow.PrimitiveTypes.Uint64, "uint64"},
		{arrow.FixedWidthTypes.Float16, "float16"},
		{&arrow.Decimal256Type{Precision: 39, Scale: 0}, "decimal256(39, 0)"},
		{&arrow.Decimal128Type{Precision: 10, Scale: -2}, "decimal128(10, -2)"},
		{arrow.FixedWidthTypes.Time64ns, "time64[ns]"},
		{&arrow.TimestampType{Unit: arrow.Nanosecond}, "timestamp[ns]"},
		{&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, "timestamp[ns, tz=UTC]"},
		{arrow.Null, "null"},
		{arrow.FixedWidthTypes.Duration_ms, "duration[ms]"},
		{arrow.FixedWidthTypes.MonthInterval, "month_interval"},
		{arrow.DenseUnionOf([]arrow.Field{field("i", arrow.PrimitiveTypes.Int32)}, []arrow.UnionTypeCode{0}), "dense_union<i: int32=0>"},
		{arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String), "run_end_encoded<run_ends: int32, values: utf8>"},
	}
	for _, tt := range tests {
		t.Run(tt.wantType, func(t *testing.T) {
			t.Parallel()
			// The refused type deep inside: the error names its path.
			s := schema(field("ok", arrow.PrimitiveTypes.Int32),
				field("outer", arrow.StructOf(field("l", arrow.ListOf(tt.arrow)))))
			_, err := icebergschema.ToIceberg(s, icebergschema.Assign(nil, icebergschema.FieldIDs{}, s), 0)
			var ue *icebergschema.UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("error = %v, want an *UnsupportedError", err)
			}
			if ue.Path != "outer.l.element" || ue.ArrowType != tt.wantType {
				t.Fatalf("got path %q type %q, want outer.l.element %q", ue.Path, ue.ArrowType, tt.wantType)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "icebergschema: ") || !strings.Contains(msg, `"outer.l.element"`) || !strings.Contains(msg, tt.wantType) {
				t.Fatalf("message %q does not name the path and type", msg)
			}
		})
	}
}

// The uuid extension is recognised also when decoded as its storage with
// the extension's name in the field's metadata (arrow-go's extensions
// package not registered).
func TestToIcebergUUIDStorage(t *testing.T) {
	t.Parallel()
	s := schema(arrow.Field{Name: "u", Type: &arrow.FixedSizeBinaryType{ByteWidth: 16},
		Metadata: arrow.NewMetadata([]string{"ARROW:extension:name"}, []string{"arrow.uuid"})})
	got, err := icebergschema.ToIceberg(s, icebergschema.Assign(nil, icebergschema.FieldIDs{}, s), 0)
	if err != nil || !got.Field(0).Type.Equals(iceberg.PrimitiveTypes.UUID) {
		t.Fatalf("ToIceberg = %v, %v, want uuid", got, err)
	}
}

func TestToIcebergNestedIDsRequiredAndDocs(t *testing.T) {
	t.Parallel()
	s := schema(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"the key"})},
		arrow.Field{Name: "tags", Type: arrow.ListOfNonNullable(arrow.BinaryTypes.String), Nullable: true,
			Metadata: arrow.NewMetadata([]string{"doc"}, []string{"labels"})},
		field("attrs", arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(field("v", arrow.PrimitiveTypes.Int32)))),
	)
	ids := icebergschema.FieldIDs{IDs: ids(10, 11, 12, 13, 14, 15, 16), LastColumnID: 20}
	got, err := icebergschema.ToIceberg(s, ids, 3)
	if err != nil {
		t.Fatal(err)
	}
	P := iceberg.PrimitiveTypes
	want := iceberg.NewSchema(3,
		iceberg.NestedField{ID: 10, Name: "id", Type: P.Int64, Required: true, Doc: "the key"},
		iceberg.NestedField{ID: 11, Name: "tags", Type: &iceberg.ListType{ElementID: 12, Element: P.String, ElementRequired: true}, Doc: "labels"},
		iceberg.NestedField{ID: 13, Name: "attrs", Type: &iceberg.MapType{KeyID: 14, KeyType: P.String, ValueID: 15,
			ValueType: &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 16, Name: "v", Type: P.Int32}}}}},
	)
	if !got.Equals(want) || got.ID != 3 {
		t.Fatalf("ToIceberg =\n%s\nwant\n%s", got, want)
	}
	if f, ok := got.FindFieldByName("attrs.value.v"); !ok || f.ID != 16 {
		t.Fatalf("iceberg-go finds attrs.value.v as %v, %v, want id 16", f, ok)
	}
}

func TestToIcebergRefusesBadIDs(t *testing.T) {
	t.Parallel()
	s := schema(field("a", arrow.PrimitiveTypes.Int32), field("b", arrow.PrimitiveTypes.Int32))
	for name, ids := range map[string]icebergschema.FieldIDs{
		"too few":        {IDs: ids(1), LastColumnID: 2},
		"repeated":       {IDs: ids(1, 1), LastColumnID: 2},
		"zero":           {IDs: ids(0, 1), LastColumnID: 2},
		"above last":     {IDs: ids(1, 3), LastColumnID: 2},
		"no last column": {IDs: ids(1, 2)},
	} {
		if _, err := icebergschema.ToIceberg(s, ids, 0); err == nil {
			t.Errorf("%s: ToIceberg accepted %+v", name, ids)
		}
		if _, err := icebergschema.NameMapping(s, ids); err == nil {
			t.Errorf("%s: NameMapping accepted %+v", name, ids)
		}
	}
}

// iceberg-go reads back what ToIceberg gives: its JSON round-trips, and
// ids are unique (iceberg.NewSchema checks).
func TestToIcebergRoundTripsThroughIcebergGo(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*arrow.Schema{
		"nested": nested(),
		"wide":   catalogtest.WideSchema(7, 40),
		"rich":   supported(catalogtest.RichSchema()),
	} {
		ids := icebergschema.Assign(nil, icebergschema.FieldIDs{}, s)
		got, err := icebergschema.ToIceberg(s, ids, 1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("%s: marshal: %v", name, err)
		}
		var back iceberg.Schema
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: iceberg-go refuses %s: %v", name, b, err)
		}
		if !back.Equals(got) || back.HighestFieldID() != int(ids.LastColumnID) {
			t.Fatalf("%s: round trip =\n%s\nwant\n%s", name, &back, got)
		}
	}
}

// supported is s without the fields ToIceberg refuses.
func supported(s *arrow.Schema) *arrow.Schema {
	var fs []arrow.Field
	for _, f := range s.Fields() {
		one := schema(f)
		if _, err := icebergschema.ToIceberg(one, icebergschema.Assign(nil, icebergschema.FieldIDs{}, one), 0); err == nil {
			fs = append(fs, f)
		}
	}
	return schema(fs...)
}

func TestNameMapping(t *testing.T) {
	t.Parallel()
	s := schema(
		field("id", arrow.PrimitiveTypes.Int64),
		field("tags", arrow.ListOf(arrow.BinaryTypes.String)), // element field named "item"
		field("attrs", arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(field("v", arrow.PrimitiveTypes.Int32)))),
		field("dur", arrow.FixedWidthTypes.Duration_s), // mapped whatever its type
	)
	b, err := icebergschema.NameMapping(s, icebergschema.Assign(nil, icebergschema.FieldIDs{}, s))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"names":["id"],"field-id":1},` +
		`{"names":["tags"],"field-id":2,"fields":[{"names":["element","item"],"field-id":3}]},` +
		`{"names":["attrs"],"field-id":4,"fields":[{"names":["key"],"field-id":5},{"names":["value"],"field-id":6,"fields":[{"names":["v"],"field-id":7}]}]},` +
		`{"names":["dur"],"field-id":8}]`
	if string(b) != want {
		t.Fatalf("NameMapping =\n%s\nwant\n%s", b, want)
	}
	var nm iceberg.NameMapping
	if err := json.Unmarshal(b, &nm); err != nil {
		t.Fatal(err)
	}
	// iceberg-go's own mapping of the same schema agrees on every id.
	sup := schema(s.Fields()[:3]...)
	ic, err := icebergschema.ToIceberg(sup, icebergschema.Assign(nil, icebergschema.FieldIDs{}, sup), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range ic.NameMapping() {
		if f.ID() != nm[i].ID() || !slices.Equal(f.Names, nm[i].Names) {
			t.Errorf("iceberg-go maps %s, NameMapping %s", &f, &nm[i])
		}
	}
}

func FuzzAssign(f *testing.F) {
	// Small seeds: the fuzzer minimizes every input that finds new code,
	// which takes minutes for one of RichSchema's size.
	a, _ := schemajson.Format(nested())
	b, _ := schemajson.Format(catalogtest.WideSchema(3, 4))
	f.Add(a, b)
	f.Add(b, a)
	f.Add([]byte(`{"fields":[{"name":"m","type":{"name":"map","key":{"name":"k","type":"utf8"},"value":{"name":"v","type":"int8"}}}]}`),
		[]byte(`{"fields":[{"name":"m","type":{"name":"list","element":{"name":"k","type":"utf8"}}}]}`))
	f.Fuzz(func(t *testing.T, docA, docB []byte) {
		a, errA := schemajson.Parse(docA)
		b, errB := schemajson.Parse(docB)
		if errA != nil || errB != nil {
			return
		}
		idsA := icebergschema.Assign(nil, icebergschema.FieldIDs{}, a)
		check(t, a, idsA, 0)
		idsB := icebergschema.Assign(a, idsA, b)
		check(t, b, idsB, idsA.LastColumnID)
		if again := icebergschema.Assign(a, idsA, b); !slices.Equal(again.IDs, idsB.IDs) || again.LastColumnID != idsB.LastColumnID {
			t.Fatalf("Assign not deterministic: %+v then %+v", idsB, again)
		}
		// A schema kept as it is keeps every id.
		if same := icebergschema.Assign(b, idsB, b); !slices.Equal(same.IDs, idsB.IDs) || same.LastColumnID != idsB.LastColumnID {
			t.Fatalf("unchanged schema: %+v, want %+v", same, idsB)
		}
		// ToIceberg takes them or refuses a type, never panics; iceberg-go
		// accepts what it gives.
		got, err := icebergschema.ToIceberg(b, idsB, 0)
		var ue *icebergschema.UnsupportedError
		switch {
		case errors.As(err, &ue):
		case err != nil:
			t.Fatalf("ToIceberg: %v", err)
		default:
			js, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back iceberg.Schema
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatalf("iceberg-go refuses %s: %v", js, err)
			}
		}
		if _, err := icebergschema.NameMapping(b, idsB); err != nil {
			t.Fatalf("NameMapping: %v", err)
		}
	})
}

// check fails t unless ids number s's paths: positive, unique, at most the
// last column id, which is at least floor.
func check(t *testing.T, s *arrow.Schema, ids icebergschema.FieldIDs, floor int32) {
	t.Helper()
	if n := len(icebergschema.Paths(s)); len(ids.IDs) != n {
		t.Fatalf("%d ids for %d paths", len(ids.IDs), n)
	}
	if ids.LastColumnID < floor {
		t.Fatalf("last column id %d below %d", ids.LastColumnID, floor)
	}
	seen := map[int32]bool{}
	for _, id := range ids.IDs {
		if id <= 0 || id > ids.LastColumnID || seen[id] {
			t.Fatalf("ids %v (last %d): %d out of range or repeated", ids.IDs, ids.LastColumnID, id)
		}
		seen[id] = true
	}
}
