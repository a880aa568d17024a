package wire

import "time"

// DroppedActionType is the Flight action (DoAction) that answers one page
// of the caller's tenant's dropped tables still in retention (the drops
// `lake undrop` can restore), newest drop first: a body {"offset","limit"}
// (JSON ListRequest, no namespace), one Result, a JSON DroppedPage.
// Discovery answers it from the snapshot's tombstones, as it answers the
// tables.
const DroppedActionType = "lake.dropped"

// DroppedTable is one dropped table of a DroppedPage: the table's name,
// the version it was dropped at, its creation id (what undrop names), who
// dropped it and when, and when its retention ends.
type DroppedTable struct {
	Namespace  string    `json:"namespace"`
	Table      string    `json:"table"`
	Version    int64     `json:"version"`
	CreationID string    `json:"creation_id"`
	DroppedAt  time.Time `json:"dropped_at"`
	DroppedBy  string    `json:"dropped_by,omitempty"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
}

// DroppedPage is the answer of DroppedActionType: the caller's Tenant,
// Total dropped tables in retention, Dropped from Offset on.
type DroppedPage struct {
	Tenant  string         `json:"tenant"`
	Total   int            `json:"total"`
	Dropped []DroppedTable `json:"dropped"`
}
