package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/klauspost/compress/zstd"
)

// Blob format version 2 organizes the body by tenant, so a reader can verify
// the whole blob and read its index without decompressing anything, and
// decompress one tenant when it is asked for:
//
//	offset size  field
//	0      104   the header, laid out as in version 1 (see BlobMagic) except:
//	52     8       index bytes (version 1: payload bytes)
//	60     8       body bytes: the index and the segments after it
//	68     32      content hash: SHA-256 over each tenant's name and segment hash, in order
//	100    4       CRC-32C of bytes 0–99 and of the body
//	104    …     the tenant index:
//	               u32 tenants, then per tenant, sorted by name:
//	               u16 name length, name, u64 segment offset (from the first
//	               segment), u64 compressed bytes, u64 uncompressed bytes,
//	               u64 tables, u64 tables with the schema unavailable,
//	               u64 generation of its last change, i64 that blob's
//	               creation time (Unix ns), 32 bytes SHA-256 of the
//	               uncompressed segment
//	…      …     the segments, back to back in index order: each one zstd
//	             frame holding an Arrow IPC stream of the tenant's rows (the
//	             version 1 payload's columns), sorted by (namespace, table)
//
// Every number in the index is checked against the bytes that hold it and
// against DecodeOptions before anything is allocated.
//
// Version 3, what refresh writes, is version 2 with a 16-byte marker at the
// start of the index (counted in the index bytes, covered by the CRC):
//
//	104    8     the catalog change counter refresh read before the scan
//	             this blob was built from (BlobHeader.Changes)
//	112    8     when the last full scan ran, Unix ns (BlobHeader.FullScanAt)
//	120    …     the tenant index as in version 2
//
// so a refresh can tell from the first 120 bytes whether anything was
// written since (one read of the counter) without scanning.
const (
	// BlobVersion2 is the tenant-segmented format.
	BlobVersion2 = 2
	// BlobVersion3 is version 2 with the change marker; refresh writes it.
	BlobVersion3 = 3
	// BlobMarkerPrefix is how many bytes of a version 3 blob hold its
	// header and change marker.
	BlobMarkerPrefix = BlobHeaderSize + markerBytes
	markerBytes      = 16
	// DefaultMaxSegmentBytes bounds one tenant's uncompressed segment.
	DefaultMaxSegmentBytes = 1 << 30
	// indexEntryMin is the fewest bytes an index entry takes (a one-byte name).
	indexEntryMin = 2 + 1 + 7*8 + 32
)

// TenantInfo is what a blob's index says of one tenant.
type TenantInfo struct {
	Name              string
	Tables            int
	SchemaUnavailable int
	// Hash is the SHA-256 of the uncompressed segment: equal hashes mean
	// the same tables, schemas and registrations.
	Hash [32]byte
	// Generation is the blob generation at which this tenant's content last
	// changed, and ChangedAt that blob's creation time.
	Generation      uint64
	ChangedAt       time.Time
	CompressedBytes int
	PayloadBytes    int
	offset          int
}

// Blob is a verified snapshot blob whose tenant segments are decoded on
// demand. It is safe for concurrent use and holds only the compressed bytes.
type Blob struct {
	header  BlobHeader
	tenants []TenantInfo
	data    []byte // the segments
}

// ErrTenantNotInBlob is returned by Blob.TenantTables for a tenant the blob
// does not hold.
var ErrTenantNotInBlob = errors.New("catalog: tenant not in the snapshot blob")

// OpenBlob verifies b (header, magic and version, the CRC-32C over the
// header and body, every index entry's bounds, the content hash over the
// index) and returns it without decompressing any segment. A version 1 blob
// is decoded whole and regrouped, so callers see one shape. Every failure
// wraps ErrBlobMagic, ErrBlobVersion or ErrBlobCorrupt; no input panics.
func OpenBlob(b []byte, opts DecodeOptions) (*Blob, error) {
	h, err := ReadBlobHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Version == BlobVersion {
		snap, err := DecodeBlob(b, opts)
		if err != nil {
			return nil, err
		}
		v2, err := EncodeBlob(snap)
		if err != nil {
			return nil, during("regroup a version 1 blob", "", err)
		}
		blob, err := OpenBlob(v2, opts)
		if err != nil {
			return nil, err
		}
		blob.header.Version = BlobVersion
		return blob, nil
	}
	if h.BodyBytes != uint64(len(b)-BlobHeaderSize) {
		return nil, fmt.Errorf("%w: header says %d body bytes, blob has %d", ErrBlobCorrupt, h.BodyBytes, len(b)-BlobHeaderSize)
	}
	if crc := crc32.Update(crc32.Checksum(b[:100], crcTable), crcTable, b[BlobHeaderSize:]); crc != binary.LittleEndian.Uint32(b[100:104]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBlobCorrupt)
	}
	if h.IndexBytes > h.BodyBytes {
		return nil, fmt.Errorf("%w: index of %d bytes in a body of %d", ErrBlobCorrupt, h.IndexBytes, h.BodyBytes)
	}
	body := b[BlobHeaderSize:]
	idx, err := indexOf(h, body)
	if err != nil {
		return nil, err
	}
	tenants, err := parseIndex(idx, opts)
	if err != nil {
		return nil, err
	}
	blob := &Blob{header: h, tenants: tenants, data: body[h.IndexBytes:]}
	if err := blob.check(); err != nil {
		return nil, err
	}
	return blob, nil
}

