package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// verifySchemaMessage checks the flatbuffer structure of an encapsulated
// Arrow IPC schema message before arrow-go's reader sees it. The reader
// trusts the vector lengths it finds and allocates by them, and recurses into
// field children without a depth limit, so a few crafted bytes could make it
// allocate gigabytes or recurse forever: failures no recover() catches.
// This walk bounds every vector length by the bytes that could hold it,
// every offset by the buffer, and the nesting depth by maxSchemaDepth.
func verifySchemaMessage(b []byte) error {
	// Encapsulation: [0xFFFFFFFF] int32 metadata length, flatbuffer, body.
	pos := 0
	if len(b) >= 4 && binary.LittleEndian.Uint32(b) == 0xFFFFFFFF {
		pos = 4
	}
	if len(b) < pos+4 {
		return errors.New("truncated message length")
	}
	n := int64(int32(binary.LittleEndian.Uint32(b[pos:])))
	pos += 4
	if n < 8 || n > int64(len(b)-pos) {
		return fmt.Errorf("message metadata length %d outside the %d bytes given", n, len(b)-pos)
	}
	v := &fbVerifier{buf: b[pos : pos+int(n)]}
	msg, err := v.root()
	if err != nil {
		return err
	}
	// Message: version(0) header_type(1) header(2) bodyLength(3) custom_metadata(4).
	if ht, ok, err := v.scalar(msg, 1, 1); err != nil {
		return err
	} else if !ok || ht != 1 { // MessageHeader.Schema
		return errors.New("not a schema message")
	}
	if bl, ok, err := v.scalar(msg, 3, 8); err != nil {
		return err
	} else if ok && bl != 0 {
		return fmt.Errorf("schema message declares a body of %d bytes", int64(bl))
	}
	if err := v.keyValues(msg, 4); err != nil {
		return err
	}
	schema, ok, err := v.table(msg, 2)
	if err != nil || !ok {
		return errors.Join(errors.New("schema message has no schema"), err)
	}
	// Schema: endianness(0) fields(1) custom_metadata(2) features(3).
	if err := v.keyValues(schema, 2); err != nil {
		return err
	}
	if _, _, err := v.vector(schema, 3, 8); err != nil {
		return err
	}
	return v.fields(schema, 1, 0)
}

const maxSchemaDepth = 64

type fbVerifier struct {
	buf    []byte
	tables int
}

func (v *fbVerifier) u32(at int) (int, error) {
	if at < 0 || at+4 > len(v.buf) {
		return 0, fmt.Errorf("offset %d out of bounds", at)
	}
	return int(binary.LittleEndian.Uint32(v.buf[at:])), nil
}

func (v *fbVerifier) root() (int, error) {
	off, err := v.u32(0)
	if err != nil {
		return 0, err
	}
	return v.checkTable(off)
}

// checkTable verifies the table at pos and its vtable are in bounds.
func (v *fbVerifier) checkTable(pos int) (int, error) {
	v.tables++
	if v.tables > 1<<16 {
		return 0, errors.New("too many tables")
	}
	if pos < 0 || pos+4 > len(v.buf) {
		return 0, fmt.Errorf("table at %d out of bounds", pos)
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(v.buf[pos:])))
	if vt < 0 || vt+4 > len(v.buf) {
		return 0, fmt.Errorf("vtable at %d out of bounds", vt)
	}
	vtSize := int(binary.LittleEndian.Uint16(v.buf[vt:]))
	tblSize := int(binary.LittleEndian.Uint16(v.buf[vt+2:]))
	if vtSize < 4 || vtSize%2 != 0 || vt+vtSize > len(v.buf) || pos+tblSize > len(v.buf) {
		return 0, fmt.Errorf("table at %d has a malformed vtable", pos)
	}
	return pos, nil
}

