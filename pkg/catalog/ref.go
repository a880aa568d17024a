package catalog

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// KeyPrefix is the metastore prefix under which every registration lives.
const KeyPrefix = "tbl/"

// MaxNameBytes is the longest tenant, namespace or table name, in bytes of
// UTF-8. It keeps a key (tbl/ + three names + two slashes) far below the
// metastore's 2048-byte limit.
const MaxNameBytes = 255

// ErrInvalidName is wrapped by every name validation error.
var ErrInvalidName = errors.New("invalid name")

// NameError says which part of a table reference is invalid and why:
// catalog: invalid table name "a/b": contains '/'. It is the package's one
// error type beside *Error, kept because callers (the CLI, the
// registration API) build their messages from its parts; a name is checked
// before any operation, so it is returned as is, not inside an *Error.
type NameError struct {
	Part   string // "tenant", "namespace" or "table"
	Value  string
	Reason string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("catalog: invalid %s name %q: %s", e.Part, e.Value, e.Reason)
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

// ValidateName checks one name; part ("tenant", "namespace" or "table")
// names it in the error. Every name that reaches a key, a token's tenant
// claim or a blob passes through it, so two names that look the same are
// the same bytes and no name hides characters. A name must be:
//
//   - non-empty and at most MaxNameBytes bytes of valid UTF-8;
//   - in Unicode Normalization Form C (NFC), so "café" spelt with a
//     combining accent cannot become a second table beside the precomposed
//     one; a client normalizes before it sends;
//   - free of '/', control characters (Cc), format characters (Cf: zero
//     width U+200B, U+FEFF, the soft hyphen) and bidi controls (U+200E/F,
//     U+202A–U+202E, U+2066–U+2069), line and paragraph separators
//     (U+2028, U+2029) and U+FFFD, the replacement character a decoder puts
//     where input was not text;
//   - without white space at its start or end;
//   - neither "." nor "..", which no URL path can address.
//
// A tenant name (part "tenant") must also be free of '*' and '?', the
// wildcards of IAM policy patterns that scope a producer to its tenant.
//
// The error is a *NameError wrapping ErrInvalidName.
func ValidateName(part, name string) error {
	if reason := nameProblem(part, name); reason != "" {
		return &NameError{Part: part, Value: name, Reason: reason}
	}
	return nil
}

// nameProblem says what is wrong with name, or "" when nothing is.
func nameProblem(part, name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > MaxNameBytes:
		return fmt.Sprintf("%d bytes, limit %d", len(name), MaxNameBytes)
	case name == "." || name == "..":
		return `"." and ".." are reserved: no URL path can address them`
	}
	tenant := part == "tenant"
	ascii := true
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= utf8.RuneSelf:
			ascii = false
		case c == '/':
			return "contains '/'"
		case c < 0x20 || c == 0x7f:
			return "contains a control character"
		case tenant && (c == '*' || c == '?'):
			return fmt.Sprintf("contains %q, a wildcard in IAM policy patterns", c)
		}
	}
	if ascii {
		// No ASCII character is a format character or needs composing.
		if name[0] == ' ' || name[len(name)-1] == ' ' {
			return whiteSpaceProblem(name)
		}
		return ""
	}
	if !utf8.ValidString(name) {
		return "not valid UTF-8"
	}
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return "contains a control character"
		case unicode.Is(unicode.Bidi_Control, r):
			return fmt.Sprintf("contains the bidi control character %U", r)
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("contains the invisible format character %U", r)
		case unicode.In(r, unicode.Zl, unicode.Zp):
			return fmt.Sprintf("contains the line or paragraph separator %U", r)
		case r == utf8.RuneError:
			return "contains U+FFFD, the replacement character of a decoding error"
		}
	}
	if p := whiteSpaceProblem(name); p != "" {
		return p
	}
	if !norm.NFC.IsNormalString(name) {
		return fmt.Sprintf("not in Unicode NFC form; its NFC form is %+q", norm.NFC.String(name))
	}
	return ""
}

// whiteSpaceProblem reports white space at either end of a valid name.
func whiteSpaceProblem(name string) string {
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	switch {
	case unicode.IsSpace(first):
		return "starts with white space"
	case unicode.IsSpace(last):
		return "ends with white space"
	}
	return ""
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
		return TableRef{}, &Error{Kind: ErrInvalidName, Detail: fmt.Sprintf("key %q has %d parts, want tenant/namespace/table", stripped, len(parts))}
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
