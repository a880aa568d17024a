package catalog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// Every write that changes a registration bumps the change counter once;
// what changes nothing (an identical retry, a no-op update, a refused or
// failed write) leaves it.
func TestWritesBumpTheChangeCounter(t *testing.T) {
	t.Parallel()
	c, st := quotaCatalog(t, catalog.Quota{MaxTables: 2})
	ctx := context.Background()
	spec := catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(1, 3)}
	other := catalog.TableSpec{Schema: catalogtest.WideSchema(2, 3)}
	steps := []struct {
		name    string
		write   func() error
		wantErr error
		delta   uint64
	}{
		{"register", func() error { _, _, err := c.Register(ctx, ref("acme", "a"), spec); return err }, nil, 1},
		{"identical retry", func() error { _, _, err := c.Register(ctx, ref("acme", "a"), spec); return err }, nil, 0},
		{"register differently", func() error {
			_, _, err := c.Register(ctx, ref("acme", "a"), catalog.TableSpec{Location: "/e", Schema: spec.Schema})
			return err
		}, catalog.ErrExists, 0},
		{"no-op update", func() error { _, err := c.Update(ctx, ref("acme", "a"), spec, catalog.UpdateOptions{}); return err }, nil, 0},
		{"update", func() error { _, err := c.Update(ctx, ref("acme", "a"), other, catalog.UpdateOptions{}); return err }, nil, 1},
		{"register another tenant's", func() error { _, _, err := c.Register(ctx, ref("globex", "a"), spec); return err }, nil, 1},
		{"register b", func() error { _, _, err := c.Register(ctx, ref("acme", "b"), spec); return err }, nil, 1},
		{"refused by the quota", func() error { _, _, err := c.Register(ctx, ref("acme", "c"), spec); return err }, catalog.ErrQuotaExceeded, 0},
		{"drop", func() error { return c.Drop(ctx, ref("acme", "a")) }, nil, 1},
		{"drop a missing table", func() error { return c.Drop(ctx, ref("acme", "a")) }, catalog.ErrNotFound, 0},
	}
	var prev uint64
	for _, s := range steps {
		if err := s.write(); !errors.Is(err, s.wantErr) || (err != nil) != (s.wantErr != nil) {
			t.Fatalf("%s: %v, want %v", s.name, err, s.wantErr)
		}
		got, err := catalog.ReadChanges(ctx, st)
		if err != nil || got != prev+s.delta {
			t.Fatalf("after %s: counter %d, %v; want %d", s.name, got, err, prev+s.delta)
		}
		prev = got
	}
}
