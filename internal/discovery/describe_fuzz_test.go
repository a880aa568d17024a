package discovery

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// FuzzParseDescribe: any body either parses into two valid names or is
// INVALID_ARGUMENT; it never panics, and what it accepts survives a round
// trip through its own JSON form.
func FuzzParseDescribe(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"namespace":"sales","table":"orders"}`, `{"namespace":"sales"}`,
		`{"namespace":"a/b","table":"t"}`, `{"namespace":"s","table":"t","x":1}`, `{"namespace":"s","table":"t"} {}`,
		`[]`, `null`, `{"namespace":"caf\u00e9","table":"\u202et"}`, `{"namespace":"..","table":"t"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseDescribe(body)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("got %v, want nil or INVALID_ARGUMENT", err)
			}
			return
		}
		if err := catalog.ValidateName("namespace", req.Namespace); err != nil {
			t.Fatalf("accepted an invalid namespace %q: %v", req.Namespace, err)
		}
		if err := catalog.ValidateName("table", req.Table); err != nil {
			t.Fatalf("accepted an invalid table %q: %v", req.Table, err)
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseDescribe(again)
		if err != nil || back != req {
			t.Fatalf("round trip of %q: got %+v, %v; want %+v", again, back, err, req)
		}
	})
}
