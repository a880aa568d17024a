package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// Version 3, what the previous release's refresh wrote, is read for one
// release. Its layout:
//
//	0      104   the header as in version 4, except: 68 content hash is
//	             the SHA-256 over each tenant's name and the SHA-256 of its
//	             uncompressed segment; 100 CRC-32C covers bytes 0–99 and the
//	             whole body, segments included
//	104    16    the change marker, as in version 4
//	120    …     index: u32 tenants, then per tenant, sorted by name: u16
//	             name length, name, u64 segment offset (from the first
//	             segment), u64 compressed bytes, u64 uncompressed bytes, u64
//	             tables, u64 tables with the schema unavailable, u64
//	             generation, i64 changed at (Unix ns), 32 bytes SHA-256 of
//	             the uncompressed segment
//	…      …     the segments, back to back: each one zstd frame of an
//	             Arrow IPC stream of the tenant's rows (v3Schema or
//	             v3SchemaDescribed; a tenant column, schema bytes per row),
//	             sorted by (namespace, table)
//
// A version 3 tenant is laid out as a version 4 segment when it is read
// (Reader.Tenant), so everything past this file sees one shape.

var v3Schema = arrow.NewSchema([]arrow.Field{
	{Name: "tenant", Type: arrow.BinaryTypes.String},
	{Name: "namespace", Type: arrow.BinaryTypes.String},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "location", Type: arrow.BinaryTypes.String},
	{Name: "table_type", Type: arrow.BinaryTypes.String},
	{Name: "version", Type: arrow.PrimitiveTypes.Int64},
	{Name: "created_at", Type: timestampUTC},
	{Name: "updated_at", Type: timestampUTC},
	{Name: "schema_ipc", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "schema_error", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// v3SchemaDescribed is v3Schema with a description and properties (a JSON
// object of strings), both nullable, used by a segment with either.
var v3SchemaDescribed = arrow.NewSchema(append(slices.Clone(v3Schema.Fields()),
	arrow.Field{Name: "description", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "properties", Type: arrow.BinaryTypes.String, Nullable: true},
), nil)

// v3EntryMin is the fewest bytes a version 3 index entry takes.
const v3EntryMin = 2 + 1 + 7*8 + 32

// v3Blob is a verified version 3 blob.
type v3Blob struct {
	offsets []int  // per entry, into data
	data    []byte // the segments
}

// openV3 verifies a version 3 blob (b holds exactly its header and body):
// the CRC over everything, the index, the content hash, the counts.
func openV3(b []byte, h Header, opts ReaderOptions) (*Reader, error) {
	if crc := crc32.Update(crc32.Checksum(b[:100], crcTable), crcTable, b[HeaderSize:]); crc != binary.LittleEndian.Uint32(b[100:104]) {
		return nil, corrupt("checksum mismatch")
	}
	if h.ManifestBytes < markerBytes+4 {
		return nil, corrupt("index of %d bytes", h.ManifestBytes)
	}
	idx := b[MarkerPrefix : HeaderSize+int(h.ManifestBytes)]
	data := b[HeaderSize+int(h.ManifestBytes):]
	le := binary.LittleEndian
	n := int(le.Uint32(idx))
	if n > (len(idx)-4)/v3EntryMin {
		return nil, corrupt("index: %d tenants cannot fit in %d bytes", n, len(idx))
	}
	r := &Reader{header: h, mem: opts.Allocator, v3: &v3Blob{data: data}}
	pos, next, tables, unavailable := 4, 0, 0, 0
	for i := range n {
		if len(idx)-pos < 2 {
			return nil, corrupt("index: entry %d truncated", i)
		}
		nameLen := int(le.Uint16(idx[pos:]))
		pos += 2
		if nameLen == 0 || len(idx)-pos < nameLen+7*8+32 {
			return nil, corrupt("index: entry %d truncated or unnamed", i)
		}
		e := Entry{Tenant: string(idx[pos : pos+nameLen])}
		pos += nameLen
		if err := catalog.ValidateName("tenant", e.Tenant); err != nil {
			return nil, corrupt("index: entry %d: %v", i, err)
		}
		if i > 0 && r.entries[i-1].Tenant >= e.Tenant {
			return nil, corrupt("index: tenants out of order at %q", e.Tenant)
		}
		u := func() uint64 { v := le.Uint64(idx[pos:]); pos += 8; return v }
		off, clen, plen, nt, nu, gen, changed := u(), u(), u(), u(), u(), u(), u()
		copy(e.Address[:], idx[pos:pos+32])
		pos += 32
		switch {
		case off != uint64(next):
			return nil, corrupt("index: %s: segment at %d, want %d (segments are back to back)", e.Tenant, off, next)
		case clen == 0 || clen > uint64(len(data)-next):
			return nil, corrupt("index: %s: %d compressed bytes", e.Tenant, clen)
		case plen > uint64(opts.maxSegment()):
			return nil, corrupt("index: %s: segment of %d bytes exceeds the limit of %d", e.Tenant, plen, opts.maxSegment())
		case nt == 0 || nt > plen/8:
			return nil, corrupt("index: %s: %d tables cannot fit in a %d-byte segment", e.Tenant, nt, plen)
		case nu > nt:
			return nil, corrupt("index: %s: %d of %d tables without a schema", e.Tenant, nu, nt)
		}
		e.StoredBytes, e.PayloadBytes = int(clen), int(plen)
		e.Tables, e.SchemaUnavailable = int(nt), int(nu)
		e.Generation, e.ChangedAt = gen, time.Unix(0, int64(changed)).UTC()
		r.v3.offsets = append(r.v3.offsets, next)
		next += int(clen)
		tables += e.Tables
		unavailable += e.SchemaUnavailable
		r.entries = append(r.entries, e)
	}
	switch {
	case pos != len(idx):
		return nil, corrupt("index: %d bytes after the last entry", len(idx)-pos)
	case next != len(data):
		return nil, corrupt("segments hold %d bytes, index counts %d", len(data), next)
	case tables != h.Counts.Tables || unavailable != h.Counts.SchemaUnavailable:
		return nil, corrupt("index counts %d tables (%d without a schema), header %d (%d)", tables, unavailable, h.Counts.Tables, h.Counts.SchemaUnavailable)
	case contentHash(r.entries) != h.ContentHash:
		return nil, corrupt("content hash mismatch")
	}
	r.segs = make([][]byte, len(r.entries))
	return r, nil
}

// v3Tenant decodes and checks entry i's version 3 segment and lays it out
// as a version 4 one.
func (r *Reader) v3Tenant(i int) (*Segment, error) {
	e := r.entries[i]
	seg := r.v3.data[r.v3.offsets[i] : r.v3.offsets[i]+e.StoredBytes]
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(uint64(e.PayloadBytes), 1)))
	if err != nil {
		return nil, fmt.Errorf("snapshot: make a segment decoder: %w", err)
	}
	defer dec.Close()
	payload, err := dec.DecodeAll(seg, make([]byte, 0, min(e.PayloadBytes, 64*len(seg)+4096)))
	if err != nil {
		return nil, corrupt("tenant %q: decompress: %v", e.Tenant, err)
	}
	if len(payload) != e.PayloadBytes || sha256.Sum256(payload) != e.Address {
		return nil, corrupt("tenant %q: segment does not match its index entry", e.Tenant)
	}
	tables, err := readV3Rows(e, payload)
	if err != nil {
		return nil, corrupt("tenant %q: %v", e.Tenant, err)
	}
	v4, _, err := encodePayload(r.mem, tables, nil)
	if err != nil {
		return nil, fmt.Errorf("snapshot: tenant %q: lay out a version 3 segment: %w", e.Tenant, err)
	}
	e.PayloadBytes = len(v4)
	out, err := readPayload(e, v4, r.mem)
	if err != nil {
		return nil, corrupt("tenant %q: %v", e.Tenant, err)
	}
	return out, nil
}

