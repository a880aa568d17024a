// Package schemadiff compares two Arrow schemas field by field, through
// nested types, and says which changes a compatibility mode refuses: the
// rules a table's schema evolution is held to.
//
// # Paths
//
// A change names the field it is about by a dotted path: top-level fields
// by name, a struct's fields after a dot ("customer.address.zip"), a list's
// elements as "element" ("tags.element"), a map's keys and values as "key"
// and "value" ("attrs.value"). Fields are matched by name at each level
// (the n-th field of a name with the n-th of the same name); a rename is a
// removal and an addition, never guessed.
//
// # Kinds of change
//
//   - added, removed: a field one side lacks;
//   - promoted: the type widened so that every value of the old type is a
//     value of the new one: a wider integer of the same signedness (or a
//     signed integer wider than an unsigned one), a wider float, a decimal
//     of greater precision and the same scale (decimal128 to decimal256
//     included), string to large_string, binary to large_binary, list to
//     large_list;
//   - narrowed: the reverse of a promotion;
//   - retyped: any other change of type (another kind, a timestamp's unit
//     or zone, a fixed size);
//   - reencoded: dictionary encoding added, removed or its index type
//     changed, with the same value type (readers see the same values);
//   - made_nullable, made_required: the field's nullability changed;
//   - metadata_changed: the field's key-value metadata (comments, field
//     ids) changed, or the schema's own (path "(schema)").
//
// # Modes
//
// Modelled on Iceberg's schema evolution and Confluent Schema Registry's
// compatibility modes, for a table whose files were written with the old
// schema and are read with the new one (and the reverse):
//
//   - none: nothing is refused;
//   - backward: readers with the new schema read data written with the
//     old one. Refused: a new field that is not nullable (old data has no
//     value for it), a narrowed or retyped field, a field made required
//     (old data may hold nulls). Allowed: removals, promotions, fields
//     made nullable, new nullable fields, metadata.
//   - forward: readers with the old schema read data written with the new
//     one. Refused: removing a required field (old readers need it), a
//     promoted or retyped field (old readers cannot read the wider type),
//     a field made nullable (old readers expect no nulls). Allowed:
//     additions, narrowing, fields made required, removing nullable
//     fields, metadata.
//   - full: both.
//
// Reencoding and metadata changes are allowed by every mode.
//
// # Bounds
//
// A schema comes from a tenant, and a few hundred kilobytes of it can hold
// thousands of changes at paths tens of kilobytes long. Diff and Check
// therefore return at most the number of changes they are asked for
// (MaxChanges for every caller in lake) and count the rest without
// building them: memory is proportional to what they return, not to the
// schema's changes. Every path they return is at most MaxPathBytes: a
// longer one keeps its first and last bytes (whole UTF-8 sequences) with
// "…" between ("customer.addr….zip"), so the leaf's name stays readable.
// Every type they return (From, To) is at most MaxTypeBytes, cut at its
// end with "…" (arrowtype.Short).
package schemadiff

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/arrowtype"
)

// Kind is what changed about a field.
type Kind string

// The kinds of change (see the package comment).
const (
	Added           Kind = "added"
	Removed         Kind = "removed"
	Promoted        Kind = "promoted"
	Narrowed        Kind = "narrowed"
	Retyped         Kind = "retyped"
	Reencoded       Kind = "reencoded"
	MadeNullable    Kind = "made_nullable"
	MadeRequired    Kind = "made_required"
	MetadataChanged Kind = "metadata_changed"
)

// Change is one difference between two schemas.
type Change struct {
	// Path is the field's dotted path (see the package comment).
	Path string
	Kind Kind
	// From and To are the field's type before and after (Arrow's type
	// strings) for a change of type; the field's type on its one side for
	// added and removed; empty otherwise.
	From, To string
	// Nullable is whether the field is nullable: after the change for
	// added, before it for removed (what the modes' rules need).
	Nullable bool
}

func (c Change) String() string {
	switch c.Kind {
	case Added, Removed:
		null := "required"
		if c.Nullable {
			null = "nullable"
		}
		t := c.To
		if c.Kind == Removed {
			t = c.From
		}
		return fmt.Sprintf("%s: %s (%s %s)", c.Path, c.Kind, null, t)
	case Promoted, Narrowed, Retyped, Reencoded:
		return fmt.Sprintf("%s: %s from %s to %s", c.Path, c.Kind, c.From, c.To)
	}
	return fmt.Sprintf("%s: %s", c.Path, c.Kind)
}

// SchemaPath is the path of a change to the schema itself rather than to
// one of its fields (its key-value metadata).
const SchemaPath = "(schema)"

