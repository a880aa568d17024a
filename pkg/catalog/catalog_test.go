package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// clock is a settable time source.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newCatalog(tb testing.TB) (*catalog.Catalog, metastore.Store, *clock) {
	tb.Helper()
	st := memstore.New(memstore.Options{})
	tb.Cleanup(func() { st.Close() })
	clk := &clock{now: t0}
	return catalog.New(st, catalog.Options{Now: clk.Now}), st, clk
}

var orders = catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}

func mustRegister(tb testing.TB, c *catalog.Catalog, ref catalog.TableRef, spec catalog.TableSpec) catalog.Registration {
	tb.Helper()
	reg, created, err := c.Register(context.Background(), ref, spec)
	if err != nil || !created {
		tb.Fatalf("Register(%s) = created %v, %v", ref, created, err)
	}
	return reg
}

func storedKeys(tb testing.TB, st metastore.Store) []string {
	tb.Helper()
	es, err := st.ScanPrefix(context.Background(), "")
	if err != nil {
		tb.Fatal(err)
	}
	var keys []string
	for _, e := range es {
		keys = append(keys, e.Key)
	}
	return keys
}

func TestRegisterGetRoundTrip(t *testing.T) {
	t.Parallel()
	c, _, _ := newCatalog(t)
	schema := catalogtest.WideSchema(7, 12)
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/acme/orders/", Schema: schema})
	got, err := c.Get(context.Background(), orders)
	if err != nil {
		t.Fatal(err)
	}
	s, err := got.Schema()
	if err != nil || !catalog.SchemaEqual(s, schema) {
		t.Fatalf("stored schema = %v, %v; want %v", s, err, schema)
	}
	if got.Version() != 1 || got.TableType() != "TABLE" || got.Location() != "s3://lake/acme/orders/" || !got.CreatedAt().Equal(reg.CreatedAt()) {
		t.Fatalf("Get = %+v, want %+v", got, reg)
	}
}

func TestRegisterIsIdempotentAndConflictsOnChange(t *testing.T) {
	t.Parallel()
	c, _, clk := newCatalog(t)
	ctx := context.Background()
	spec := catalog.TableSpec{Location: "s3://lake/o/", Schema: catalogtest.WideSchema(1, 3)}
	first := mustRegister(t, c, orders, spec)
	clk.now = clk.now.Add(time.Hour)

	again, created, err := c.Register(ctx, orders, spec)
	if err != nil || created {
		t.Fatalf("identical retry = created %v, %v; want not created, no error", created, err)
	}
	if !again.CreatedAt().Equal(first.CreatedAt()) || again.Version() != 1 {
		t.Fatalf("identical retry returned %+v, want the stored registration", again)
	}

	for name, changed := range map[string]catalog.TableSpec{
		"schema":   {Location: spec.Location, Schema: catalogtest.WideSchema(2, 3)},
		"location": {Location: "s3://lake/elsewhere/", Schema: spec.Schema},
		"type":     {Location: spec.Location, TableType: "VIEW", Schema: spec.Schema},
	} {
		if _, _, err := c.Register(ctx, orders, changed); !errors.Is(err, catalog.ErrExists) {
			t.Errorf("re-register with another %s error = %v, want ErrExists", name, err)
		}
	}
	got, _ := c.Get(ctx, orders)
	s, _ := got.Schema()
	if !catalog.SchemaEqual(s, spec.Schema) || got.Version() != 1 {
		t.Fatal("a conflicting registration changed the stored one")
	}
}

