package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/klauspost/compress/zstd"
)

// selfNestedSchemaMessage is an encapsulated Arrow IPC schema message with
// one struct field "s" whose children vector lists "s" itself: the offset
// wraps around (flatbuffer offsets are unsigned and add modulo 2^32), which
// a reader that follows offsets without bounds or depth checks recurses into
// forever.
func selfNestedSchemaMessage() []byte { return nestedSchemaMessage(true) }

// nestedSchemaMessage writes s: struct<c: int32>, and with selfNested
// points s's one child at s itself.
func nestedSchemaMessage(selfNested bool) []byte {
	b := flatbuffers.NewBuilder(256)
	// A placeholder child (an Int field) the patch below replaces.
	childName := b.CreateString("c")
	b.StartObject(2) // Int: bitWidth(0) is_signed(1)
	b.PrependInt32Slot(0, 32, 0)
	b.PrependBoolSlot(1, true, false)
	intType := b.EndObject()
	b.StartObject(7)
	b.PrependUOffsetTSlot(0, childName, 0)
	b.PrependByteSlot(2, 2, 0) // Type.Int
	b.PrependUOffsetTSlot(3, intType, 0)
	child := b.EndObject()
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(child)
	children := b.EndVector(1)

	name := b.CreateString("s")
	b.StartObject(0) // Struct_
	structType := b.EndObject()
	b.StartObject(7) // Field
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependBoolSlot(1, true, false)
	b.PrependByteSlot(2, 13, 0) // Type.Struct_
	b.PrependUOffsetTSlot(3, structType, 0)
	b.PrependUOffsetTSlot(5, children, 0)
	field := b.EndObject()
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(field)
	fields := b.EndVector(1)
	b.StartObject(4) // Schema
	b.PrependUOffsetTSlot(1, fields, 0)
	schema := b.EndObject()
	b.StartObject(5)            // Message
	b.PrependInt16Slot(0, 4, 0) // MetadataVersion.V5
	b.PrependByteSlot(1, 1, 0)  // MessageHeader.Schema
	b.PrependUOffsetTSlot(2, schema, 0)
	msg := b.EndObject()
	b.Finish(msg)
	fb := b.FinishedBytes()

	// Offsets returned by the builder count from the buffer's end.
	at := func(off flatbuffers.UOffsetT) int { return len(fb) - int(off) }
	elem, target := at(children)+4, at(field)
	if selfNested {
		binary.LittleEndian.PutUint32(fb[elem:], uint32(int32(target-elem)))
	}

	for len(fb)%8 != 0 {
		fb = append(fb, 0)
	}
	out := binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(fb)))
	out = append(out, fb...)
	return append(out, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0) // end of stream
}

// craft writes a version 4 blob of one tenant whose segment is payload,
// with every address, count and checksum right (the entry is e with its
// sizes and address filled in): it passes Open's checks, as a forger's
// blob would.
func craft(t testing.TB, e Entry, payload []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	stored := enc.EncodeAll(payload, nil)
	e.StoredBytes, e.PayloadBytes, e.Address = len(stored), len(payload), sha256.Sum256(stored)
	m, _ := encodeManifest(Header{Generation: 1, CreatedAt: time.Unix(0, 0)}, []Entry{e}, enc)
	return append(m, stored...)
}

// streams lays out a segment payload of the given IPC streams.
func streams(ss ...[]byte) []byte {
	var out []byte
	for _, s := range ss {
		out = binary.LittleEndian.AppendUint64(out, uint64(len(s)))
		out = append(out, s...)
	}
	return append(out, make([]byte, max(0, 4096-len(out)))...) // zstd's smallest window
}

