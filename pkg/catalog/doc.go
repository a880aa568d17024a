// Package catalog is the heart of lake: what a table registration is, how its
// Arrow schema is stored without loss, register, update and drop, and the
// tombstones drops leave. (pkg/snapshot carries the registrations from one
// metastore scan into the blob that refresh publishes and discovery
// serves.)
//
// Registrations live in a metastore.Store under tbl/<tenant>/<namespace>/<table>
// as JSON. New registrations always carry the table's schema as an Arrow IPC
// schema message (the form flight.SerializeSchema writes); registrations
// written before that field existed decode with no schema and show up in a
// snapshot as "schema unavailable".
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
// # The change counter
//
// Every write that changes a registration (Register that creates, Update
// that changes, Drop) is followed by a bump of one counter at ChangesKey,
// one atomic add (metastore.Store.AddCounter).
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
// reconciliation. changes.go has the proof; snapshot.Apply is how
// a change feed's batch (DynamoDB Streams) is applied without a scan.
//
// # Quotas
//
// Each tenant's tables and registration bytes (key and stored value) are
// counted in an item at
// QuotaPrefix+tenant, reserved with a compare-and-swap before each write
// (quota.go), so concurrent writers never pass a limit together.
package catalog