func TestInvalidInputStoresNothing(t *testing.T) {
	t.Parallel()
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	good := catalogtest.WideSchema(1, 2)
	tests := []struct {
		name string
		ref  catalog.TableRef
		spec catalog.TableSpec
		want error
	}{
		{"bad name", catalog.TableRef{Tenant: "a/b", Namespace: "s", Name: "t"}, catalog.TableSpec{Location: "/x", Schema: good}, catalog.ErrInvalidName},
		{"no schema", orders, catalog.TableSpec{Location: "/x"}, catalog.ErrInvalidSchema},
		{"duplicate fields", orders, catalog.TableSpec{Location: "/x", Schema: arrow.NewSchema([]arrow.Field{
			{Name: "x", Type: arrow.PrimitiveTypes.Int8}, {Name: "x", Type: arrow.PrimitiveTypes.Int8}}, nil)}, catalog.ErrInvalidSchema},
		{"bad location", orders, catalog.TableSpec{Location: "", Schema: good}, catalog.ErrInvalidRegistration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, _, err := c.Register(ctx, tt.ref, tt.spec); !errors.Is(err, tt.want) {
				t.Fatalf("Register error = %v, want %v", err, tt.want)
			}
			if keys := storedKeys(t, st); len(keys) != 0 {
				t.Fatalf("invalid registration stored %q", keys)
			}
		})
	}
}

func TestUpdateBumpsVersion(t *testing.T) {
	t.Parallel()
	c, _, clk := newCatalog(t)
	ctx := context.Background()
	first := mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://lake/o/", Schema: catalogtest.WideSchema(1, 3)})
	clk.now = clk.now.Add(time.Minute)

	same, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 3)}, catalog.UpdateOptions{})
	if err != nil || same.Version() != 1 || !same.UpdatedAt().Equal(first.UpdatedAt()) {
		t.Fatalf("no-op update = %+v, %v; want version 1 unchanged", same, err)
	}

	newSchema := catalogtest.WideSchema(1, 4)
	upd, err := c.Update(ctx, orders, catalog.TableSpec{Schema: newSchema}, catalog.UpdateOptions{IfVersion: 1, IfCreationID: first.CreationID()})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Version() != 2 || upd.Location() != "s3://lake/o/" || !upd.CreatedAt().Equal(first.CreatedAt()) || upd.CreationID() != first.CreationID() || !upd.UpdatedAt().Equal(clk.now.Truncate(time.Microsecond)) {
		t.Fatalf("update = version %d location %q created %v updated %v", upd.Version(), upd.Location(), upd.CreatedAt(), upd.UpdatedAt())
	}
	got, _ := c.Get(ctx, orders)
	if s, _ := got.Schema(); !catalog.SchemaEqual(s, newSchema) || got.Version() != 2 {
		t.Fatalf("stored after update: version %d schema %v", got.Version(), s)
	}

	if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 5)}, catalog.UpdateOptions{IfVersion: 1, IfCreationID: first.CreationID()}); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("update at a stale version error = %v, want ErrConflict", err)
	}
	if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 5)}, catalog.UpdateOptions{IfNoSchema: true}); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("backfill of a table with a schema error = %v, want ErrConflict", err)
	}
	missing := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "nope"}
	if _, err := c.Update(ctx, missing, catalog.TableSpec{Schema: newSchema}, catalog.UpdateOptions{}); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("update of a missing table error = %v, want ErrNotFound", err)
	}
}

// A backfill gives a legacy registration its schema and keeps its history.
func TestUpdateBackfillsLegacyRegistration(t *testing.T) {
	t.Parallel()
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	legacy := []byte(`{"location":"/data/orders","table_type":"TABLE","created_at":"2024-03-01T12:00:00Z","version":1}`)
	if err := st.Put(ctx, "tbl/acme/sales/orders", legacy); err != nil {
		t.Fatal(err)
	}
	schema := catalogtest.WideSchema(4, 6)
	upd, err := c.Update(ctx, orders, catalog.TableSpec{Schema: schema}, catalog.UpdateOptions{IfNoSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Version() != 2 || upd.Location() != "/data/orders" || upd.CreatedAt().Year() != 2024 {
		t.Fatalf("backfilled = %+v", upd)
	}
	if s, err := upd.Schema(); err != nil || !catalog.SchemaEqual(s, schema) {
		t.Fatalf("backfilled schema = %v, %v", s, err)
	}
}

// An update racing another writer is re-applied to the newer registration
// (without IfVersion) and never overwrites it blindly.
func TestUpdateUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	c, _, _ := newCatalog(t)
	ctx := context.Background()
	mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(0, 2)})
	const writers = 8
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			_, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(100+w, 3)}, catalog.UpdateOptions{})
			errs <- err
		}()
	}
	ok := 0
	for range writers {
		switch err := <-errs; {
		case err == nil:
			ok++
		case !errors.Is(err, catalog.ErrConflict):
			t.Errorf("concurrent update: %v", err)
		}
	}
	got, _ := c.Get(ctx, orders)
	if got.Version() != int64(1+ok) {
		t.Fatalf("after %d successful updates the version is %d, want %d: an update was lost", ok, got.Version(), 1+ok)
	}
}

