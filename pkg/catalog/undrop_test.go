package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// A drop keeps a tombstone naming who dropped it; Undrop restores the
// registration as it was (creation id kept, the next version, who
// restored it), once; a name registered again since the drop is refused
// and changes nothing; past retention the tombstone is gone from the list
// and cannot be restored.
func TestDropKeepsATombstoneAndUndropRestores(t *testing.T) {
	t.Parallel()
	c, _, clk := newCatalog(t)
	alice := catalog.WithCaller(context.Background(), "arn:aws:iam::1:user/alice")
	bob := catalog.WithCaller(context.Background(), "arn:aws:iam::1:user/bob")
	spec := catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3), Description: "one row per order"}
	reg, _, err := c.Register(alice, orders, spec)
	if err != nil {
		t.Fatal(err)
	}
	if reg.UpdatedBy() != "arn:aws:iam::1:user/alice" || reg.Op() != catalog.OpCreate {
		t.Fatalf("registered by %q, op %q", reg.UpdatedBy(), reg.Op())
	}
	upd, err := c.Update(alice, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 4)}, catalog.UpdateOptions{})
	if err != nil || upd.Op() != catalog.OpUpdate || upd.Version() != 2 {
		t.Fatalf("update: %v, op %q, version %d", err, upd.Op(), upd.Version())
	}
	clk.now = clk.now.Add(time.Hour)
	if err := c.Drop(bob, orders); err != nil {
		t.Fatal(err)
	}
	dropped, err := c.Dropped(context.Background(), "acme")
	if err != nil || len(dropped) != 1 {
		t.Fatalf("Dropped = %v, %v; want one", dropped, err)
	}
	d := dropped[0]
	if d.DroppedBy != "arn:aws:iam::1:user/bob" || !d.DroppedAt.Equal(clk.now) || !d.ExpiresAt.Equal(clk.now.Add(catalog.DefaultTombstoneRetention)) ||
		d.Registration.CreationID() != reg.CreationID() || d.Registration.Version() != 3 || d.Registration.Op() != catalog.OpDrop ||
		d.Registration.UpdatedBy() != "arn:aws:iam::1:user/bob" {
		t.Fatalf("tombstone %+v", d)
	}
	if other, err := c.Dropped(context.Background(), "globex"); err != nil || len(other) != 0 {
		t.Fatalf("another tenant's dropped tables: %v, %v", other, err)
	}

	// The name taken again: refused, nothing changed.
	again := mustRegister(t, c, orders, catalog.TableSpec{Location: "/new", Schema: catalogtest.WideSchema(2, 2)})
	if _, err := c.Undrop(alice, orders, reg.CreationID()); !errors.Is(err, catalog.ErrExists) {
		t.Fatalf("undrop over a registered name: %v, want ErrExists", err)
	}
	if cur, _ := c.Get(context.Background(), orders); cur.CreationID() != again.CreationID() {
		t.Fatal("the refused undrop changed the registered table")
	}
	if err := c.Drop(alice, orders); err != nil {
		t.Fatal(err)
	}

	got, err := c.Undrop(alice, orders, reg.CreationID())
	if err != nil {
		t.Fatal(err)
	}
	if got.CreationID() != reg.CreationID() || got.Version() != 4 || got.Op() != catalog.OpUndrop || got.UpdatedBy() != "arn:aws:iam::1:user/alice" ||
		got.Description() != "one row per order" || !got.CreatedAt().Equal(reg.CreatedAt()) {
		t.Fatalf("restored %+v", got)
	}
	if cur, err := c.Get(context.Background(), orders); err != nil || cur.CreationID() != reg.CreationID() {
		t.Fatalf("Get after undrop: %v, %v", cur.CreationID(), err)
	}
	if _, err := c.Undrop(alice, orders, reg.CreationID()); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("a second undrop of the same tombstone: %v, want ErrNotFound", err)
	}
	if u, _ := c.Usage(context.Background(), "acme"); u.Tables != 1 {
		t.Fatalf("usage after undrop: %+v, want 1 table", u)
	}

	// The other registration's tombstone expires.
	clk.now = clk.now.Add(catalog.DefaultTombstoneRetention)
	if left, _ := c.Dropped(context.Background(), "acme"); len(left) != 0 {
		t.Fatalf("tombstones past retention listed: %v", left)
	}
	if _, err := c.Undrop(alice, orders, again.CreationID()); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("undrop past retention: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "../x", "ABC", "12/34"} {
		if _, err := c.Undrop(alice, orders, bad); !errors.Is(err, catalog.ErrInvalidRegistration) {
			t.Errorf("undrop with creation id %q: %v, want ErrInvalidRegistration", bad, err)
		}
	}
}

