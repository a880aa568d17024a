package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// Iceberg state (issue 41): what lake's Iceberg sync made of a table's
// files, so the Iceberg REST catalog answers loadTable with real snapshots
// from memory. The sync lists a table's Parquet files, writes Iceberg
// manifests, a manifest list and a metadata file under a lake-owned
// prefix, and records the result here, per table, at
// IcebergPrefix+tenant/namespace/table: the metadata file's location and
// its JSON, with the registration (creation id and version) it was synced
// against.
//
// The item is the catalog's, outside "tbl/", as a tenant's settings are:
// written with a compare-and-swap and followed by the change counter's
// add, so refresh carries it (verbatim, as DecodeIcebergState reads it)
// into the table's row of its tenant's snapshot segment, and discovery
// answers from there without reading the store. A state is written only
// while the table's registration has the creation id it was synced
// against (PutIcebergState); a drop of the table deletes it (a side write
// of the drop), and an undrop does not bring it back: the restored table
// is at a new version, and the next sync writes its state again. Refresh
// ignores a state whose creation id is not its row's, and discovery one
// whose version is not its row's: a state synced against an older version
// of a registration is never served for a newer one.
//
// The item is lake's own, not the tenant's: it is not counted in the
// tenant's usage (Quota).

// IcebergPrefix is the key prefix of tables' Iceberg state:
// IcebergPrefix+tenant/namespace/table.
const IcebergPrefix = "iceberg/"

// Bounds of an Iceberg state item.
const (
	// MaxIcebergStateBytes bounds the stored item (its metadata JSON
	// included), and what a reader of a snapshot segment accepts as one.
	MaxIcebergStateBytes = 256 << 10
	// MaxMetadataLocationBytes bounds IcebergState.MetadataLocation.
	MaxMetadataLocationBytes = 1024
)

// IcebergState is a table's Iceberg state: its current Iceberg metadata
// file, as lake's sync wrote it.
type IcebergState struct {
	// CreationID is the creation id of the registration the state was
	// synced against (Registration.CreationID).
	CreationID string `json:"creation_id"`
	// Version is the registration version it was synced against
	// (Registration.Version): discovery serves the state only while the
	// table is at that version.
	Version int64 `json:"version"`
	// MetadataLocation is where the metadata file is stored (an s3://
	// location under the sync's metadata prefix).
	MetadataLocation string `json:"metadata_location"`
	// Metadata is the metadata file's JSON: an object of Iceberg table
	// metadata, format version 2, with a table-uuid. It is stored
	// compacted (json.Compact of what the sync gave): the same document.
	Metadata json.RawMessage `json:"metadata"`
	// SyncedAt is when the sync made it: of two states of one
	// registration, the later replaces the earlier, never the reverse.
	SyncedAt time.Time `json:"synced_at"`
	// Sync is the syncer's own record (internal/icebergsync.State: the
	// snapshots, the files left out), what the next sync starts from;
	// opaque here, a JSON value or absent.
	Sync json.RawMessage `json:"sync,omitempty"`
}

// IcebergKey is the store key of ref's Iceberg state, or an error wrapping
// ErrInvalidName.
func IcebergKey(ref TableRef) (string, error) {
	if err := ref.Validate(); err != nil {
		return "", err
	}
	return IcebergPrefix + ref.String(), nil
}

// ErrInvalidIcebergState is the Kind of an *Error for an Iceberg state
// out of bounds or not Iceberg metadata.
var ErrInvalidIcebergState = errors.New("invalid iceberg state")

