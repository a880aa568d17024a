package icebergrest

import (
	"encoding/json"
	"testing"
)

// appendJSONString writes what encoding/json writes, with or without the
// characters it escapes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"s3://b/p/metadata/v1.metadata.json", "file:///tmp/a b/", `a"b\c`, "<&>", "caf\u00e9", "\x00\x7f", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := appendJSONString([]byte("x"), s)
		want, werr := json.Marshal(s)
		if err != nil || werr != nil || string(got) != "x"+string(want) {
			t.Fatalf("appendJSONString(%q) = %s, %v; want x%s", s, got, err, want)
		}
	})
}
