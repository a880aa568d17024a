package wire

import (
	"encoding/json"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// The registration HTTP API's bodies (the routes are in internal/registerapi's
// package comment). Requests are JSON objects read strictly: an unknown member
// is 400 invalid_json.

// Table is the JSON form of a registered table in the registration API's
// answers: a register, read, update or undrop, and each version of a
// VersionPage.
type Table struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Location  string `json:"location"`
	TableType string `json:"table_type"`
	Version   int64  `json:"version"`
	// ETag is the ETag header's value: what If-Match takes.
	ETag      string          `json:"etag"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	SchemaIPC []byte          `json:"schema_ipc,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	// Description and Properties are absent when the table has none.
	Description string            `json:"description,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	// Compatibility is the table's mode; absent for none.
	Compatibility string `json:"compatibility,omitempty"`
	// Protected is true for a table whose drop is refused until an update
	// unsets it; absent when false.
	Protected bool `json:"protected,omitempty"`
	// UpdatedBy is who made this state (the caller's identity) and Op how
	// (create, update, undrop); absent for registrations written before
	// lake recorded them.
	UpdatedBy string `json:"updated_by,omitempty"`
	Op        string `json:"op,omitempty"`
}

// RegisterRequest is the body of POST …/tables (register). Schema is base64
// Arrow IPC (a JSON string) or the schemajson form (a JSON object).
type RegisterRequest struct {
	Name        string            `json:"name"`
	Location    string            `json:"location"`
	TableType   string            `json:"table_type"`
	Schema      json.RawMessage   `json:"schema"`
	Description string            `json:"description"`
	Properties  map[string]string `json:"properties"`
	// Compatibility is the table's mode; absent or "" is none.
	Compatibility string `json:"compatibility"`
	// Protected protects the table from drops; absent is false.
	Protected *bool `json:"protected"`
}

// UpdateRequest is the body of PUT …/tables/{table} (update); Schema as in
// RegisterRequest. A member left out keeps the table's value.
type UpdateRequest struct {
	Location  string          `json:"location"`
	TableType string          `json:"table_type"`
	Schema    json.RawMessage `json:"schema"`
	// Description, when given, replaces the description ("" clears it);
	// absent (nil) keeps it.
	Description *string `json:"description"`
	// Properties, when given, replaces the properties whole ({} clears
	// them); absent or null keeps them.
	Properties map[string]string `json:"properties"`
	// OnlyIfNoSchema applies the update only to a registration without a
	// schema (a backfill); otherwise 409 conflict.
	OnlyIfNoSchema bool `json:"only_if_no_schema"`
	// Compatibility, when given, sets the table's mode (checked against
	// this update's schema); absent or "" keeps it.
	Compatibility string `json:"compatibility"`
	// Protected, when given, sets or unsets the protection; absent keeps it.
	Protected *bool `json:"protected"`
}

// UndropRequest is the body of POST …/tables/{table}/undrop: the creation
// id of the drop to undo (GET /v1/tenants/{tenant}/dropped and discovery's
// lake.dropped list them, DroppedTable.CreationID).
type UndropRequest struct {
	CreationID string `json:"creation_id"`
}

// VersionPage is the answer of GET …/versions: the kept versions, newest
// first, each as the table was at it, and NextBefore, the before= of the
// next page (0: none).
type VersionPage struct {
	Versions   []Table `json:"versions"`
	NextBefore int64   `json:"next_before,omitempty"`
}

// SchemaChange is one entry of a Diff's "schema_changes": a change of one
// field (schemadiff.Change).
type SchemaChange struct {
	// Path is the field's dotted path (customer.address.zip,
	// tags.element), or "(schema)" for the schema's own metadata.
	Path string `json:"path"`
	// Change is schemadiff's kind: added, removed, promoted, narrowed,
	// retyped, reencoded, made_nullable, made_required, metadata_changed.
	Change string `json:"change"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	// Nullable is the field's nullability after an addition, before a
	// removal.
	Nullable bool `json:"nullable,omitempty"`
}

// Diff is GET …/tables/{table}/diff's answer: what changed from version
// From to version To, the schema field by field (the first
// schemadiff.MaxChanges changes; SchemaChangesTotal counts them all), then
// the other attributes; Lines says each change on a line, as lake diff
// prints them, with a line counting the schema changes left out.
type Diff struct {
	From               int64                     `json:"from"`
	To                 int64                     `json:"to"`
	SchemaChanges      []SchemaChange            `json:"schema_changes"`
	SchemaChangesTotal int                       `json:"schema_changes_total"`
	Changes            []catalog.AttributeChange `json:"changes"`
	Lines              []string                  `json:"lines"`
}

// BreakingChange is one entry of an incompatible_schema error's
// "breaking_changes" (ErrorBody): a change of the schema the table's mode
// refuses.
type BreakingChange struct {
	// Path is the field's dotted path (customer.address.zip, tags.element).
	Path string `json:"path"`
	// Change is schemadiff's kind: added, removed, promoted, narrowed,
	// retyped, made_nullable, made_required.
	Change string `json:"change"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	Reason string `json:"reason"`
}

// RefreshResult is local mode's answer to POST /v1/refresh (lake refresh
// against lake local): the outcome for the caller's own tenant, published
// when its tables changed in what discovery now serves or unchanged, and
// that tenant's generation (when its tables last changed; 0 when it has
// none) and table count. It says nothing about other tenants.
type RefreshResult struct {
	Outcome      string `json:"outcome"`
	Generation   uint64 `json:"generation"`
	Tenant       string `json:"tenant"`
	TenantTables int    `json:"tenant_tables"`
}
