package catalog

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/icebergschema"
	"github.com/lake-catalog/lake/pkg/schemadiff"
)

// DefaultTableType is the table type of a registration that names none.
const DefaultTableType = "TABLE"

// Limits on registration fields.
const (
	MaxLocationBytes  = 4096
	MaxTableTypeBytes = 64
	// MaxDescriptionBytes bounds a table's description: UTF-8 text whose
	// only control characters are newline and tab.
	MaxDescriptionBytes = 4096
	// MaxProperties bounds how many properties a table carries.
	MaxProperties = 64
	// MaxPropertyKeyBytes bounds a property's key: 1 to this many bytes of
	// printable UTF-8 (no control characters).
	MaxPropertyKeyBytes = 128
	// MaxPropertyValueBytes bounds a property's value: UTF-8 without
	// control characters, possibly empty.
	MaxPropertyValueBytes = 1024
	// MaxPropertiesBytes bounds the properties' keys and values together.
	MaxPropertiesBytes = 16 * 1024
)

// ErrInvalidRegistration is wrapped by errors about a registration's fields
// other than its names and schema, and by undecodable registration JSON.
var ErrInvalidRegistration = errors.New("invalid registration")

// Registration is what the catalog stores for one table. Its fields are set
// only by this package (NewRegistration, Update, JSON decoding), so other
// packages cannot assemble an invalid one; read them with the accessors.
// A Registration is immutable once made and safe to share.
type Registration struct {
	location  string
	tableType string
	createdAt time.Time
	updatedAt time.Time
	version   int64
	// creationID is random, made when the table is registered and kept by
	// every update, so (creationID, version) names one state of one
	// registration: a table dropped and registered again never repeats it.
	// Registrations written before it existed have none.
	creationID string
	schemaIPC  []byte
	// description and properties are absent (empty, nil) in registrations
	// written before they existed; properties is never an empty non-nil map.
	description string
	properties  map[string]string
	// updatedBy is the identity of the caller who made this state (the IAM
	// principal on AWS, the token's subject locally), and op the operation
	// that made it (OpCreate, OpUpdate, OpUndrop). Both are empty in
	// registrations written before they existed.
	updatedBy string
	op        string
	// compatibility is the table's compatibility mode (schemadiff): the
	// rule its schema updates are checked against; empty is none.
	compatibility schemadiff.Mode
	// protected refuses the table's drop until it is unset.
	protected bool
	// fieldIDs is the Iceberg field ids of the schema's fields
	// (icebergschema), assigned from the previous version's by every
	// register and update; nil in registrations without a schema and in
	// those written before ids were recorded. Never modified.
	fieldIDs *icebergschema.FieldIDs
}

// The operations that change a registration, as Registration.Op and the
// history and change feed report them. A drop leaves a Tombstone.
const (
	OpCreate = "create"
	OpUpdate = "update"
	OpDrop   = "drop"
	OpUndrop = "undrop"
)

// TableSpec is what a producer asks to register: the table's data location
// (a URI such as s3://bucket/prefix/, or an absolute local path), its type
// (DefaultTableType when empty), its exact Arrow schema, and optionally a
// description and properties (see the Max* limits; an empty map is none).
//
// Compatibility is the table's compatibility mode: what a later update of
// its schema must keep (schemadiff's rules; empty at registration is
// schemadiff.None, empty in an update keeps the current mode).
//
// Protected, when set, says whether the table is protected: a protected
// table's drop is refused (ErrProtected) until an update unsets it. nil
// is unprotected at registration and keeps the current flag in an update.
type TableSpec struct {
	Location      string
	TableType     string
	Schema        *arrow.Schema
	Description   string
	Properties    map[string]string
	Compatibility schemadiff.Mode
	Protected     *bool
}

// validateLocation checks a table location: a URI with a scheme (s3://…,
// file://…, gs://…) or an absolute path, at most MaxLocationBytes, without
// control characters.
func validateLocation(loc string) error {
	switch {
	case loc == "":
		return &Error{Kind: ErrInvalidRegistration, Detail: "location is empty"}
	case len(loc) > MaxLocationBytes:
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("location of %d bytes, limit %d", len(loc), MaxLocationBytes)}
	case strings.IndexFunc(loc, unicode.IsControl) >= 0:
		return &Error{Kind: ErrInvalidRegistration, Detail: "location contains a control character"}
	case strings.HasPrefix(loc, "/"):
		return nil
	}
	u, err := url.Parse(loc)
	if err != nil || u.Scheme == "" {
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("location %q is neither a URI with a scheme (s3://bucket/path) nor an absolute path", loc)}
	}
	return nil
}

