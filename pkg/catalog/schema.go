package catalog

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MaxSchemaIPCBytes bounds an encoded schema so that a registration, base64
// inside JSON, fits one DynamoDB item (400 KB) with room for the rest.
const MaxSchemaIPCBytes = 256 << 10

// ErrInvalidSchema is wrapped by every schema validation or codec error.
var ErrInvalidSchema = errors.New("invalid schema")

// ErrTooLarge is wrapped when a schema or registration exceeds its limit.
var ErrTooLarge = errors.New("too large")

// MaxFieldNameBytes bounds a field name at any depth. Names are matched
// against clients' patterns (search, the browser); a bound keeps that work
// small. Registrations stored before the bound existed are still served.
const MaxFieldNameBytes = 1024

// validateSchema checks what lake requires of a table schema beyond Arrow's
// own rules: at least one field, unique, non-empty top-level names, and no
// field name at any depth longer than MaxFieldNameBytes.
func validateSchema(s *arrow.Schema) error {
	if s == nil || s.NumFields() == 0 {
		return &Error{Kind: ErrInvalidSchema, Detail: "no fields"}
	}
	seen := make(map[string]bool, s.NumFields())
	for _, f := range s.Fields() {
		if f.Name == "" {
			return &Error{Kind: ErrInvalidSchema, Detail: "a top-level field has an empty name"}
		}
		if seen[f.Name] {
			return &Error{Kind: ErrInvalidSchema, Detail: fmt.Sprintf("duplicate top-level field name %q", f.Name)}
		}
		seen[f.Name] = true
	}
	return checkFieldNames(s.Fields(), 0)
}

// checkFieldNames checks the names of fs and their children, to the
// depth the IPC decode-back check allows.
func checkFieldNames(fs []arrow.Field, depth int) error {
	if depth > maxSchemaDepth {
		return &Error{Kind: ErrInvalidSchema, Detail: fmt.Sprintf("fields nested deeper than %d", maxSchemaDepth)}
	}
	for _, f := range fs {
		if len(f.Name) > MaxFieldNameBytes {
			return &Error{Kind: ErrInvalidSchema, Detail: fmt.Sprintf("a field name of %d bytes (%.32q…), limit %d", len(f.Name), f.Name, MaxFieldNameBytes)}
		}
		if err := checkFieldNames(childFields(f.Type), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// childFields are a type's child fields: a struct's, union's or list's, a
// map's key and value, a dictionary's or extension type's underlying
// type's; none for other types.
func childFields(t arrow.DataType) []arrow.Field {
	switch t := t.(type) {
	case *arrow.MapType:
		return []arrow.Field{t.KeyField(), t.ItemField()}
	case *arrow.DictionaryType:
		return childFields(t.ValueType)
	case arrow.ExtensionType:
		return childFields(t.StorageType())
	case arrow.NestedType:
		return t.Fields()
	}
	return nil
}

// SchemaEqual reports whether two schemas are exactly equal: fields, types,
// nullability, field metadata and schema metadata.
func SchemaEqual(a, b *arrow.Schema) bool {
	return a.Equal(b) && a.Metadata().Equal(b.Metadata())
}

// EncodeSchema validates s, encodes it as an Arrow IPC schema message (the
// form flight.SerializeSchema writes and Flight SQL's table_schema carries),
// decodes the bytes back and checks they give exactly s. Any failure wraps
// ErrInvalidSchema (or ErrTooLarge).
func EncodeSchema(s *arrow.Schema) (out []byte, err error) {
	if err := validateSchema(s); err != nil {
		return nil, err
	}
	defer func() {
		// The IPC writer panics on types it cannot write.
		if r := recover(); r != nil {
			out, err = nil, &Error{Kind: ErrInvalidSchema, Detail: fmt.Sprintf("cannot encode as Arrow IPC: %v", r)}
		}
	}()
	b := serializeSchema(s)
	if len(b) > MaxSchemaIPCBytes {
		return nil, &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("schema encodes to %d bytes, limit %d", len(b), MaxSchemaIPCBytes)}
	}
	back, err := DecodeSchema(b)
	if err != nil {
		// DecodeSchema's errors are *Error; keep what its kind does not say.
		detail := err.Error()
		if e, ok := err.(*Error); ok {
			detail = e.Detail
		}
		return nil, &Error{Kind: ErrInvalidSchema, Detail: "decode-back check: " + detail}
	}
	if !SchemaEqual(s, back) {
		return nil, &Error{Kind: ErrInvalidSchema, Detail: fmt.Sprintf("decode-back check: the encoded schema decodes to %s, not the schema given", back)}
	}
	return b, nil
}

// DecodeSchema decodes Arrow IPC schema bytes (an encapsulated schema
// message, optionally followed by an end-of-stream marker, as
// flight.SerializeSchema and pyarrow's Schema.serialize write). The message's
// structure is verified first, so no input panics, exhausts memory or
// recurses without bound. Errors wrap ErrInvalidSchema or ErrTooLarge.
func DecodeSchema(b []byte) (s *arrow.Schema, err error) {
	if len(b) == 0 {
		return nil, &Error{Kind: ErrInvalidSchema, Detail: "empty IPC bytes"}
	}
	if len(b) > MaxSchemaIPCBytes {
		return nil, &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("%d IPC bytes, limit %d", len(b), MaxSchemaIPCBytes)}
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, &Error{Kind: ErrInvalidSchema, Detail: fmt.Sprintf("malformed IPC schema: %v", r)}
		}
	}()
	if err := verifySchemaMessage(b); err != nil {
		return nil, &Error{Kind: ErrInvalidSchema, Detail: fmt.Sprintf("not an Arrow IPC schema message: %v", err)}
	}
	rdr, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(memory.DefaultAllocator),
		ipc.WithMetadataSizeLimit(int64(len(b))), ipc.WithBodySizeLimit(int64(len(b))))
	if err != nil {
		return nil, &Error{Kind: ErrInvalidSchema, Detail: fmt.Sprintf("not an Arrow IPC schema: %v", err)}
	}
	defer rdr.Release()
	return rdr.Schema(), nil
}

// serializeSchema writes what flight.SerializeSchema writes (a schema message
// and an end-of-stream marker) without importing the Flight package, which
// would bring gRPC into every binary that registers tables.
func serializeSchema(s *arrow.Schema) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s), ipc.WithAllocator(memory.DefaultAllocator))
	w.Close()
	return buf.Bytes()
}
