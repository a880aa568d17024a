package registerapi_test

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/wire"
)

// allocated runs fn and returns the bytes the process allocated meanwhile
// (runtime.MemStats.TotalAlloc: every allocation, collected or not).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// An update whose schema breaks the table's mode 3,000 times, each at a
// path through 60 nested structs (issue 38 row 5: a 361 MB 409 body from a
// 400 KB PUT), is answered with the first schemadiff.MaxChanges breaking
// changes and the count of all of them, each path at most
// schemadiff.MaxPathBytes: a 409 body under 1 MB, and the request
// allocates under 50 MB. GET …/diff of the same two versions is bounded
// the same way.
func TestDiffOfAnAdversarialSchemaIsBounded(t *testing.T) {
	// Not parallel: it measures the whole process's allocations (MemStats.TotalAlloc).
	const depth, leaves, nameBytes = 60, 3000, 1000
	const maxBody, maxAlloc = 1 << 20, 50 << 20
	old, new := catalogtest.DeepBreakingSchemas(depth, leaves, nameBytes)
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil)})
	if r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": "orders", "location": "s3://lake/orders/", "schema": ipcB64(old), "compatibility": "backward"})); r.status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	put := body(t, map[string]any{"schema": ipcB64(new)})
	var r response
	n := allocated(func() { r = do(t, h, "PUT", base+"/orders", "application/json", put) })
	t.Logf("PUT of %d bytes breaking %d fields: 409 body %d bytes, %.1f MB allocated", len(put), leaves, len(r.body), float64(n)/1e6)
	if r.status != http.StatusConflict || errorCode(t, r) != "incompatible_schema" {
		t.Fatalf("PUT: %d %.300s, want 409 incompatible_schema", r.status, r.body)
	}
	if len(r.body) > maxBody {
		t.Errorf("409 body of %d bytes, want at most %d", len(r.body), maxBody)
	}
	if n > maxAlloc {
		t.Errorf("the PUT allocated %d bytes, want at most %d", n, maxAlloc)
	}
	var e struct {
		Error struct {
			Message              string                `json:"message"`
			BreakingChanges      []wire.BreakingChange `json:"breaking_changes"`
			BreakingChangesTotal int                   `json:"breaking_changes_total"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	if got := len(e.Error.BreakingChanges); got != schemadiff.MaxChanges || e.Error.BreakingChangesTotal != leaves {
		t.Errorf("%d breaking changes of %d in all, want %d of %d", got, e.Error.BreakingChangesTotal, schemadiff.MaxChanges, leaves)
	}
	checkPaths(t, "breaking change", len(e.Error.BreakingChanges), func(i int) string { return e.Error.BreakingChanges[i].Path })
	if !strings.Contains(e.Error.Message, "3000 changes break backward compatibility") || !strings.Contains(e.Error.Message, "; and 2990 more;") {
		t.Errorf("message %.300q…, want it to count 3000 changes, name 10 and say 2990 more", e.Error.Message)
	}

	if r := do(t, h, "PUT", base+"/orders", "application/json", body(t, map[string]any{"schema": ipcB64(new), "compatibility": "none"})); r.status != http.StatusOK {
		t.Fatalf("PUT with compatibility none: %d %.300s", r.status, r.body)
	}
	n = allocated(func() { r = do(t, h, "GET", base+"/orders/diff?from=1&to=2", "", nil) })
	t.Logf("GET …/diff: body %d bytes, %.1f MB allocated", len(r.body), float64(n)/1e6)
	if r.status != http.StatusOK || len(r.body) > maxBody || n > maxAlloc {
		t.Fatalf("GET …/diff: %d, body %d bytes, %d allocated; want 200, at most %d and %d", r.status, len(r.body), n, maxBody, maxAlloc)
	}
	var d struct {
		wire.Diff
		SchemaChangesTotal int `json:"schema_changes_total"`
	}
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.SchemaChanges) != schemadiff.MaxChanges || d.SchemaChangesTotal != leaves {
		t.Errorf("%d schema changes of %d in all, want %d of %d", len(d.SchemaChanges), d.SchemaChangesTotal, schemadiff.MaxChanges, leaves)
	}
	checkPaths(t, "schema change", len(d.SchemaChanges), func(i int) string { return d.SchemaChanges[i].Path })
	if last := d.Lines[len(d.Lines)-1]; len(d.Lines) != schemadiff.MaxChanges+2 || last != "compatibility: \"backward\" → \"none\"" ||
		d.Lines[len(d.Lines)-2] != "… and 2900 more schema changes (3000 in all)" {
		t.Errorf("%d lines ending %q, want the %d changes kept, the count of the rest and the mode's change", len(d.Lines), d.Lines[len(d.Lines)-2:], schemadiff.MaxChanges)
	}
}

// checkPaths checks n paths are valid UTF-8 of at most
// schemadiff.MaxPathBytes, each keeping the leaf's name at its end.
func checkPaths(t *testing.T, what string, n int, path func(int) string) {
	t.Helper()
	for i := range n {
		p := path(i)
		if len(p) > schemadiff.MaxPathBytes || !utf8.ValidString(p) || !strings.HasPrefix(p, "s00_x") || !strings.HasSuffix(p, ".f"+leafNumber(i)) || !strings.Contains(p, "…") {
			t.Fatalf("%s %d: path of %d bytes %q, want at most %d with its middle elided, ending .f%s", what, i, len(p), p, schemadiff.MaxPathBytes, leafNumber(i))
		}
	}
}

func leafNumber(i int) string {
	const digits = "0123456789"
	return string([]byte{digits[i/1000%10], digits[i/100%10], digits[i/10%10], digits[i%10]})
}
