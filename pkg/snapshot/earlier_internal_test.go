package snapshot

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/pkg/catalog"
)

func TestEarlierEncoding(t *testing.T) {
	t.Parallel()
	es := []Earlier{{Version: 1, FieldIDs: []int32{1, 2}, LastColumnID: 2}, {Version: 4, FieldIDs: []int32{1, 2}, LastColumnID: 2},
		{Version: 300, FieldIDs: []int32{1, 3}, LastColumnID: 3}}
	b := appendEarlier(nil, es, []int32{0, 0, 1})
	// count; 1, ref 0, ids (1 + 4 bytes); 3, ref 0, same; 296 (2 bytes), ref 1, ids (1 + 4 bytes)
	if want := 1 + (1 + 1 + 5) + (1 + 1 + 1) + (2 + 1 + 5); len(b) != want {
		t.Errorf("encoding of %d bytes, want %d", len(b), want)
	}
	got, err := decodeEarlier(b, 2, 301)
	if err != nil {
		t.Fatal(err)
	}
	want := []earlierRef{{1, 0, []int32{1, 2}, 2}, {4, 0, []int32{1, 2}, 2}, {300, 1, []int32{1, 3}, 3}}
	if !slices.EqualFunc(got, want, func(a, b earlierRef) bool {
		return a.version == b.version && a.schema == b.schema && slices.Equal(a.ids, b.ids) && a.last == b.last
	}) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
}

func TestEarlierDecodingRefusesBadBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		b       []byte
		schemas int
		version int64
	}{
		{"empty", nil, 1, 5},
		{"no version", []byte{0}, 1, 5},
		{"a count past the bytes", []byte{9, 1, 0, 1, 0, 0}, 1, 5},
		{"version 0", []byte{1, 0, 0, 1, 0, 0}, 1, 5},
		{"at the row's version", []byte{1, 5, 0, 1, 0, 0}, 1, 5},
		{"a schema out of range", []byte{1, 1, 1, 1, 0, 0}, 1, 5},
		{"the first as the one before", []byte{1, 1, 0, 0}, 1, 5},
		{"a bad marker", []byte{1, 1, 0, 2, 0, 0}, 1, 5},
		{"truncated ids", []byte{1, 1, 0, 1, 2, 2}, 1, 5},
		{"truncated before the marker", []byte{2, 1, 0, 1, 0, 0, 1, 0}, 1, 5},
		{"bytes after the last", []byte{1, 1, 0, 1, 0, 0, 0}, 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, err := decodeEarlier(tc.b, tc.schemas, tc.version); err == nil {
				t.Fatalf("decoded %+v, want an error", got)
			}
		})
	}
}

func FuzzDecodeEarlier(f *testing.F) {
	f.Add(appendEarlier(nil, []Earlier{{Version: 1, FieldIDs: []int32{1, 2}, LastColumnID: 2}, {Version: 3, FieldIDs: []int32{1, 2}, LastColumnID: 2}},
		[]int32{0, 1}))
	f.Add([]byte{1, 1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		refs, err := decodeEarlier(b, 4, 1000)
		if err != nil {
			return
		}
		es := make([]Earlier, len(refs))
		rs := make([]int32, len(refs))
		for k, r := range refs {
			es[k], rs[k] = Earlier{Version: r.version, FieldIDs: r.ids, LastColumnID: r.last}, r.schema
		}
		again, err := decodeEarlier(appendEarlier(nil, es, rs), 4, 1000)
		if err != nil || len(again) != len(refs) {
			t.Fatalf("%x decodes to %+v, which re-encodes to something that decodes to %+v, %v", b, refs, again, err)
		}
	})
}

// A row's earlier versions that do not decode, or reference a schema the
// segment does not hold, make the segment corrupt, with every address and
// checksum right.
func TestEarlierIsCheckedOnRead(t *testing.T) {
	t.Parallel()
	schema, err := catalog.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	good := appendEarlier(nil, []Earlier{{Version: 1, SchemaIPC: schema, FieldIDs: []int32{7}, LastColumnID: 7}}, []int32{0}) // 1, 1, 0, 1, 1, 14, 0
	table := []Table{{Namespace: "n", Name: "t", Location: "/x", Version: 2, SchemaIPC: schema,
		Earlier: []Earlier{{Version: 1, SchemaIPC: schema, FieldIDs: []int32{7}, LastColumnID: 7}}}}
	payload, _, err := encodePayload(memory.DefaultAllocator, table, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(payload, good); n != 1 {
		t.Fatalf("the encoded versions occur %d times in the payload, want 1", n)
	}
	for _, tc := range []struct {
		name    string
		b       []byte // same length as good
		corrupt bool
	}{
		{"as written", good, false},
		{"at the row's version", []byte{1, 2, 0, 1, 1, 14, 0}, true},
		{"a schema the segment lacks", []byte{1, 1, 1, 1, 1, 14, 0}, true},
		{"bytes left over", []byte{1, 1, 0, 1, 0, 0, 0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := bytes.Replace(payload, good, tc.b, 1)
			r, err := Open(craft(t, Entry{Tenant: "acme", Tables: 1}, p), ReaderOptions{})
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
			if got := seg.Table(0).Earlier; len(got) != 1 || got[0].Version != 1 || !bytes.Equal(got[0].SchemaIPC, schema) {
				t.Fatalf("row 0: earlier versions %+v, want version 1 of the row's schema", got)
			}
		})
	}
}
