// Package icebergsync turns the Parquet files at a table's location into
// Iceberg metadata (issue 41, part 3: the rows behind the tables). For one
// table, Sync lists the files (Files: an S3 prefix read with the table's
// vended credentials, or a local folder), reads nothing of them but their
// footers, and writes with iceberg-go's writers, under a prefix lake owns
// (MetaStore), the manifests, the manifest list and the metadata file an
// engine reads the table from. lake stores the compact State it returns;
// the next Sync starts from it.
//
// # Files and identity
//
// A file is its key, size and version (the S3 ETag, or the local
// modification time). Objects whose path has a segment starting with "_"
// or "." (_SUCCESS, .crc) are not data and are not listed. A Sync whose
// listing is the previous one's (a SHA-256 of every key, size and version,
// kept in the snapshot summary as lake.files-sha256) reads and writes
// nothing, unless the registration's Iceberg schema changed (below).
// Otherwise only the footers of new and changed files are read: a
// first request for the end of the file (8 KiB until a footer of the
// location has been seen, then a quarter more than the largest seen, at
// least 1 KiB), a second for the footer when it is longer. The Parquet reader and iceberg-go are handed the footer alone, so
// neither can read a data page.
//
// # Files left out
//
// A file is left out of the table, and named with the reason in
// Result.Skipped, when it is not Parquet, its footer is over
// Limits.MaxFooterBytes (or its schema over parquetschema's limits), or its
// schema conflicts with the registration's. The check (checkSchema) is by
// column name at the top level: a registered nullable column the file
// lacks is fine; a column in both must map to the same Iceberg type or one
// Iceberg promotes the file's to (int to long, float to double, decimal
// precision), struct, list and map columns the same Arrow type but for
// nullability; a column the table requires must be required in the file;
// a column only in the file is refused (iceberg-go's FileToDataFile
// refuses a column its name mapping lacks, as PyIceberg's and Java's
// add_files refuse one). iceberg-go's FileToDataFile checks
// again and may still refuse a file; its reason is kept. A file left out
// is read again when it changes, and after a change of the registration's
// schema; while nothing else changed, that Sync writes nothing.
//
// A file already in the table stays when the schema changes (Assign keeps
// the ids of fields whose shape holds, and Iceberg reads a file by ids). A
// change of the schema alone (State.Schema, the SHA-256 of the metadata's
// current schema, differs from the registration's) writes a new metadata
// file and no snapshot: the new schema current, the snapshots as they were
// (each keeps the schema-id it was taken under); the next snapshot is
// taken under the new schema.
//
// # Schemas
//
// Every metadata file lists the schemas of the registration's earlier
// kept versions (Table.Earlier, oldest first, each under the version that
// registered it, with its recorded field ids) and every schema the
// metadata before it listed, then the current one as current-schema-id
// (icebergschema.AddSchemas): an equal schema once, under its first id.
//
// # Statistics
//
// iceberg-go's table.FileToDataFile builds each data file from its footer:
// record count, file size, column sizes, value and null counts, and lower
// and upper bounds (truncated as iceberg-go's defaults say), mapped to the
// table's field ids by column name through the schema icebergschema gives
// (a file that carries Parquet field ids is mapped by them instead).
//
// # What is written
//
// Each Sync that finds a change appends one snapshot (format version 2,
// unpartitioned, sequence number one past the last) and writes under the
// metadata prefix:
//
//	<commit>-m0.avro             the manifest of the files it adds (ADDED)
//	<commit>-m<i>.avro           each previous manifest that held a removed
//	                             file, rewritten: the removed files DELETED,
//	                             the others EXISTING (iceberg-go has no
//	                             delete-by-path for a table it does not
//	                             commit through a catalog; this is what its
//	                             own and Java's snapshot producers write)
//	snap-<id>-1-<commit>.avro    the manifest list: every other previous
//	                             manifest carried forward unchanged, by path
//	                             (but one left with DELETED entries alone,
//	                             which recorded the previous removals)
//	<commit>-files.json          the file list: every listed file with its
//	                             identity and its manifest, or its reason
//	                             for being left out (lake's, not Iceberg's)
//	v<N>.metadata.json           the metadata: built from the previous one
//	                             (schemas, snapshots, logs kept) with
//	                             iceberg-go's MetadataBuilder, the kept
//	                             versions' schemas listed and the table's
//	                             current, its name mapping in
//	                             schema.name-mapping.default, main at the
//	                             new snapshot
//
// Nothing is ever overwritten (MetaStore.Put refuses an existing key), so
// two Syncs of one table racing for v<N> fail one with ErrExists. A file
// whose size or version changed is removed and added again. Snapshot ids
// are random, positive and unique in the table.
//
// # Limits
//
// The metadata prefix must not be under the table's data location: lake's
// own files would be listed as data (and left out as not Parquet).
//
// Limits bound a Sync: the files listed (past MaxFiles a
// *TooManyFilesError naming the count and limit, nothing read or written),
// one footer (past MaxFooterBytes the file is left out), the footer bytes
// read in all (past MaxTotalFooterBytes ErrBudget, nothing written), each
// metadata object read back, the footers read at once, and the time.
// Memory is the listing, the footers in flight and the DataFiles of the
// added files.
package icebergsync
