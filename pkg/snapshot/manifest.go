package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// Format constants.
const (
	// Magic opens every blob.
	Magic = "LAKESNAP"
	// Version is the format version the writer writes.
	Version = 10
	// Version9 is the previous format: version 10 without the earlier
	// versions in its segments' tables. Still read.
	Version9 = 9
	// Version8 is version 9 without the Iceberg state in its segments'
	// tables. Still read.
	Version8 = 8
	// Version7 is version 8 without the creation ids and field ids in its
	// segments' tables. Still read.
	Version7 = 7
	// Version6 is version 7 without the settings in its segments. Still
	// read.
	Version6 = 6
	// Version5 is version 6 with its segments without the publication
	// column. Still read.
	Version5 = 5
	// Version4 is version 5 with its index uncompressed. Still read.
	Version4 = 4
	// HeaderSize is the fixed header's size.
	HeaderSize = 104
	// MarkerPrefix is how many bytes hold the header and the change
	// marker (versions 4 to 10).
	MarkerPrefix = HeaderSize + markerBytes
	// DefaultMaxSegmentBytes bounds one tenant's uncompressed segment.
	DefaultMaxSegmentBytes = 1 << 30

	// MaxIndexBytes bounds a version 5 to 10 manifest's uncompressed index: 64
	// MiB, several hundred thousand tenants.
	MaxIndexBytes = 64 << 20

	markerBytes = 16
	codecZstd   = 1
	// entryMin is the fewest bytes an index entry takes (a one-byte name).
	entryMin = 2 + 1 + 7*8 + 32
)

// Decode errors. Every failure to read a blob, a manifest or a segment
// wraps exactly one of them.
var (
	// ErrCorrupt: not a blob, truncated, a checksum or address mismatch,
	// or contents that break the format's rules.
	ErrCorrupt = errors.New("snapshot: corrupt blob")
	// ErrVersion: a blob of a format version this build does not read.
	ErrVersion = errors.New("snapshot: unsupported blob version")
)

// ErrNoTenant is returned for a tenant the blob does not hold.
var ErrNoTenant = errors.New("snapshot: tenant not in the blob")

// ErrDetached is returned for a tenant of a manifest opened alone whose
// segment the reader does not hold (not attached) and cannot fetch (no
// ReaderOptions.Fetch), and by Reader.Stored for any segment not held.
var ErrDetached = errors.New("snapshot: segment not attached")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Marker is what a blob records of the catalog's change counter: the
// value its writes account for, and when the last full scan ran (see
// catalog.ReadChanges).
type Marker struct {
	Changes    uint64
	FullScanAt time.Time
}

// Header is a blob's fixed header and change marker.
type Header struct {
	Version    uint16
	Generation uint64
	CreatedAt  time.Time
	Counts     catalog.Counts
	// ManifestBytes is what the manifest takes after the header (the change
	// marker and the index); the manifest is HeaderSize+ManifestBytes long.
	ManifestBytes uint64
	// BodyBytes is everything after the header in the one-file form: the
	// manifest and every segment.
	BodyBytes uint64
	// ContentHash covers each tenant's name and segment address: equal
	// hashes mean the same tables, schemas, tombstones and settings.
	ContentHash [32]byte
	// Marker is filled when the bytes read hold it (MarkerPrefix).
	Marker Marker
}

// Entry is a tenant's index entry: what the manifest says of its segment.
// Entries are the same in versions 4 to 10.
type Entry struct {
	Tenant            string
	Tables            int
	SchemaUnavailable int
	Tombstones        int
	// Generation is the blob generation at which the tenant's segment last
	// changed, and ChangedAt that blob's creation time.
	Generation uint64
	ChangedAt  time.Time
	// Address is the SHA-256 of the segment's stored (compressed) bytes,
	// StoredBytes their size and PayloadBytes the uncompressed size.
	Address      [32]byte
	StoredBytes  int
	PayloadBytes int
}

// Form is how a stored object holds a blob.
type Form uint8

// Forms of a stored blob.
const (
	// OneFile is the manifest and every segment after it, in index order:
	// HeaderSize+Header.BodyBytes bytes. Tests and tools pass it around
	// whole; version 4 was published in it.
	OneFile Form = iota + 1
	// ManifestAlone is the manifest without its segments, each stored apart
	// under its address: HeaderSize+Header.ManifestBytes bytes. Refresh
	// publishes it (versions 5 to 10).
	ManifestAlone
)

