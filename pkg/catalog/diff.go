package catalog

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/lake-catalog/lake/pkg/schemadiff"
)

// AttributeChange is one difference between two states of a registration
// outside its schema.
type AttributeChange struct {
	// Attribute is what changed: "description", "location", "table_type",
	// "compatibility", "protected", or "properties.<key>" for one property.
	Attribute string `json:"attribute"`
	// Kind is "changed", or "added" or "removed" for a property (or a
	// schema one side lacks: Attribute "schema").
	Kind string `json:"kind"`
	// From and To are the values before and after ("" for the side a
	// property or schema is missing from).
	From string `json:"from"`
	To   string `json:"to"`
}

func (c AttributeChange) String() string {
	switch c.Kind {
	case "added":
		return fmt.Sprintf("%s: added %q", c.Attribute, c.To)
	case "removed":
		return fmt.Sprintf("%s: removed (was %q)", c.Attribute, c.From)
	}
	return fmt.Sprintf("%s: %q → %q", c.Attribute, c.From, c.To)
}

// VersionDiff is what changed from one state of a registration to another:
// the schema field by field (schemadiff.Diff, dotted paths through nested
// types; its first schemadiff.MaxChanges changes, SchemaCount of them in
// all), then the registration's other attributes.
type VersionDiff struct {
	From, To    int64
	Schema      []schemadiff.Change
	SchemaCount int
	Attributes  []AttributeChange
}

// Lines says each change on a line: the schema's, a line counting the
// schema's changes left out when there are any ("… and 2900 more schema
// changes (3000 in all)"), then the attributes'.
func (d VersionDiff) Lines() []string {
	out := make([]string, 0, len(d.Schema)+1+len(d.Attributes))
	for _, c := range d.Schema {
		out = append(out, c.String())
	}
	switch more := d.SchemaCount - len(d.Schema); {
	case more == 1:
		out = append(out, fmt.Sprintf("… and 1 more schema change (%d in all)", d.SchemaCount))
	case more > 1:
		out = append(out, fmt.Sprintf("… and %d more schema changes (%d in all)", more, d.SchemaCount))
	}
	for _, c := range d.Attributes {
		out = append(out, c.String())
	}
	return out
}

// DiffRegistrations compares two states of a registration, a then b,
// keeping the first schemadiff.MaxChanges changes of the schema and
// counting the rest. A schema that does not decode compares as none.
func DiffRegistrations(a, b Registration) VersionDiff {
	d := VersionDiff{From: a.version, To: b.version}
	as, aerr := a.Schema()
	bs, berr := b.Schema()
	switch {
	case aerr == nil && berr == nil:
		d.Schema, d.SchemaCount = schemadiff.Diff(as, bs, schemadiff.MaxChanges)
	case aerr == nil:
		d.Attributes = append(d.Attributes, AttributeChange{Attribute: "schema", Kind: "removed", From: fmt.Sprintf("%d fields", as.NumFields())})
	case berr == nil:
		d.Attributes = append(d.Attributes, AttributeChange{Attribute: "schema", Kind: "added", To: fmt.Sprintf("%d fields", bs.NumFields())})
	}
	attr := func(name, x, y string) {
		if x != y {
			d.Attributes = append(d.Attributes, AttributeChange{Attribute: name, Kind: "changed", From: x, To: y})
		}
	}
	attr("description", a.description, b.description)
	attr("location", a.location, b.location)
	attr("table_type", a.tableType, b.tableType)
	attr("compatibility", string(a.Compatibility()), string(b.Compatibility()))
	attr("protected", strconv.FormatBool(a.protected), strconv.FormatBool(b.protected))
	keys := slices.Collect(maps.Keys(a.properties))
	for k := range b.properties {
		if _, ok := a.properties[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		x, inA := a.properties[k]
		y, inB := b.properties[k]
		switch {
		case !inA:
			d.Attributes = append(d.Attributes, AttributeChange{Attribute: "properties." + k, Kind: "added", To: y})
		case !inB:
			d.Attributes = append(d.Attributes, AttributeChange{Attribute: "properties." + k, Kind: "removed", From: x})
		case x != y:
			d.Attributes = append(d.Attributes, AttributeChange{Attribute: "properties." + k, Kind: "changed", From: x, To: y})
		}
	}
	return d
}

// Version returns version v of the table ref's registration of creation id
// creationID (empty: the one registered now; a dropped table's is named by
// its tombstone's) as its version record keeps it. ErrNotFound when there
// is no such registration, or that version is not kept.
func (c *Catalog) Version(ctx context.Context, ref TableRef, creationID string, v int64) (Registration, error) {
	if v < 1 {
		return Registration{}, during("version of", ref.String(), &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("version %d: versions start at 1", v)})
	}
	// History reads below before: from the newest for a version at the top
	// of the range (v+1 would overflow; no registration gets that far).
	before := v + 1
	if v == math.MaxInt64 {
		before = 0
	}
	vs, _, err := c.History(ctx, ref, creationID, before, 1)
	if err != nil {
		return Registration{}, err
	}
	if len(vs) == 0 || vs[0].Version != v {
		return Registration{}, during("version of", ref.String(), &Error{Kind: ErrNotFound, Detail: fmt.Sprintf("version %d is not kept", v)})
	}
	return vs[0].Registration, nil
}

// Diff compares two kept versions of the table ref's registration of
// creation id creationID (see Version): from, and to (0: the newest kept,
// which is the registration now, or a dropped table's drop).
func (c *Catalog) Diff(ctx context.Context, ref TableRef, creationID string, from, to int64) (VersionDiff, error) {
	a, err := c.Version(ctx, ref, creationID, from)
	if err != nil {
		return VersionDiff{}, err
	}
	if creationID == "" {
		creationID = a.creationID
	}
	var b Registration
	if to == 0 {
		vs, _, err := c.History(ctx, ref, creationID, 0, 1)
		if err != nil {
			return VersionDiff{}, err
		}
		if len(vs) == 0 {
			return VersionDiff{}, during("diff", ref.String(), &Error{Kind: ErrNotFound, Detail: "no kept version"})
		}
		b = vs[0].Registration
	} else if b, err = c.Version(ctx, ref, creationID, to); err != nil {
		return VersionDiff{}, err
	}
	return DiffRegistrations(a, b), nil
}
