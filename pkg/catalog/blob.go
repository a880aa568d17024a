package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
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
)

// The snapshot blob is what refresh publishes and discovery loads:
//
//	offset size  field
//	0      8     magic "LAKESNAP"
//	8      2     format version (BlobVersion), little endian like every field
//	10     2     codec: 1 = zstd
//	12     8     generation
//	20     8     created at, Unix nanoseconds
//	28     8     tables
//	36     8     tables with the schema unavailable
//	44     8     registrations skipped as malformed
//	52     8     payload bytes, uncompressed
//	60     8     body bytes (the compressed payload)
//	68     32    SHA-256 of the uncompressed payload: the content hash
//	100    4     CRC-32C of bytes 0–99 and of the body
//	104    …     body
//
// The payload is an Arrow IPC stream of one row per table, sorted by
// (tenant, namespace, table), with the columns of blobSchema. The content
// hash covers only the tables, not the generation or time, so a refresh can
// tell whether anything changed.
const (
	BlobMagic      = "LAKESNAP"
	BlobVersion    = 1
	BlobHeaderSize = 104
	codecZstd      = 1
	blobBatchRows  = 16384
)

// DefaultMaxBlobPayloadBytes bounds the uncompressed payload DecodeBlob
// accepts: 4 GiB, several million tables.
const DefaultMaxBlobPayloadBytes = 4 << 30

// Blob errors. Every decode failure wraps exactly one of them.
var (
	// ErrBlobMagic: the bytes are not a lake snapshot blob.
	ErrBlobMagic = errors.New("catalog: not a snapshot blob (bad magic)")
	// ErrBlobVersion: the blob has a format version this build cannot read.
	ErrBlobVersion = errors.New("catalog: unsupported snapshot blob version")
	// ErrBlobCorrupt: truncated, a checksum mismatch, or an invalid payload.
	ErrBlobCorrupt = errors.New("catalog: corrupt snapshot blob")
)

// BlobHeader is the fixed header of a snapshot blob.
type BlobHeader struct {
	Version    uint16
	Generation uint64
	CreatedAt  time.Time
	Counts     Counts
	// PayloadBytes is version 1's uncompressed payload size (0 in version 2).
	PayloadBytes uint64
	// IndexBytes is version 2's tenant index size (0 in version 1).
	IndexBytes uint64
	// BodyBytes is the size of everything after the header.
	BodyBytes uint64
	// ContentHash is the SHA-256 of the uncompressed payload: equal hashes
	// mean the same tables, schemas and registrations.
	ContentHash [32]byte
	// Changes and FullScanAt are a version 3 blob's change marker (see
	// BlobVersion3), filled when the bytes read hold them
	// (BlobMarkerPrefix); zero otherwise.
	Changes    uint64
	FullScanAt time.Time
}