// indexOf returns the tenant index within body (which holds at least
// h.IndexBytes), past a version 3 blob's change marker.
func indexOf(h BlobHeader, body []byte) ([]byte, error) {
	idx := body[:h.IndexBytes]
	if h.Version == BlobVersion3 {
		if len(idx) < markerBytes {
			return nil, fmt.Errorf("%w: index of %d bytes has no change marker", ErrBlobCorrupt, len(idx))
		}
		idx = idx[markerBytes:]
	}
	return idx, nil
}

// ReadBlobIndex parses the index of a version 2 or 3 blob from a prefix of it
// (the header and at least IndexBytes after it), without the body, so a
// writer can carry each unchanged tenant's generation forward. The index is
// bounds-checked but, without the body, not checksummed.
func ReadBlobIndex(prefix []byte) (BlobHeader, []TenantInfo, error) {
	h, err := ReadBlobHeader(prefix)
	if err != nil {
		return h, nil, err
	}
	if h.Version != BlobVersion2 && h.Version != BlobVersion3 {
		return h, nil, fmt.Errorf("%w: version %d has no tenant index", ErrBlobVersion, h.Version)
	}
	if h.IndexBytes > h.BodyBytes || uint64(len(prefix)-BlobHeaderSize) < h.IndexBytes {
		return h, nil, fmt.Errorf("%w: index of %d bytes not within the %d bytes read", ErrBlobCorrupt, h.IndexBytes, len(prefix)-BlobHeaderSize)
	}
	idx, err := indexOf(h, prefix[BlobHeaderSize:])
	if err != nil {
		return h, nil, err
	}
	tenants, err := parseIndex(idx, DecodeOptions{})
	return h, tenants, err
}

func parseIndex(idx []byte, opts DecodeOptions) ([]TenantInfo, error) {
	if opts.MaxSegmentBytes == 0 {
		opts.MaxSegmentBytes = DefaultMaxSegmentBytes
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: index: %s", ErrBlobCorrupt, fmt.Sprintf(format, args...))
	}
	if len(idx) < 4 {
		return nil, corrupt("%d bytes, too short", len(idx))
	}
	le := binary.LittleEndian
	n := int(le.Uint32(idx))
	if n > (len(idx)-4)/indexEntryMin {
		return nil, corrupt("%d tenants cannot fit in %d bytes", n, len(idx))
	}
	tenants := make([]TenantInfo, 0, n)
	pos := 4
	next := 0
	for i := range n {
		if len(idx)-pos < 2 {
			return nil, corrupt("entry %d truncated", i)
		}
		nameLen := int(le.Uint16(idx[pos:]))
		pos += 2
		if nameLen == 0 || len(idx)-pos < nameLen+7*8+32 {
			return nil, corrupt("entry %d truncated or unnamed", i)
		}
		t := TenantInfo{Name: string(idx[pos : pos+nameLen])}
		pos += nameLen
		if err := ValidateName("tenant", t.Name); err != nil {
			return nil, corrupt("entry %d: %v", i, err)
		}
		if i > 0 && tenants[i-1].Name >= t.Name {
			return nil, corrupt("tenants out of order at %q", t.Name)
		}
		u := func() uint64 { v := le.Uint64(idx[pos:]); pos += 8; return v }
		off, clen, plen, tables, unavailable, gen, changed := u(), u(), u(), u(), u(), u(), u()
		copy(t.Hash[:], idx[pos:pos+32])
		pos += 32
		switch {
		case off != uint64(next):
			return nil, corrupt("%s: segment at %d, want %d (segments are back to back)", t.Name, off, next)
		case clen == 0 || clen > 1<<40:
			return nil, corrupt("%s: %d compressed bytes", t.Name, clen)
		case plen > opts.MaxSegmentBytes:
			return nil, corrupt("%s: segment of %d bytes exceeds the limit of %d", t.Name, plen, opts.MaxSegmentBytes)
		case tables == 0 || tables > plen/8:
			// A table takes more than 8 bytes of the segment (its names alone).
			return nil, corrupt("%s: %d tables cannot fit in a %d-byte segment", t.Name, tables, plen)
		case unavailable > tables:
			return nil, corrupt("%s: %d of %d tables without a schema", t.Name, unavailable, tables)
		}
		t.offset, t.CompressedBytes, t.PayloadBytes = next, int(clen), int(plen)
		t.Tables, t.SchemaUnavailable = int(tables), int(unavailable)
		t.Generation, t.ChangedAt = gen, time.Unix(0, int64(changed)).UTC()
		next += int(clen)
		tenants = append(tenants, t)
	}
	if pos != len(idx) {
		return nil, corrupt("%d bytes after the last entry", len(idx)-pos)
	}
	return tenants, nil
}