// field returns the absolute position of field i of the table at pos, or
// false when absent.
func (v *fbVerifier) field(pos, i, size int) (int, bool, error) {
	vt := pos - int(int32(binary.LittleEndian.Uint32(v.buf[pos:])))
	vtSize := int(binary.LittleEndian.Uint16(v.buf[vt:]))
	if 4+2*i+2 > vtSize {
		return 0, false, nil
	}
	off := int(binary.LittleEndian.Uint16(v.buf[vt+4+2*i:]))
	if off == 0 {
		return 0, false, nil
	}
	at := pos + off
	if at+size > len(v.buf) {
		return 0, false, fmt.Errorf("field %d of table at %d out of bounds", i, pos)
	}
	return at, true, nil
}

func (v *fbVerifier) scalar(pos, i, size int) (uint64, bool, error) {
	at, ok, err := v.field(pos, i, size)
	if err != nil || !ok {
		return 0, ok, err
	}
	var x uint64
	for k := size - 1; k >= 0; k-- {
		x = x<<8 | uint64(v.buf[at+k])
	}
	return x, true, nil
}

// indirect follows the offset stored at at.
func (v *fbVerifier) indirect(at int) (int, error) {
	rel, err := v.u32(at)
	if err != nil {
		return 0, err
	}
	return at + rel, nil
}

func (v *fbVerifier) table(pos, i int) (int, bool, error) {
	at, ok, err := v.field(pos, i, 4)
	if err != nil || !ok {
		return 0, ok, err
	}
	t, err := v.indirect(at)
	if err != nil {
		return 0, false, err
	}
	t, err = v.checkTable(t)
	return t, err == nil, err
}

// vector returns the start of the elements and the length of the vector in
// field i, checking all elem-sized elements fit in the buffer.
func (v *fbVerifier) vector(pos, i, elem int) (int, int, error) {
	at, ok, err := v.field(pos, i, 4)
	if err != nil || !ok {
		return 0, 0, err
	}
	vec, err := v.indirect(at)
	if err != nil {
		return 0, 0, err
	}
	n, err := v.u32(vec)
	if err != nil {
		return 0, 0, err
	}
	if n > (len(v.buf)-vec-4)/elem {
		return 0, 0, fmt.Errorf("vector of %d elements at %d overruns the buffer", n, vec)
	}
	return vec + 4, n, nil
}

func (v *fbVerifier) str(pos, i int) error {
	_, _, err := v.vector(pos, i, 1)
	return err
}

// tables visits each table of the vector of tables in field i.
func (v *fbVerifier) tablesOf(pos, i int, visit func(int) error) error {
	start, n, err := v.vector(pos, i, 4)
	if err != nil {
		return err
	}
	for k := range n {
		t, err := v.indirect(start + 4*k)
		if err != nil {
			return err
		}
		if t, err = v.checkTable(t); err != nil {
			return err
		}
		if err := visit(t); err != nil {
			return err
		}
	}
	return nil
}

func (v *fbVerifier) keyValues(pos, i int) error {
	return v.tablesOf(pos, i, func(kv int) error {
		if err := v.str(kv, 0); err != nil {
			return err
		}
		return v.str(kv, 1)
	})
}

// fields verifies the vector of Field tables in field i, recursively.
// Field: name(0) nullable(1) type_type(2) type(3) dictionary(4) children(5)
// custom_metadata(6).
func (v *fbVerifier) fields(pos, i, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("fields nested deeper than %d", maxSchemaDepth)
	}
	return v.tablesOf(pos, i, func(f int) error {
		if err := v.str(f, 0); err != nil {
			return err
		}
		if err := v.keyValues(f, 6); err != nil {
			return err
		}
		if typ, ok, err := v.table(f, 3); err != nil {
			return err
		} else if ok {
			// Of the type tables only Timestamp (timezone, field 1) and
			// Union (typeIds, field 1) hold offsets.
			tt, _, err := v.scalar(f, 2, 1)
			if err != nil {
				return err
			}
			switch tt {
			case 10: // Timestamp
				if err := v.str(typ, 1); err != nil {
					return err
				}
			case 14: // Union
				if _, _, err := v.vector(typ, 1, 4); err != nil {
					return err
				}
			}
		}
		if dict, ok, err := v.table(f, 4); err != nil {
			return err
		} else if ok {
			if _, _, err := v.table(dict, 1); err != nil {
				return err
			}
		}
		return v.fields(f, 5, depth+1)
	})
}
