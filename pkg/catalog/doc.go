// Package catalog is the heart of lake: what a table registration is, how its
// Arrow schema is stored without loss, how one metastore scan becomes a
// consistent Snapshot, and the blob codec that carries a snapshot from the
// refresh function to the discovery server.
//
// Registrations live in a metastore.Store under tbl/<tenant>/<namespace>/<table>
// as JSON. New registrations always carry the table's schema as an Arrow IPC
// schema message (the form flight.SerializeSchema writes); registrations
// written before that field existed decode with no schema and show up in a
// snapshot as "schema unavailable".
//
// Names (tenant, namespace, table) are checked by one validator,
// ValidateName, wherever they enter: TableRef.Validate and Key, ParseKey,
// the blob codec, the registration API, the CLI and a token's tenant claim.
// It admits only names that cannot collide with another name or hide
// characters: NFC-normalized valid UTF-8 of at most MaxNameBytes bytes,
// without '/', control, format or bidi control characters, line or
// paragraph separators or U+FFFD, without white space at either end, and
// neither "." nor ".."; tenant names also without the IAM wildcards '*' and
// '?'. An invalid name is a *NameError wrapping ErrInvalidName.
package catalog
