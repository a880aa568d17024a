package scan_test

import (
	"context"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

var t0 = time.Date(2026, 11, 30, 9, 30, 0, 123456000, time.UTC)

func ref(tenant, ns, name string) catalog.TableRef {
	return catalog.TableRef{Tenant: tenant, Namespace: ns, Name: name}
}

func newStore(tb testing.TB) (*catalog.Catalog, metastore.Store) {
	tb.Helper()
	st := memstore.New(memstore.Options{})
	tb.Cleanup(func() { st.Close() })
	return catalog.New(st, catalog.Options{Now: func() time.Time { return t0 }}), st
}

func register(tb testing.TB, c *catalog.Catalog, r catalog.TableRef, spec catalog.TableSpec) catalog.Registration {
	tb.Helper()
	reg, created, err := c.Register(context.Background(), r, spec)
	if err != nil || !created {
		tb.Fatalf("Register(%s) = %v, %v", r, created, err)
	}
	return reg
}

func putTombstone(tb testing.TB, st metastore.Store, r catalog.TableRef, spec catalog.TableSpec, droppedAt, expiresAt time.Time) catalog.Tombstone {
	tb.Helper()
	reg, err := catalog.NewRegistration(spec, droppedAt.Add(-time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	d := catalog.Tombstone{Ref: r, Registration: reg, DroppedAt: droppedAt, DroppedBy: "bob", ExpiresAt: expiresAt}
	key, err := d.Key()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := catalog.EncodeTombstone(d)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Put(context.Background(), key, b); err != nil {
		tb.Fatal(err)
	}
	return d
}

func fixture(tb testing.TB) (*catalog.Catalog, metastore.Store) {
	tb.Helper()
	c, st := newStore(tb)
	register(tb, c, ref("acme", "sales", "orders"), catalog.TableSpec{Location: "s3://lake/acme/orders/", Schema: catalogtest.RichSchema(),
		Description: "one row per order", Properties: map[string]string{"owner": "sales-eng", "pii": "false"}})
	register(tb, c, ref("acme", "sales", "customers"), catalog.TableSpec{Location: "s3://lake/acme/customers/", Schema: catalogtest.WideSchema(3, 12)})
	register(tb, c, ref("acme", "hr", "people"), catalog.TableSpec{Location: "s3://lake/acme/people/", Schema: catalogtest.WideSchema(3, 12)})
	register(tb, c, ref("globex", "finance", "ledger"), catalog.TableSpec{Location: "s3://lake/globex/ledger/", Schema: catalogtest.WideSchema(7, 5)})
	if err := st.Put(context.Background(), "tbl/globex/legacy/old", []byte(`{"location":"/old","created_at":"2024-01-01T00:00:00Z"}`)); err != nil {
		tb.Fatal(err)
	}
	spec := catalog.TableSpec{Location: "s3://lake/gone/", Schema: catalogtest.WideSchema(1, 2)}
	putTombstone(tb, st, ref("acme", "sales", "returns"), spec, t0.Add(-time.Hour), t0.Add(24*time.Hour))
	putTombstone(tb, st, ref("acme", "sales", "expired"), spec, t0.Add(-48*time.Hour), t0.Add(-time.Hour))
	putTombstone(tb, st, ref("initech", "ops", "tps"), spec, t0.Add(-time.Hour), time.Time{})
	return c, st
}

type built struct {
	scan.Built
	Blob []byte
}

func build(tb testing.TB, st metastore.Store, opts scan.BuildOptions) built {
	tb.Helper()
	b, err := scan.Build(context.Background(), st, opts)
	if err != nil {
		tb.Fatal(err)
	}
	blob, err := b.Written.Blob()
	if err != nil {
		tb.Fatal(err)
	}
	return built{b, blob}
}