func (f Form) String() string {
	switch f {
	case OneFile:
		return "one file"
	case ManifestAlone:
		return "manifest alone"
	}
	return fmt.Sprintf("form(%d)", uint8(f))
}

// FormOf returns the form in which a stored object of size bytes holds the
// blob h heads: OneFile when it is HeaderSize+BodyBytes long (also a blob
// of no segments, whose two forms are the same bytes), ManifestAlone when
// it is HeaderSize+ManifestBytes long, else ErrCorrupt (truncated or
// padded). It is the one place the form is decided: Open decides by it,
// and so does a caller that knows an object's size before it reads the
// object whole.
func (h Header) FormOf(size int64) (Form, error) {
	if size >= HeaderSize {
		switch uint64(size - HeaderSize) {
		case h.BodyBytes:
			return OneFile, nil
		case h.ManifestBytes:
			return ManifestAlone, nil
		}
	}
	return 0, corrupt("%d bytes are neither the one-file blob (%d) nor its manifest alone (%d)",
		size, HeaderSize+h.BodyBytes, HeaderSize+h.ManifestBytes)
}

// Options bound what a reader accepts.
type Options struct {
	// MaxSegmentBytes bounds one tenant's uncompressed segment. Default
	// DefaultMaxSegmentBytes.
	MaxSegmentBytes int
}

func (o Options) maxSegment() int {
	if o.MaxSegmentBytes <= 0 {
		return DefaultMaxSegmentBytes
	}
	return o.MaxSegmentBytes
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// ReadHeader parses and checks a blob's header from its first HeaderSize
// bytes or more (b may be just a prefix), and its change marker when b
// holds MarkerPrefix bytes. It verifies no checksum. Versions other than
// 4 to 10 wrap ErrVersion.
func ReadHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		if len(b) < len(Magic) && string(b) != Magic[:len(b)] || len(b) >= len(Magic) && string(b[:len(Magic)]) != Magic {
			return Header{}, corrupt("not a snapshot blob (bad magic)")
		}
		return Header{}, corrupt("truncated to %d bytes, the header is %d", len(b), HeaderSize)
	}
	if string(b[:len(Magic)]) != Magic {
		return Header{}, corrupt("not a snapshot blob (bad magic)")
	}
	le := binary.LittleEndian
	h := Header{
		Version:    le.Uint16(b[8:]),
		Generation: le.Uint64(b[12:]),
		CreatedAt:  time.Unix(0, int64(le.Uint64(b[20:]))).UTC(),
		Counts: catalog.Counts{
			Tables:            int(le.Uint64(b[28:]) & (1<<62 - 1)),
			SchemaUnavailable: int(le.Uint64(b[36:]) & (1<<62 - 1)),
			Skipped:           int(le.Uint64(b[44:]) & (1<<62 - 1)),
		},
		ManifestBytes: le.Uint64(b[52:]),
		BodyBytes:     le.Uint64(b[60:]),
	}
	copy(h.ContentHash[:], b[68:100])
	if h.Version < Version4 || h.Version > Version {
		return Header{}, fmt.Errorf("%w: version %d, this build reads %d to %d", ErrVersion, h.Version, Version4, Version)
	}
	if codec := le.Uint16(b[10:]); codec != codecZstd {
		return Header{}, corrupt("unknown codec %d", codec)
	}
	if h.ManifestBytes > h.BodyBytes {
		return Header{}, corrupt("manifest of %d bytes in a body of %d", h.ManifestBytes, h.BodyBytes)
	}
	if len(b) >= MarkerPrefix && h.ManifestBytes >= markerBytes {
		h.Marker.Changes = le.Uint64(b[HeaderSize:])
		if at := int64(le.Uint64(b[HeaderSize+8:])); at != 0 {
			h.Marker.FullScanAt = time.Unix(0, at).UTC()
		}
	}
	return h, nil
}

func putHeader(b []byte, h Header) {
	le := binary.LittleEndian
	copy(b[0:8], Magic)
	le.PutUint16(b[8:], h.Version)
	le.PutUint16(b[10:], codecZstd)
	le.PutUint64(b[12:], h.Generation)
	le.PutUint64(b[20:], uint64(h.CreatedAt.UnixNano()))
	le.PutUint64(b[28:], uint64(h.Counts.Tables))
	le.PutUint64(b[36:], uint64(h.Counts.SchemaUnavailable))
	le.PutUint64(b[44:], uint64(h.Counts.Skipped))
	le.PutUint64(b[52:], h.ManifestBytes)
	le.PutUint64(b[60:], h.BodyBytes)
	copy(b[68:100], h.ContentHash[:])
	le.PutUint64(b[HeaderSize:], h.Marker.Changes)
	var at uint64
	if !h.Marker.FullScanAt.IsZero() {
		at = uint64(h.Marker.FullScanAt.UnixNano())
	}
	le.PutUint64(b[HeaderSize+8:], at)
}