// check ties the index to the header and the segment bytes.
func (b *Blob) check() error {
	total, tables, unavailable := 0, 0, 0
	for _, t := range b.tenants {
		total += t.CompressedBytes
		tables += t.Tables
		unavailable += t.SchemaUnavailable
	}
	switch {
	case total != len(b.data):
		return fmt.Errorf("%w: segments hold %d bytes, index counts %d", ErrBlobCorrupt, len(b.data), total)
	case tables != b.header.Counts.Tables || unavailable != b.header.Counts.SchemaUnavailable:
		return fmt.Errorf("%w: index counts %d tables (%d without a schema), header %d (%d)", ErrBlobCorrupt,
			tables, unavailable, b.header.Counts.Tables, b.header.Counts.SchemaUnavailable)
	case contentHash(b.tenants) != b.header.ContentHash:
		return fmt.Errorf("%w: content hash mismatch", ErrBlobCorrupt)
	}
	return nil
}

// contentHash is the hash over each tenant's name and segment hash.
func contentHash(tenants []TenantInfo) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, t := range tenants {
		binary.LittleEndian.PutUint64(n[:], uint64(len(t.Name)))
		h.Write(n[:])
		h.Write([]byte(t.Name))
		h.Write(t.Hash[:])
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Header returns the blob's header. For a version 1 input, Version is 1.
func (b *Blob) Header() BlobHeader { return b.header }

// Tenants returns the index, sorted by name. The slice is shared: do not
// modify it.
func (b *Blob) Tenants() []TenantInfo { return b.tenants }

// Tenant returns the index entry of a tenant; false when the blob has no
// tables of it.
func (b *Blob) Tenant(name string) (TenantInfo, bool) {
	i := sort.Search(len(b.tenants), func(i int) bool { return b.tenants[i].Name >= name })
	if i < len(b.tenants) && b.tenants[i].Name == name {
		return b.tenants[i], true
	}
	return TenantInfo{}, false
}

// TenantTables decompresses and decodes one tenant's segment: its tables in
// (namespace, table) order. It verifies the segment's hash, every name, the
// order and the counts; any failure wraps ErrBlobCorrupt, an unknown tenant
// ErrTenantNotInBlob. The tables share one copy of their schema bytes.
func (b *Blob) TenantTables(name string) ([]Table, error) {
	t, payload, err := b.segment(name)
	if err != nil {
		return nil, err
	}
	tables, err := decodePayload(payload, t.Tables)
	if err != nil {
		return nil, fmt.Errorf("%w: tenant %q: %v", ErrBlobCorrupt, name, err)
	}
	if err := checkRows(t, func(yield func(*Table) bool) {
		for i := range tables {
			if !yield(&tables[i]) {
				return
			}
		}
	}); err != nil {
		return nil, err
	}
	return tables, nil
}

// VisitTenant checks one tenant's segment as TenantTables does and calls fn
// for each of its tables in order, without building them: the Table's
// strings and SchemaIPC point into the decoded segment and are valid only
// during the call (copy what you keep). An error from fn stops the walk and
// is returned as is; every check failure wraps ErrBlobCorrupt.
func (b *Blob) VisitTenant(name string, fn func(*Table) error) error {
	t, payload, err := b.segment(name)
	if err != nil {
		return err
	}
	var fnErr error
	unavailable := 0
	err = walkPayload(payload, t.Tables, func(*array.Binary) {}, func(row *Table, _, _ int) error {
		if row.Ref.Tenant != name {
			return fmt.Errorf("segment holds a table of %q", row.Ref.Tenant)
		}
		if !row.HasSchema() {
			unavailable++
		}
		if fnErr = fn(row); fnErr != nil {
			return fnErr
		}
		return nil
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("%w: tenant %q: %v", ErrBlobCorrupt, name, err)
	case unavailable != t.SchemaUnavailable:
		return fmt.Errorf("%w: tenant %q: %d tables without a schema, index counts %d", ErrBlobCorrupt, name, unavailable, t.SchemaUnavailable)
	}
	return nil
}

// segment decompresses one tenant's segment and checks it against its
// index entry.
func (b *Blob) segment(name string) (TenantInfo, []byte, error) {
	t, ok := b.Tenant(name)
	if !ok {
		return t, nil, fmt.Errorf("%w: %q", ErrTenantNotInBlob, name)
	}
	// One decoder per call, bounded by this segment's size and closed when
	// done: nothing stays allocated between requests.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(uint64(t.PayloadBytes), 1)))
	if err != nil {
		return t, nil, during("make a segment decoder", "", err)
	}
	defer dec.Close()
	seg := b.data[t.offset : t.offset+t.CompressedBytes]
	// Capacity from what the compressed bytes can hold at most, not from
	// the index's claim alone.
	payload, err := dec.DecodeAll(seg, make([]byte, 0, min(t.PayloadBytes, 64*len(seg)+4096)))
	if err != nil {
		return t, nil, fmt.Errorf("%w: tenant %q: decompress: %v", ErrBlobCorrupt, name, err)
	}
	if len(payload) != t.PayloadBytes || sha256.Sum256(payload) != t.Hash {
		return t, nil, fmt.Errorf("%w: tenant %q: segment does not match its index entry", ErrBlobCorrupt, name)
	}
	return t, payload, nil
}

// checkRows checks a tenant's decoded rows against its index entry.
func checkRows(t TenantInfo, rows iter.Seq[*Table]) error {
	unavailable := 0
	for row := range rows {
		if row.Ref.Tenant != t.Name {
			return fmt.Errorf("%w: tenant %q: segment holds a table of %q", ErrBlobCorrupt, t.Name, row.Ref.Tenant)
		}
		if !row.HasSchema() {
			unavailable++
		}
	}
	if unavailable != t.SchemaUnavailable {
		return fmt.Errorf("%w: tenant %q: %d tables without a schema, index counts %d", ErrBlobCorrupt, t.Name, unavailable, t.SchemaUnavailable)
	}
	return nil
}

// EncodeOptions qualifies EncodeBlobWith.
type EncodeOptions struct {
	// Previous is the index of the blob this one replaces: a tenant whose
	// segment hash is unchanged keeps its Generation and ChangedAt.
	Previous []TenantInfo
	// Marker is the change marker the blob records.
	Marker ChangeMarker
}

// ChangeMarker is what a version 3 blob records of the catalog's change
// counter: the value read before the scan it was built from, and when the
// last full scan ran.
type ChangeMarker struct {
	Changes    uint64
	FullScanAt time.Time
}

// EncodeBlob encodes s as a version 3 blob with a zero change marker; every
// tenant's generation is s.Generation.
func EncodeBlob(s *Snapshot) ([]byte, error) { return EncodeBlobWith(s, EncodeOptions{}) }

// EncodeBlobWith encodes s as a version 3 blob, one compressed segment per
// tenant, carrying unchanged tenants' generations from opts.Previous.
func EncodeBlobWith(s *Snapshot, opts EncodeOptions) ([]byte, error) {
	b, _, err := encodeSorted(s.tables, false, s.Generation, s.CreatedAt, s.Counts, opts.Previous, opts.Marker)
	return b, err
}

func encodeMarker(m ChangeMarker) []byte {
	b := binary.LittleEndian.AppendUint64(nil, m.Changes)
	var at uint64
	if !m.FullScanAt.IsZero() {
		at = uint64(m.FullScanAt.UnixNano())
	}
	return binary.LittleEndian.AppendUint64(b, at)
}

func encodeIndex(tenants []TenantInfo) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	b.Write(le.AppendUint32(nil, uint32(len(tenants))))
	for _, t := range tenants {
		b.Write(le.AppendUint16(nil, uint16(len(t.Name))))
		b.WriteString(t.Name)
		for _, v := range []uint64{uint64(t.offset), uint64(t.CompressedBytes), uint64(t.PayloadBytes), uint64(t.Tables),
			uint64(t.SchemaUnavailable), t.Generation, uint64(t.ChangedAt.UnixNano())} {
			b.Write(le.AppendUint64(nil, v))
		}
		b.Write(t.Hash[:])
	}
	return b.Bytes()
}

// decodeBlobV2 decodes every segment of a version 2 blob into a Snapshot.
func decodeBlobV2(b []byte, opts DecodeOptions) (*Snapshot, error) {
	blob, err := OpenBlob(b, opts)
	if err != nil {
		return nil, err
	}
	var tables []Table
	for _, t := range blob.tenants {
		tt, err := blob.TenantTables(t.Name)
		if err != nil {
			return nil, err
		}
		tables = append(tables, tt...)
	}
	s := newSnapshot(tables, blob.header.Generation, blob.header.CreatedAt, blob.header.Counts.Skipped)
	if s.Counts != blob.header.Counts {
		return nil, fmt.Errorf("%w: segment counts %+v, header says %+v", ErrBlobCorrupt, s.Counts, blob.header.Counts)
	}
	return s, nil
}
