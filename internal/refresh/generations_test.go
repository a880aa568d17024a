package refresh_test

import (
	"context"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// Refresh writes the tenant-segmented blob, and a tenant whose tables did
// not change keeps the generation of its last change when another tenant
// changes.
func TestUnchangedTenantKeepsItsGeneration(t *testing.T) {
	t.Parallel()
	c, p, blobs := setup(t)
	ctx := context.Background()
	reg := func(tenant, name string, seed int) {
		t.Helper()
		ref := catalog.TableRef{Tenant: tenant, Namespace: "ns", Name: name}
		if _, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "/d/" + name, Schema: catalogtest.WideSchema(seed, 4)}); err != nil {
			t.Fatal(err)
		}
	}
	reg("acme", "a", 1)
	reg("globex", "g", 2)
	if res := run(t, p); res.Generation != 1 {
		t.Fatalf("first run = %+v", res)
	}
	reg("acme", "b", 3)
	if res := run(t, p); res.Generation != 2 {
		t.Fatalf("second run = %+v", res)
	}
	b, err := blobs.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	blob := load(t, blobs, b.Data)
	if v := blob.Header().Version; v != snapshot.Version {
		t.Fatalf("refresh wrote blob version %d, want %d", v, snapshot.Version)
	}
	acme, _ := blob.Entry("acme")
	globex, _ := blob.Entry("globex")
	if acme.Generation != 2 || globex.Generation != 1 {
		t.Fatalf("generations: acme %d (changed), globex %d (unchanged); want 2 and 1", acme.Generation, globex.Generation)
	}
}