// A blob that passes every check but whose segment's schema message lists
// a struct as its own child is a corrupt segment, not a stack overflow
// that kills discovery (issue 24, finding 6).
func TestSegmentWithSelfNestedSchemaIsCorrupt(t *testing.T) {
	t.Parallel()
	b := craft(t, Entry{Tenant: "acme", Tables: 1}, streams(selfNestedSchemaMessage(), nil, nil))
	r, err := Open(b, ReaderOptions{})
	if err != nil {
		t.Fatalf("Open: %v; the crafted blob should pass the manifest's checks", err)
	}
	if _, err := r.Tenant(context.Background(), "acme"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Tenant: %v, want ErrCorrupt", err)
	}
	// Unpatched, the same message is a well-formed schema, still not a
	// segment's.
	r, err = Open(craft(t, Entry{Tenant: "acme", Tables: 1}, streams(nestedSchemaMessage(false), nil, nil)), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Tenant(context.Background(), "acme"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Tenant of a foreign schema: %v, want ErrCorrupt", err)
	}
}

// A manifest with forged counts or sizes (and every checksum right) is a
// rejected blob, never a huge allocation.
func TestForgedCountsAreRejected(t *testing.T) {
	t.Parallel()
	payload := streams(nestedSchemaMessage(false))
	for name, e := range map[string]Entry{
		"tables beyond the segment":     {Tenant: "acme", Tables: 1 << 40},
		"tombstones beyond the segment": {Tenant: "acme", Tombstones: 1 << 40},
		"more unavailable than tables":  {Tenant: "acme", Tables: 1, SchemaUnavailable: 2},
		"neither tables nor tombstones": {Tenant: "acme"},
		"an invalid tenant":             {Tenant: "a/b", Tables: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := Open(craft(t, e, payload), ReaderOptions{}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want ErrCorrupt", err)
			}
		})
	}
	b := craft(t, Entry{Tenant: "acme", Tables: 1}, payload)
	if _, err := Open(b, ReaderOptions{Options: Options{MaxSegmentBytes: 100}}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a segment over MaxSegmentBytes: %v, want ErrCorrupt", err)
	}
	// A tenant count the manifest cannot hold, checksum recomputed.
	h, _ := ReadHeader(b)
	idx, err := inflateIndex(b[MarkerPrefix : HeaderSize+int(h.ManifestBytes)])
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(idx, 1<<31)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	m, _ := sealManifest(h, idx, int(h.BodyBytes-h.ManifestBytes), enc)
	x := append(m, b[HeaderSize+int(h.ManifestBytes):]...)
	if _, err := Open(x, ReaderOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "tenants cannot fit") {
		t.Fatalf("forged tenant count: %v, want ErrCorrupt for the count", err)
	}
	// An index that inflates to another size than the manifest says.
	binary.LittleEndian.PutUint32(idx, 1)
	m, _ = sealManifest(h, idx, int(h.BodyBytes-h.ManifestBytes), enc)
	binary.LittleEndian.PutUint32(m[MarkerPrefix:], uint32(len(idx)+1))
	binary.LittleEndian.PutUint32(m[100:], crc32.Update(crc32.Checksum(m[:100], crcTable), crcTable, m[HeaderSize:]))
	if _, err := Open(m, ReaderOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "inflates to") {
		t.Fatalf("an index of another size: %v, want ErrCorrupt for the size", err)
	}
}

// A segment whose row says it was published after its tenant's generation
// is corrupt: the change feed would put a follower's cursor past rows
// published later. At the tenant's generation it reads.
func TestRowPublishedAfterItsTenantIsCorrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		table, tombstone uint64
		generation       uint64
		corrupt          bool
	}{
		{"at the tenant's generation", 5, 3, 5, false},
		{"a table after it", 6, 3, 5, true},
		{"a tombstone after it", 5, 6, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			payload, _, err := encodePayload(memory.DefaultAllocator,
				[]Table{{Namespace: "n", Name: "t", Location: "/x", Published: tc.table}},
				[]Tombstone{{Namespace: "n", Name: "t", CreationID: "c", Published: tc.tombstone}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Open(craft(t, Entry{Tenant: "acme", Tables: 1, SchemaUnavailable: 1, Tombstones: 1, Generation: tc.generation}, payload), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			seg, err := r.Tenant(context.Background(), "acme")
			if got := errors.Is(err, ErrCorrupt); got != tc.corrupt {
				t.Fatalf("Tenant: %v, want corrupt %v", err, tc.corrupt)
			}
			if err == nil {
				seg.Release()
			}
		})
	}
}
