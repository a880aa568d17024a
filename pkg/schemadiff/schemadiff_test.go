package schemadiff_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/schemadiff"
)

func field(name string, t arrow.DataType, nullable bool) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: nullable}
}

func schema(fields ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fields, nil) }

// diffAll is schemadiff.Diff of a schema with fewer changes than
// schemadiff.MaxChanges: all of them, counted alike.
func diffAll(tb testing.TB, old, new *arrow.Schema) []schemadiff.Change {
	tb.Helper()
	cs, total := schemadiff.Diff(old, new, schemadiff.MaxChanges)
	if total != len(cs) {
		tb.Fatalf("Diff returned %d changes and counted %d", len(cs), total)
	}
	return cs
}

// checkAll is schemadiff.Check as diffAll is Diff.
func checkAll(tb testing.TB, mode schemadiff.Mode, old, new *arrow.Schema) []schemadiff.Breach {
	tb.Helper()
	bs, total := schemadiff.Check(mode, old, new, schemadiff.MaxChanges)
	if total != len(bs) {
		tb.Fatalf("Check returned %d breaches and counted %d", len(bs), total)
	}
	return bs
}

// kinds renders changes as "path kind" lines, for comparing.
func kinds(cs []schemadiff.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path + " " + string(c.Kind)
	}
	return out
}

