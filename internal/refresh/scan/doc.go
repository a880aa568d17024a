// Package scan reads the catalog out of a metastore into snapshot blobs,
// for refresh: a full scan of the registrations, tombstones, tables'
// Iceberg states, tenant settings and version records (Build), a batch of changed keys read again and applied to the
// blob before (Apply),
// and registrations already in hand (WriteRegistrations). It turns the
// catalog's records into the format's rows (snapshot.Table,
// snapshot.Tombstone), carries each unchanged row's publication from the
// blob it replaces, and writes them with the format's one writer
// (snapshot.Writer); the format itself (pkg/snapshot) does no store I/O.
package scan