// readV3Rows reads a version 3 segment's rows, checking the stream's schema
// message first, the tenant column and each row's schema-or-error.
func readV3Rows(e Entry, payload []byte) (tables []Table, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed segment: %v", r)
		}
	}()
	if err := catalog.VerifySchemaMessage(payload); err != nil {
		return nil, fmt.Errorf("schema message: %v", err)
	}
	rdr, err := ipc.NewReader(bytes.NewReader(payload), ipc.WithAllocator(memory.DefaultAllocator),
		ipc.WithMetadataSizeLimit(int64(len(payload))), ipc.WithBodySizeLimit(int64(len(payload))))
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	described := rdr.Schema().Equal(v3SchemaDescribed)
	if !described && !rdr.Schema().Equal(v3Schema) {
		return nil, fmt.Errorf("schema %s is not a version 3 segment's", rdr.Schema())
	}
	tables = make([]Table, 0, e.Tables)
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i, col := range rec.Columns() {
			if err := array.ValidateFull(col); err != nil {
				return nil, fmt.Errorf("column %s: %v", rec.Schema().Field(i).Name, err)
			}
		}
		if len(tables)+int(rec.NumRows()) > e.Tables {
			return nil, fmt.Errorf("more than the %d tables the index counts", e.Tables)
		}
		c := rec.Columns()
		tenant, ns, name, loc, typ := c[0].(*array.String), c[1].(*array.String), c[2].(*array.String), c[3].(*array.String), c[4].(*array.String)
		ver, created, updated := c[5].(*array.Int64), c[6].(*array.Timestamp), c[7].(*array.Timestamp)
		schema, schemaErr := c[8].(*array.Binary), c[9].(*array.String)
		for i := range int(rec.NumRows()) {
			if tenant.Value(i) != e.Tenant {
				return nil, fmt.Errorf("segment holds a table of %q", tenant.Value(i))
			}
			t := Table{Namespace: strings.Clone(ns.Value(i)), Name: strings.Clone(name.Value(i)), TableType: strings.Clone(typ.Value(i)),
				Location: strings.Clone(loc.Value(i)), Version: ver.Value(i),
				CreatedAt: created.Value(i).ToTime(arrow.Microsecond).UTC(), UpdatedAt: updated.Value(i).ToTime(arrow.Microsecond).UTC()}
			switch {
			case schema.IsValid(i) && schemaErr.IsNull(i):
				t.SchemaIPC = append([]byte{}, schema.Value(i)...)
			case schema.IsNull(i) && schemaErr.IsValid(i):
			default:
				return nil, fmt.Errorf("table %s.%s has both or neither of a schema and a schema error", t.Namespace, t.Name)
			}
			if described {
				desc, props := c[10].(*array.String), c[11].(*array.String)
				if desc.IsValid(i) {
					t.Description = strings.Clone(desc.Value(i))
				}
				if props.IsValid(i) {
					if err := json.Unmarshal([]byte(props.Value(i)), &t.Properties); err != nil || len(t.Properties) == 0 {
						return nil, fmt.Errorf("table %s.%s: properties are not a JSON object of strings", t.Namespace, t.Name)
					}
				}
			}
			tables = append(tables, t)
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, err
	}
	if len(tables) != e.Tables {
		return nil, fmt.Errorf("%d tables, index counts %d", len(tables), e.Tables)
	}
	return tables, nil
}
