package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// BuildOptions qualifies BuildBlob.
type BuildOptions struct {
	// Generation and CreatedAt go into the blob's header; a changed tenant
	// gets them as its own generation and change time.
	Generation uint64
	CreatedAt  time.Time
	// Previous is the index of the blob this one replaces: a tenant whose
	// segment hash is unchanged keeps its Generation and ChangedAt.
	Previous []TenantInfo
	// Marker is the change marker the blob records.
	Marker ChangeMarker
}

// Build is what one BuildBlob read and wrote.
type Build struct {
	// Blob is the encoded version 3 blob and Header its header.
	Blob   []byte
	Header BlobHeader
	Counts Counts
	// Stats is what the metastore reported of its scan.
	Stats metastore.ScanStats
	// SkippedKeys holds some of the malformed registrations' keys (up to
	// 16, sorted), for the log.
	SkippedKeys []string
	// DistinctSchemas is how many distinct schema byte strings the tables
	// hold (each is checked once and kept once).
	DistinctSchemas int
}

// BuildBlob scans the registrations once and encodes them as a version 3
// blob, holding only what the blob needs while it does: each entry is
// decoded into its table row as the scan hands it over (metastore.Visit)
// and then dropped, identical schema bytes are checked and kept once, and
// each tenant's rows are released once its segment is compressed. A
// malformed key or value is skipped and counted, as in a Snapshot; a table
// whose schema bytes are missing or do not decode is kept, marked
// schema-unavailable. The blob is byte for byte what EncodeBlobWith makes
// of the same tables.
func BuildBlob(ctx context.Context, store metastore.Store, opts BuildOptions) (Build, error) {
	var (
		out     Build
		rows    []Table
		strs    = map[string]string{}
		schemas = map[string]schemaCheck{}
	)
	intern := func(s string) string {
		if v, ok := strs[s]; ok {
			return v
		}
		strs[s] = s
		return s
	}
	skip := func(key string) {
		out.Counts.Skipped++
		if len(out.SkippedKeys) < maxSkippedKeys {
			out.SkippedKeys = append(out.SkippedKeys, KeyPrefix+key)
		}
	}
	stats, err := metastore.Visit(ctx, store, KeyPrefix, func(e metastore.Entry) error {
		ref, err := ParseKey(e.Key)
		if err != nil {
			skip(e.Key)
			return nil
		}
		reg, err := DecodeRegistration(e.Value)
		if err != nil {
			skip(e.Key)
			return nil
		}
		t := tableOf(TableRef{Tenant: intern(ref.Tenant), Namespace: intern(ref.Namespace), Name: ref.Name}, reg, schemas)
		t.TableType = intern(t.TableType)
		rows = append(rows, t)
		return nil
	})
	out.Stats = stats
	if err != nil {
		return out, during("scan registrations", "", err)
	}
	slices.Sort(out.SkippedKeys)
	out.DistinctSchemas = len(schemas)
	strs, schemas = nil, nil
	slices.SortFunc(rows, func(a, b Table) int { return a.Ref.Compare(b.Ref) })
	out.Counts.Tables = len(rows)
	for i := range rows {
		if !rows[i].HasSchema() {
			out.Counts.SchemaUnavailable++
		}
	}
	out.Blob, out.Header, err = encodeSorted(rows, true, opts.Generation, opts.CreatedAt, out.Counts, opts.Previous, opts.Marker)
	if err != nil {
		return out, err
	}
	return out, nil
}

// schemaCheck is what checking one distinct schema byte string found.
type schemaCheck struct {
	ipc    []byte // nil when the bytes do not decode
	reason string
}

// encodeSorted encodes tables, sorted by reference, as a version 3 blob.
// With release, each tenant's rows are zeroed once its segment is written,
// so their schema bytes can be collected while the rest is encoded.
func encodeSorted(tables []Table, release bool, generation uint64, createdAt time.Time, counts Counts, previous []TenantInfo, marker ChangeMarker) ([]byte, BlobHeader, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, BlobHeader{}, during("encode blob", "", err)
	}
	defer enc.Close()
	prev := make(map[string]TenantInfo, len(previous))
	for _, t := range previous {
		prev[t.Name] = t
	}
	// The tenants' runs of rows, and the index size they take, first: the
	// segments are then compressed straight into the blob behind the
	// header and the room for the index, with no copy at the end.
	var spans [][2]int
	indexBytes := markerBytes + 4
	for i := 0; i < len(tables); {
		j := i + 1
		for j < len(tables) && tables[j].Ref.Tenant == tables[i].Ref.Tenant {
			j++
		}
		spans = append(spans, [2]int{i, j})
		indexBytes += indexEntryMin - 1 + len(tables[i].Ref.Tenant)
		i = j
	}
	start := BlobHeaderSize + indexBytes
	out := make([]byte, start, start+len(tables)*64)
	tenants := make([]TenantInfo, 0, len(spans))
	for _, span := range spans {
		group := tables[span[0]:span[1]]
		name := group[0].Ref.Tenant
		payload, err := encodePayload(group)
		if err != nil {
			return nil, BlobHeader{}, during("encode the blob segment of", name, err)
		}
		t := TenantInfo{Name: name, Tables: len(group), Hash: sha256.Sum256(payload), PayloadBytes: len(payload),
			Generation: generation, ChangedAt: createdAt.UTC(), offset: len(out) - start}
		for i := range group {
			if !group[i].HasSchema() {
				t.SchemaUnavailable++
			}
		}
		if p, ok := prev[name]; ok && p.Hash == t.Hash {
			t.Generation, t.ChangedAt = p.Generation, p.ChangedAt
		}
		out = enc.EncodeAll(payload, out)
		t.CompressedBytes = len(out) - start - t.offset
		tenants = append(tenants, t)
		if release {
			clear(group)
		}
	}
	idx := append(encodeMarker(marker), encodeIndex(tenants)...)
	if len(idx) != indexBytes {
		return nil, BlobHeader{}, &Error{Op: "encode blob", Kind: fmt.Errorf("index of %d bytes, %d reserved", len(idx), indexBytes)}
	}
	copy(out[BlobHeaderSize:], idx)
	return sealV3(out, len(idx), generation, createdAt, counts, tenants)
}

// sealV3 writes the header and checksum of a version 3 blob whose index
// (indexBytes long) and segments already follow the header room in out,
// and returns out and the header as a reader sees it.
func sealV3(out []byte, indexBytes int, generation uint64, createdAt time.Time, counts Counts, tenants []TenantInfo) ([]byte, BlobHeader, error) {
	h := BlobHeader{
		Version:     BlobVersion3,
		Generation:  generation,
		CreatedAt:   createdAt,
		Counts:      counts,
		IndexBytes:  uint64(indexBytes),
		BodyBytes:   uint64(len(out) - BlobHeaderSize),
		ContentHash: contentHash(tenants),
	}
	putHeader(out[:BlobHeaderSize], h)
	crc := crc32.Update(crc32.Checksum(out[:100], crcTable), crcTable, out[BlobHeaderSize:])
	binary.LittleEndian.PutUint32(out[100:104], crc)
	h, err := ReadBlobHeader(out)
	return out, h, err
}