func TestDrop(t *testing.T) {
	t.Parallel()
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(0, 2)})
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, orders); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Get after Drop error = %v, want ErrNotFound", err)
	}
	if err := c.Drop(ctx, orders); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("second Drop error = %v, want ErrNotFound", err)
	}
	// The drop's tombstone, its entry in the tenant's index of dropped
	// tables, the change counter, the tenant's usage and the history of
	// the dropped registration.
	if keys := storedKeys(t, st); len(keys) != 6 || !strings.HasPrefix(keys[0], catalog.TombstonePrefix+"acme/sales/orders/") ||
		!strings.HasPrefix(keys[1], catalog.DroppedIndexPrefix+"acme/") ||
		keys[2] != catalog.ChangesKey || keys[3] != catalog.QuotaPrefix+"acme" || !strings.HasPrefix(keys[4], catalog.VersionPrefix+"acme/sales/orders/") ||
		!strings.HasSuffix(keys[4], "/00000000000000000001") || !strings.HasSuffix(keys[5], "/00000000000000000002") {
		t.Fatalf("keys left after Drop: %q, want the tombstone, its index item, the change counter, the tenant's usage and its version records (the create, the drop)", keys)
	}
	// No table; the tombstone and the history hold their bytes.
	if u, err := c.Usage(ctx, "acme"); err != nil || u != (catalog.Usage{Bytes: storedBytes(t, st, orders)}) {
		t.Fatalf("usage after Drop = %+v, %v; want no table and the %d bytes the tombstone and history hold", u, err, storedBytes(t, st, orders))
	}
}

// unreachable fails every read of a registration and of the change
// counter, as a store that cannot be reached would (fault injection).
type unreachable struct{ metastore.Store }

var errUnreachable = errors.New("injected: the store is unreachable")

func (unreachable) Get(context.Context, string) ([]byte, error) { return nil, errUnreachable }

func (unreachable) Counter(context.Context, string) (uint64, error) { return 0, errUnreachable }