// validateTableType checks a table type such as TABLE or VIEW: non-empty
// printable text of at most MaxTableTypeBytes.
func validateTableType(t string) error {
	switch {
	case t == "":
		return &Error{Kind: ErrInvalidRegistration, Detail: "table type is empty"}
	case len(t) > MaxTableTypeBytes:
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("table type of %d bytes, limit %d", len(t), MaxTableTypeBytes)}
	case strings.IndexFunc(t, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("table type %q contains a non-printable character", t)}
	}
	return nil
}

// validateDescription checks a description: valid UTF-8 of at most
// MaxDescriptionBytes whose only control characters are newline and tab.
func validateDescription(d string) error {
	switch {
	case len(d) > MaxDescriptionBytes:
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("description of %d bytes, limit %d", len(d), MaxDescriptionBytes)}
	case !utf8.ValidString(d):
		return &Error{Kind: ErrInvalidRegistration, Detail: "description is not valid UTF-8"}
	}
	if i := strings.IndexFunc(d, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(d[i:])
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("description contains control character %U at byte %d (only newline and tab are allowed)", r, i)}
	}
	return nil
}

// validateProperties checks a property map against MaxProperties,
// MaxPropertyKeyBytes, MaxPropertyValueBytes and MaxPropertiesBytes; keys
// are non-empty printable UTF-8, values UTF-8 without control characters.
// Keys are checked in sorted order, so the error names the same key every
// time.
func validateProperties(props map[string]string) error {
	if len(props) > MaxProperties {
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("%d properties, limit %d", len(props), MaxProperties)}
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		switch {
		case k == "":
			return &Error{Kind: ErrInvalidRegistration, Detail: "a property key is empty"}
		case len(k) > MaxPropertyKeyBytes:
			return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("property key of %d bytes, limit %d", len(k), MaxPropertyKeyBytes)}
		case !utf8.ValidString(k):
			return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("property key %q is not valid UTF-8", k)}
		case strings.IndexFunc(k, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
			return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("property key %q contains a non-printable character", k)}
		case len(v) > MaxPropertyValueBytes:
			return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("property %q: value of %d bytes, limit %d", k, len(v), MaxPropertyValueBytes)}
		case !utf8.ValidString(v):
			return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("property %q: value is not valid UTF-8", k)}
		case strings.IndexFunc(v, unicode.IsControl) >= 0:
			return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("property %q: value contains a control character", k)}
		}
		total += len(k) + len(v)
	}
	if total > MaxPropertiesBytes {
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("properties of %d bytes (keys and values), limit %d", total, MaxPropertiesBytes)}
	}
	return nil
}

// NewRegistration validates spec and returns version 1 of a registration made
// at now, with the schema encoded as Arrow IPC and checked by decoding back.
func NewRegistration(spec TableSpec, now time.Time) (Registration, error) {
	if spec.TableType == "" {
		spec.TableType = DefaultTableType
	}
	if err := validateLocation(spec.Location); err != nil {
		return Registration{}, err
	}
	if err := validateTableType(spec.TableType); err != nil {
		return Registration{}, err
	}
	if err := validateDescription(spec.Description); err != nil {
		return Registration{}, err
	}
	if err := validateProperties(spec.Properties); err != nil {
		return Registration{}, err
	}
	// The mode as schemadiff.ParseMode gives it (callers parse text with
	// it); none is stored as no mode.
	mode := spec.Compatibility
	if mode != "" && !mode.Valid() {
		return Registration{}, &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("compatibility %q: want none, backward, forward or full", spec.Compatibility)}
	}
	if mode == schemadiff.None {
		mode = ""
	}
	ipc, err := EncodeSchema(spec.Schema)
	if err != nil {
		return Registration{}, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	ids := icebergschema.Assign(nil, icebergschema.FieldIDs{}, spec.Schema)
	return Registration{
		location:      spec.Location,
		tableType:     spec.TableType,
		createdAt:     now,
		updatedAt:     now,
		version:       1,
		creationID:    newCreationID(),
		schemaIPC:     ipc,
		description:   spec.Description,
		properties:    cloneProperties(spec.Properties),
		compatibility: mode,
		protected:     spec.Protected != nil && *spec.Protected,
		fieldIDs:      &ids,
	}, nil
}

