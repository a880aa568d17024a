package catalog

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// KeyPrefix is the metastore prefix under which every registration lives.
const KeyPrefix = "tbl/"

// MaxNameBytes is the longest tenant, namespace or table name, in bytes of
// UTF-8. It keeps a key (tbl/ + three names + two slashes) far below the
// metastore's 2048-byte limit.
const MaxNameBytes = 255

// ErrInvalidName is wrapped by every name validation error.
var ErrInvalidName = errors.New("invalid name")

// NameError says which part of a table reference is invalid and why.
type NameError struct {
	Part   string // "tenant", "namespace" or "table"
	Value  string
	Reason string
}

func (e *NameError) Error() string { return "catalog: " + e.text() }

// text is the message without the package prefix.
func (e *NameError) text() string {
	return fmt.Sprintf("invalid %s name %q: %s", e.Part, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidName) true.
func (e *NameError) Unwrap() error { return ErrInvalidName }

// TableRef names one table: a tenant's namespace's table. In Flight SQL the
// tenant is the catalog and the namespace the db_schema.
type TableRef struct {
	Tenant    string
	Namespace string
	Name      string
}

// String returns tenant/namespace/table.
func (r TableRef) String() string { return r.Tenant + "/" + r.Namespace + "/" + r.Name }

// ValidateName checks one name: non-empty, valid UTF-8, at most MaxNameBytes,
// no '/', no control characters. part names it in the error.
func ValidateName(part, name string) error {
	fail := func(reason string) error { return &NameError{Part: part, Value: name, Reason: reason} }
	switch {
	case name == "":
		return fail("empty")
	case len(name) > MaxNameBytes:
		return fail(fmt.Sprintf("%d bytes, limit %d", len(name), MaxNameBytes))
	case !utf8.ValidString(name):
		return fail("not valid UTF-8")
	case strings.ContainsRune(name, '/'):
		return fail("contains '/'")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fail("contains a control character")
	}
	return nil
}

// Validate checks all three names.
func (r TableRef) Validate() error {
	if err := ValidateName("tenant", r.Tenant); err != nil {
		return err
	}
	if err := ValidateName("namespace", r.Namespace); err != nil {
		return err
	}
	return ValidateName("table", r.Name)
}

// Key returns the metastore key tbl/<tenant>/<namespace>/<table>, or an
// error wrapping ErrInvalidName. An invalid reference never becomes a key.
func (r TableRef) Key() (string, error) {
	if err := r.Validate(); err != nil {
		return "", err
	}
	return KeyPrefix + r.String(), nil
}

// ParseKey parses a key with KeyPrefix already stripped
// (<tenant>/<namespace>/<table>) back into a validated TableRef.
func ParseKey(stripped string) (TableRef, error) {
	parts := strings.Split(stripped, "/")
	if len(parts) != 3 {
		return TableRef{}, kindErrorf(ErrInvalidName, "key %q has %d parts, want tenant/namespace/table", stripped, len(parts))
	}
	r := TableRef{Tenant: parts[0], Namespace: parts[1], Name: parts[2]}
	if err := r.Validate(); err != nil {
		return TableRef{}, err
	}
	return r, nil
}

// Compare orders references by tenant, then namespace, then table, bytewise.
func (r TableRef) Compare(o TableRef) int {
	if c := strings.Compare(r.Tenant, o.Tenant); c != 0 {
		return c
	}
	if c := strings.Compare(r.Namespace, o.Namespace); c != 0 {
		return c
	}
	return strings.Compare(r.Name, o.Name)
}