// validate checks the bounds every stored state keeps.
func (s IcebergState) validate() error {
	switch {
	case s.CreationID == "" || len(s.CreationID) > 64 || strings.Trim(s.CreationID, "0123456789abcdef") != "":
		return fmt.Errorf("creation id %q: want a registration's hex creation id", s.CreationID)
	case s.Version < 1:
		return fmt.Errorf("version %d: want a registration's version", s.Version)
	case s.MetadataLocation == "":
		return errors.New("metadata_location is empty")
	case len(s.MetadataLocation) > MaxMetadataLocationBytes:
		return fmt.Errorf("metadata_location of %d bytes, limit %d", len(s.MetadataLocation), MaxMetadataLocationBytes)
	case !utf8.ValidString(s.MetadataLocation) || strings.ContainsFunc(s.MetadataLocation, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return errors.New("metadata_location has control characters or invalid UTF-8")
	case s.SyncedAt.IsZero():
		return errors.New("synced_at is zero")
	}
	var md struct {
		FormatVersion *int   `json:"format-version"`
		TableUUID     string `json:"table-uuid"`
	}
	if len(s.Metadata) == 0 || s.Metadata[0] != '{' {
		return errors.New("metadata is not a JSON object")
	}
	if err := json.Unmarshal(s.Metadata, &md); err != nil {
		return fmt.Errorf("metadata: %v", err)
	}
	switch {
	case md.FormatVersion == nil || *md.FormatVersion != 2:
		return errors.New(`metadata: "format-version" is not 2`)
	case md.TableUUID == "":
		return errors.New(`metadata: no "table-uuid"`)
	}
	if _, err := uuid.Parse(md.TableUUID); err != nil {
		return fmt.Errorf(`metadata: "table-uuid": %v`, err)
	}
	return nil
}

// EncodeIcebergState returns the stored form of s (JSON, the metadata
// embedded as an object, compacted), or an error wrapping
// ErrInvalidIcebergState.
func EncodeIcebergState(s IcebergState) ([]byte, error) {
	b, err := encodeIcebergState(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidIcebergState, err)
	}
	return b, nil
}

// encodeIcebergState is EncodeIcebergState with its error unwrapped (the
// detail of an ErrInvalidIcebergState).
func encodeIcebergState(s IcebergState) ([]byte, error) {
	s.SyncedAt = s.SyncedAt.UTC()
	if err := s.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxIcebergStateBytes {
		return nil, fmt.Errorf("%d bytes, limit %d", len(b), MaxIcebergStateBytes)
	}
	return b, nil
}

// DecodeIcebergState reads a stored state item (from the store or a
// snapshot segment), checking the same bounds as EncodeIcebergState.
// Unknown members are ignored. The returned Metadata is a copy of its
// bytes in raw.
func DecodeIcebergState(raw []byte) (IcebergState, error) {
	s, err := decodeIcebergState(raw)
	if err != nil {
		return IcebergState{}, fmt.Errorf("%w: %v", ErrInvalidIcebergState, err)
	}
	return s, nil
}

// decodeIcebergState is DecodeIcebergState with its error unwrapped.
func decodeIcebergState(raw []byte) (IcebergState, error) {
	if len(raw) > MaxIcebergStateBytes {
		return IcebergState{}, fmt.Errorf("%d bytes, limit %d", len(raw), MaxIcebergStateBytes)
	}
	var s IcebergState
	if err := json.Unmarshal(raw, &s); err != nil {
		return IcebergState{}, err
	}
	if err := s.validate(); err != nil {
		return IcebergState{}, err
	}
	s.SyncedAt = s.SyncedAt.UTC()
	return s, nil
}

// PartIcebergState is a table's Iceberg state item (iceberg/…): a drop's
// side write deletes it.
const PartIcebergState Part = "iceberg state"

// IcebergState returns ref's Iceberg state; ok is false when it has none.
// A stored item that does not decode is an *Error of kind
// ErrInvalidIcebergState.
func (c *Catalog) IcebergState(ctx context.Context, ref TableRef) (IcebergState, bool, error) {
	key, err := IcebergKey(ref)
	if err != nil {
		return IcebergState{}, false, err
	}
	raw, err := c.store.Get(ctx, key)
	if errors.Is(err, metastore.ErrNotFound) {
		return IcebergState{}, false, nil
	}
	if err != nil {
		return IcebergState{}, false, &Error{Op: "read iceberg state", Ref: ref.String(), Kind: err}
	}
	s, err := decodeIcebergState(raw)
	if err != nil {
		return IcebergState{}, false, &Error{Op: "read iceberg state", Ref: ref.String(), Kind: ErrInvalidIcebergState, Detail: err.Error()}
	}
	return s, true, nil
}