var (
	i32  = arrow.PrimitiveTypes.Int32
	i64  = arrow.PrimitiveTypes.Int64
	str  = arrow.BinaryTypes.String
	addr = arrow.StructOf(field("street", str, true), field("zip", str, true))
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new *arrow.Schema
		want     []string
	}{
		{"equal", schema(field("id", i64, false)), schema(field("id", i64, false)), nil},
		{"added and removed", schema(field("a", i32, true), field("b", i32, true)), schema(field("a", i32, true), field("c", i32, true)),
			[]string{"c added", "b removed"}},
		{"a rename is a removal and an addition", schema(field("name", str, true)), schema(field("full_name", str, true)),
			[]string{"full_name added", "name removed"}},
		{"int32 to int64", schema(field("n", i32, true)), schema(field("n", i64, true)), []string{"n promoted"}},
		{"int64 to int32", schema(field("n", i64, true)), schema(field("n", i32, true)), []string{"n narrowed"}},
		{"uint32 to int64", schema(field("n", arrow.PrimitiveTypes.Uint32, true)), schema(field("n", i64, true)), []string{"n promoted"}},
		{"uint32 to int32", schema(field("n", arrow.PrimitiveTypes.Uint32, true)), schema(field("n", i32, true)), []string{"n retyped"}},
		{"int32 to uint64", schema(field("n", i32, true)), schema(field("n", arrow.PrimitiveTypes.Uint64, true)), []string{"n retyped"}},
		{"float32 to float64", schema(field("x", arrow.PrimitiveTypes.Float32, true)), schema(field("x", arrow.PrimitiveTypes.Float64, true)), []string{"x promoted"}},
		{"int to float", schema(field("x", i32, true)), schema(field("x", arrow.PrimitiveTypes.Float64, true)), []string{"x retyped"}},
		{"decimal precision widened", schema(field("d", &arrow.Decimal128Type{Precision: 10, Scale: 2}, true)),
			schema(field("d", &arrow.Decimal128Type{Precision: 20, Scale: 2}, true)), []string{"d promoted"}},
		{"decimal128 to decimal256, same precision", schema(field("d", &arrow.Decimal128Type{Precision: 38, Scale: 2}, true)),
			schema(field("d", &arrow.Decimal256Type{Precision: 38, Scale: 2}, true)), []string{"d promoted"}},
		{"decimal scale changed", schema(field("d", &arrow.Decimal128Type{Precision: 10, Scale: 2}, true)),
			schema(field("d", &arrow.Decimal128Type{Precision: 20, Scale: 4}, true)), []string{"d retyped"}},
		{"timestamp unit changed", schema(field("t", &arrow.TimestampType{Unit: arrow.Millisecond}, true)),
			schema(field("t", &arrow.TimestampType{Unit: arrow.Microsecond}, true)), []string{"t retyped"}},
		{"timestamp zone added", schema(field("t", &arrow.TimestampType{Unit: arrow.Microsecond}, true)),
			schema(field("t", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, true)), []string{"t retyped"}},
		{"string to large_string", schema(field("s", str, true)), schema(field("s", arrow.BinaryTypes.LargeString, true)), []string{"s promoted"}},
		{"string to binary", schema(field("s", str, true)), schema(field("s", arrow.BinaryTypes.Binary, true)), []string{"s retyped"}},
		{"made nullable", schema(field("id", i64, false)), schema(field("id", i64, true)), []string{"id made_nullable"}},
		{"made required", schema(field("id", i64, true)), schema(field("id", i64, false)), []string{"id made_required"}},
		{"metadata", schema(field("id", i64, true)),
			schema(arrow.Field{Name: "id", Type: i64, Nullable: true, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"the key"})}),
			[]string{"id metadata_changed"}},
		{"struct field added, nested", schema(field("customer", arrow.StructOf(field("address", addr, true)), true)),
			schema(field("customer", arrow.StructOf(field("address", arrow.StructOf(field("street", str, true), field("zip", str, true), field("country", str, false)), true)), true)),
			[]string{"customer.address.country added"}},
		{"struct field retyped, nested", schema(field("customer", arrow.StructOf(field("address", addr, true)), true)),
			schema(field("customer", arrow.StructOf(field("address", arrow.StructOf(field("street", str, true), field("zip", i32, true)), true)), true)),
			[]string{"customer.address.zip retyped"}},
		{"list element promoted", schema(field("xs", arrow.ListOf(i32), true)), schema(field("xs", arrow.ListOf(i64), true)), []string{"xs.element promoted"}},
		{"list element made required", schema(field("xs", arrow.ListOf(i32), true)), schema(field("xs", arrow.ListOfNonNullable(i32), true)), []string{"xs.element made_required"}},
		{"list element names differ", schema(field("xs", arrow.ListOfField(field("item", i32, true)), true)),
			schema(field("xs", arrow.ListOfField(field("element", i32, true)), true)), nil},
		{"list to large_list", schema(field("xs", arrow.ListOf(i32), true)), schema(field("xs", arrow.LargeListOf(i32), true)), []string{"xs promoted"}},
		{"list of structs, nested field added", schema(field("items", arrow.ListOf(arrow.StructOf(field("sku", str, true))), true)),
			schema(field("items", arrow.ListOf(arrow.StructOf(field("sku", str, true), field("qty", i32, true))), true)),
			[]string{"items.element.qty added"}},
		{"fixed size changed", schema(field("v", arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), true)),
			schema(field("v", arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), true)), []string{"v retyped"}},
		{"map value promoted", schema(field("m", arrow.MapOf(str, i32), true)), schema(field("m", arrow.MapOf(str, i64), true)), []string{"m.value promoted"}},
		{"map of structs, nested field removed", schema(field("m", arrow.MapOf(str, addr), true)),
			schema(field("m", arrow.MapOf(str, arrow.StructOf(field("street", str, true))), true)), []string{"m.value.zip removed"}},
		{"struct to string", schema(field("a", addr, true)), schema(field("a", str, true)), []string{"a retyped"}},
		{"list to map", schema(field("a", arrow.ListOf(str), true)), schema(field("a", arrow.MapOf(str, str), true)), []string{"a retyped"}},
		{"dictionary encoded", schema(field("c", str, true)),
			schema(field("c", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: str}, true)), []string{"c reencoded"}},
		{"dictionary value promoted", schema(field("c", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: str}, true)),
			schema(field("c", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.LargeString}, true)), []string{"c promoted"}},
		{"schema metadata", schema(field("id", i64, true)),
			arrow.NewSchema([]arrow.Field{field("id", i64, true)}, &[]arrow.Metadata{arrow.NewMetadata([]string{"owner"}, []string{"sales"})}[0]),
			[]string{"(schema) metadata_changed"}},
		{"schema metadata and a field", arrow.NewSchema([]arrow.Field{field("id", i64, true)}, &[]arrow.Metadata{arrow.NewMetadata([]string{"owner"}, []string{"sales"})}[0]),
			arrow.NewSchema([]arrow.Field{field("id", i64, true), field("n", i32, true)}, &[]arrow.Metadata{arrow.NewMetadata([]string{"owner"}, []string{"finance"})}[0]),
			[]string{"(schema) metadata_changed", "n added"}},
		{"duplicate names pair in order", schema(field("a", i32, true), field("a", str, true)), schema(field("a", i32, true), field("a", str, true), field("a", i64, true)),
			[]string{"a added"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := kinds(diffAll(t, tt.old, tt.new))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Diff = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChangeString(t *testing.T) {
	cs := diffAll(t, schema(field("n", i32, true), field("gone", str, false)), schema(field("n", i64, true), field("new", str, true)))
	var lines []string
	for _, c := range cs {
		lines = append(lines, c.String())
	}
	want := []string{"n: promoted from int32 to int64", "new: added (nullable utf8)", "gone: removed (required utf8)"}
	if !slices.Equal(lines, want) {
		t.Errorf("changes read %q, want %q", lines, want)
	}
}

// Each mode against each kind of change: refused (true) or allowed.
func TestCheck(t *testing.T) {
	base := schema(field("id", i64, false), field("n", i32, true), field("opt", str, true), field("req", str, false))
	with := func(f func([]arrow.Field) []arrow.Field) *arrow.Schema {
		return schema(f(slices.Clone(base.Fields()))...)
	}
	tests := []struct {
		name                    string
		new                     *arrow.Schema
		backward, forward, full bool
	}{
		{"nullable field added", with(func(fs []arrow.Field) []arrow.Field { return append(fs, field("x", str, true)) }), false, false, false},
		{"required field added", with(func(fs []arrow.Field) []arrow.Field { return append(fs, field("x", str, false)) }), true, false, true},
		{"nullable field removed", with(func(fs []arrow.Field) []arrow.Field { return slices.Delete(fs, 2, 3) }), false, false, false},
		{"required field removed", with(func(fs []arrow.Field) []arrow.Field { return slices.Delete(fs, 3, 4) }), false, true, true},
		{"promoted", with(func(fs []arrow.Field) []arrow.Field { fs[1].Type = i64; return fs }), false, true, true},
		{"narrowed", with(func(fs []arrow.Field) []arrow.Field { fs[0].Type = i32; return fs }), true, false, true},
		{"retyped", with(func(fs []arrow.Field) []arrow.Field { fs[1].Type = str; return fs }), true, true, true},
		{"made required", with(func(fs []arrow.Field) []arrow.Field { fs[2].Nullable = false; return fs }), true, false, true},
		{"made nullable", with(func(fs []arrow.Field) []arrow.Field { fs[3].Nullable = true; return fs }), false, true, true},
		{"metadata", with(func(fs []arrow.Field) []arrow.Field {
			fs[0].Metadata = arrow.NewMetadata([]string{"comment"}, []string{"key"})
			return fs
		}), false, false, false},
		{"nested required field added", schema(append(slices.Clone(base.Fields()), field("s", arrow.StructOf(field("a", str, false)), true))...), false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, m := range []struct {
				mode schemadiff.Mode
				want bool
			}{{schemadiff.None, false}, {schemadiff.Backward, tt.backward}, {schemadiff.Forward, tt.forward}, {schemadiff.Full, tt.full}} {
				b := checkAll(t, m.mode, base, tt.new)
				if got := len(b) > 0; got != m.want {
					t.Errorf("%s: refused %v (%v), want %v", m.mode, got, b, m.want)
				}
				for _, x := range b {
					if x.Reason == "" || !strings.Contains(x.String(), x.Path) {
						t.Errorf("%s: breach %q says no reason or no path", m.mode, x.String())
					}
				}
			}
		})
	}
}

// A breach deep in a nested type is reported at its path, with the rest.
func TestCheckNested(t *testing.T) {
	old := schema(field("orders", arrow.ListOf(arrow.StructOf(field("sku", str, true), field("qty", i32, false))), true))
	new := schema(field("orders", arrow.ListOf(arrow.StructOf(field("sku", i64, true), field("qty", i64, false), field("note", str, false))), true))
	var got []string
	for _, b := range checkAll(t, schemadiff.Backward, old, new) {
		got = append(got, b.Path+" "+string(b.Kind))
	}
	want := []string{"orders.element.sku retyped", "orders.element.note added"}
	if !slices.Equal(got, want) {
		t.Errorf("backward breaches %q, want %q", got, want)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]schemadiff.Mode{"": schemadiff.None, "none": schemadiff.None, "BACKWARD": schemadiff.Backward, " forward ": schemadiff.Forward, "full": schemadiff.Full} {
		if got, err := schemadiff.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"backwards", "transitive", "full_transitive", "1"} {
		if _, err := schemadiff.ParseMode(in); err == nil || !strings.Contains(err.Error(), "want none, backward, forward or full") {
			t.Errorf("ParseMode(%q) = %v, want an error naming the modes", in, err)
		}
	}
}

// Modes come from requests: any text parses to a mode or errs, never
// panics, and a mode parsed once parses to itself.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"", "none", "Backward", "FULL", "forward ", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := schemadiff.ParseMode(s)
		if err != nil {
			return
		}
		if again, err := schemadiff.ParseMode(string(m)); err != nil || again != m {
			t.Fatalf("ParseMode(%q) = %q, but that parses to %q, %v", s, m, again, err)
		}
	})
}

