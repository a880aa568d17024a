package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// manyProperties returns n properties k000…, each value of size bytes.
func manyProperties(n, size int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("k%03d", i)] = strings.Repeat("v", size)
	}
	return m
}

func TestDescriptionAndPropertiesValidate(t *testing.T) {
	t.Parallel()
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	good := catalogtest.WideSchema(1, 2)
	tests := []struct {
		name        string
		description string
		properties  map[string]string
		wantErr     string // "" for accepted
	}{
		{"accepted", "Orders, one row per order.\n\tSee the wiki.", map[string]string{"owner": "team-sales", "pii": ""}, ""},
		{"limits exactly", strings.Repeat("d", catalog.MaxDescriptionBytes), manyProperties(catalog.MaxProperties, catalog.MaxPropertiesBytes/catalog.MaxProperties-4), ""},
		{"empty map is none", "", map[string]string{}, ""},
		{"description too long", strings.Repeat("d", catalog.MaxDescriptionBytes+1), nil, "description of 4097 bytes, limit 4096"},
		{"description control character", "a\x07b", nil, "description contains control character U+0007 at byte 1 (only newline and tab are allowed)"},
		{"description carriage return", "a\r\nb", nil, "description contains control character U+000D at byte 1 (only newline and tab are allowed)"},
		{"description invalid UTF-8", "a\xffb", nil, "description is not valid UTF-8"},
		{"too many properties", "", manyProperties(catalog.MaxProperties+1, 1), "65 properties, limit 64"},
		{"empty key", "", map[string]string{"": "x"}, "a property key is empty"},
		{"key too long", "", map[string]string{strings.Repeat("k", catalog.MaxPropertyKeyBytes+1): "x"}, "property key of 129 bytes, limit 128"},
		{"key with control character", "", map[string]string{"a\nb": "x"}, `property key "a\nb" contains a non-printable character`},
		{"value too long", "", map[string]string{"k": strings.Repeat("v", catalog.MaxPropertyValueBytes+1)}, `property "k": value of 1025 bytes, limit 1024`},
		{"value with control character", "", map[string]string{"k": "a\tb"}, `property "k": value contains a control character`},
		{"properties too large", "", manyProperties(20, catalog.MaxPropertyValueBytes), "properties of 20560 bytes (keys and values), limit 16384"},
	}
	// One subtest at a time: each compares the keys stored before and after its write.
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := catalog.TableRef{Tenant: "acme", Namespace: "v", Name: fmt.Sprintf("t%d", i)}
			spec := catalog.TableSpec{Location: "/x", Schema: good, Description: tt.description, Properties: tt.properties}
			before := len(storedKeys(t, st))
			reg, _, err := c.Register(ctx, ref, spec)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Register error = %v, want none", err)
				}
				if got := reg.Description(); got != tt.description {
					t.Errorf("Description() = %q, want %q", got, tt.description)
				}
				if got := reg.Properties(); !maps.Equal(got, tt.properties) {
					t.Errorf("Properties() = %v, want %v", got, tt.properties)
				}
				return
			}
			if !errors.Is(err, catalog.ErrInvalidRegistration) {
				t.Fatalf("Register error = %v, want ErrInvalidRegistration", err)
			}
			want := "catalog: register " + ref.String() + ": invalid registration: " + tt.wantErr
			if err.Error() != want {
				t.Errorf("got %q, want %q", err.Error(), want)
			}
			var ce *catalog.Error
			if !errors.As(err, &ce) || ce.Detail != tt.wantErr || ce.Op != "register" || ce.Ref != ref.String() {
				t.Errorf("got %#v, want a *catalog.Error of op register, ref %s, detail %q", ce, ref, tt.wantErr)
			}
			if after := len(storedKeys(t, st)); after != before {
				t.Errorf("invalid registration stored something: %d keys, want %d", after, before)
			}
		})
	}
}

