package wire

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// ChangesActionType is the Flight action (DoAction) that answers the
// caller's tenant's change feed: the latest change of each of its tables
// (created, updated, undropped: the table's current state) and each drop
// in retention, in the order they happened, after a cursor. Body
// {"since","limit"} (JSON ChangesRequest), one Result, a JSON ChangePage.
// Discovery answers it from its snapshot, so a table changed twice
// between two snapshots shows its latest change (lake history has every
// version), and a change appears once refresh has published it.
const ChangesActionType = "lake.changes"

// MaxChangesLimit is the most changes one page holds.
const MaxChangesLimit = 500

// MaxChangesBody bounds a changes action's body.
const MaxChangesBody = 512

// ChangesRequest is the body of ChangesActionType: Since is the cursor of
// the last change seen (ChangePage.Next; empty: from the first), Limit 1
// to MaxChangesLimit.
type ChangesRequest struct {
	Since string `json:"since,omitempty"`
	Limit int    `json:"limit"`
}

// Change is one change of a ChangePage. Op is create, update, undrop or
// drop; Version the table's version after it (a drop's: the version
// dropped); By who made it; CreationID tells registrations of one name
// apart (undrop takes a drop's).
type Change struct {
	Cursor     string    `json:"cursor"`
	At         time.Time `json:"at"`
	Op         string    `json:"op"`
	Namespace  string    `json:"namespace"`
	Table      string    `json:"table"`
	Version    int64     `json:"version"`
	By         string    `json:"by,omitempty"`
	CreationID string    `json:"creation_id,omitempty"`
}

// ChangePage is the answer of ChangesActionType: the caller's Tenant, the
// changes after the request's cursor in order, and Next, the cursor to
// ask from next (the last change's, or the request's when there is none).
type ChangePage struct {
	Tenant  string   `json:"tenant"`
	Changes []Change `json:"changes"`
	Next    string   `json:"next"`
}

// ErrBadCursor is a cursor that is not one a ChangePage gave.
var ErrBadCursor = errors.New("wire: not a changes cursor")

// A cursor is the change's time (Unix ns) and its rank among changes of
// the same time (the position of its key in the order namespace, table,
// op), base64url: opaque to clients, checked when read.
func EncodeCursor(at time.Time, key string) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano()))
	return base64.RawURLEncoding.EncodeToString(append(b, key...))
}

// DecodeCursor reads a cursor EncodeCursor made: the time and the key.
func DecodeCursor(c string) (time.Time, string, error) {
	if len(c) > MaxChangesBody {
		return time.Time{}, "", ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 8 {
		return time.Time{}, "", ErrBadCursor
	}
	ns := int64(binary.BigEndian.Uint64(b))
	if ns < 0 {
		return time.Time{}, "", ErrBadCursor
	}
	return time.Unix(0, ns).UTC(), string(b[8:]), nil
}
