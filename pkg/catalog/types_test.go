package catalog_test

import (
	"context"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
)

// Every type the catalog promises survives register → store → scan →
// snapshot → blob → decode exactly, metadata included. The store is RocksDB,
// as in local mode.
func TestRichSchemaRoundTripsExactly(t *testing.T) {
	st, err := rocksdb.Open(t.TempDir(), rocksdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := catalog.New(st, catalog.Options{})
	ctx := context.Background()
	rich := catalogtest.RichSchema()
	ref := catalog.TableRef{Tenant: "ácme", Namespace: "データ", Name: "every_type ✓"}
	if _, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/rich/", Schema: rich}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	reg, err := c.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	fromStore, err := reg.Schema()
	if err != nil || !catalog.SchemaEqual(fromStore, rich) {
		t.Fatalf("schema through the store:\n%v\nwant\n%v", fromStore, rich)
	}
	snap, _, err := catalog.Refresh(ctx, st, 1, t0)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := catalog.DecodeBlob(encode(t, snap), catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, ok := decoded.Lookup(ref)
	if !ok {
		t.Fatal("table missing from the decoded blob")
	}
	fromBlob, err := tbl.Schema()
	if err != nil || !catalog.SchemaEqual(fromBlob, rich) {
		t.Fatalf("schema through the blob:\n%v\nwant\n%v", fromBlob, rich)
	}
	// Field by field, so a failure names the type that broke.
	for i, f := range rich.Fields() {
		if got := fromBlob.Field(i); !got.Equal(f) {
			t.Errorf("field %d: got %v, want %v", i, got, f)
		}
	}
	if rich.Metadata().Len() == 0 || !fromBlob.Metadata().Equal(rich.Metadata()) {
		t.Errorf("schema metadata = %v, want %v", fromBlob.Metadata(), rich.Metadata())
	}
}
