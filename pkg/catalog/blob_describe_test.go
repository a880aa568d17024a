package catalog_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// A table's description and properties travel in the snapshot blob (so
// discovery has them without metadata I/O), through a full build and an
// incremental apply alike; a tenant none of whose tables has either keeps
// the segment bytes it had before they existed, so the upgrade changes no
// such tenant's content hash.
func TestBlobCarriesDescriptionsAndProperties(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	c := catalog.New(st, catalog.Options{})
	props := map[string]string{"owner": "data-eng", "pii": "no"}
	described := catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(1, 3), Description: "one row per order\nkept 7 years", Properties: props}
	mustRegister(t, c, ref("acme", "orders"), described)
	mustRegister(t, c, ref("acme", "plain"), catalog.TableSpec{Location: "/p", Schema: catalogtest.WideSchema(2, 3)})
	at := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	build, err := catalog.BuildBlob(ctx, st, catalog.BuildOptions{Generation: 1, CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := catalog.OpenBlob(build.Blob, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(blob *catalog.Blob, wantDesc string, wantProps map[string]string) {
		t.Helper()
		tables, err := blob.TenantTables("acme")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]catalog.Table{}
		for _, tb := range tables {
			got[tb.Ref.Name] = tb
		}
		if o := got["orders"]; o.Description != wantDesc || !maps.Equal(o.Properties, wantProps) {
			t.Fatalf("orders from the blob: %q %v, want %q %v", o.Description, o.Properties, wantDesc, wantProps)
		}
		if p := got["plain"]; p.Description != "" || p.Properties != nil {
			t.Fatalf("plain from the blob: %q %v, want none", p.Description, p.Properties)
		}
	}
	check(blob, described.Description, props)

	// An update of the description reaches the blob through a stream batch.
	if _, err := c.Update(ctx, ref("acme", "orders"), catalog.TableSpec{Schema: catalogtest.WideSchema(1, 3), Description: "one row per order"}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	applied, err := catalog.ApplyChanges(ctx, st, blob, []string{"tbl/acme/ns/orders"}, catalog.ApplyOptions{Generation: 2, CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	blob2, err := catalog.OpenBlob(applied.Blob, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(blob2, "one row per order", props)

	// The fixture's tenants have no descriptions: built today, their
	// segments hash as in the version 2 blob written before descriptions.
	v2, err := os.ReadFile(filepath.Join("testdata", "v2.lakesnap"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := catalog.OpenBlob(v2, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now, err := catalog.EncodeBlob(fixtureSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := catalog.OpenBlob(now, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range old.Tenants() {
		if got, _ := fresh.Tenant(info.Name); got.Hash != info.Hash {
			t.Errorf("tenant %s: segment hash changed with the upgrade", info.Name)
		}
	}
}
