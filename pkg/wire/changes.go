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
// in retention, in the order refresh published them, after a cursor. Body
// {"since","limit"} (JSON ChangesRequest), one Result, a JSON ChangePage.
// Discovery answers it from its snapshot, so a table changed twice
// between two snapshots shows its latest change (lake history has every
// version), and a change appears once refresh has published it.
//
// The order is by publication: the generation of the snapshot in which
// each change appeared, then namespace, table, op and creation id. Every
// later publication has a higher generation, so a follower that pages
// with the cursor is given every change published after it, however the
// changes' times (At) compare: a change written before another may be
// published after it. A table changed again moves to its new publication
// (its earlier change is not repeated). A snapshot rebuilt without the one
// before (its blob lost) publishes the tenant's current state again: a
// follower is then given changes it had, never fewer.
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

// ErrTimeCursor is a cursor of the order by time the feed had before it
// was ordered by publication; the feed cannot resume from it without
// skipping, so a client asks again without one.
var ErrTimeCursor = errors.New("wire: a changes cursor of the feed's former order by time")

// cursorPublication opens a cursor of the order by publication. A cursor
// of the order by time opened with the high byte of a positive Unix-ns
// time, below 0x80.
const cursorPublication = 0x81

// EncodeCursor returns the cursor of a change: a marker byte, the
// generation in which it was published (big endian) and its key (its
// namespace, table, op and creation id, NUL-separated), base64url. It is
// opaque to clients and checked when read.
func EncodeCursor(published uint64, key string) string {
	b := binary.BigEndian.AppendUint64([]byte{cursorPublication}, published)
	return base64.RawURLEncoding.EncodeToString(append(b, key...))
}

// DecodeCursor reads a cursor EncodeCursor made: the publication and the
// key. A cursor of the former order by time is ErrTimeCursor; anything
// else not made by EncodeCursor is ErrBadCursor.
func DecodeCursor(c string) (uint64, string, error) {
	if len(c) > MaxChangesBody {
		return 0, "", ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	switch {
	case err != nil || len(b) < 9 && (len(b) < 8 || b[0] >= 0x80):
		return 0, "", ErrBadCursor
	case b[0] < 0x80:
		return 0, "", ErrTimeCursor
	case b[0] != cursorPublication:
		return 0, "", ErrBadCursor
	}
	return binary.BigEndian.Uint64(b[1:]), string(b[9:]), nil
}
