package catalog_test

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

var t0 = time.Date(2026, 11, 30, 9, 30, 0, 123456000, time.UTC)

// The plan's registration_schema_payload_is_backward_compatible: JSON written
// before schema_ipc existed decodes with no schema, and a new registration
// round-trips its exact bytes.
func TestRegistrationSchemaPayloadIsBackwardCompatible(t *testing.T) {
	t.Parallel()
	old, err := os.ReadFile("testdata/registration_historical.json")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := catalog.DecodeRegistration(old)
	if err != nil {
		t.Fatalf("decode historical JSON: %v", err)
	}
	if reg.HasSchema() || reg.SchemaIPC() != nil {
		t.Fatalf("historical registration has schema bytes %v, want none", reg.SchemaIPC())
	}
	if _, err := reg.Schema(); !errors.Is(err, catalog.ErrSchemaUnavailable) {
		t.Fatalf("Schema() of a historical registration error = %v, want ErrSchemaUnavailable", err)
	}
	if reg.Location() != "s3://acme-lake/sales/orders/" || reg.TableType() != "TABLE" || reg.Version() != 3 ||
		!reg.CreatedAt().Equal(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)) || !reg.UpdatedAt().Equal(reg.CreatedAt()) {
		t.Fatalf("historical registration decoded as %+v", reg)
	}

	schema := catalogtest.WideSchema(1, 5)
	reg, err = catalog.NewRegistration(catalog.TableSpec{Location: "s3://b/t/", Schema: schema}, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := reg.SchemaIPC()
	b, err := json.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := catalog.DecodeRegistration(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.SchemaIPC(); string(got) != string(want) {
		t.Fatalf("schema bytes after round trip differ: %d bytes, want %d", len(got), len(want))
	}
	if back.Location() != reg.Location() || back.Version() != 1 || !back.CreatedAt().Equal(t0.Truncate(time.Microsecond)) {
		t.Fatalf("round trip = %+v, want %+v", back, reg)
	}
}

// The Rust predecessor serialized Vec<u8> as an array of numbers; both
// forms decode to the same bytes, and unknown fields are ignored.
func TestRegistrationDecodesByteArraysAndUnknownFields(t *testing.T) {
	t.Parallel()
	ipc, err := catalog.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	ints := make([]int, len(ipc))
	for i, b := range ipc {
		ints[i] = int(b)
	}
	arr, _ := json.Marshal(ints)
	doc := `{"location":"/data/t","created_at":"2025-01-01T00:00:00Z","schema_ipc":` + string(arr) + `,"future_field":{"x":1}}`
	reg, err := catalog.DecodeRegistration([]byte(doc))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if string(reg.SchemaIPC()) != string(ipc) {
		t.Fatal("schema bytes from an array of numbers differ")
	}
	s, err := reg.Schema()
	if err != nil || s.Field(0).Name != "a" {
		t.Fatalf("Schema() = %v, %v", s, err)
	}
}

func TestDecodeRegistrationRejects(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"not json":        `{"location":`,
		"array":           `[1,2]`,
		"bad base64":      `{"location":"/x","schema_ipc":"%%%"}`,
		"byte over 255":   `{"location":"/x","schema_ipc":[1,256]}`,
		"schema as int":   `{"location":"/x","schema_ipc":7}`,
		"location as int": `{"location":7}`,
		"null":            `null`,
		"no location":     `{"table_type":"TABLE"}`,
	} {
		if _, err := catalog.DecodeRegistration([]byte(doc)); !errors.Is(err, catalog.ErrInvalidRegistration) {
			t.Errorf("%s: error = %v, want ErrInvalidRegistration", name, err)
		}
	}
}

func TestNewRegistrationValidates(t *testing.T) {
	t.Parallel()
	good := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, nil)
	tests := []struct {
		name string
		spec catalog.TableSpec
		want error
	}{
		{"no location", catalog.TableSpec{Schema: good}, catalog.ErrInvalidRegistration},
		{"relative path", catalog.TableSpec{Location: "data/t", Schema: good}, catalog.ErrInvalidRegistration},
		{"control in location", catalog.TableSpec{Location: "s3://b/\n", Schema: good}, catalog.ErrInvalidRegistration},
		{"bad table type", catalog.TableSpec{Location: "/t", TableType: "T\x00", Schema: good}, catalog.ErrInvalidRegistration},
		{"nil schema", catalog.TableSpec{Location: "/t"}, catalog.ErrInvalidSchema},
		{"no fields", catalog.TableSpec{Location: "/t", Schema: arrow.NewSchema(nil, nil)}, catalog.ErrInvalidSchema},
		{"duplicate names", catalog.TableSpec{Location: "/t", Schema: arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int32}, {Name: "a", Type: arrow.BinaryTypes.String}}, nil)}, catalog.ErrInvalidSchema},
		{"empty name", catalog.TableSpec{Location: "/t", Schema: arrow.NewSchema([]arrow.Field{{Name: "", Type: arrow.PrimitiveTypes.Int32}}, nil)}, catalog.ErrInvalidSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := catalog.NewRegistration(tt.spec, t0); !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzDecodeRegistration(f *testing.F) {
	if old, err := os.ReadFile("testdata/registration_historical.json"); err == nil {
		f.Add(old)
	}
	reg, _ := catalog.NewRegistration(catalog.TableSpec{Location: "s3://b/t", Schema: catalogtest.WideSchema(3, 4)}, t0)
	b, _ := json.Marshal(reg)
	f.Add(b)
	f.Add([]byte(`{"location":"/x","schema_ipc":[255,255,255,255,0,0,0,0]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		reg, err := catalog.DecodeRegistration(doc)
		if err != nil {
			if !errors.Is(err, catalog.ErrInvalidRegistration) {
				t.Fatalf("error %v does not wrap ErrInvalidRegistration", err)
			}
			return
		}
		// Whatever decoded must re-encode and decode to the same thing.
		b, err := json.Marshal(reg)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := catalog.DecodeRegistration(b)
		if err != nil || string(back.SchemaIPC()) != string(reg.SchemaIPC()) || back.Location() != reg.Location() || back.Version() != reg.Version() {
			t.Fatalf("re-decode: %+v, %v", back, err)
		}
		_, _ = reg.Schema() // must not panic
	})
}
