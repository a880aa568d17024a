package catalog_test

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/klauspost/compress/zstd"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
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

// segmentOf pads an IPC stream to the size zstd's smallest window needs
// (the decoder is bounded by the segment's size); readers stop at the
// end-of-stream marker.
func segmentOf(stream []byte) []byte {
	return append(stream, make([]byte, max(0, 4096-len(stream)))...)
}

// craftBlob writes a version 3 blob of one tenant with one table whose
// segment is payload, with every hash, count and checksum right: it passes
// OpenBlob's checks, as a forger's blob would.
func craftBlob(t testing.TB, tenant string, payload []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	seg := enc.EncodeAll(payload, nil)
	enc.Close()
	segHash := sha256.Sum256(payload)
	le := binary.LittleEndian
	idx := make([]byte, 16) // the change marker
	idx = le.AppendUint32(idx, 1)
	idx = le.AppendUint16(idx, uint16(len(tenant)))
	idx = append(idx, tenant...)
	for _, v := range []uint64{0, uint64(len(seg)), uint64(len(payload)), 1, 0, 1, 0} {
		idx = le.AppendUint64(idx, v)
	}
	idx = append(idx, segHash[:]...)

	h := sha256.New()
	h.Write(le.AppendUint64(nil, uint64(len(tenant))))
	h.Write([]byte(tenant))
	h.Write(segHash[:])

	b := make([]byte, catalog.BlobHeaderSize)
	copy(b, catalog.BlobMagic)
	le.PutUint16(b[8:], catalog.BlobVersion3)
	le.PutUint16(b[10:], 1) // zstd
	le.PutUint64(b[12:], 1)
	le.PutUint64(b[28:], 1) // tables
	le.PutUint64(b[52:], uint64(len(idx)))
	le.PutUint64(b[60:], uint64(len(idx)+len(seg)))
	copy(b[68:100], h.Sum(nil))
	b = append(append(b, idx...), seg...)
	tab := crc32.MakeTable(crc32.Castagnoli)
	le.PutUint32(b[100:104], crc32.Update(crc32.Checksum(b[:100], tab), tab, b[catalog.BlobHeaderSize:]))
	return b
}

// A blob that passes every check but whose segment's schema message lists a
// struct as its own child is a corrupt segment, not a stack overflow that
// kills discovery (issue 24, finding 6).
func TestSegmentWithSelfNestedSchemaIsCorrupt(t *testing.T) {
	b := craftBlob(t, "acme", segmentOf(selfNestedSchemaMessage()))
	blob, err := catalog.OpenBlob(b, catalog.DecodeOptions{})
	if err != nil {
		t.Fatalf("OpenBlob: %v; the crafted blob should pass the blob's own checks", err)
	}
	if _, err := blob.TenantTables("acme"); !errors.Is(err, catalog.ErrBlobCorrupt) {
		t.Fatalf("TenantTables: %v, want ErrBlobCorrupt", err)
	}
	err = blob.VisitTenant("acme", func(*catalog.Table) error { return nil })
	if !errors.Is(err, catalog.ErrBlobCorrupt) {
		t.Fatalf("VisitTenant: %v, want ErrBlobCorrupt", err)
	}
	if _, err := catalog.DecodeBlob(b, catalog.DecodeOptions{}); !errors.Is(err, catalog.ErrBlobCorrupt) {
		t.Fatalf("DecodeBlob: %v, want ErrBlobCorrupt", err)
	}
}

// The crafted message is what the test says it is: unpatched, it decodes
// as s: struct<c: int32>; patched, the schema check refuses it.
func TestSelfNestedSchemaMessageIsWellFormedOtherwise(t *testing.T) {
	got, err := catalog.DecodeSchema(nestedSchemaMessage(false))
	if err != nil {
		t.Fatalf("unpatched: %v", err)
	}
	want := arrow.NewSchema([]arrow.Field{{Name: "s", Nullable: true, Type: arrow.StructOf(arrow.Field{Name: "c", Type: arrow.PrimitiveTypes.Int32})}}, nil)
	if !got.Equal(want) {
		t.Fatalf("unpatched: got %s, want %s", got, want)
	}
	if _, err := catalog.DecodeSchema(selfNestedSchemaMessage()); !errors.Is(err, catalog.ErrInvalidSchema) {
		t.Fatalf("patched: %v, want ErrInvalidSchema", err)
	}
}
