package wire

// Custom SqlInfo ids (Flight SQL reserves ids below 10,000). Discovery
// answers them only when asked for by number: a GetSqlInfo that names no
// ids gets the spec's ids alone, since the Flight SQL JDBC driver caches
// that answer into an enum map and fails on any id its enum does not know.
const (
	// SqlInfoSnapshotGeneration (bigint) is the generation of the caller's
	// tenant: the snapshot generation in which its tables last changed (0
	// when it has none).
	SqlInfoSnapshotGeneration = 10000
	// SqlInfoSnapshotCreatedAt (string, RFC 3339) is when the caller's
	// tenant last changed; left out when it has no tables.
	SqlInfoSnapshotCreatedAt = 10001
	// SqlInfoTenantTables (bigint) is how many tables the caller's tenant has.
	SqlInfoTenantTables = 10002
)
