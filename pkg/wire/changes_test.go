package wire_test

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/wire"
)

func FuzzDecodeCursor(f *testing.F) {
	f.Add(wire.EncodeCursor(1234, "sales\x00orders\x00update\x00"))
	f.Add(timeCursor(time.Unix(1700000000, 5), "sales\x00orders\x00update\x00"))
	f.Add("")
	f.Add("AAAAAAAAAAA")
	f.Add("__________________")
	f.Fuzz(func(t *testing.T, c string) {
		gen, key, err := wire.DecodeCursor(c)
		if err != nil {
			if !errors.Is(err, wire.ErrBadCursor) && !errors.Is(err, wire.ErrTimeCursor) {
				t.Fatalf("error %v is neither ErrBadCursor nor ErrTimeCursor", err)
			}
			return
		}
		// What decodes encodes back to a cursor of the same change.
		gen2, key2, err := wire.DecodeCursor(wire.EncodeCursor(gen, key))
		if err != nil || gen2 != gen || key2 != key {
			t.Fatalf("round trip of %q: %d %q %v", c, gen2, key2, err)
		}
	})
}

// timeCursor is a cursor as lake made it before the feed was ordered by
// publication: the change's Unix ns and its key.
func timeCursor(at time.Time, key string) string {
	return base64.RawURLEncoding.EncodeToString(append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), key...))
}

// A cursor round-trips; one of the former order by time is ErrTimeCursor,
// whatever its time; anything else is ErrBadCursor.
func TestDecodeCursor(t *testing.T) {
	for _, gen := range []uint64{0, 1, 1 << 63, ^uint64(0)} {
		if g, k, err := wire.DecodeCursor(wire.EncodeCursor(gen, "a\x00b\x00create\x00")); err != nil || g != gen || k != "a\x00b\x00create\x00" {
			t.Errorf("round trip of %d: %d %q %v", gen, g, k, err)
		}
	}
	for _, at := range []time.Time{time.Unix(0, 0), time.Unix(1700000000, 5), time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, _, err := wire.DecodeCursor(timeCursor(at, "a\x00b\x00create\x00")); !errors.Is(err, wire.ErrTimeCursor) {
			t.Errorf("a time cursor of %v: %v, want ErrTimeCursor", at, err)
		}
	}
	for _, c := range []string{"", "!!", "AAAA", "gQ", base64.RawURLEncoding.EncodeToString([]byte{0x82, 0, 0, 0, 0, 0, 0, 0, 1})} {
		if _, _, err := wire.DecodeCursor(c); !errors.Is(err, wire.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
}
