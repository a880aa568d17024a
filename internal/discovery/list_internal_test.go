package discovery

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/lake-catalog/lake/pkg/wire"
)

// FuzzParseList: any body is either refused with INVALID_ARGUMENT or gives
// a request within the bounds, which encodes and parses back the same.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{`{"limit":5}`, `{"namespace":"a","offset":3,"limit":500}`, `{"limit":0}`, `{"offset":-1,"limit":1}`,
		`{"limit":5} {}`, `{"namespace":"a/b","limit":5}`, ``, `null`, `{"limit":1e3}`, `{"namespace":"\u0000","limit":1}`} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, namespaceAllowed bool) {
		req, err := parseList(wire.ListTablesActionType, body, namespaceAllowed)
		if err != nil {
			return
		}
		if req.Offset < 0 || req.Limit < 1 || req.Limit > wire.MaxListLimit || (!namespaceAllowed && req.Namespace != "") {
			t.Fatalf("accepted %q as %+v", body, req)
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseList(wire.ListTablesActionType, b, namespaceAllowed)
		if err != nil || again != req {
			t.Fatalf("%q → %+v → %s → %+v, %v", body, req, b, again, err)
		}
	})
}

func TestCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want string
		cut  bool
	}{
		{"short", 10, "short", false},
		{"exactly", 7, "exactly", false},
		{"abcdef", 3, "abc", true},
		{"aé", 2, "a", true}, // the cut falls inside é
		{"日本", 4, "日", true}, // inside 本
		{"日本", 2, "", true},  // inside 日
	}
	for _, tt := range tests {
		got, cut := cut(tt.s, tt.n)
		if got != tt.want || cut != tt.cut || !utf8.ValidString(got) {
			t.Errorf("cut(%q, %d): got %q, %v, want %q, %v", tt.s, tt.n, got, cut, tt.want, tt.cut)
		}
	}
}
