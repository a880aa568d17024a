package catalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/schemadiff"
)

func orderSchema(extra ...arrow.Field) *arrow.Schema {
	fs := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}
	return arrow.NewSchema(append(fs, extra...), nil)
}

// A table registered with a compatibility mode keeps it: a compatible
// update is stored, an incompatible one is refused with every breaking
// change and stores nothing, and an update that sets the mode to none may
// change the schema freely (an explicit choice).
func TestUpdateKeepsCompatibilityMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _, _ := newCatalog(t)
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema(), Compatibility: schemadiff.Backward})
	if reg.Compatibility() != schemadiff.Backward {
		t.Fatalf("registered with mode %q, want backward", reg.Compatibility())
	}

	// Compatible under backward: a new nullable column, a promotion.
	wider := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "currency", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	reg, err := c.Update(ctx, orders, catalog.TableSpec{Schema: wider}, catalog.UpdateOptions{})
	if err != nil || reg.Version() != 2 || reg.Compatibility() != schemadiff.Backward {
		t.Fatalf("compatible update: version %d, mode %q, %v; want version 2 under backward", reg.Version(), reg.Compatibility(), err)
	}

	// Incompatible: a required column added, a column narrowed.
	breaking := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "currency", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String},
	}, nil)
	_, err = c.Update(ctx, orders, catalog.TableSpec{Schema: breaking}, catalog.UpdateOptions{})
	var ce *catalog.Error
	if !errors.Is(err, catalog.ErrIncompatibleSchema) || !errors.As(err, &ce) {
		t.Fatalf("incompatible update: %v, want ErrIncompatibleSchema", err)
	}
	var paths []string
	for _, b := range ce.Breaches {
		paths = append(paths, b.Path+" "+string(b.Kind))
	}
	if want := "id narrowed,region added"; strings.Join(paths, ",") != want {
		t.Errorf("breaches %q, want %q", paths, want)
	}
	if msg := err.Error(); !strings.Contains(msg, "update acme/sales/orders: incompatible schema: 2 changes break backward compatibility") {
		t.Errorf("message %q does not say the operation, the table, the kind and the count once", msg)
	}
	if got, err := c.Get(ctx, orders); err != nil || got.Version() != 2 {
		t.Fatalf("after the refused update: version %d, %v; want version 2 still", got.Version(), err)
	}

	// The same schema with the mode set to none is stored.
	reg, err = c.Update(ctx, orders, catalog.TableSpec{Schema: breaking, Compatibility: schemadiff.None}, catalog.UpdateOptions{})
	if err != nil || reg.Version() != 3 || reg.Compatibility() != schemadiff.None {
		t.Fatalf("update with the mode set to none: version %d, mode %q, %v; want version 3 under none", reg.Version(), reg.Compatibility(), err)
	}
	// Changing only the mode is an update too.
	reg, err = c.Update(ctx, orders, catalog.TableSpec{Schema: breaking, Compatibility: schemadiff.Full}, catalog.UpdateOptions{})
	if err != nil || reg.Version() != 4 || reg.Compatibility() != schemadiff.Full {
		t.Fatalf("mode-only update: version %d, mode %q, %v; want version 4 under full", reg.Version(), reg.Compatibility(), err)
	}
}

// Under forward, removing a required column is refused and adding one is
// not; under full, both rules hold.
func TestUpdateForwardAndFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		mode                 schemadiff.Mode
		addRequired, dropReq bool // refused?
	}{
		{schemadiff.Forward, false, true},
		{schemadiff.Full, true, true},
		{schemadiff.None, false, false},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			c, _, _ := newCatalog(t)
			mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema(), Compatibility: tt.mode})
			_, err := c.Update(ctx, orders, catalog.TableSpec{Schema: orderSchema(arrow.Field{Name: "region", Type: arrow.BinaryTypes.String})}, catalog.UpdateOptions{})
			if got := errors.Is(err, catalog.ErrIncompatibleSchema); got != tt.addRequired {
				t.Errorf("required column added: refused %v (%v), want %v", got, err, tt.addRequired)
			}
			c2, _, _ := newCatalog(t)
			mustRegister(t, c2, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema(), Compatibility: tt.mode})
			noID := arrow.NewSchema(orderSchema().Fields()[1:], nil)
			_, err = c2.Update(ctx, orders, catalog.TableSpec{Schema: noID}, catalog.UpdateOptions{})
			if got := errors.Is(err, catalog.ErrIncompatibleSchema); got != tt.dropReq {
				t.Errorf("required column removed: refused %v (%v), want %v", got, err, tt.dropReq)
			}
		})
	}
}

func TestCompatibilityModeIsValidatedAndStored(t *testing.T) {
	t.Parallel()
	c, st, _ := newCatalog(t)
	_, _, err := c.Register(context.Background(), orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema(), Compatibility: "backwards"})
	if !errors.Is(err, catalog.ErrInvalidRegistration) || !strings.Contains(err.Error(), `compatibility "backwards": want none, backward, forward or full`) {
		t.Fatalf("register with mode backwards: %v, want an invalid registration naming the modes", err)
	}
	if keys := storedKeys(t, st); len(keys) != 0 {
		t.Fatalf("the refused registration stored %v", keys)
	}
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema(), Compatibility: schemadiff.Full})
	raw, err := reg.MarshalJSON()
	if err != nil || !strings.Contains(string(raw), `"compatibility":"full"`) {
		t.Fatalf("stored JSON %s, %v; want the mode", raw, err)
	}
	back, err := catalog.DecodeRegistration(raw)
	if err != nil || back.Compatibility() != schemadiff.Full {
		t.Fatalf("decoded mode %q, %v; want full", back.Compatibility(), err)
	}
	none := mustRegister(t, c, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "plain"}, catalog.TableSpec{Location: "s3://lake/p/", Schema: orderSchema()})
	if raw, _ := none.MarshalJSON(); strings.Contains(string(raw), "compatibility") {
		t.Errorf("a registration without a mode stores one: %s", raw)
	}
	bad := strings.Replace(string(raw), `"compatibility":"full"`, `"compatibility":"sideways"`, 1)
	if _, err := catalog.DecodeRegistration([]byte(bad)); !errors.Is(err, catalog.ErrInvalidRegistration) {
		t.Errorf("stored mode sideways decodes: %v, want an invalid registration", err)
	}
}

// The deployment's default mode applies to a registration that names none;
// one that says none keeps none.
func TestDefaultCompatibility(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	c := catalog.New(st, catalog.Options{DefaultCompatibility: schemadiff.Full})
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema()})
	if reg.Compatibility() != schemadiff.Full {
		t.Errorf("registered without a mode under default full: %q", reg.Compatibility())
	}
	plain := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "plain"}
	if reg := mustRegister(t, c, plain, catalog.TableSpec{Location: "s3://lake/p/", Schema: orderSchema(), Compatibility: schemadiff.None}); reg.Compatibility() != schemadiff.None {
		t.Errorf("registered with none under default full: %q", reg.Compatibility())
	}
	// A retry of the first registration, still naming no mode, is identical.
	if _, created, err := c.Register(context.Background(), orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema()}); err != nil || created {
		t.Errorf("identical retry: created %v, %v", created, err)
	}
}
