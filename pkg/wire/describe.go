package wire

import (
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// DescribeActionType is the Flight action (DoAction) that describes one
// table of the caller's tenant. Its body is a JSON DescribeRequest; its
// answer is one Result, a JSON TableDescription.
//
// Like every other answer it comes from the snapshot in memory, for the
// tenant of the bearer token alone: a table the tenant does not have is
// NOT_FOUND, whoever else has one of that name. A body that is not a
// DescribeRequest with two valid names is INVALID_ARGUMENT; no token is
// UNAUTHENTICATED; before the first snapshot it is UNAVAILABLE.
const DescribeActionType = "lake.describe"

// MaxDescribeBody bounds a describe action's body: two names of
// catalog.MaxNameBytes, each escaped at most six bytes to a byte, and the
// keys.
const MaxDescribeBody = 12*catalog.MaxNameBytes + 256

// DescribeRequest is the body of a DescribeActionType action. Both names
// are required.
type DescribeRequest struct {
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
}

// TableDescription is the answer of a describe action: what the snapshot
// holds of one table besides its schema.
type TableDescription struct {
	Namespace string    `json:"namespace"`
	Table     string    `json:"table"`
	TableType string    `json:"table_type"`
	Location  string    `json:"location"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Description and Properties are the registration's, left out when it
	// has none.
	Description string            `json:"description,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	// HasSchema reports whether the table's schema is available.
	HasSchema bool `json:"has_schema"`
}
