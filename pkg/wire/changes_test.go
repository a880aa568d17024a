package wire_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/wire"
)

func FuzzDecodeCursor(f *testing.F) {
	f.Add(wire.EncodeCursor(time.Unix(1700000000, 5), "sales\x00orders\x00update\x00"))
	f.Add("")
	f.Add("AAAAAAAAAAA")
	f.Add("__________________")
	f.Fuzz(func(t *testing.T, c string) {
		at, key, err := wire.DecodeCursor(c)
		if err != nil {
			if !errors.Is(err, wire.ErrBadCursor) {
				t.Fatalf("error %v is not ErrBadCursor", err)
			}
			return
		}
		// What decodes encodes back to a cursor of the same change.
		at2, key2, err := wire.DecodeCursor(wire.EncodeCursor(at, key))
		if err != nil || !at2.Equal(at) || key2 != key {
			t.Fatalf("round trip of %q: %v %q %v", c, at2, key2, err)
		}
	})
}
