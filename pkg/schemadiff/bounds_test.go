package schemadiff_test

import (
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/schemadiff"
)

// 3,000 breaking changes at paths of 60 KB (60 nested structs): Diff and
// Check return the first limit and count them all, each path elided to
// MaxPathBytes around its middle, and allocate about what they return,
// not the 180 MB of paths the changes would take built out.
func TestDiffOfManyLongPathsIsBounded(t *testing.T) {
	old, new := catalogtest.DeepBreakingSchemas(60, 3000, 1000)
	var cs []schemadiff.Change
	var bs []schemadiff.Breach
	var total, breaking int
	n := allocated(func() {
		cs, total = schemadiff.Diff(old, new, schemadiff.MaxChanges)
		bs, breaking = schemadiff.Check(schemadiff.Full, old, new, schemadiff.MaxChanges)
	})
	t.Logf("Diff and Check of 3,000 changes at 60 KB paths: %.2f MB allocated", float64(n)/1e6)
	if len(cs) != schemadiff.MaxChanges || total != 3000 || len(bs) != schemadiff.MaxChanges || breaking != 3000 {
		t.Fatalf("Diff: %d of %d, Check: %d of %d; want %d of 3000 each", len(cs), total, len(bs), breaking, schemadiff.MaxChanges)
	}
	if n > 10<<20 {
		t.Errorf("Diff and Check allocated %d bytes, want at most %d", n, 10<<20)
	}
	for i, c := range cs {
		if len(c.Path) > schemadiff.MaxPathBytes || !strings.HasPrefix(c.Path, "s00_xxx") || !strings.Contains(c.Path, "…") ||
			!strings.HasSuffix(c.Path, "xxx.f"+pad4(i)) || c.Kind != schemadiff.Retyped || c.From != "int64" || c.To != "utf8" {
			t.Fatalf("change %d: %+v (path of %d bytes), want f%s retyped at a path elided to at most %d bytes", i, c, len(c.Path), pad4(i), schemadiff.MaxPathBytes)
		}
		if bs[i].Change != c || bs[i].Reason == "" {
			t.Fatalf("breach %d: %+v, want change %d with a reason", i, bs[i], i)
		}
	}
	if cs, total := schemadiff.Diff(old, new, 0); len(cs) != 0 || total != 3000 {
		t.Errorf("Diff with limit 0: %d changes of %d, want only the count, 3000", len(cs), total)
	}
	if bs, total := schemadiff.Check(schemadiff.Backward, old, new, 1); len(bs) != 1 || total != 3000 {
		t.Errorf("Check with limit 1: %d of %d, want 1 of 3000", len(bs), total)
	}
}

// A path is elided in its middle only past MaxPathBytes, and never
// through a UTF-8 sequence; a type is cut at its end past MaxTypeBytes.
func TestPathsAndTypesAreBounded(t *testing.T) {
	nest := func(names []string, leaf arrow.Field) *arrow.Schema {
		f := leaf
		for i := len(names) - 1; i >= 0; i-- {
			f = arrow.Field{Name: names[i], Type: arrow.StructOf(f), Nullable: true}
		}
		return arrow.NewSchema([]arrow.Field{f}, nil)
	}
	leafOld := arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	leafNew := arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	for _, tc := range []struct {
		name  string
		names []string
	}{
		{"at the bound", []string{strings.Repeat("a", schemadiff.MaxPathBytes-len(".zip"))}},
		{"one past", []string{strings.Repeat("a", schemadiff.MaxPathBytes-len(".zip")+1)}},
		{"multi-byte names", []string{strings.Repeat("é", 100), strings.Repeat("ü", 100), strings.Repeat("日本", 50)}},
		{"one long name", []string{strings.Repeat("ñ", 5000)}},
		{"many short names", strings.Split(strings.Repeat("ab.", 200)+"c", ".")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := strings.Join(tc.names, ".") + ".zip"
			cs := diffAll(t, nest(tc.names, leafOld), nest(tc.names, leafNew))
			if len(cs) != 1 {
				t.Fatalf("changes %+v, want one", cs)
			}
			p := cs[0].Path
			switch {
			case len(full) <= schemadiff.MaxPathBytes && p != full:
				t.Fatalf("path %q, want %q whole", p, full)
			case len(full) > schemadiff.MaxPathBytes && (len(p) > schemadiff.MaxPathBytes || len(p) < schemadiff.MaxPathBytes-2*utf8.UTFMax ||
				!utf8.ValidString(p) || strings.Count(p, "…") != 1):
				t.Fatalf("path of %d bytes %q, want valid UTF-8 of at most %d with one ellipsis", len(p), p, schemadiff.MaxPathBytes)
			case len(full) > schemadiff.MaxPathBytes:
				head, tail, _ := strings.Cut(p, "…")
				if !strings.HasPrefix(full, head) || !strings.HasSuffix(full, tail) || !strings.HasSuffix(tail, ".zip") {
					t.Fatalf("path %q is not the start and end of %q", p, full)
				}
			}
		})
	}
	wide := make([]arrow.Field, 500)
	for i := range wide {
		wide[i] = arrow.Field{Name: "field_" + pad4(i), Type: arrow.PrimitiveTypes.Int64}
	}
	cs := diffAll(t, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil),
		arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "wide", Type: arrow.StructOf(wide...)}}, nil))
	if len(cs) != 1 || len(cs[0].To) > schemadiff.MaxTypeBytes || !strings.HasPrefix(cs[0].To, "struct<field_0000: int64 not null, ") || !strings.HasSuffix(cs[0].To, "…") {
		t.Fatalf("added struct of 500 fields: %+v, want its type cut to %d bytes", cs, schemadiff.MaxTypeBytes)
	}
}

// BenchmarkDiffManyLongPaths diffs the two schemas of
// TestDiffOfManyLongPathsIsBounded (go test -bench DiffManyLongPaths
// -benchmem prints what one diff allocates).
func BenchmarkDiffManyLongPaths(b *testing.B) {
	old, new := catalogtest.DeepBreakingSchemas(60, 3000, 1000)
	b.ReportAllocs()
	for b.Loop() {
		schemadiff.Check(schemadiff.Backward, old, new, schemadiff.MaxChanges)
	}
}

// allocated runs fn and returns the bytes allocated meanwhile
// (runtime.MemStats.TotalAlloc counts every allocation, collected or not).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func pad4(i int) string {
	const digits = "0123456789"
	return string([]byte{digits[i/1000%10], digits[i/100%10], digits[i/10%10], digits[i%10]})
}