// With retention off a drop keeps nothing to restore.
func TestNoRetentionKeepsNoTombstone(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	c := catalog.New(st, catalog.Options{TombstoneRetention: -1})
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)})
	if err := c.Drop(context.Background(), orders); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Dropped(context.Background(), "acme"); err != nil || len(d) != 0 {
		t.Fatalf("Dropped = %v, %v", d, err)
	}
	if _, err := c.Undrop(context.Background(), orders, reg.CreationID()); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("undrop without retention: %v, want ErrNotFound", err)
	}
	// Nothing can reach the dropped registration's history any more: its
	// records are gone and the tenant holds nothing.
	if keys := storedKeys(t, st); slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, catalog.VersionPrefix) }) {
		t.Fatalf("keys after a drop without retention: %q, want no version record", keys)
	}
	if u, err := c.Usage(context.Background(), "acme"); err != nil || u != (catalog.Usage{}) {
		t.Fatalf("usage after a drop without retention: %+v, %v; want none", u, err)
	}
}

// PurgeExpired deletes the tombstones past retention and the history of
// their registrations, and nothing else: a tombstone in retention and the
// history of a live table stay.
func TestPurgeExpired(t *testing.T) {
	t.Parallel()
	c, st, clk := newCatalog(t)
	ctx := context.Background()
	old := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)})
	if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 4)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	clk.now = clk.now.Add(catalog.DefaultTombstoneRetention - time.Hour)
	returns := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "returns"}
	mustRegister(t, c, returns, catalog.TableSpec{Location: "/r", Schema: catalogtest.WideSchema(2, 3)})
	if err := c.Drop(ctx, returns); err != nil {
		t.Fatal(err)
	}
	live := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "live"}
	mustRegister(t, c, live, catalog.TableSpec{Location: "/l", Schema: catalogtest.WideSchema(3, 3)})
	if p, err := c.PurgeExpired(ctx); err != nil || p != (catalog.Purged{}) {
		t.Fatalf("purge before any retention ended: %+v, %v", p, err)
	}
	clk.now = clk.now.Add(2 * time.Hour) // orders' retention ended, returns' not
	p, err := c.PurgeExpired(ctx)
	if err != nil || p != (catalog.Purged{Tombstones: 1, Versions: 3}) {
		t.Fatalf("purge: %+v, %v; want orders' tombstone and its 3 versions (create, update, drop)", p, err)
	}
	if vs, _, err := c.History(ctx, orders, old.CreationID(), 0, 10); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("history of the purged registration: %v, %v", vs, err)
	}
	if d, _ := c.Dropped(ctx, "acme"); len(d) != 1 || d[0].Ref != returns {
		t.Fatalf("dropped after the purge: %+v", d)
	}
	if vs, _, err := c.History(ctx, live, "", 0, 10); err != nil || len(vs) != 1 {
		t.Fatalf("the live table's history after the purge: %v, %v", vs, err)
	}
	if left, _ := st.ScanPrefix(ctx, catalog.VersionPrefix+"acme/sales/orders/"); len(left) != 0 {
		t.Fatalf("orders' version records left: %v", left)
	}
}

// The quota counts what a tenant holds: history and tombstones too. A
// version record is reserved with its write, given back when it falls out
// of the kept count; a drop keeps its tombstone's bytes until an undrop or
// the purge gives them back; the recount agrees at every step.
func TestHistoryAndTombstonesCountInTheQuota(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	clk := &clock{now: t0}
	c := catalog.New(st, catalog.Options{Now: clk.Now, HistoryVersions: 2})
	ctx := context.Background()
	agree := func(step string, tables int64) {
		t.Helper()
		u, err := c.Usage(ctx, "acme")
		if err != nil || u.Tables != tables || u.Bytes != storedBytes(t, st, orders) {
			t.Fatalf("%s: usage %+v, %v; want %d tables and the %d bytes stored", step, u, err, tables, storedBytes(t, st, orders))
		}
		if _, err := c.RecomputeUsage(ctx); err != nil {
			t.Fatal(err)
		}
		if again, _ := c.Usage(ctx, "acme"); again != u {
			t.Fatalf("%s: the recount says %+v, the running count %+v", step, again, u)
		}
	}
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)})
	agree("registered", 1)
	for i := range 3 {
		if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 4+i)}, catalog.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		agree(fmt.Sprintf("update %d", i+1), 1)
	}
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	agree("dropped", 0)
	if _, err := c.Undrop(ctx, orders, reg.CreationID()); err != nil {
		t.Fatal(err)
	}
	agree("undropped", 1)
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	clk.now = clk.now.Add(catalog.DefaultTombstoneRetention + time.Second)
	if _, err := c.PurgeExpired(ctx); err != nil {
		t.Fatal(err)
	}
	agree("purged", 0)
	if u, _ := c.Usage(ctx, "acme"); u != (catalog.Usage{}) {
		t.Fatalf("after the purge: %+v, want nothing", u)
	}
	// History beyond the limit is refused with the write.
	small := catalog.New(memstore.New(memstore.Options{}), catalog.Options{Quota: catalog.Quota{MaxBytes: 1}})
	if _, _, err := small.Register(ctx, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)}); !errors.Is(err, catalog.ErrQuotaExceeded) {
		t.Fatalf("register past the byte limit: %v", err)
	}
}
