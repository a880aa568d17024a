package wire

// SyncResult is the answer of the registration API's
// POST /v1/tenants/{t}/namespaces/{ns}/tables/{table}/sync (and `lake sync`):
// what a sync of the table's files into Iceberg metadata found and wrote.
type SyncResult struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	// Changed says whether the files changed since the last sync (a new
	// Iceberg snapshot was written); false writes nothing.
	Changed bool `json:"changed"`
	// MetadataLocation is the table's current Iceberg metadata file.
	MetadataLocation string `json:"metadata_location,omitempty"`
	// SnapshotID is the table's current Iceberg snapshot (0: none).
	SnapshotID int64 `json:"snapshot_id,omitempty"`
	// Files and Records are the data files and rows of the current
	// snapshot; Added and Removed what this sync changed.
	Files   int   `json:"files"`
	Records int64 `json:"records"`
	Added   int   `json:"added"`
	Removed int   `json:"removed"`
	// Skipped are the files left out, each with why (not Parquet, a column
	// of another type than the registration's, a footer too large).
	Skipped []SyncSkip `json:"skipped,omitempty"`
}

// SyncSkip is one file a sync left out.
type SyncSkip struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// CodeSyncFailed (502/422) is a sync that could not read the table's files
// or write its metadata; CodeSyncNotConfigured (501) a deployment that does
// not sync.
const (
	CodeSyncFailed        = "sync_failed"
	CodeSyncNotConfigured = "sync_not_configured"
)
