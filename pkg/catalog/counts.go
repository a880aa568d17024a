package catalog

// Counts summarize a snapshot of the catalog.
type Counts struct {
	// Tables is how many tables the snapshot holds.
	Tables int
	// SchemaUnavailable is how many of them have no usable schema.
	SchemaUnavailable int
	// Skipped is how many registrations the scan skipped as malformed.
	Skipped int
}
