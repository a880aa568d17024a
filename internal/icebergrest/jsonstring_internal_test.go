package icebergrest

import (
	"encoding/json"
	"testing"
)

// needsEscape is false only for strings encoding/json writes as they are
// between quotes.
func FuzzNeedsEscape(f *testing.F) {
	for _, s := range []string{"s3://b/p/metadata/v1.metadata.json", "file:///tmp/a b/", `a"b\c`, "<&>", "caf\u00e9", "\x00\x7f", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if plain := `"` + s + `"`; !needsEscape(s) && plain != string(want) {
			t.Fatalf("needsEscape(%q) = false, but encoding/json writes %s", s, want)
		}
	})
}
