package catalog_test

import (
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// A version record's key reads back as its table, creation id and
// version; keys that are not one's do not.
func TestVersionKeyRoundTrips(t *testing.T) {
	t.Parallel()
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	key := catalog.VersionKey(ref, "a1b2c3d4e5f60718", 42)
	if want := "ver/acme/sales/orders/a1b2c3d4e5f60718/00000000000000000042"; key != want {
		t.Fatalf("VersionKey = %q, want %q", key, want)
	}
	got, id, v, ok := catalog.ParseVersionKey(key[len(catalog.VersionPrefix):])
	if !ok || got != ref || id != "a1b2c3d4e5f60718" || v != 42 {
		t.Fatalf("ParseVersionKey = %v, %q, %d, %v; want %v, a1b2c3d4e5f60718, 42, true", got, id, v, ok, ref)
	}
	for _, bad := range []string{"acme/sales/orders", "acme/sales/orders/xyz/1", "acme/sales/orders/a1b2c3d4e5f60718/0", "acme/sales/a1b2c3d4e5f60718/1"} {
		if _, _, _, ok := catalog.ParseVersionKey(bad); ok {
			t.Errorf("ParseVersionKey(%q) reads a version record's key", bad)
		}
	}
}