var blobSchema = arrow.NewSchema([]arrow.Field{
	{Name: "tenant", Type: arrow.BinaryTypes.String},
	{Name: "namespace", Type: arrow.BinaryTypes.String},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "location", Type: arrow.BinaryTypes.String},
	{Name: "table_type", Type: arrow.BinaryTypes.String},
	{Name: "version", Type: arrow.PrimitiveTypes.Int64},
	{Name: "created_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "updated_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "schema_ipc", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "schema_error", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// blobSchemaDescribed is blobSchema with a table's description and its
// properties (a JSON object of strings), both nullable. A segment uses it
// only when one of its tables has either, so segments of tenants without
// them keep their bytes (and their content hashes) across the upgrade;
// readers accept both.
var blobSchemaDescribed = arrow.NewSchema(append(slices.Clone(blobSchema.Fields()),
	arrow.Field{Name: "description", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "properties", Type: arrow.BinaryTypes.String, Nullable: true},
), nil)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// encodeBlobV1 encodes s in format version 1 (one payload for every
// tenant). Refresh writes version 3 (EncodeBlobWith); this stays for tests and
// fixtures of what older refreshes wrote.
func encodeBlobV1(s *Snapshot) ([]byte, error) {
	payload, err := encodePayload(s.tables)
	if err != nil {
		return nil, during("encode the blob payload", "", err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, during("encode blob", "", err)
	}
	defer enc.Close()
	out := make([]byte, BlobHeaderSize, BlobHeaderSize+len(payload)/4)
	out = enc.EncodeAll(payload, out)
	h := BlobHeader{
		Version:      BlobVersion,
		Generation:   s.Generation,
		CreatedAt:    s.CreatedAt,
		Counts:       s.Counts,
		PayloadBytes: uint64(len(payload)),
		BodyBytes:    uint64(len(out) - BlobHeaderSize),
		ContentHash:  sha256.Sum256(payload),
	}
	putHeader(out[:BlobHeaderSize], h)
	crc := crc32.Update(crc32.Checksum(out[:100], crcTable), crcTable, out[BlobHeaderSize:])
	binary.LittleEndian.PutUint32(out[100:104], crc)
	return out, nil
}

func putHeader(b []byte, h BlobHeader) {
	le := binary.LittleEndian
	copy(b[0:8], BlobMagic)
	le.PutUint16(b[8:], h.Version)
	le.PutUint16(b[10:], codecZstd)
	le.PutUint64(b[12:], h.Generation)
	le.PutUint64(b[20:], uint64(h.CreatedAt.UnixNano()))
	le.PutUint64(b[28:], uint64(h.Counts.Tables))
	le.PutUint64(b[36:], uint64(h.Counts.SchemaUnavailable))
	le.PutUint64(b[44:], uint64(h.Counts.Skipped))
	if h.Version == BlobVersion2 || h.Version == BlobVersion3 {
		le.PutUint64(b[52:], h.IndexBytes)
	} else {
		le.PutUint64(b[52:], h.PayloadBytes)
	}
	le.PutUint64(b[60:], h.BodyBytes)
	copy(b[68:100], h.ContentHash[:])
}

// ReadBlobHeader parses and checks a blob's header (magic, version, codec)
// from its first BlobHeaderSize bytes, without reading or verifying the body:
// b may be just that prefix.
func ReadBlobHeader(b []byte) (BlobHeader, error) {
	if len(b) < 8 || string(b[:8]) != BlobMagic {
		if len(b) > 0 && len(b) < 8 && string(b) == BlobMagic[:len(b)] {
			return BlobHeader{}, fmt.Errorf("%w: truncated to %d bytes", ErrBlobCorrupt, len(b))
		}
		return BlobHeader{}, ErrBlobMagic
	}
	if len(b) < BlobHeaderSize {
		return BlobHeader{}, fmt.Errorf("%w: truncated to %d bytes, header is %d", ErrBlobCorrupt, len(b), BlobHeaderSize)
	}
	le := binary.LittleEndian
	h := BlobHeader{
		Version:    le.Uint16(b[8:]),
		Generation: le.Uint64(b[12:]),
		CreatedAt:  time.Unix(0, int64(le.Uint64(b[20:]))).UTC(),
		Counts: Counts{
			Tables:            int(le.Uint64(b[28:]) & (1<<62 - 1)),
			SchemaUnavailable: int(le.Uint64(b[36:]) & (1<<62 - 1)),
			Skipped:           int(le.Uint64(b[44:]) & (1<<62 - 1)),
		},
		PayloadBytes: le.Uint64(b[52:]),
		BodyBytes:    le.Uint64(b[60:]),
	}
	copy(h.ContentHash[:], b[68:100])
	switch h.Version {
	case BlobVersion:
	case BlobVersion2:
		h.IndexBytes, h.PayloadBytes = h.PayloadBytes, 0
	case BlobVersion3:
		h.IndexBytes, h.PayloadBytes = h.PayloadBytes, 0
		if len(b) >= BlobMarkerPrefix && h.IndexBytes >= markerBytes {
			h.Changes = le.Uint64(b[BlobHeaderSize:])
			if at := int64(le.Uint64(b[BlobHeaderSize+8:])); at != 0 {
				h.FullScanAt = time.Unix(0, at).UTC()
			}
		}
	default:
		return BlobHeader{}, fmt.Errorf("%w: version %d, this build reads 1 to %d", ErrBlobVersion, h.Version, BlobVersion3)
	}
	if codec := le.Uint16(b[10:]); codec != codecZstd {
		return BlobHeader{}, fmt.Errorf("%w: unknown codec %d", ErrBlobCorrupt, codec)
	}
	return h, nil
}

// DecodeOptions bound DecodeBlob.
type DecodeOptions struct {
	// MaxPayloadBytes bounds the uncompressed payload. Default
	// DefaultMaxBlobPayloadBytes.
	MaxPayloadBytes uint64
	// MaxSegmentBytes bounds one tenant's uncompressed segment (version 2).
	// Default DefaultMaxSegmentBytes.
	MaxSegmentBytes uint64
}

// DecodeBlob checks and decodes a snapshot blob: header, CRC-32C, the
// decompressed size, the content hash, the payload's Arrow schema, every
// name, the row order and the counts. Any failure wraps ErrBlobMagic,
// ErrBlobVersion or ErrBlobCorrupt; no input panics.
func DecodeBlob(b []byte, opts DecodeOptions) (*Snapshot, error) {
	if opts.MaxPayloadBytes == 0 {
		opts.MaxPayloadBytes = DefaultMaxBlobPayloadBytes
	}
	h, err := ReadBlobHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Version == BlobVersion2 || h.Version == BlobVersion3 {
		return decodeBlobV2(b, opts)
	}
	if h.BodyBytes != uint64(len(b)-BlobHeaderSize) {
		return nil, fmt.Errorf("%w: header says %d body bytes, blob has %d", ErrBlobCorrupt, h.BodyBytes, len(b)-BlobHeaderSize)
	}
	crc := crc32.Update(crc32.Checksum(b[:100], crcTable), crcTable, b[BlobHeaderSize:])
	if crc != binary.LittleEndian.Uint32(b[100:104]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBlobCorrupt)
	}
	if h.PayloadBytes > opts.MaxPayloadBytes {
		return nil, fmt.Errorf("%w: payload of %d bytes exceeds the limit of %d", ErrBlobCorrupt, h.PayloadBytes, opts.MaxPayloadBytes)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(h.PayloadBytes, 1)))
	if err != nil {
		return nil, during("decode blob", "", err)
	}
	defer dec.Close()
	// Capacity from what the compressed bytes can hold at most, not from the
	// header's claim alone: a forged size must not allocate.
	payload, err := dec.DecodeAll(b[BlobHeaderSize:], make([]byte, 0, min(h.PayloadBytes, 64*uint64(len(b))+4096)))
	if err != nil {
		return nil, fmt.Errorf("%w: decompress: %v", ErrBlobCorrupt, err)
	}
	if uint64(len(payload)) != h.PayloadBytes {
		return nil, fmt.Errorf("%w: payload is %d bytes, header says %d", ErrBlobCorrupt, len(payload), h.PayloadBytes)
	}
	if sha256.Sum256(payload) != h.ContentHash {
		return nil, fmt.Errorf("%w: content hash mismatch", ErrBlobCorrupt)
	}
	tables, err := decodePayload(payload, h.Counts.Tables)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBlobCorrupt, err)
	}
	s := newSnapshot(tables, h.Generation, h.CreatedAt, h.Counts.Skipped)
	if s.Counts != h.Counts {
		return nil, fmt.Errorf("%w: payload counts %+v, header says %+v", ErrBlobCorrupt, s.Counts, h.Counts)
	}
	return s, nil
}