// The bounds of what Diff and Check return (see the package comment).
const (
	// MaxChanges is how many changes lake asks Diff and Check for: the
	// registration API's 409 and diff, lake diff.
	MaxChanges = 100
	// MaxPathBytes bounds a returned Change's Path.
	MaxPathBytes = 256
	// MaxTypeBytes bounds a returned Change's From and To.
	MaxTypeBytes = 256
)

// Diff returns the first limit changes from old to new and how many there
// are in all: a change of the schema's own metadata first (path
// SchemaPath, kind MetadataChanged), then for each level the fields of new
// in order (added or changed, with their nested changes after them), then
// the fields of old that new lacks, in order. Two equal schemas have no
// changes. Paths and types are bounded (see the package comment); limit
// ≤ 0 returns only the count.
func Diff(old, new *arrow.Schema, limit int) (changes []Change, total int) {
	d := differ{limit: limit, mode: None}
	d.diff(old, new)
	changes = make([]Change, len(d.out))
	for i, b := range d.out {
		changes[i] = b.Change
	}
	return changes, d.total
}

// differ walks two schemas, counting every change it is after and keeping
// the first limit of them.
type differ struct {
	limit int
	// mode, when not None, makes the differ keep and count only the
	// changes the mode refuses, with why.
	mode Mode
	// names is the path of the field being compared, one name per level,
	// and pathBytes its length joined with dots; a path is built only for
	// a change that is kept.
	names     []string
	pathBytes int
	out       []Breach
	total     int
}

func (d *differ) diff(old, new *arrow.Schema) {
	if !old.Metadata().Equal(new.Metadata()) {
		d.change(MetadataChanged, nil, nil, false)
	}
	d.fields(old.Fields(), new.Fields())
}

// push enters the field name below the current path; pop leaves it.
func (d *differ) push(name string) {
	if len(d.names) > 0 {
		d.pathBytes++
	}
	d.pathBytes += len(name)
	d.names = append(d.names, name)
}

func (d *differ) pop() {
	last := d.names[len(d.names)-1]
	d.names = d.names[:len(d.names)-1]
	d.pathBytes -= len(last)
	if len(d.names) > 0 {
		d.pathBytes--
	}
}

// change counts a change of kind at the current path (from and to are the
// types it names, nil for none; nullable as Change.Nullable) and keeps it
// while fewer than limit are kept.
func (d *differ) change(kind Kind, from, to arrow.DataType, nullable bool) {
	var reason string
	if d.mode != None {
		if reason = refuses(d.mode, Change{Kind: kind, Nullable: nullable}); reason == "" {
			return
		}
	}
	d.total++
	if len(d.out) >= d.limit {
		return
	}
	c := Change{Path: d.path(), Kind: kind, Nullable: nullable}
	if from != nil {
		c.From = arrowtype.Short(from, MaxTypeBytes)
	}
	if to != nil {
		c.To = arrowtype.Short(to, MaxTypeBytes)
	}
	d.out = append(d.out, Breach{Change: c, Reason: reason})
}

// path is the current path joined with dots, SchemaPath at the top, with
// its middle elided past MaxPathBytes.
func (d *differ) path() string {
	if len(d.names) == 0 {
		return SchemaPath
	}
	if d.pathBytes <= MaxPathBytes {
		return strings.Join(d.names, ".")
	}
	const ellipsis = "…"
	head := (MaxPathBytes - len(ellipsis)) / 2
	tail := MaxPathBytes - len(ellipsis) - head
	b := make([]byte, 0, MaxPathBytes)
	b = d.span(b, 0, head)
	b = b[:len(trimEnd(b))]
	b = append(b, ellipsis...)
	rest := d.span(nil, d.pathBytes-tail, d.pathBytes)
	for len(rest) > 0 && !utf8.RuneStart(rest[0]) {
		rest = rest[1:]
	}
	return string(append(b, rest...))
}

// span appends bytes lo to hi of the path joined with dots to b, without
// joining it.
func (d *differ) span(b []byte, lo, hi int) []byte {
	pos := 0
	for i, name := range d.names {
		if i > 0 {
			if lo <= pos && pos < hi {
				b = append(b, '.')
			}
			pos++
		}
		end := pos + len(name)
		if end > lo && pos < hi {
			b = append(b, name[max(lo-pos, 0):min(hi, end)-pos]...)
		}
		pos = end
	}
	return b
}

