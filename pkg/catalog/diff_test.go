package catalog_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/schemadiff"
)

// Diff compares two kept versions field by field (dotted paths through
// nested types) and every other attribute a registration has; to 0 is the
// newest kept version, a dropped table's drop included.
func TestDiffVersions(t *testing.T) {
	t.Parallel()
	c, _, _ := newCatalog(t)
	ctx := context.Background()
	addr := arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.BinaryTypes.String, Nullable: true})
	v1 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "customer", Type: addr, Nullable: true}}, nil)
	v2 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true}}, nil)
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: v1, Description: "orders", Properties: map[string]string{"owner": "sales", "tier": "gold"}})
	if _, err := c.Update(ctx, orders, catalog.TableSpec{Location: "/o2", Schema: v2, Description: "one row per order",
		Properties: map[string]string{"owner": "finance", "pii": "no"}, Compatibility: schemadiff.None, Protected: new(true)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := c.Diff(ctx, orders, "", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"id: promoted from int32 to int64",
		"customer.zip: retyped from utf8 to int32",
		`description: "orders" → "one row per order"`,
		`location: "/o" → "/o2"`,
		`protected: "false" → "true"`,
		`properties.owner: "sales" → "finance"`,
		`properties.pii: added "no"`,
		`properties.tier: removed (was "gold")`,
	}
	if got := d.Lines(); d.From != 1 || d.To != 2 || !slices.Equal(got, want) {
		t.Fatalf("Diff(1, 2) = v%d→v%d %q\nwant v1→v2 %q", d.From, d.To, got, want)
	}
	if d, err := c.Diff(ctx, orders, "", 2, 0); err != nil || d.To != 2 || len(d.Lines()) != 0 {
		t.Fatalf("Diff(2, newest) = %+v, %v; want no change to version 2", d, err)
	}
	if _, err := c.Diff(ctx, orders, "", 3, 0); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Diff from a version not kept: %v, want ErrNotFound", err)
	}
	if _, err := c.Diff(ctx, orders, "", 0, 1); !errors.Is(err, catalog.ErrInvalidRegistration) {
		t.Fatalf("Diff from version 0: %v, want ErrInvalidRegistration", err)
	}
	// A dropped table: its history through the tombstone's creation id, the
	// drop the newest version (nothing but the op changed).
	if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: v2, Protected: new(false)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Diff(ctx, orders, reg.CreationID(), 1, 0); err != nil || d.To != 4 || len(d.Schema) != 2 {
		t.Fatalf("Diff of the dropped registration from 1 to its drop: %+v, %v", d, err)
	}
	if _, err := c.Diff(ctx, catalog.TableRef{Tenant: "globex", Namespace: "sales", Name: "orders"}, reg.CreationID(), 1, 0); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("another tenant naming the same table and creation id: %v, want ErrNotFound", err)
	}
}
