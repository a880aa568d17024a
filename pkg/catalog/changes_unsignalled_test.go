package catalog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// failingCounter fails every add to the change counter, as a store that
// throttles or is unreachable for that item would (fault injection), so
// the bump fails after the write.
type failingCounter struct{ metastore.Store }

func (s failingCounter) AddCounter(ctx context.Context, key string, delta uint64) (uint64, error) {
	if key == catalog.ChangesKey {
		return 0, errors.New("injected: the counter's partition is unavailable")
	}
	return s.Store.AddCounter(ctx, key, delta)
}

// A write whose change-counter bump fails is never silent: the write is
// stored, and it returns an error of kind ErrUnsignalled (with what it
// wrote), so the caller learns that refresh may not see it before the
// reconciliation (issue 24, check and close).
func TestBumpGivingUpIsReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := memstore.New(memstore.Options{})
	t.Cleanup(func() { base.Close() })
	if err := base.Put(ctx, catalog.ChangesKey, []byte("7")); err != nil {
		t.Fatal(err)
	}
	c := catalog.New(failingCounter{base}, catalog.Options{})
	r := ref("acme", "t")
	spec := catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(1, 3)}

	reg, created, err := c.Register(ctx, r, spec)
	if !errors.Is(err, catalog.ErrUnsignalled) || !created || reg.Version() != 1 {
		t.Fatalf("register = version %d, created %v, %v; want the registration and ErrUnsignalled", reg.Version(), created, err)
	}
	if _, err := catalog.New(base, catalog.Options{}).Get(ctx, r); err != nil {
		t.Fatalf("the registration is not stored: %v", err)
	}
	spec.Description = "changed"
	if reg, err := c.Update(ctx, r, spec, catalog.UpdateOptions{}); !errors.Is(err, catalog.ErrUnsignalled) || reg.Version() != 2 {
		t.Fatalf("update = version %d, %v; want version 2 and ErrUnsignalled", reg.Version(), err)
	}
	if err := c.Drop(ctx, r); !errors.Is(err, catalog.ErrUnsignalled) {
		t.Fatalf("drop = %v, want ErrUnsignalled", err)
	}
	if _, err := catalog.New(base, catalog.Options{}).Get(ctx, r); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("after the drop: %v, want ErrNotFound", err)
	}
}
