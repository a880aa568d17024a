package schemajson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

func TestRichSchemaRoundTrips(t *testing.T) {
	for name, s := range map[string]*arrow.Schema{"rich": catalogtest.RichSchema(), "wide": catalogtest.WideSchema(3, 30)} {
		b, err := schemajson.Format(s)
		if err != nil {
			t.Fatalf("%s: Format: %v", name, err)
		}
		back, err := schemajson.Parse(b)
		if err != nil {
			t.Fatalf("%s: Parse: %v\n%s", name, err, b)
		}
		if !catalog.SchemaEqual(back, s) {
			for i, f := range s.Fields() {
				if !back.Field(i).Equal(f) {
					t.Errorf("%s field %d: got %v, want %v", name, i, back.Field(i), f)
				}
			}
			t.Fatalf("%s: round trip differs", name)
		}
	}
}

func TestParseDocumentedExample(t *testing.T) {
	doc := `{"fields": [
	   {"name": "id", "type": "int64", "nullable": false},
	   {"name": "ts", "type": {"name": "timestamp", "unit": "us", "timezone": "UTC"}},
	   {"name": "tags", "type": {"name": "list", "item": {"name": "item", "type": "utf8"}}},
	   {"name": "price", "type": {"name": "decimal128", "precision": 18, "scale": 2}},
	   {"name": "attrs", "type": {"name": "map", "key": {"name": "key", "type": "utf8"}, "value": {"name": "value", "type": "int64"}}},
	   {"name": "country", "type": {"name": "dictionary", "index": "int32", "value": "utf8"}}
	 ],
	 "metadata": {"owner": "data-eng"}}`
	got, err := schemajson.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	md := arrow.NewMetadata([]string{"owner"}, []string{"data-eng"})
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "country", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}, &md)
	if !catalog.SchemaEqual(got, want) {
		t.Fatalf("got\n%v\nwant\n%v", got, want)
	}
}

func TestParseErrorsNameThePath(t *testing.T) {
	tests := map[string]struct{ doc, want string }{
		"not json":         {`{`, "unexpected EOF"},
		"no fields":        {`{}`, `no "fields"`},
		"unknown member":   {`{"fields":[], "feilds":[]}`, `unknown field "feilds"`},
		"unknown type":     {`{"fields":[{"name":"a","type":"int128"}]}`, `fields[0]("a"): unknown type "int128"`},
		"no type":          {`{"fields":[{"name":"a"}]}`, `no "type"`},
		"bad unit":         {`{"fields":[{"name":"t","type":{"name":"time32","unit":"us"}}]}`, `time32 unit "us"`},
		"bad precision":    {`{"fields":[{"name":"d","type":{"name":"decimal128","precision":39}}]}`, "precision 39"},
		"nested path":      {`{"fields":[{"name":"s","type":{"name":"struct","fields":[{"name":"x","type":"nope"}]}}]}`, `fields[0]("s").fields[0]("x"): unknown type "nope"`},
		"list no item":     {`{"fields":[{"name":"l","type":{"name":"list"}}]}`, `list needs "item"`},
		"dict float idx":   {`{"fields":[{"name":"d","type":{"name":"dictionary","index":"float32","value":"utf8"}}]}`, "index must be an integer"},
		"union codes":      {`{"fields":[{"name":"u","type":{"name":"union","mode":"dense","fields":[{"name":"a","type":"int8"}],"type_codes":[1,2]}}]}`, "1 fields and 2 type_codes"},
		"union mode":       {`{"fields":[{"name":"u","type":{"name":"union","fields":[]}}]}`, `union mode ""`},
		"ree run ends":     {`{"fields":[{"name":"r","type":{"name":"run_end_encoded","run_ends":"int8","values":"utf8"}}]}`, "run_ends must be"},
		"trailing data":    {`{"fields":[]} {}`, "data after"},
		"nullable map key": {`{"fields":[{"name":"m","type":{"name":"map","key":{"name":"k","type":"utf8","nullable":true},"value":{"name":"v","type":"int8"}}}]}`, "map keys cannot be nullable"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := schemajson.Parse([]byte(tt.doc))
			if !errors.Is(err, schemajson.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

func TestParseBoundsDepth(t *testing.T) {
	doc := strings.Repeat(`{"name":"list","item":{"name":"i","type":`, 100) + `"int8"` + strings.Repeat(`}}`, 100)
	_, err := schemajson.Parse([]byte(`{"fields":[{"name":"deep","type":` + doc + `}]}`))
	if !errors.Is(err, schemajson.ErrInvalid) || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("error = %v, want a depth error", err)
	}
}

func FuzzParse(f *testing.F) {
	rich, _ := schemajson.Format(catalogtest.RichSchema())
	f.Add(rich)
	f.Add([]byte(`{"fields":[{"name":"a","type":{"name":"union","mode":"sparse","fields":[{"name":"x","type":"int8"}]}}]}`))
	f.Add([]byte(`{"fields":[{"name":"m","type":{"name":"map","key":{"name":"k","type":"utf8"},"value":{"name":"v","type":"int8"}}}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := schemajson.Parse(doc)
		if err != nil {
			if !errors.Is(err, schemajson.ErrInvalid) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Whatever parses formats and parses back to the same schema.
		b, err := schemajson.Format(s)
		if err != nil {
			t.Fatalf("Format of a parsed schema: %v", err)
		}
		back, err := schemajson.Parse(b)
		if err != nil || !catalog.SchemaEqual(back, s) {
			t.Fatalf("re-parse: %v, %v\n%s", back, err, b)
		}
	})
}