// encodeManifest lays out a version 10 manifest of entries (sorted, checked
// by the writer) with h's fields; it fills in the counts' tables, the
// sizes and the content hash, and returns the manifest and its header.
// enc compresses the index.
func encodeManifest(h Header, entries []Entry, enc *zstd.Encoder) ([]byte, Header) {
	h.Version = Version
	h.Counts.Tables, h.Counts.SchemaUnavailable = 0, 0
	rawSize, stored := 4, 0
	for _, e := range entries {
		rawSize += entryMin - 1 + len(e.Tenant)
		stored += e.StoredBytes
		h.Counts.Tables += e.Tables
		h.Counts.SchemaUnavailable += e.SchemaUnavailable
	}
	h.ContentHash = contentHash(entries)
	le := binary.LittleEndian
	idx := make([]byte, 0, rawSize)
	idx = le.AppendUint32(idx, uint32(len(entries)))
	for _, e := range entries {
		idx = le.AppendUint16(idx, uint16(len(e.Tenant)))
		idx = append(idx, e.Tenant...)
		for _, v := range []uint64{uint64(e.StoredBytes), uint64(e.PayloadBytes), uint64(e.Tables), uint64(e.SchemaUnavailable),
			uint64(e.Tombstones), e.Generation, uint64(e.ChangedAt.UnixNano())} {
			idx = le.AppendUint64(idx, v)
		}
		idx = append(idx, e.Address[:]...)
	}
	return sealManifest(h, idx, stored, enc)
}

// sealManifest lays out a version 10 manifest of h and an index: the index
// compressed after the change marker, the sizes (stored: the segments'
// bytes) and the CRC.
func sealManifest(h Header, idx []byte, stored int, enc *zstd.Encoder) ([]byte, Header) {
	le := binary.LittleEndian
	b := make([]byte, MarkerPrefix, MarkerPrefix+4+len(idx)/2)
	b = le.AppendUint32(b, uint32(len(idx)))
	b = enc.EncodeAll(idx, b)
	h.ManifestBytes = uint64(len(b) - HeaderSize)
	h.BodyBytes = h.ManifestBytes + uint64(stored)
	putHeader(b, h)
	crc := crc32.Update(crc32.Checksum(b[:100], crcTable), crcTable, b[HeaderSize:])
	le.PutUint32(b[100:104], crc)
	return b, h
}

