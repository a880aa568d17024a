package catalog_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// dropOnIndexRead runs its hook once, the first time a dropped-table index
// item is read after it is armed.
type dropOnIndexRead struct {
	metastore.Store
	armed atomic.Bool
	hook  func()
}

func (s *dropOnIndexRead) Get(ctx context.Context, key string) ([]byte, error) {
	if strings.HasPrefix(key, catalog.DroppedIndexPrefix) && s.armed.CompareAndSwap(true, false) {
		s.hook()
	}
	return s.Store.Get(ctx, key)
}

// A drop of the restored table that lands between an undrop's restore and
// its index clean-up keeps its entry: the undrop removes the entry of the
// tombstone it restored (its version), never the newer drop's at the same
// key, so Dropped lists that drop at once. (Before, the undrop removed
// every entry of the key and the drop stayed unlisted until the sweep:
// TestUndropRacingADrop failed now and then under load.)
func TestUndropKeepsTheIndexEntryOfARacingDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := memstore.New(memstore.Options{})
	t.Cleanup(func() { base.Close() })
	hooked := &dropOnIndexRead{Store: base}
	c := catalog.New(hooked, catalog.Options{})
	other := catalog.New(base, catalog.Options{})
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)})
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	var dropErr error
	hooked.hook = func() { dropErr = other.Drop(ctx, orders) }
	hooked.armed.Store(true)
	if _, err := c.Undrop(ctx, orders, reg.CreationID()); err != nil {
		t.Fatal(err)
	}
	if dropErr != nil || hooked.armed.Load() {
		t.Fatalf("the racing drop: %v (ran: %v)", dropErr, !hooked.armed.Load())
	}
	dropped, err := c.Dropped(ctx, orders.Tenant)
	if err != nil || len(dropped) != 1 || dropped[0].Registration.Version() != 4 {
		t.Fatalf("Dropped = %+v, %v; want the racing drop (version 4)", dropped, err)
	}
}
