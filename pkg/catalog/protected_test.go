package catalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// A protected table's drop is refused, and nothing is removed, until an
// update unsets the flag; an update that names no flag keeps it.
func TestProtectedTableRefusesDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _, _ := newCatalog(t)
	yes, no := true, false
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema(), Protected: &yes})
	if !reg.Protected() {
		t.Fatal("registered with Protected true, not protected")
	}
	err := c.Drop(ctx, orders)
	if !errors.Is(err, catalog.ErrProtected) || err.Error() != "catalog: drop acme/sales/orders: table is protected: unset the flag with an update first" {
		t.Fatalf("drop of a protected table: %v, want ErrProtected said once", err)
	}
	if _, err := c.Get(ctx, orders); err != nil {
		t.Fatalf("the refused drop removed the table: %v", err)
	}
	// An update of something else keeps the flag.
	reg, err = c.Update(ctx, orders, catalog.TableSpec{Schema: orderSchema(), Description: "orders"}, catalog.UpdateOptions{})
	if err != nil || !reg.Protected() {
		t.Fatalf("update naming no flag: protected %v, %v; want it kept", reg.Protected(), err)
	}
	if err := c.Drop(ctx, orders); !errors.Is(err, catalog.ErrProtected) {
		t.Fatalf("drop after an update that kept the flag: %v", err)
	}
	if reg, err = c.Update(ctx, orders, catalog.TableSpec{Schema: orderSchema(), Protected: &no}, catalog.UpdateOptions{}); err != nil || reg.Protected() {
		t.Fatalf("unprotect: protected %v, %v", reg.Protected(), err)
	}
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatalf("drop after unprotecting: %v", err)
	}
	// The flag is stored, and only when set.
	raw, _ := mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: orderSchema(), Protected: &yes}).MarshalJSON()
	back, err := catalog.DecodeRegistration(raw)
	if err != nil || !back.Protected() || !strings.Contains(string(raw), `"protected":true`) {
		t.Fatalf("stored %s: protected %v, %v", raw, back.Protected(), err)
	}
	plain, _ := mustRegister(t, c, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "plain"}, catalog.TableSpec{Location: "s3://lake/p/", Schema: orderSchema()}).MarshalJSON()
	if strings.Contains(string(plain), "protected") {
		t.Errorf("an unprotected registration stores the flag: %s", plain)
	}
}