// cloneProperties copies props; nil for an empty or nil map.
func cloneProperties(props map[string]string) map[string]string {
	if len(props) == 0 {
		return nil
	}
	return maps.Clone(props)
}

// Location returns where the table's data lives.
func (r Registration) Location() string { return r.location }

// TableType returns the table's type, e.g. TABLE.
func (r Registration) TableType() string { return r.tableType }

// Description returns the table's description, "" when it has none.
func (r Registration) Description() string { return r.description }

// Properties returns a copy of the table's properties, nil when it has
// none. The caller owns the map.
func (r Registration) Properties() map[string]string { return cloneProperties(r.properties) }

// CreatedAt returns when the table was first registered (UTC).
func (r Registration) CreatedAt() time.Time { return r.createdAt }

// UpdatedAt returns when the registration last changed (UTC).
func (r Registration) UpdatedAt() time.Time { return r.updatedAt }

// Version returns the registration's version: 1 when created, one more for
// each update.
func (r Registration) Version() int64 { return r.version }

// CreationID returns the registration's creation id: random, made when the
// table was registered and kept by every update, so a table dropped and
// registered again has another. Empty for registrations written before
// creation ids existed. Together with Version it names one state of one
// registration (the registration API's ETag).
func (r Registration) CreationID() string { return r.creationID }

// newCreationID returns 16 random hex digits.
func newCreationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// UpdatedBy is the identity of the caller who made this state of the
// registration; empty when unknown (written before lake recorded it).
func (r Registration) UpdatedBy() string { return r.updatedBy }

// Op is the operation that made this state (OpCreate, OpUpdate, OpUndrop,
// or OpDrop for the state a tombstone and the history keep of a dropped
// table); empty when unknown (written before lake recorded it).
func (r Registration) Op() string { return r.op }

// withChange returns r marked as made by op on behalf of by.
func (r Registration) withChange(op, by string) Registration {
	r.op, r.updatedBy = op, by
	return r
}

// Compatibility is the table's compatibility mode: schemadiff.None unless
// one was set.
func (r Registration) Compatibility() schemadiff.Mode {
	if r.compatibility == "" {
		return schemadiff.None
	}
	return r.compatibility
}

// Protected reports whether the table is protected: its drop is refused
// until an update unsets the flag.
func (r Registration) Protected() bool { return r.protected }

// HasSchema reports whether the registration carries schema bytes.
// Registrations written before schemas were stored do not.
func (r Registration) HasSchema() bool { return r.schemaIPC != nil }

// SchemaIPC returns a copy of the schema's Arrow IPC bytes, or nil.
func (r Registration) SchemaIPC() []byte { return bytes.Clone(r.schemaIPC) }

// Schema decodes the stored schema. It returns ErrSchemaUnavailable for a
// registration without schema bytes.
func (r Registration) Schema() (*arrow.Schema, error) {
	if r.schemaIPC == nil {
		return nil, &Error{Kind: ErrSchemaUnavailable}
	}
	return DecodeSchema(r.schemaIPC)
}

// FieldIDs returns the Iceberg field ids of the registration's schema
// (icebergschema.FieldIDs: one per icebergschema.Paths of the schema, and
// the table's last column id), false when it has no usable schema. They
// are the ids recorded with this version: fresh for the version that
// registered the table, and for every later one icebergschema.Assign's
// from the version before (an undrop restores the dropped version's). A
// registration written before ids were recorded has the fresh assignment
// of its schema, which is what the next update assigns from. The caller
// owns the returned slice.
func (r Registration) FieldIDs() (icebergschema.FieldIDs, bool) {
	if r.schemaIPC == nil {
		return icebergschema.FieldIDs{}, false
	}
	if r.fieldIDs != nil {
		return icebergschema.FieldIDs{IDs: slices.Clone(r.fieldIDs.IDs), LastColumnID: r.fieldIDs.LastColumnID}, true
	}
	s, err := r.Schema()
	if err != nil {
		return icebergschema.FieldIDs{}, false
	}
	return icebergschema.Assign(nil, icebergschema.FieldIDs{}, s), true
}

