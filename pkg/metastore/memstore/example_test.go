package memstore_test

import (
	"context"
	"fmt"

	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

func ExampleStore_ScanPrefix() {
	st := memstore.New(memstore.Options{})
	ctx := context.Background()
	_ = st.Put(ctx, "tbl/acme/sales/orders", []byte("o"))
	_ = st.Put(ctx, "tbl/acme/sales/customers", []byte("c"))
	_ = st.Put(ctx, "cfg/other", []byte("x"))
	entries, _ := st.ScanPrefix(ctx, "tbl/acme/")
	for _, e := range entries {
		fmt.Printf("%s=%s\n", e.Key, e.Value)
	}
	// Output:
	// sales/customers=c
	// sales/orders=o
}