// Every kind of error the package returns, with its full message pinned:
// the package, the operation, the table and the kind each said once, and
// errors.Is finds the kind.
func TestErrorMessagesSayEachThingOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st, clk := newCatalog(t)
	good := catalog.TableSpec{Location: "s3://b/orders/", Schema: catalogtest.WideSchema(1, 2)}
	reg := mustRegister(t, c, orders, good)
	missing := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "missing"}
	other := catalog.TableSpec{Location: "s3://b/other/", Schema: catalogtest.WideSchema(2, 2)}
	dup := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "a", Type: arrow.BinaryTypes.String}}, nil)

	oneTable := catalog.New(st, catalog.Options{Quota: catalog.Quota{MaxTables: 1}})
	// Without history, others asks for its registration alone.
	fewBytes := catalog.New(st, catalog.Options{Now: clk.Now, Quota: catalog.Quota{MaxBytes: 10}, HistoryVersions: -1})
	// others' registration is orders' with a name of the same length, made
	// at the same time: it asks for what orders holds.
	other2 := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "others"}
	ordersKey, _ := orders.Key()
	ordersRaw, err := st.Get(ctx, ordersKey)
	if err != nil {
		t.Fatal(err)
	}
	asked := len(ordersKey) + len(ordersRaw)
	// What the tenant holds when the case runs (the cases before it write).
	heldNow := func() int64 {
		u, err := c.Usage(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		return u.Bytes
	}
	unsignalled := catalog.New(failingCounter{memstore.New(memstore.Options{})}, catalog.Options{})
	down := catalog.New(unreachable{st}, catalog.Options{})
	_, downChanges := catalog.ReadChanges(ctx, unreachable{st})
	droppedAgain := mustRegister(t, c, missing, good)
	if err := c.Drop(ctx, missing); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		err  error
		kind error
		ref  string // said at most once; "" when the error names no table
		want string
	}{
		{"register with an empty schema", second(c.Register(ctx, missing, catalog.TableSpec{Location: "/x", Schema: arrow.NewSchema(nil, nil)})),
			catalog.ErrInvalidSchema, "acme/sales/missing", "catalog: register acme/sales/missing: invalid schema: no fields"},
		{"register with a duplicate field", second(c.Register(ctx, missing, catalog.TableSpec{Location: "/x", Schema: dup})),
			catalog.ErrInvalidSchema, "acme/sales/missing", `catalog: register acme/sales/missing: invalid schema: duplicate top-level field name "a"`},
		{"register with a relative location", second(c.Register(ctx, missing, catalog.TableSpec{Location: "rel", Schema: good.Schema})),
			catalog.ErrInvalidRegistration, "acme/sales/missing", `catalog: register acme/sales/missing: invalid registration: location "rel" is neither a URI with a scheme (s3://bucket/path) nor an absolute path`},
		{"register differently", second(c.Register(ctx, orders, other)),
			catalog.ErrExists, "acme/sales/orders", "catalog: register acme/sales/orders: table already registered differently: at version 1"},
		{"register an invalid name", second(c.Register(ctx, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "a/b"}, good)),
			catalog.ErrInvalidName, "", `catalog: invalid table name "a/b": contains '/'`},
		{"register past the table quota", second(oneTable.Register(ctx, other2, good)),
			catalog.ErrQuotaExceeded, "acme/sales/others", "catalog: register acme/sales/others: tenant quota exceeded: 1 tables, limit 1"},
		{"register past the byte quota", second(fewBytes.Register(ctx, other2, good)),
			catalog.ErrQuotaExceeded, "acme/sales/others", fmt.Sprintf("catalog: register acme/sales/others: tenant quota exceeded: %d bytes held (registrations, kept versions, tombstones) and %d more asked for, limit 10", heldNow(), asked)},
		{"register without signalling", second(unsignalled.Register(ctx, orders, good)),
			catalog.ErrUnsignalled, "acme/sales/orders", "catalog: register acme/sales/orders: written, but the change was not signalled to refresh: the change counter: injected: the counter's partition is unavailable"},
		{"get a missing table", first(c.Get(ctx, missing)), catalog.ErrNotFound, "acme/sales/missing", "catalog: get acme/sales/missing: table not found"},
		{"get from an unreachable store", first(down.Get(ctx, orders)), errUnreachable, "acme/sales/orders", "catalog: get acme/sales/orders: injected: the store is unreachable"},
		{"update a missing table", first(c.Update(ctx, missing, good, catalog.UpdateOptions{})), catalog.ErrNotFound, "acme/sales/missing", "catalog: update acme/sales/missing: table not found"},
		{"update at another version", first(c.Update(ctx, orders, other, catalog.UpdateOptions{IfVersion: 7, IfCreationID: reg.CreationID()})),
			catalog.ErrConflict, "acme/sales/orders", "catalog: update acme/sales/orders: registration changed concurrently: at version 1, expected 7"},
		{"update another registration of the table", first(c.Update(ctx, orders, other, catalog.UpdateOptions{IfVersion: 1, IfCreationID: droppedAgain.CreationID()})),
			catalog.ErrConflict, "acme/sales/orders", "catalog: update acme/sales/orders: registration changed concurrently: that state is of another registration of this table (dropped and registered again since)"},
		{"backfill a table with a schema", first(c.Update(ctx, orders, other, catalog.UpdateOptions{IfNoSchema: true})),
			catalog.ErrConflict, "acme/sales/orders", "catalog: update acme/sales/orders: registration changed concurrently: it has a schema now"},
		{"drop a missing table", c.Drop(ctx, missing), catalog.ErrNotFound, "acme/sales/missing", "catalog: drop acme/sales/missing: table not found"},
		{"usage of an invalid tenant", first(c.Usage(ctx, "a*")), catalog.ErrInvalidName, "",
			`catalog: invalid tenant name "a*": contains '*', a wildcard in IAM policy patterns`},
		{"usage from an unreachable store", first(down.Usage(ctx, "acme")), errUnreachable, "acme", "catalog: usage acme: injected: the store is unreachable"},
		{"read the change counter from an unreachable store", downChanges, errUnreachable, "", "catalog: read meta/changes: injected: the store is unreachable"},
		{"decode empty IPC", first(catalog.DecodeSchema(nil)), catalog.ErrInvalidSchema, "", "catalog: invalid schema: empty IPC bytes"},
		{"decode too many IPC bytes", first(catalog.DecodeSchema(make([]byte, catalog.MaxSchemaIPCBytes+1))),
			catalog.ErrTooLarge, "", fmt.Sprintf("catalog: too large: %d IPC bytes, limit %d", catalog.MaxSchemaIPCBytes+1, catalog.MaxSchemaIPCBytes)},
		{"decode undecodable registration JSON", first(catalog.DecodeRegistration([]byte(`{"location":`))),
			catalog.ErrInvalidRegistration, "", "catalog: invalid registration: unexpected end of JSON input"},
		{"schema of a registration without one", first(mustDecode(t, `{"location":"/x"}`).Schema()),
			catalog.ErrSchemaUnavailable, "", "catalog: schema unavailable"},
		{"parse a key of two parts", first(catalog.ParseKey("acme/orders")),
			catalog.ErrInvalidName, "", `catalog: invalid name: key "acme/orders" has 2 parts, want tenant/namespace/table`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.err == nil {
				t.Fatalf("got no error, want %q", tc.want)
			}
			got := tc.err.Error()
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if !errors.Is(tc.err, tc.kind) {
				t.Errorf("errors.Is(%v, %v) = false", tc.err, tc.kind)
			}
			if n := strings.Count(got, "catalog:"); n != 1 {
				t.Errorf("%q says catalog: %d times, want once", got, n)
			}
			if tc.ref != "" && strings.Count(got, tc.ref) != 1 {
				t.Errorf("%q says %s %d times, want once", got, tc.ref, strings.Count(got, tc.ref))
			}
			// A name error says its kind in its own words (invalid table
			// name); every other kind is its sentinel's text, once.
			if tc.kind != catalog.ErrInvalidName && strings.Count(got, tc.kind.Error()) != 1 {
				t.Errorf("%q says %q %d times, want once", got, tc.kind, strings.Count(got, tc.kind.Error()))
			}
			var ce *catalog.Error
			var ne *catalog.NameError
			if !errors.As(tc.err, &ce) && !errors.As(tc.err, &ne) {
				t.Errorf("%T is neither a *catalog.Error nor a *catalog.NameError", tc.err)
			}
			if ce != nil && ce.Ref != tc.ref && !strings.HasPrefix(ce.Ref, "meta/") {
				t.Errorf("Ref = %q, want %q", ce.Ref, tc.ref)
			}
		})
	}
}

// No sentinel of the package says the package: the *Error around it does.
func TestSentinelsCarryNoPrefix(t *testing.T) {
	t.Parallel()
	for _, kind := range []error{catalog.ErrNotFound, catalog.ErrExists, catalog.ErrConflict, catalog.ErrInvalidName,
		catalog.ErrInvalidSchema, catalog.ErrInvalidRegistration, catalog.ErrTooLarge, catalog.ErrSchemaUnavailable,
		catalog.ErrQuotaExceeded, catalog.ErrUnsignalled} {
		if strings.Contains(kind.Error(), "catalog") {
			t.Errorf("sentinel %q says the package; the *catalog.Error around it says it", kind)
		}
	}
}

func first[T any](_ T, err error) error { return err }

func second[T, U any](_ T, _ U, err error) error { return err }

func mustDecode(tb testing.TB, js string) catalog.Registration {
	tb.Helper()
	r, err := catalog.DecodeRegistration([]byte(js))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