// withFieldIDsAfter returns r, the next version of prev, with the field
// ids of its schema assigned from prev's: prev's own when the schema bytes
// are the same, icebergschema.Assign's from prev's schema and ids
// otherwise, the fresh ones NewRegistration gave when prev has no schema.
func (r Registration) withFieldIDsAfter(prev Registration) Registration {
	ids, ok := prev.FieldIDs()
	switch {
	case !ok:
		return r
	case bytes.Equal(prev.schemaIPC, r.schemaIPC):
		r.fieldIDs = &ids
		return r
	}
	schema, err := r.Schema()
	if err != nil {
		return r
	}
	// A previous schema that no longer decodes matches nothing; its last
	// column id still holds.
	prevSchema, _ := prev.Schema()
	next := icebergschema.Assign(prevSchema, ids, schema)
	r.fieldIDs = &next
	return r
}

// ErrSchemaUnavailable: the table's registration carries no usable schema
// (written before schemas were stored, or with bytes that do not decode).
var ErrSchemaUnavailable = errors.New("schema unavailable")

// sameContent reports whether r and o register the same location, type,
// schema bytes, description, properties, compatibility mode and protection
// (times and versions aside).
func (r Registration) sameContent(o Registration) bool {
	return r.location == o.location && r.tableType == o.tableType && bytes.Equal(r.schemaIPC, o.schemaIPC) &&
		r.description == o.description && maps.Equal(r.properties, o.properties) && r.compatibility == o.compatibility &&
		r.protected == o.protected
}

// registrationJSON is the stored shape. Fields added later must be optional:
// JSON written by older versions has to keep decoding.
type registrationJSON struct {
	Location  string    `json:"location"`
	TableType string    `json:"table_type,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	Version   int64     `json:"version,omitempty"`
	// CreationID is absent in registrations written before it existed.
	CreationID string   `json:"creation_id,omitempty"`
	SchemaIPC  ipcBytes `json:"schema_ipc,omitempty"`
	// Description and Properties are absent in registrations written
	// before they existed, and in those without any.
	Description string            `json:"description,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	// UpdatedBy and Op are absent in registrations written before they
	// existed.
	UpdatedBy string `json:"updated_by,omitempty"`
	Op        string `json:"op,omitempty"`
	// Compatibility is absent for none, and in registrations written
	// before modes existed.
	Compatibility string `json:"compatibility,omitempty"`
	// Protected is absent when false.
	Protected bool `json:"protected,omitempty"`
	// IcebergFieldIDs is the schema's Iceberg field ids; absent without a
	// schema and in registrations written before ids were recorded.
	IcebergFieldIDs *fieldIDsJSON `json:"iceberg_field_ids,omitempty"`
}

// fieldIDsJSON is icebergschema.FieldIDs as stored: ids in
// icebergschema.Paths order, each from 1 to last_column_id, none twice.
type fieldIDsJSON struct {
	IDs          []int32 `json:"ids"`
	LastColumnID int32   `json:"last_column_id"`
}

// check refuses ids that cannot number a schema's fields.
func (f *fieldIDsJSON) check() error {
	seen := make(map[int32]bool, len(f.IDs))
	for _, id := range f.IDs {
		switch {
		case id <= 0 || id > f.LastColumnID:
			return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("iceberg field id %d outside 1 to last column id %d", id, f.LastColumnID)}
		case seen[id]:
			return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("iceberg field id %d given twice", id)}
		}
		seen[id] = true
	}
	return nil
}

// MarshalJSON writes the stored shape, schema_ipc as standard base64.
func (r Registration) MarshalJSON() ([]byte, error) {
	var ids *fieldIDsJSON
	if r.fieldIDs != nil && r.schemaIPC != nil {
		ids = &fieldIDsJSON{IDs: r.fieldIDs.IDs, LastColumnID: r.fieldIDs.LastColumnID}
	}
	return json.Marshal(registrationJSON{
		Location:        r.location,
		TableType:       r.tableType,
		CreatedAt:       r.createdAt,
		UpdatedAt:       r.updatedAt,
		Version:         r.version,
		CreationID:      r.creationID,
		SchemaIPC:       r.schemaIPC,
		Description:     r.description,
		Properties:      r.properties,
		UpdatedBy:       r.updatedBy,
		Op:              r.op,
		Compatibility:   string(r.compatibility),
		Protected:       r.protected,
		IcebergFieldIDs: ids,
	})
}