func encodePayload(tables []Table) ([]byte, error) {
	var buf bytes.Buffer
	sc := blobSchema
	for i := range tables {
		if tables[i].Description != "" || len(tables[i].Properties) > 0 {
			sc = blobSchemaDescribed
			break
		}
	}
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc), ipc.WithAllocator(memory.DefaultAllocator))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	tenant := b.Field(0).(*array.StringBuilder)
	namespace := b.Field(1).(*array.StringBuilder)
	name := b.Field(2).(*array.StringBuilder)
	location := b.Field(3).(*array.StringBuilder)
	tableType := b.Field(4).(*array.StringBuilder)
	version := b.Field(5).(*array.Int64Builder)
	created := b.Field(6).(*array.TimestampBuilder)
	updated := b.Field(7).(*array.TimestampBuilder)
	schema := b.Field(8).(*array.BinaryBuilder)
	schemaErr := b.Field(9).(*array.StringBuilder)
	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return w.Write(rec)
	}
	for i := range tables {
		t := &tables[i]
		tenant.Append(t.Ref.Tenant)
		namespace.Append(t.Ref.Namespace)
		name.Append(t.Ref.Name)
		location.Append(t.Location)
		tableType.Append(t.TableType)
		version.Append(t.Version)
		created.Append(arrow.Timestamp(t.CreatedAt.UnixMicro()))
		updated.Append(arrow.Timestamp(t.UpdatedAt.UnixMicro()))
		if t.SchemaIPC != nil {
			schema.Append(t.SchemaIPC)
			schemaErr.AppendNull()
		} else {
			schema.AppendNull()
			schemaErr.Append(t.SchemaError)
		}
		if sc == blobSchemaDescribed {
			desc, props := b.Field(10).(*array.StringBuilder), b.Field(11).(*array.StringBuilder)
			if t.Description == "" {
				desc.AppendNull()
			} else {
				desc.Append(t.Description)
			}
			if len(t.Properties) == 0 {
				props.AppendNull()
			} else {
				j, err := json.Marshal(t.Properties) // sorted keys: the same bytes for the same map
				if err != nil {
					return nil, err
				}
				props.Append(string(j))
			}
		}
		if (i+1)%blobBatchRows == 0 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if len(tables)%blobBatchRows != 0 || len(tables) == 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodePayload reads the rows back, copying what it keeps out of the IPC
// reader's buffers and checking names, order and row count.
func decodePayload(payload []byte, wantRows int) ([]Table, error) {
	tables := make([]Table, 0, min(max(wantRows, 0), len(payload)/8))
	intern := make(map[string]string)
	in := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		v := strings.Clone(s)
		intern[v] = v
		return v
	}
	var schemaData []byte // one copy of a batch's schema bytes, shared by its tables
	err := walkPayload(payload, wantRows, func(batch *array.Binary) {
		schemaData = bytes.Clone(batch.ValueBytes())
	}, func(row *Table, schemaLo, schemaHi int) error {
		t := Table{
			Ref:       TableRef{Tenant: in(row.Ref.Tenant), Namespace: in(row.Ref.Namespace), Name: strings.Clone(row.Ref.Name)},
			Location:  strings.Clone(row.Location),
			TableType: in(row.TableType),
			Version:   row.Version,
			CreatedAt: row.CreatedAt,
			UpdatedAt: row.UpdatedAt,
			// Properties is a map walkPayload made for this row alone.
			Description: strings.Clone(row.Description),
			Properties:  row.Properties,
		}
		if row.SchemaIPC != nil {
			t.SchemaIPC = schemaData[schemaLo:schemaHi:schemaHi]
		} else {
			t.SchemaError = in(row.SchemaError)
		}
		tables = append(tables, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tables, nil
}

// walkPayload checks a payload row by row (names, order, the schema or its
// error, the row count) and calls row for each with a Table whose strings
// and SchemaIPC point into the IPC reader's buffers: valid only during the
// call. batch is called before each record batch's rows with its schema
// column; schemaLo and schemaHi locate a row's schema bytes in that
// column's value bytes.
func walkPayload(payload []byte, wantRows int, batch func(*array.Binary), row func(t *Table, schemaLo, schemaHi int) error) (err error) {
	defer func() {
		// The IPC reader trusts offsets in well-formed-looking messages; a
		// payload that passed the checksums but is still wrong must not crash.
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed payload: %v", r)
		}
	}()
	// A row takes more than 8 payload bytes: a forged count must not
	// allocate beyond what the payload can hold.
	if wantRows < 0 || wantRows > len(payload)/8 {
		return fmt.Errorf("%d tables cannot fit in a %d-byte payload", wantRows, len(payload))
	}
	// The stream's schema message is checked as a table schema is before
	// the IPC reader sees it: the reader recurses into field children with
	// no depth limit, and a stack overflow is a fatal error no recover()
	// catches.
	if err := verifySchemaMessage(payload); err != nil {
		return fmt.Errorf("payload schema message: %v", err)
	}
	rdr, err := ipc.NewReader(bytes.NewReader(payload), ipc.WithAllocator(memory.DefaultAllocator),
		ipc.WithMetadataSizeLimit(int64(len(payload))), ipc.WithBodySizeLimit(int64(len(payload))))
	if err != nil {
		return fmt.Errorf("payload: %v", err)
	}
	defer rdr.Release()
	described := rdr.Schema().Equal(blobSchemaDescribed)
	if !described && !rdr.Schema().Equal(blobSchema) {
		return fmt.Errorf("payload schema %s is not the blob schema", rdr.Schema())
	}
	rows := 0
	var prev TableRef // a copy: the previous batch's buffers go on Next
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if err := validateRecord(rec); err != nil {
			return err
		}
		if rows+int(rec.NumRows()) > wantRows {
			return fmt.Errorf("payload holds more than the %d tables the header counts", wantRows)
		}
		cols := rec.Columns()
		tenant := cols[0].(*array.String)
		namespace := cols[1].(*array.String)
		name := cols[2].(*array.String)
		location := cols[3].(*array.String)
		tableType := cols[4].(*array.String)
		version := cols[5].(*array.Int64)
		created := cols[6].(*array.Timestamp)
		updated := cols[7].(*array.Timestamp)
		schema := cols[8].(*array.Binary)
		schemaErr := cols[9].(*array.String)
		var desc, props *array.String
		if described {
			desc, props = cols[10].(*array.String), cols[11].(*array.String)
		}
		batch(schema)
		offsets := schema.ValueOffsets()
		var t Table
		for i := 0; i < int(rec.NumRows()); i++ {
			t = Table{
				Ref:       TableRef{Tenant: tenant.Value(i), Namespace: namespace.Value(i), Name: name.Value(i)},
				Location:  location.Value(i),
				TableType: tableType.Value(i),
				Version:   version.Value(i),
				CreatedAt: time.UnixMicro(int64(created.Value(i))).UTC(),
				UpdatedAt: time.UnixMicro(int64(updated.Value(i))).UTC(),
			}
			if err := t.Ref.Validate(); err != nil {
				return err
			}
			if desc != nil && desc.IsValid(i) {
				t.Description = desc.Value(i)
			}
			if props != nil && props.IsValid(i) {
				if err := json.Unmarshal([]byte(props.Value(i)), &t.Properties); err != nil || len(t.Properties) == 0 {
					return fmt.Errorf("table %s: properties are not a JSON object of strings", t.Ref)
				}
			}
			if rows > 0 && prev.Compare(t.Ref) >= 0 {
				return fmt.Errorf("rows out of order at %s", t.Ref)
			}
			lo, hi := 0, 0
			switch {
			case schema.IsValid(i) && schemaErr.IsNull(i):
				lo, hi = int(offsets[i]-offsets[0]), int(offsets[i+1]-offsets[0])
				t.SchemaIPC = schema.Value(i)
				if t.SchemaIPC == nil {
					t.SchemaIPC = []byte{}
				}
			case schema.IsNull(i) && schemaErr.IsValid(i):
				t.SchemaError = schemaErr.Value(i)
			default:
				return fmt.Errorf("table %s has both or neither of a schema and a schema error", t.Ref)
			}
			if err := row(&t, lo, hi); err != nil {
				return err
			}
			rows++
			prev = t.Ref
		}
		if rows > 0 {
			prev = TableRef{Tenant: strings.Clone(prev.Tenant), Namespace: strings.Clone(prev.Namespace), Name: strings.Clone(prev.Name)}
		}
	}
	if err := rdr.Err(); err != nil {
		return fmt.Errorf("payload: %v", err)
	}
	if rows != wantRows {
		return fmt.Errorf("payload holds %d tables, header counts %d", rows, wantRows)
	}
	return nil
}

// validateRecord checks a record's arrays are internally consistent before
// their values are read.
func validateRecord(rec arrow.RecordBatch) error {
	for i, col := range rec.Columns() {
		if err := array.ValidateFull(col); err != nil {
			return fmt.Errorf("column %s: %v", rec.Schema().Field(i).Name, err)
		}
	}
	return nil
}