func TestDescriptionAndPropertiesRoundTrip(t *testing.T) {
	t.Parallel()
	props := map[string]string{"owner": "team-sales", "retention": "90d"}
	reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "/x", Schema: catalogtest.WideSchema(1, 2),
		Description: "line one\nline two", Properties: props}, t0)
	if err != nil {
		t.Fatal(err)
	}
	got := reg.Properties()
	got["owner"] = "someone else"
	props["retention"] = "1d"
	if p := reg.Properties(); p["owner"] != "team-sales" || p["retention"] != "90d" {
		t.Fatalf("Properties() = %v: changed through a returned or given map", p)
	}
	b, err := json.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := catalog.DecodeRegistration(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Description() != "line one\nline two" || !maps.Equal(back.Properties(), map[string]string{"owner": "team-sales", "retention": "90d"}) {
		t.Fatalf("round trip = %q, %v; want the description and properties back", back.Description(), back.Properties())
	}

	// Without them, the stored JSON has neither member.
	plain, err := catalog.NewRegistration(catalog.TableSpec{Location: "/x", Schema: catalogtest.WideSchema(1, 2), Properties: map[string]string{}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(plain)
	if s := string(b); strings.Contains(s, "description") || strings.Contains(s, "properties") {
		t.Fatalf("stored JSON %s, want no description or properties members", s)
	}
	if plain.Properties() != nil {
		t.Fatalf("Properties() = %v, want nil", plain.Properties())
	}

	// A registration written before they existed has none.
	old, err := os.ReadFile("testdata/registration_historical.json")
	if err != nil {
		t.Fatal(err)
	}
	hist, err := catalog.DecodeRegistration(old)
	if err != nil {
		t.Fatal(err)
	}
	if hist.Description() != "" || hist.Properties() != nil {
		t.Fatalf("historical registration has description %q, properties %v; want none", hist.Description(), hist.Properties())
	}
}

func TestDescriptionAndPropertiesAreContent(t *testing.T) {
	t.Parallel()
	c, _, _ := newCatalog(t)
	ctx := context.Background()
	spec := catalog.TableSpec{Location: "s3://lake/o/", Schema: catalogtest.WideSchema(1, 3),
		Description: "orders", Properties: map[string]string{"owner": "sales"}}
	mustRegister(t, c, orders, spec)

	retry := spec
	retry.Properties = map[string]string{"owner": "sales"}
	if _, created, err := c.Register(ctx, orders, retry); err != nil || created {
		t.Fatalf("identical retry = created %v, %v; want not created, no error", created, err)
	}
	for name, changed := range map[string]catalog.TableSpec{
		"description":      {Location: spec.Location, Schema: spec.Schema, Description: "other", Properties: spec.Properties},
		"no description":   {Location: spec.Location, Schema: spec.Schema, Properties: spec.Properties},
		"property value":   {Location: spec.Location, Schema: spec.Schema, Description: spec.Description, Properties: map[string]string{"owner": "x"}},
		"another property": {Location: spec.Location, Schema: spec.Schema, Description: spec.Description, Properties: map[string]string{"owner": "sales", "a": "b"}},
	} {
		if _, _, err := c.Register(ctx, orders, changed); !errors.Is(err, catalog.ErrExists) {
			t.Errorf("re-register with another %s: got %v, want ErrExists", name, err)
		}
	}
}

func TestUpdateDescriptionAndProperties(t *testing.T) {
	t.Parallel()
	c, _, _ := newCatalog(t)
	ctx := context.Background()
	schema := catalogtest.WideSchema(1, 3)
	mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: schema,
		Description: "orders", Properties: map[string]string{"owner": "sales"}})
	tests := []struct {
		name        string
		spec        catalog.TableSpec
		opts        catalog.UpdateOptions
		wantVersion int64
		wantDesc    string
		wantProps   map[string]string
	}{
		{"empty keeps both", catalog.TableSpec{Schema: schema}, catalog.UpdateOptions{}, 1, "orders", map[string]string{"owner": "sales"}},
		{"new description", catalog.TableSpec{Schema: schema, Description: "all orders"}, catalog.UpdateOptions{}, 2, "all orders", map[string]string{"owner": "sales"}},
		{"properties replaced whole", catalog.TableSpec{Schema: schema, Properties: map[string]string{"tier": "gold"}}, catalog.UpdateOptions{}, 3, "all orders", map[string]string{"tier": "gold"}},
		{"description cleared", catalog.TableSpec{Schema: schema}, catalog.UpdateOptions{ClearDescription: true}, 4, "", map[string]string{"tier": "gold"}},
		{"properties cleared", catalog.TableSpec{Schema: schema, Properties: map[string]string{}}, catalog.UpdateOptions{}, 5, "", nil},
	}
	// In order: each update builds on the one before.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := c.Update(ctx, orders, tt.spec, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if reg.Version() != tt.wantVersion || reg.Description() != tt.wantDesc || !maps.Equal(reg.Properties(), tt.wantProps) {
				t.Fatalf("got version %d, %q, %v; want version %d, %q, %v",
					reg.Version(), reg.Description(), reg.Properties(), tt.wantVersion, tt.wantDesc, tt.wantProps)
			}
		})
	}
	if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: schema, Description: "bad\x00"}, catalog.UpdateOptions{}); !errors.Is(err, catalog.ErrInvalidRegistration) {
		t.Fatalf("update with a bad description: got %v, want ErrInvalidRegistration", err)
	}
}