// UnmarshalJSON reads the stored shape and every older one. A location is
// required; schema_ipc is optional (absent: no schema) and may be base64 or,
// as the Rust predecessor wrote it, an array of byte values; unknown fields
// are ignored; a missing table type, update time or version takes its
// default; a missing description or properties is none; iceberg field ids
// are kept only with a schema (without them FieldIDs assigns fresh ones),
// and refused when they cannot number a schema (one not positive, above
// the last column id or given twice; their count is the schema's paths'
// as written, which ToIceberg checks).
func (r *Registration) UnmarshalJSON(b []byte) error {
	var w registrationJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return &Error{Kind: ErrInvalidRegistration, Detail: err.Error()}
	}
	if w.Location == "" {
		return &Error{Kind: ErrInvalidRegistration, Detail: "no location"}
	}
	if w.TableType == "" {
		w.TableType = DefaultTableType
	}
	if w.UpdatedAt.IsZero() {
		w.UpdatedAt = w.CreatedAt
	}
	if w.Version <= 0 {
		w.Version = 1
	}
	switch w.Op {
	case "", OpCreate, OpUpdate, OpDrop, OpUndrop:
	default:
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("unknown op %q", w.Op)}
	}
	// None is stored as no mode, so a stored "none" is as unknown as any.
	if m := schemadiff.Mode(w.Compatibility); m != "" && (m == schemadiff.None || !m.Valid()) {
		return &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("unknown compatibility %q", w.Compatibility)}
	}
	var ids *icebergschema.FieldIDs
	if w.IcebergFieldIDs != nil && w.SchemaIPC != nil {
		if err := w.IcebergFieldIDs.check(); err != nil {
			return err
		}
		ids = &icebergschema.FieldIDs{IDs: w.IcebergFieldIDs.IDs, LastColumnID: w.IcebergFieldIDs.LastColumnID}
	}
	*r = Registration{
		location:      w.Location,
		tableType:     w.TableType,
		createdAt:     w.CreatedAt.UTC(),
		updatedAt:     w.UpdatedAt.UTC(),
		version:       w.Version,
		creationID:    w.CreationID,
		schemaIPC:     w.SchemaIPC,
		description:   w.Description,
		properties:    cloneProperties(w.Properties),
		updatedBy:     w.UpdatedBy,
		op:            w.Op,
		compatibility: schemadiff.Mode(w.Compatibility),
		protected:     w.Protected,
		fieldIDs:      ids,
	}
	return nil
}

// DecodeRegistration decodes stored registration JSON.
func DecodeRegistration(b []byte) (Registration, error) {
	var r Registration
	if err := json.Unmarshal(b, &r); err != nil {
		if errors.Is(err, ErrInvalidRegistration) {
			return Registration{}, err
		}
		return Registration{}, &Error{Kind: ErrInvalidRegistration, Detail: err.Error()}
	}
	return r, nil
}

// ipcBytes is schema_ipc in JSON: standard base64 when written; base64 or an
// array of integers 0–255 when read.
type ipcBytes []byte

func (p ipcBytes) MarshalJSON() ([]byte, error) {
	return json.Marshal(base64.StdEncoding.EncodeToString(p))
}

func (p *ipcBytes) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*p = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("schema_ipc is not standard base64: %v", err)
		}
		*p = raw
		return nil
	case len(b) > 0 && b[0] == '[':
		var ints []int
		if err := json.Unmarshal(b, &ints); err != nil {
			return fmt.Errorf("schema_ipc array: %v", err)
		}
		raw := make([]byte, len(ints))
		for i, v := range ints {
			if v < 0 || v > 255 {
				return fmt.Errorf("schema_ipc array holds %d, not a byte", v)
			}
			raw[i] = byte(v)
		}
		*p = raw
		return nil
	}
	return fmt.Errorf("schema_ipc must be a base64 string or an array of bytes")
}
