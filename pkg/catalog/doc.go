// Package catalog is the heart of lake: what a table registration is, how its
// Arrow schema is stored without loss, register, update and drop, and the
// tombstones drops leave. (Refresh carries the registrations from one
// metastore scan, internal/refresh/scan, into the snapshot blob, pkg/snapshot,
// that it publishes and discovery serves.)
//
// Registrations live in a metastore.Store under tbl/<tenant>/<namespace>/<table>
// as JSON. New registrations always carry the table's schema as an Arrow IPC
// schema message (the form flight.SerializeSchema writes); registrations
// written before that field existed decode with no schema and show up in a
// snapshot as "schema unavailable".
//
// Each registration with a schema also records the Iceberg field ids of
// its fields (package icebergschema; JSON member iceberg_field_ids):
// fresh when the table is registered, and assigned by every update from
// the version before, so a field keeps its id while its path and shape
// last and a new one gets an id never given before. The version records
// and tombstones keep each version's ids, an undrop restores them, and
// their bytes count in the quota as the rest of the registration's do.
// Registration.FieldIDs returns them (for a registration written before
// they were recorded, the fresh ids of its schema).
//
// Names (tenant, namespace, table) are checked by one validator,
// ValidateName, wherever they enter: TableRef.Validate and Key, ParseKey,
// the snapshot blob reader and writer, the registration API, the CLI and a token's tenant claim.
// It admits only names that cannot collide with another name or hide
// characters: NFC-normalized valid UTF-8 of at most MaxNameBytes bytes,
// without '/', control, format or bidi control characters, line or
// paragraph separators or U+FFFD, without white space at either end, and
// neither "." nor ".."; tenant names also without the IAM wildcards '*' and
// '?'. An invalid name is a *NameError wrapping ErrInvalidName.
//
// # Errors
//
// Every other error about a table, a tenant or a value is an *Error: the
// operation, the ref, the kind (a prefix-free sentinel such as ErrNotFound,
// or a store's failure) and what the kind does not say, each said once
// ("catalog: register acme/sales/orders: invalid schema: no fields").
//
// # Mutations: one plan, one commit
//
// Register, Update, DropIf, Undrop and PurgeExpired each build one plan of
// store writes (commit.go) and hand it to commit, the one function that
// writes anything, in this order:
//
//  1. the usage reservation, for a mutation the quota may refuse: one
//     compare-and-swap of the tenant's usage item by the plan's net change,
//     checked against the limits with what the plan adds;
//  2. the writes that must precede the primary (a drop's tombstone, so a
//     stored drop can always be undone);
//  3. the primary: the one conditional write of the registration that
//     decides the outcome (Create, CompareAndSwap or CompareAndDelete on
//     the bytes read). When it fails nothing is stored: what was reserved
//     is given back and the writes of 2 are undone where the plan says
//     (a drop whose registration changed takes its tombstone back);
//  4. once it has succeeded, the side writes, which run to their end even
//     when the caller's context is done: the usage update of a mutation
//     never refused (a drop), the version record and the deletion of the
//     one it moves out of the kept count, the tombstone's clean-up
//     (undrop), a correction of the usage for each side write that did
//     not take effect, and last the change counter's bump.
//
// A side write that fails never fails the mutation, which is stored: a
// client told to retry would write it again (an update's next version, a
// second drop). It is never silent either: the mutation returns what it
// stored with an *Error of kind ErrSideWrite whose SideWrites list each
// write that failed (what it was for, its key, the store's error), or of
// kind ErrUnsignalled when the change counter is one of them (refresh was
// not told; errors.Is finds ErrSideWrite too), and Stats counts them. The
// registration API answers ErrSideWrite as the write's success and logs a
// warning naming the writes; ErrUnsignalled as 503 unsignalled, retry safe.
//
// A register, update, drop or undrop costs a fixed number of store calls
// whatever its history holds: a drop and an undrop leave the kept version
// records as they are (VersionPrefix: their expiry is the tombstone's, by
// reference), and the usage item is written once when every write
// succeeds. (A drop with retention off deletes the history nothing can
// reach any more, a read and a delete a record, as the purge does.)
//
// # The change counter
//
// Every write that changes a registration (Register that creates, Update
// that changes, Drop, Undrop) is followed by a bump of one counter at
// ChangesKey, one atomic add (metastore.Store.AddCounter), the last write of
// its commit.
// A blob records a change marker: how many writes it accounts for. A full
// scan records the counter it read before scanning; an incremental apply of
// a change feed's batch records the previous marker plus the writes the
// batch accounts for (the versions its tables moved by), never the live
// counter. A later refresh that reads a
// counter equal to the marker knows that every write is in the blob, with
// one strongly consistent read instead of a scan; a write whose batch
// failed keeps the counter ahead, so the next scheduled run scans. A write
// whose bump never happened (the writer died between the two) while
// another's batch failed is seen by the periodic full scan, the
// reconciliation. changes.go has the proof; refresh's scan.Apply is how
// a change feed's batch (DynamoDB Streams) is applied without a scan.
//
// # Quotas
//
// Each tenant's tables and registration bytes (key and stored value) are
// counted in an item at QuotaPrefix+tenant, written once per mutation with
// a compare-and-swap: reserved before the registration's write by the
// mutations a limit may refuse (quota.go), so concurrent writers never pass
// a limit together.
package catalog
