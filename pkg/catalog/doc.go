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
package catalog
