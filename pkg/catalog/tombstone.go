package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// TombstonePrefix is the metastore prefix under which dropped tables are
// kept until their retention ends:
//
//	dropped/<tenant>/<namespace>/<table>/<creation id>
//
// The creation id tells apart two tables of the same name dropped in turn.
// A tombstone belongs to its tenant exactly as the tenant's tbl/ keys do: a
// change to one rebuilds that tenant's snapshot segment.
const TombstonePrefix = "dropped/"

// Tombstone is a dropped table: the registration as it was when it was
// dropped, when and by whom, and when it may be purged.
type Tombstone struct {
	Ref          TableRef
	Registration Registration
	DroppedAt    time.Time
	DroppedBy    string
	// ExpiresAt is when retention ends: refresh ignores the tombstone from
	// then on, and the store may purge it (DynamoDB TTL, local sweep).
	ExpiresAt time.Time
	// expiringHistory marks a tombstone written before the one commit
	// path: its drop gave each kept version record the tombstone's expiry
	// (on a store whose entries expire by themselves), which an undrop
	// takes back. A drop now leaves the records as they are and says so
	// (history_by_reference).
	expiringHistory bool
}

// Key returns the tombstone's metastore key, or an error wrapping
// ErrInvalidName (or ErrInvalidRegistration for a registration without a
// creation id, which a tombstone needs to be told apart).
func (t Tombstone) Key() (string, error) {
	if err := t.Ref.Validate(); err != nil {
		return "", err
	}
	id := t.Registration.CreationID()
	if id == "" || strings.Contains(id, "/") {
		return "", &Error{Kind: ErrInvalidRegistration, Ref: t.Ref.String(), Detail: fmt.Sprintf("creation id %q cannot name a tombstone", id)}
	}
	return TombstonePrefix + t.Ref.String() + "/" + id, nil
}

// Expired reports whether retention has ended at now.
func (t Tombstone) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}

// tombstoneJSON is the stored shape.
type tombstoneJSON struct {
	Registration json.RawMessage `json:"registration"`
	DroppedAt    time.Time       `json:"dropped_at"`
	DroppedBy    string          `json:"dropped_by,omitempty"`
	ExpiresAt    time.Time       `json:"expires_at,omitzero"`
	// HistoryByReference: the version records carry no expiry of the
	// tombstone's (absent in tombstones written before the one commit
	// path, whose drop gave them its expiry).
	HistoryByReference bool `json:"history_by_reference,omitempty"`
}

// EncodeTombstone returns the stored JSON of t.
func EncodeTombstone(t Tombstone) ([]byte, error) {
	reg, err := t.Registration.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return json.Marshal(tombstoneJSON{Registration: reg, DroppedAt: t.DroppedAt.UTC(), DroppedBy: t.DroppedBy, ExpiresAt: t.ExpiresAt.UTC(),
		HistoryByReference: !t.expiringHistory})
}

// DecodeTombstone decodes a tombstone stored at key (TombstonePrefix
// already stripped: <tenant>/<namespace>/<table>/<creation id>). The
// key's creation id must match the registration's.
func DecodeTombstone(stripped string, value []byte) (Tombstone, error) {
	i := strings.LastIndexByte(stripped, '/')
	if i < 0 {
		return Tombstone{}, &Error{Kind: ErrInvalidName, Detail: fmt.Sprintf("tombstone key %q has no creation id", stripped)}
	}
	ref, err := ParseKey(stripped[:i])
	if err != nil {
		return Tombstone{}, err
	}
	var w tombstoneJSON
	if err := json.Unmarshal(value, &w); err != nil {
		return Tombstone{}, &Error{Kind: ErrInvalidRegistration, Ref: ref.String(), Detail: "tombstone: " + err.Error()}
	}
	if len(w.Registration) == 0 || w.DroppedAt.IsZero() {
		return Tombstone{}, &Error{Kind: ErrInvalidRegistration, Ref: ref.String(), Detail: "tombstone without registration or drop time"}
	}
	reg, err := DecodeRegistration(w.Registration)
	if err != nil {
		return Tombstone{}, err
	}
	if reg.CreationID() != stripped[i+1:] {
		return Tombstone{}, &Error{Kind: ErrInvalidRegistration, Ref: ref.String(), Detail: fmt.Sprintf("tombstone key names creation id %q, registration has %q", stripped[i+1:], reg.CreationID())}
	}
	return Tombstone{Ref: ref, Registration: reg, DroppedAt: w.DroppedAt.UTC(), DroppedBy: w.DroppedBy, ExpiresAt: w.ExpiresAt.UTC(),
		expiringHistory: !w.HistoryByReference}, nil
}
