package snapshot

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestFieldIDsEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ids   []int32
		last  int32
		bytes int // the encoding's length
	}{
		{"none, a last column id", nil, 4, 2},
		{"in order", []int32{1, 2, 3, 4}, 4, 6},
		{"evolved", []int32{1, 2, 3, 5, 6, 4, 9, 8}, 10, 10},
		{"the int32 range", []int32{math.MaxInt32, math.MinInt32, 0, -1}, math.MaxInt32, 22},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := appendFieldIDs(nil, tc.ids, tc.last)
			if len(b) != tc.bytes {
				t.Errorf("encoding of %d bytes, want %d", len(b), tc.bytes)
			}
			ids, last, err := decodeFieldIDs(b)
			if err != nil || !slices.Equal(ids, tc.ids) || last != tc.last || (ids == nil) != (tc.ids == nil) {
				t.Fatalf("decoded %v (last %d), %v; want %v (last %d)", ids, last, err, tc.ids, tc.last)
			}
		})
	}
}

func TestFieldIDsDecodingRefusesBadBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"a count past the bytes", []byte{9, 2, 2, 2, 0}},
		{"truncated", []byte{3, 2, 2}},
		{"no last column id", []byte{3, 2, 2, 2}},
		{"bytes after the last column id", []byte{1, 2, 0, 0}},
		{"over int32", []byte{1, 0x80, 0x80, 0x80, 0x80, 0x10, 0}},  // 2^31
		{"under int32", []byte{1, 0x81, 0x80, 0x80, 0x80, 0x10, 0}}, // -2^31-1
		{"a huge delta", []byte{1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if ids, last, err := decodeFieldIDs(tc.b); err == nil {
				t.Fatalf("decoded %v (last %d), want an error", ids, last)
			}
		})
	}
}

func FuzzDecodeFieldIDs(f *testing.F) {
	f.Add(appendFieldIDs(nil, []int32{1, 2, 3, 5, 6, 4, 9, 8}, 10))
	f.Add([]byte{9, 2, 2, 2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, last, err := decodeFieldIDs(b)
		if err != nil {
			return
		}
		if again := appendFieldIDs(nil, ids, last); !bytes.Equal(again, b) {
			// Varints have one shortest form; a longer one decodes the same.
			if ids2, last2, err := decodeFieldIDs(again); err != nil || !slices.Equal(ids, ids2) || last != last2 {
				t.Fatalf("%x decodes to %v (last %d), which re-encodes to %x", b, ids, last, again)
			}
		}
	})
}

// A row's field ids that do not decode make the segment corrupt, with
// every address and checksum right.
func TestFieldIDsAreCheckedOnRead(t *testing.T) {
	t.Parallel()
	good := appendFieldIDs(nil, []int32{1, 2, 3}, 3) // 3, 2, 2, 2, 0
	table := []Table{{Namespace: "n", Name: "t", Location: "/x", FieldIDs: []int32{1, 2, 3}, LastColumnID: 3}}
	payload, _, err := encodePayload(memory.DefaultAllocator, table, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(payload, good); n != 1 {
		t.Fatalf("the encoded ids occur %d times in the payload, want 1", n)
	}
	for _, tc := range []struct {
		name    string
		ids     []byte // same length as good
		corrupt bool
	}{
		{"as written", good, false},
		{"a count past the bytes", []byte{9, 2, 2, 2, 0}, true},
		{"bytes after the last column id", []byte{2, 2, 2, 0, 0}, true},
		{"no last column id", []byte{4, 2, 2, 2, 0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := bytes.Replace(payload, good, tc.ids, 1)
			r, err := Open(craft(t, Entry{Tenant: "acme", Tables: 1, SchemaUnavailable: 1}, p), ReaderOptions{})
			if err != nil {
				t.Fatalf("Open: %v; the crafted blob should pass the manifest's checks", err)
			}
			seg, err := r.Tenant(context.Background(), "acme")
			if got := errors.Is(err, ErrCorrupt); got != tc.corrupt {
				t.Fatalf("Tenant: %v, want corrupt %v", err, tc.corrupt)
			}
			if err != nil {
				return
			}
			defer seg.Release()
			if got := seg.Table(0); !slices.Equal(got.FieldIDs, []int32{1, 2, 3}) || got.LastColumnID != 3 {
				t.Fatalf("row 0: field ids %v (last %d), want [1 2 3] (last 3)", got.FieldIDs, got.LastColumnID)
			}
		})
	}
}