// contentHash is the SHA-256 over each tenant's name and address.
func contentHash(entries []Entry) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, e := range entries {
		binary.LittleEndian.PutUint64(n[:], uint64(len(e.Tenant)))
		h.Write(n[:])
		h.Write([]byte(e.Tenant))
		h.Write(e.Address[:])
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// parseManifest checks a version 4 to 10 manifest (b holds at least its
// HeaderSize+ManifestBytes bytes; what follows is not read): the CRC, the
// index's size before and after decompression (versions 5 to 10), every entry's
// bounds and order, the counts and the content hash.
func parseManifest(b []byte, opts Options) (Header, []Entry, error) {
	h, err := ReadHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.ManifestBytes < markerBytes+4 || uint64(len(b)-HeaderSize) < h.ManifestBytes {
		return h, nil, corrupt("manifest of %d bytes not within the %d bytes read", h.ManifestBytes, len(b)-HeaderSize)
	}
	m := b[:HeaderSize+int(h.ManifestBytes)]
	if crc := crc32.Update(crc32.Checksum(m[:100], crcTable), crcTable, m[HeaderSize:]); crc != binary.LittleEndian.Uint32(m[100:104]) {
		return h, nil, corrupt("manifest checksum mismatch")
	}
	idx := m[MarkerPrefix:]
	le := binary.LittleEndian
	if h.Version != Version4 {
		if idx, err = inflateIndex(idx); err != nil {
			return h, nil, err
		}
	}
	if len(idx) < 4 {
		return h, nil, corrupt("index of %d bytes", len(idx))
	}
	n := int(le.Uint32(idx))
	if n > (len(idx)-4)/entryMin {
		return h, nil, corrupt("index: %d tenants cannot fit in %d bytes", n, len(idx))
	}
	entries := make([]Entry, 0, n)
	pos, stored, tables, unavailable := 4, uint64(0), 0, 0
	for i := range n {
		if len(idx)-pos < 2 {
			return h, nil, corrupt("index: entry %d truncated", i)
		}
		nameLen := int(le.Uint16(idx[pos:]))
		pos += 2
		if nameLen == 0 || len(idx)-pos < nameLen+7*8+32 {
			return h, nil, corrupt("index: entry %d truncated or unnamed", i)
		}
		e := Entry{Tenant: string(idx[pos : pos+nameLen])}
		pos += nameLen
		if err := catalog.ValidateName("tenant", e.Tenant); err != nil {
			return h, nil, corrupt("index: entry %d: %v", i, err)
		}
		if i > 0 && entries[i-1].Tenant >= e.Tenant {
			return h, nil, corrupt("index: tenants out of order at %q", e.Tenant)
		}
		u := func() uint64 { v := le.Uint64(idx[pos:]); pos += 8; return v }
		slen, plen, nt, nu, nd, gen, changed := u(), u(), u(), u(), u(), u(), u()
		copy(e.Address[:], idx[pos:pos+32])
		pos += 32
		switch {
		case slen == 0 || slen > 1<<40:
			return h, nil, corrupt("index: %s: %d stored bytes", e.Tenant, slen)
		case plen > uint64(opts.maxSegment()):
			return h, nil, corrupt("index: %s: segment of %d bytes exceeds the limit of %d", e.Tenant, plen, opts.maxSegment())
		case nt+nd == 0 || nt > plen/8 || nd > plen/8:
			// A table or a tombstone takes more than 8 bytes of the
			// segment (its names alone); a tenant has one of them.
			return h, nil, corrupt("index: %s: %d tables and %d tombstones in a %d-byte segment", e.Tenant, nt, nd, plen)
		case nu > nt:
			return h, nil, corrupt("index: %s: %d of %d tables without a schema", e.Tenant, nu, nt)
		}
		e.StoredBytes, e.PayloadBytes = int(slen), int(plen)
		e.Tables, e.SchemaUnavailable, e.Tombstones = int(nt), int(nu), int(nd)
		e.Generation, e.ChangedAt = gen, time.Unix(0, int64(changed)).UTC()
		stored += slen
		tables += e.Tables
		unavailable += e.SchemaUnavailable
		entries = append(entries, e)
	}
	switch {
	case pos != len(idx):
		return h, nil, corrupt("index: %d bytes after the last entry", len(idx)-pos)
	case h.BodyBytes != h.ManifestBytes+stored:
		return h, nil, corrupt("header says %d body bytes, the manifest and its segments take %d", h.BodyBytes, h.ManifestBytes+stored)
	case tables != h.Counts.Tables || unavailable != h.Counts.SchemaUnavailable:
		return h, nil, corrupt("index counts %d tables (%d without a schema), header %d (%d)",
			tables, unavailable, h.Counts.Tables, h.Counts.SchemaUnavailable)
	case contentHash(entries) != h.ContentHash:
		return h, nil, corrupt("content hash mismatch")
	}
	return h, slices.Clip(entries), nil
}

// inflateIndex decompresses a version 5 to 10 index (u32 uncompressed size, then
// one zstd frame), refusing a size over MaxIndexBytes or a frame that
// inflates to another size before it allocates more.
func inflateIndex(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, corrupt("index of %d bytes", len(b))
	}
	raw := binary.LittleEndian.Uint32(b)
	if raw < 4 || raw > MaxIndexBytes {
		return nil, corrupt("index of %d bytes uncompressed, the limit is %d", raw, MaxIndexBytes)
	}
	// The bound is at least zstd's window for a small frame; the size is
	// checked after.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(uint64(raw), 1<<20)))
	if err != nil {
		return nil, fmt.Errorf("snapshot: make an index decoder: %w", err)
	}
	defer dec.Close()
	idx, err := dec.DecodeAll(b[4:], nil)
	if err != nil {
		return nil, corrupt("index: %v", err)
	}
	if len(idx) != int(raw) {
		return nil, corrupt("index inflates to %d bytes, the manifest says %d", len(idx), raw)
	}
	return idx, nil
}