// PutIcebergState stores st as ref's Iceberg state, then adds to the
// change counter so a refresh carries it into the snapshot.
//
// It writes only while ref's registration has st.CreationID: a table not
// registered (dropped), or registered again since the sync read it, is an
// *Error of kind ErrConflict and nothing is stored. The write is a
// compare-and-swap over the item read (retried when another writer got
// there first): a stored state of the same registration synced later
// than st (SyncedAt) is kept, and st refused with ErrConflict; one synced
// at the same time with the same content writes nothing and is no error;
// a state of another registration (left by a drop whose clean-up failed)
// or one that does not decode is replaced. The registration is read again
// after the write: a drop that ran between the first read and the write
// (its clean-up of this item having found nothing yet) makes it delete
// what it wrote and answer ErrConflict. An invalid st is an *Error of kind
// ErrInvalidIcebergState. A failed change counter add after the write is
// ErrUnsignalled, as for every mutation: the state is stored.
func (c *Catalog) PutIcebergState(ctx context.Context, ref TableRef, st IcebergState) error {
	const op = "put iceberg state"
	key, err := IcebergKey(ref)
	if err != nil {
		return err
	}
	val, err := encodeIcebergState(st)
	if err != nil {
		return &Error{Op: op, Ref: ref.String(), Kind: ErrInvalidIcebergState, Detail: err.Error()}
	}
	st.SyncedAt = st.SyncedAt.UTC()
	regKey, _ := ref.Key()
	live := func() error {
		cur, _, err := c.get(ctx, regKey)
		switch {
		case errors.Is(err, ErrNotFound):
			return &Error{Op: op, Ref: ref.String(), Kind: ErrConflict, Detail: "the table is not registered (dropped since the sync read it)"}
		case err != nil:
			return during(op, ref.String(), err)
		case cur.creationID != st.CreationID:
			return &Error{Op: op, Ref: ref.String(), Kind: ErrConflict, Detail: "the table was dropped and registered again since the sync read it"}
		}
		return nil
	}
	if err := live(); err != nil {
		return err
	}
	err = casLoop(ctx, c.store, key, func(raw []byte) ([]byte, error) {
		if raw == nil {
			return val, nil
		}
		prev, derr := decodeIcebergState(raw)
		switch {
		case derr != nil || prev.CreationID != st.CreationID:
			return val, nil
		case bytes.Equal(raw, val):
			return nil, errUnchanged
		case !st.SyncedAt.After(prev.SyncedAt):
			return nil, &Error{Op: op, Ref: ref.String(), Kind: ErrConflict,
				Detail: fmt.Sprintf("a state synced at %s (version %d) is stored, not older than this one's %s", prev.SyncedAt.Format(time.RFC3339Nano), prev.Version, st.SyncedAt.Format(time.RFC3339Nano))}
		}
		return val, nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		return nil
	case err != nil:
		return during(op, ref.String(), err)
	}
	if err := live(); err != nil {
		// Dropped (or registered again) between the read and the write:
		// the drop's clean-up may have run before the write. Take back
		// what was written (unless another writer has replaced it).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideWriteTimeout)
		defer cancel()
		if derr := c.store.CompareAndDelete(ctx, key, val); derr != nil && !lostRace(derr) {
			c.stats.fail(PartIcebergState)
		}
		return err
	}
	c.stats.commits.Add(1)
	if _, err := c.store.AddCounter(context.WithoutCancel(ctx), ChangesKey, 1); err != nil {
		return during(op, ref.String(), c.sideWriteError([]SideWrite{{Part: PartChanges, Key: ChangesKey, Err: err}}))
	}
	return nil
}

// icebergStateDelete is a drop's side write of the table's Iceberg state:
// it deletes the item when it is the dropped registration's (creationID)
// or does not decode, and leaves one of a later registration of the name
// (registered and synced again before this side write ran). Nothing there
// is nothing to do.
func icebergStateDelete(ref TableRef, creationID string) write {
	return write{part: PartIcebergState, op: opEdit, key: IcebergPrefix + ref.String(), edit: func(raw []byte) ([]byte, error) {
		if raw == nil {
			return nil, nil
		}
		if s, err := decodeIcebergState(raw); err == nil && s.CreationID != creationID {
			return raw, nil
		}
		return nil, nil
	}}
}