// trimEnd drops the bytes of an incomplete UTF-8 sequence at b's end.
func trimEnd(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// fields compares two lists of sibling fields under the current path.
func (d *differ) fields(old, new []arrow.Field) {
	// The n-th field of a name pairs with the n-th of the same name.
	byName := map[string][]int{}
	for i, f := range old {
		byName[f.Name] = append(byName[f.Name], i)
	}
	matched := make([]bool, len(old))
	for _, f := range new {
		d.push(f.Name)
		if idx := byName[f.Name]; len(idx) == 0 {
			d.change(Added, nil, f.Type, f.Nullable)
		} else {
			byName[f.Name] = idx[1:]
			matched[idx[0]] = true
			d.field(old[idx[0]], f)
		}
		d.pop()
	}
	for i, f := range old {
		if !matched[i] {
			d.push(f.Name)
			d.change(Removed, f.Type, nil, f.Nullable)
			d.pop()
		}
	}
}

// field compares one field at the current path.
func (d *differ) field(old, new arrow.Field) {
	switch {
	case old.Nullable && !new.Nullable:
		d.change(MadeRequired, nil, nil, false)
	case !old.Nullable && new.Nullable:
		d.change(MadeNullable, nil, nil, false)
	}
	if !old.Metadata.Equal(new.Metadata) {
		d.change(MetadataChanged, nil, nil, false)
	}
	d.typ(old.Type, new.Type)
}

// child compares a nested field (a list's element, a map's key or value)
// under its fixed name.
func (d *differ) child(name string, old, new arrow.Field) {
	d.push(name)
	d.field(renamed(old, name), renamed(new, name))
	d.pop()
}

// typ compares the types of the field at the current path.
func (d *differ) typ(old, new arrow.DataType) {
	if arrow.TypeEqual(old, new, arrow.CheckMetadata()) {
		return
	}
	change := func(k Kind) { d.change(k, old, new, false) }
	od, oDict := old.(*arrow.DictionaryType)
	nd, nDict := new.(*arrow.DictionaryType)
	if oDict || nDict {
		ov, nv := old, new
		if oDict {
			ov = od.ValueType
		}
		if nDict {
			nv = nd.ValueType
		}
		if oDict != nDict || !arrow.TypeEqual(od.IndexType, nd.IndexType) || od.Ordered != nd.Ordered {
			change(Reencoded)
		}
		d.typ(ov, nv)
		return
	}
	oe, oList := listElem(old)
	ne, nList := listElem(new)
	switch {
	case oList && nList:
		switch ok, nk := old.ID(), new.ID(); {
		case ok == nk && ok == arrow.FIXED_SIZE_LIST && old.(*arrow.FixedSizeListType).Len() != new.(*arrow.FixedSizeListType).Len():
			change(Retyped)
			return
		case ok == arrow.LIST && nk == arrow.LARGE_LIST:
			change(Promoted)
		case ok == arrow.LARGE_LIST && nk == arrow.LIST:
			change(Narrowed)
		case ok != nk:
			change(Retyped)
			return
		}
		d.child("element", oe, ne)
		return
	case oList || nList:
		change(Retyped)
		return
	}
	om, oMap := old.(*arrow.MapType)
	nm, nMap := new.(*arrow.MapType)
	switch {
	case oMap && nMap:
		if om.KeysSorted != nm.KeysSorted {
			change(Retyped)
			return
		}
		d.child("key", om.KeyField(), nm.KeyField())
		d.child("value", om.ItemField(), nm.ItemField())
		return
	case oMap || nMap:
		change(Retyped)
		return
	}
	os, oStruct := old.(*arrow.StructType)
	ns, nStruct := new.(*arrow.StructType)
	switch {
	case oStruct && nStruct:
		d.fields(os.Fields(), ns.Fields())
		return
	case oStruct || nStruct:
		change(Retyped)
		return
	}
	switch {
	case promotes(old, new):
		change(Promoted)
	case promotes(new, old):
		change(Narrowed)
	default:
		change(Retyped)
	}
}

// listElem returns the element field of a list-like type.
func listElem(t arrow.DataType) (arrow.Field, bool) {
	switch t := t.(type) {
	case *arrow.ListType:
		return t.ElemField(), true
	case *arrow.LargeListType:
		return t.ElemField(), true
	case *arrow.FixedSizeListType:
		return t.ElemField(), true
	}
	return arrow.Field{}, false
}

// renamed is f under the path element's fixed name: a list's element field
// is "item" in one writer and "element" in another, which is no change.
func renamed(f arrow.Field, name string) arrow.Field {
	f.Name = name
	return f
}

// intWidth gives the bits and signedness of an integer type.
func intWidth(t arrow.DataType) (bits int, signed, ok bool) {
	switch t.ID() {
	case arrow.INT8:
		return 8, true, true
	case arrow.INT16:
		return 16, true, true
	case arrow.INT32:
		return 32, true, true
	case arrow.INT64:
		return 64, true, true
	case arrow.UINT8:
		return 8, false, true
	case arrow.UINT16:
		return 16, false, true
	case arrow.UINT32:
		return 32, false, true
	case arrow.UINT64:
		return 64, false, true
	}
	return 0, false, false
}

// floatBits are the float types' widths.
var floatBits = map[arrow.Type]int{arrow.FLOAT16: 16, arrow.FLOAT32: 32, arrow.FLOAT64: 64}

// promotes reports whether to can hold every value of from (and is not
// the same type).
func promotes(from, to arrow.DataType) bool {
	if fb, fs, ok := intWidth(from); ok {
		tb, ts, ok := intWidth(to)
		return ok && ((fs == ts && tb > fb) || (!fs && ts && tb > fb))
	}
	if fb, ok := floatBits[from.ID()]; ok {
		tb, ok := floatBits[to.ID()]
		return ok && tb > fb
	}
	if fd, ok := from.(arrow.DecimalType); ok {
		td, ok := to.(arrow.DecimalType)
		if !ok || fd.GetScale() != td.GetScale() {
			return false
		}
		return td.GetPrecision() > fd.GetPrecision() || (td.GetPrecision() == fd.GetPrecision() && decimalBits(to) > decimalBits(from))
	}
	switch {
	case from.ID() == arrow.STRING && to.ID() == arrow.LARGE_STRING:
		return true
	case from.ID() == arrow.BINARY && to.ID() == arrow.LARGE_BINARY:
		return true
	}
	return false
}

func decimalBits(t arrow.DataType) int {
	switch t.ID() {
	case arrow.DECIMAL32:
		return 32
	case arrow.DECIMAL64:
		return 64
	case arrow.DECIMAL128:
		return 128
	}
	return 256
}

// Mode is a table's compatibility mode.
type Mode string

// The modes (see the package comment).
const (
	None     Mode = "none"
	Backward Mode = "backward"
	Forward  Mode = "forward"
	Full     Mode = "full"
)

// Valid reports whether m is one of the four modes (by its exact name).
func (m Mode) Valid() bool {
	switch m {
	case None, Backward, Forward, Full:
		return true
	}
	return false
}

// ParseMode reads a mode by name, case-insensitively; "" is None. Any
// other text is an error naming the modes.
func ParseMode(s string) (Mode, error) {
	m := Mode(strings.ToLower(strings.TrimSpace(s)))
	switch {
	case m == "":
		return None, nil
	case m.Valid():
		return m, nil
	}
	return "", fmt.Errorf("schemadiff: compatibility mode %q: want none, backward, forward or full", s)
}

// Breach is a change a mode refuses, with why.
type Breach struct {
	Change
	// Reason says why, in a sentence that reads after the change.
	Reason string
}

func (b Breach) String() string { return b.Change.String() + ": " + b.Reason }

// Check returns the first limit changes from old to new that mode
// refuses, in Diff's order, and how many it refuses in all; none when the
// change keeps the mode. Paths and types are bounded as Diff's; limit ≤ 0
// returns only the count.
func Check(mode Mode, old, new *arrow.Schema, limit int) (breaches []Breach, total int) {
	if mode == None {
		return nil, 0
	}
	d := differ{limit: limit, mode: mode}
	d.diff(old, new)
	return d.out, d.total
}

// Reason says why mode refuses c, or "" when it allows it: what Check
// says of each change of Diff's.
func Reason(mode Mode, c Change) string { return refuses(mode, c) }

// Breaking says that n changes break mode, in the singular for one: "1
// change breaks backward compatibility", "2 changes break full
// compatibility".
func Breaking(n int, mode Mode) string {
	if n == 1 {
		return fmt.Sprintf("1 change breaks %s compatibility", mode)
	}
	return fmt.Sprintf("%d changes break %s compatibility", n, mode)
}

// refuses says why mode refuses c, or "".
func refuses(mode Mode, c Change) string {
	back, fwd := mode == Backward || mode == Full, mode == Forward || mode == Full
	switch c.Kind {
	case Added:
		if back && !c.Nullable {
			return "a new field must be nullable: data written before it has no value for it"
		}
	case Removed:
		if fwd && !c.Nullable {
			return "a required field cannot be removed: readers of the old schema need it"
		}
	case Promoted:
		if fwd {
			return "readers of the old schema cannot read the wider type"
		}
	case Narrowed:
		if back {
			return "data written before may not fit the narrower type"
		}
	case Retyped:
		if back || fwd {
			return "the values of one type are not values of the other"
		}
	case MadeRequired:
		if back {
			return "data written before may hold nulls"
		}
	case MadeNullable:
		if fwd {
			return "readers of the old schema expect no nulls"
		}
	}
	return ""
}