// A schema against itself has no changes, whatever its shape; and a change
// to one field is found at that field's path.
func TestDiffWideSchemas(t *testing.T) {
	for i := range 50 {
		s := catalogtest.WideSchema(i, 20)
		if cs := diffAll(t, s, s); len(cs) != 0 {
			t.Fatalf("WideSchema(%d) against itself: %v", i, cs)
		}
		fs := slices.Clone(s.Fields())
		fs[7].Nullable = !fs[7].Nullable
		cs := diffAll(t, s, arrow.NewSchema(fs, nil))
		if len(cs) != 1 || cs[0].Path != fs[7].Name {
			t.Fatalf("WideSchema(%d) with field 7's nullability flipped: %v", i, cs)
		}
	}
}

// Every rule of the README's table, at every depth a field can sit: at the
// top, in a struct, in a list's struct elements and in a map's struct
// values. Each change is refused by exactly the modes the table says,
// named by its dotted path, with a reason.
func TestCheckEveryRuleAtEveryDepth(t *testing.T) {
	base := []arrow.Field{field("id", i64, false), field("n", i32, true), field("opt", str, true), field("req", str, false)}
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: str}
	type modes struct{ backward, forward bool } // full refuses what either refuses
	rules := []struct {
		name   string
		change func([]arrow.Field) []arrow.Field
		path   string // the changed field's name at its level
		kind   schemadiff.Kind
		refuse modes
	}{
		{"nullable field added", func(fs []arrow.Field) []arrow.Field { return append(fs, field("x", str, true)) }, "x", schemadiff.Added, modes{}},
		{"required field added", func(fs []arrow.Field) []arrow.Field { return append(fs, field("x", str, false)) }, "x", schemadiff.Added, modes{backward: true}},
		{"nullable field removed", func(fs []arrow.Field) []arrow.Field { return slices.Delete(fs, 2, 3) }, "opt", schemadiff.Removed, modes{}},
		{"required field removed", func(fs []arrow.Field) []arrow.Field { return slices.Delete(fs, 3, 4) }, "req", schemadiff.Removed, modes{forward: true}},
		{"promoted", func(fs []arrow.Field) []arrow.Field { fs[1].Type = i64; return fs }, "n", schemadiff.Promoted, modes{forward: true}},
		{"narrowed", func(fs []arrow.Field) []arrow.Field { fs[0].Type = i32; return fs }, "id", schemadiff.Narrowed, modes{backward: true}},
		{"retyped", func(fs []arrow.Field) []arrow.Field { fs[1].Type = str; return fs }, "n", schemadiff.Retyped, modes{backward: true, forward: true}},
		{"made required", func(fs []arrow.Field) []arrow.Field { fs[2].Nullable = false; return fs }, "opt", schemadiff.MadeRequired, modes{backward: true}},
		{"made nullable", func(fs []arrow.Field) []arrow.Field { fs[3].Nullable = true; return fs }, "req", schemadiff.MadeNullable, modes{forward: true}},
		{"dictionary encoded", func(fs []arrow.Field) []arrow.Field { fs[2].Type = dict; return fs }, "opt", schemadiff.Reencoded, modes{}},
		{"field metadata", func(fs []arrow.Field) []arrow.Field {
			fs[0].Metadata = arrow.NewMetadata([]string{"comment"}, []string{"the key"})
			return fs
		}, "id", schemadiff.MetadataChanged, modes{}},
	}
	depths := []struct {
		name, prefix string
		wrap         func([]arrow.Field) *arrow.Schema
	}{
		{"top level", "", func(fs []arrow.Field) *arrow.Schema { return schema(fs...) }},
		{"in a struct", "s.", func(fs []arrow.Field) *arrow.Schema {
			return schema(field("k", i64, false), field("s", arrow.StructOf(fs...), true))
		}},
		{"in a list of structs", "l.element.", func(fs []arrow.Field) *arrow.Schema {
			return schema(field("k", i64, false), field("l", arrow.ListOf(arrow.StructOf(fs...)), true))
		}},
		{"in a map's struct values", "m.value.", func(fs []arrow.Field) *arrow.Schema {
			return schema(field("k", i64, false), field("m", arrow.MapOf(str, arrow.StructOf(fs...)), true))
		}},
	}
	for _, d := range depths {
		for _, r := range rules {
			t.Run(d.name+"/"+r.name, func(t *testing.T) {
				old, new := d.wrap(slices.Clone(base)), d.wrap(r.change(slices.Clone(base)))
				if got := diffAll(t, old, new); len(got) != 1 || got[0].Path != d.prefix+r.path || got[0].Kind != r.kind {
					t.Fatalf("Diff = %v, want one %s at %s", got, r.kind, d.prefix+r.path)
				}
				for _, m := range []struct {
					mode   schemadiff.Mode
					refuse bool
				}{{schemadiff.None, false}, {schemadiff.Backward, r.refuse.backward}, {schemadiff.Forward, r.refuse.forward},
					{schemadiff.Full, r.refuse.backward || r.refuse.forward}} {
					b := checkAll(t, m.mode, old, new)
					if (len(b) > 0) != m.refuse {
						t.Errorf("%s: refused %v, want %v", m.mode, b, m.refuse)
					}
					for _, x := range b {
						if x.Path != d.prefix+r.path || x.Reason == "" {
							t.Errorf("%s: breach %q, want path %s and a reason", m.mode, x.String(), d.prefix+r.path)
						}
					}
				}
			})
		}
	}
}
