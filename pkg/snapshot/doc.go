// Package snapshot is the snapshot blob format: what refresh publishes and
// discovery serves from, and nothing else. It has one writer and one
// reader, documented beside the format they share; it does no store I/O
// (a segment stored apart reaches the reader through a Fetch its caller
// gives), and the scan of the catalog that makes a blob's rows belongs to
// refresh (internal/refresh/scan).
//
// # The writer
//
// Writer writes every blob, one tenant at a time in ascending name order:
// AddTenantWithSettings encodes a tenant's rows (Table, Tombstone) and its
// settings (the bytes of its catalog settings item, opaque here) into its
// segment (AddTenant: without settings), CopyTenant carries a tenant of an
// opened blob over (its segment byte for byte, or by reference when the reader does not hold it), AddEntry
// references a segment stored apart by its index entry, and Finish writes
// the manifest (Written: the manifest and the segments written; Blob is
// the one-file form). The writer's first error sticks, as pebble's
// sstable.Writer's does: every later call returns it and Finish reports it
// and writes nothing, so a caller that ignores a refused tenant cannot
// finish a blob without it.
//
// # The reader
//
// Open is the one way in: it takes a blob in either form, told apart by
// its length in one place (Header.FormOf), and verifies its manifest (and,
// in the one-file form, every segment against its address). Its Reader
// reads one tenant at a time, when asked: Reader.Tenant decodes and checks
// the tenant's segment, the one it holds or, from a manifest alone, the
// one ReaderOptions.Fetch returns (checked against its address, not kept).
// A caller that fetches segments on its own terms gives them with
// Reader.Attach (discovery, before it serves, so serving does no I/O).
//
// # Format version 10
//
// A blob is a manifest and one segment per tenant. The manifest is
// self-contained and checksummed without the segments; each segment is
// named in the manifest by its content address (the SHA-256 of its stored,
// compressed bytes) and its size, so a segment is stored, fetched and
// verified on its own. Refresh publishes the manifest alone as the blob
// and each segment as an immutable object beside it (internal/blobstore),
// so a change rewrites its tenants' segments and the manifest, and a
// reader fetches the manifest and the segments it lacks. The same bytes
// back to back, manifest then segments, are the one-file form
// (Written.Blob): tests and tools pass it around whole.
//
//	offset size  field (little endian)
//	0      8     magic "LAKESNAP"
//	8      2     format version: 10
//	10     2     codec: 1 = zstd
//	12     8     generation
//	20     8     created at, Unix nanoseconds
//	28     8     tables
//	36     8     tables with the schema unavailable
//	44     8     registrations skipped as malformed by the last full scan
//	52     8     manifest bytes after the header (change marker and index)
//	60     8     body bytes: the manifest after the header plus every segment
//	68     32    content hash: SHA-256 over each tenant's name and address
//	100    4     CRC-32C of bytes 0–99 and of the manifest after the header
//	104    8     change marker: the catalog change counter (Marker.Changes)
//	112    8     change marker: the last full scan, Unix ns (Marker.FullScanAt)
//	120    4     the index's size uncompressed (at most MaxIndexBytes)
//	124    …     the index, one zstd frame: u32 tenants, then per tenant,
//	               sorted by name: u16 name length, name, u64 stored bytes,
//	               u64 payload bytes (uncompressed), u64 tables, u64 tables
//	               with the schema unavailable, u64 tombstones, u64
//	               generation of its last change, i64 that blob's creation
//	               time (Unix ns), 32 bytes address: SHA-256 of the stored
//	               bytes
//	…      …     in the one-file form, the segments, back to back in index
//	             order
//
// A stored object is the one-file form when it is HeaderSize+BodyBytes
// long and the manifest alone when it is HeaderSize+ManifestBytes long
// (Header.FormOf; a blob of no segments is both). The one-file form cut at
// the manifest's end is therefore the manifest alone, which opens and
// serves no tenant without its segments.
// Bytes 0–119 are laid out as in version 4, so a refresh reads the change
// marker from the first MarkerPrefix bytes of any version. The index is
// compressed because it is what every change republishes: about 100 bytes
// a tenant uncompressed, of which the address is the only part that does
// not compress.
//
// Version 9 is version 10 without the earlier versions in its segments'
// tables (below). Version 8 is version 9 without the Iceberg state in its
// segments' tables. Version 7 is version 8 without the creation ids and
// field ids in its segments' tables. Version 6 is version 7 without the settings in
// its segments.
// Version 5 is version 6 without the published columns in its segments.
// Version 4 is version 5 with the index stored uncompressed from offset
// 120 (no size field) and published in the one-file form only. The reader
// reads a segment of any of these forms whatever the manifest's version,
// so a writer carries an older segment over as it is; its rows read with
// no earlier versions (before version 10), no Iceberg state (before
// version 9), an empty creation id and no field
// ids (before version 8), as published
// at the tenant's generation (its index entry's; before version 6), and
// it carries no settings (before version 7).
//
// A segment is one zstd frame. Uncompressed it holds three Arrow IPC
// streams, each preceded by its length (u64), each with one record batch,
// and then the tenant's settings:
//
//   - tables (TablesSchema): namespace, name, table_type, schema_ref (an
//     int32 into the segment's schemas; null when the schema is
//     unavailable), location, version, created_at, updated_at,
//     description, properties (map<string,string>, null when none),
//     updated_by, op, published, creation_id (version 8; empty when the
//     registration has none), field_ids (version 8; binary, null when the
//     table has no field ids, below), iceberg_state (version 9; binary,
//     null when the table has none: the bytes of its Iceberg state item,
//     catalog.IcebergKey, exactly as the catalog stored them, at most
//     MaxIcebergStateBytes, 256 KiB, catalog.MaxIcebergStateBytes; opaque
//     here, discovery decodes them with catalog.DecodeIcebergState and
//     serves them to Iceberg REST's loadTable), earlier (version 10;
//     binary, null when the table has none: its earlier kept versions,
//     below); sorted by (namespace, name). No tenant column: the index
//     names the tenant.
//   - schemas (SchemasSchema): each distinct Arrow IPC schema message of
//     the tenant's tables and of their earlier versions, once.
//   - tombstones (TombstonesSchema): the tenant's dropped tables still in
//     retention: namespace, name, version, creation_id, dropped_at,
//     dropped_by, expires_at, published; sorted by (namespace, name,
//     creation_id). Discovery never serves them as tables; they feed the
//     change feed, and they are the one list of the tenant's dropped
//     tables: TombstoneColumns.Dropped, those still in retention at a
//     time, newest drop first, is what every reader of drops answers with.
//   - settings (version 7): u64 length (at most MaxSettingsBytes, 16 KiB,
//     catalog.MaxTenantSettingsBytes), then that many bytes: the tenant's
//     settings item (catalog.TenantKey) exactly as the catalog stored it,
//     which discovery decodes with catalog.DecodeTenantSettings; length 0
//     when the tenant has none. The settings end the segment: a segment
//     that ends after the tombstones' stream (before version 7) carries
//     none, and a length that is over the bound or is not what is left is
//     corrupt. A tenant with settings but neither tables nor tombstones
//     has no segment, so no settings in the blob.
//
// field_ids (version 8) are the Iceberg field ids the catalog recorded
// for the table's schema, one per path in the schema's depth-first path
// order, and the last column id, in one value per row: uvarint count, each
// id as a zigzag varint of its difference from the id before it (the
// first from 0), then the last column id as a zigzag varint of its
// difference from the last id (from 0 when there are none). Ids assigned
// in order (1 to N) take a byte each, so a table of N paths adds about
// N+2 bytes and its creation id 16 before compression; a value that is
// truncated, has bytes left over or leaves the int32 range is corrupt.
// The format does not check the ids against the schema.
//
// earlier (version 10) are the table's earlier kept versions that had a
// schema (the catalog's history of its registration below the row's
// version), oldest first, in one value per row: uvarint count (at least
// 1), then per version its difference from the version before (the first
// from 0; uvarint; versions ascend from 1 to below the row's version),
// its schema as a reference into the segment's schemas (uvarint), and
// its field ids: a byte 0 when they are the version before's, else a byte
// 1 and the field_ids encoding above. A schema the tenant holds already
// costs its reference alone, so a version after the first that kept the
// schema and ids of the one before (an update of the description, the
// location) takes three bytes, and a table of one version nothing stored
// (null: the column's offsets, 4 bytes a row, once decoded).
// A value that is truncated, has bytes left over, has versions out of
// that order or references a schema out of range is corrupt. Iceberg
// REST lists these schemas before the current one (discovery builds a
// never-synced table's metadata from them).
//
// published (u64) is the generation of the blob in which the row last
// changed, at most its tenant's generation: the change feed's order. A
// writer stamps a row new or changed in its blob with the blob's
// generation; a row the blob before held the same keeps its number, also
// through a full scan (refresh's scan reads the previous segments and sets
// Published before it writes).
// Generations only grow, so a row published after a follower's cursor is
// numbered after it.
//
// Each stream's schema message is verified (catalog.VerifySchemaMessage)
// before the IPC reader sees it, and must equal the expected schema. One
// function checks a segment (its address, size, streams, names, order,
// references and counts against its index entry); every decode failure
// wraps exactly one of ErrCorrupt and ErrVersion.
//
// # Versions and the deploy order
//
// The writer writes version 10 only. The reader reads versions 4 to 10, so
// a discovery of this release serves what the previous refresh published
// (a segment before version 7 carries no settings: nothing may be vended
// for its tenant until refresh republishes it; one before version 8 no
// creation ids or field ids; one before version 9 no Iceberg state, so
// loadTable answers metadata built from the schema, without snapshots;
// one before version 10 no earlier versions, so that metadata lists the
// current schema alone).
// Deploy discovery first, then refresh (the CDK stack orders the refresh
// function after the discovery service): an older discovery that meets a
// version 10 manifest rejects it as an unknown version and keeps serving
// its last good snapshot (it never serves a blob it cannot read), so
// deploying refresh first is safe but stalls discovery at the last
// version 9 snapshot until it is upgraded too. A refresh of this release
// that finds a blob of an older version republishes it from a full scan
// as version 10. A row that gains a creation id or field ids is a changed
// row, published again at the new generation, so a change feed follower
// is given it again (never fewer); refresh reads an older manifest alone
// as no base at all, so every row of it is. A row's Iceberg state is not
// part of its publication: a row that gains, changes or loses one keeps
// its Published (a new sync is not a change of the table's
// registration), though its tenant's segment is written again; nor are
// its earlier versions (derived from the registration's history).
package snapshot
