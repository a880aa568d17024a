package catalog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// Every change keeps a version record: the state as it was, who made it,
// how and when; History pages them newest first; the schema of an old
// version is the schema that version had; a dropped table's history is
// reached through its tombstone's creation id and continues after undrop.
func TestHistoryKeepsEveryVersion(t *testing.T) {
	t.Parallel()
	c, _, clk := newCatalog(t)
	alice := catalog.WithCaller(context.Background(), "alice")
	bob := catalog.WithCaller(context.Background(), "bob")
	reg, _, err := c.Register(alice, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		clk.now = clk.now.Add(time.Minute)
		if _, err := c.Update(bob, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 3+i)}, catalog.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	vs, next, err := c.History(context.Background(), orders, "", 0, 10)
	if err != nil || len(vs) != 4 || next != 0 {
		t.Fatalf("history: %d versions, next %d, %v", len(vs), next, err)
	}
	for i, v := range vs {
		want := int64(4 - i)
		s, err := v.Registration.Schema()
		if v.Version != want || err != nil || s.NumFields() != int(want)+1 {
			t.Fatalf("version %d: %d fields (%v), want version %d with %d", v.Version, s.NumFields(), err, want, want+1)
		}
	}
	if vs[3].Registration.Op() != catalog.OpCreate || vs[3].Registration.UpdatedBy() != "alice" || vs[0].Registration.Op() != catalog.OpUpdate || vs[0].Registration.UpdatedBy() != "bob" {
		t.Fatalf("who and how: v1 %s by %s, v4 %s by %s", vs[3].Registration.Op(), vs[3].Registration.UpdatedBy(), vs[0].Registration.Op(), vs[0].Registration.UpdatedBy())
	}
	page, next, err := c.History(context.Background(), orders, "", 0, 3)
	if err != nil || len(page) != 3 || next != 2 {
		t.Fatalf("first page of 3: %d, next %d, %v", len(page), next, err)
	}
	if page, next, err = c.History(context.Background(), orders, "", next, 3); err != nil || len(page) != 1 || page[0].Version != 1 || next != 0 {
		t.Fatalf("second page: %v, next %d, %v", page, next, err)
	}

	if err := c.Drop(bob, orders); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.History(context.Background(), orders, "", 0, 10); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("history of a dropped table without its creation id: %v, want ErrNotFound", err)
	}
	// The drop is a version of its own: the state dropped, by whom, when.
	clk.now = clk.now.Add(time.Minute)
	vs, _, err = c.History(context.Background(), orders, reg.CreationID(), 0, 10)
	if err != nil || len(vs) != 5 {
		t.Fatalf("history of the dropped registration: %d, %v", len(vs), err)
	}
	if d := vs[0].Registration; vs[0].Version != 5 || d.Op() != catalog.OpDrop || d.UpdatedBy() != "bob" || !d.UpdatedAt().Equal(clk.now.Add(-time.Minute)) || d.Location() != "/o" {
		t.Fatalf("the drop's version: v%d %s by %s at %v, location %q", vs[0].Version, d.Op(), d.UpdatedBy(), d.UpdatedAt(), d.Location())
	}
	if _, err := c.Undrop(alice, orders, reg.CreationID()); err != nil {
		t.Fatal(err)
	}
	vs, _, err = c.History(context.Background(), orders, "", 0, 10)
	if err != nil || len(vs) != 6 || vs[0].Registration.Op() != catalog.OpUndrop || vs[0].Version != 6 || vs[1].Registration.Op() != catalog.OpDrop {
		t.Fatalf("history after undrop: %d versions, %v", len(vs), err)
	}
	for _, bad := range []struct {
		id            string
		before, limit int
	}{{"", 0, 0}, {"", -1, 10}, {"", 0, catalog.MaxHistoryPage + 1}, {"XYZ", 0, 10}} {
		if _, _, err := c.History(context.Background(), orders, bad.id, int64(bad.before), bad.limit); !errors.Is(err, catalog.ErrInvalidRegistration) {
			t.Errorf("History(%+v): %v, want ErrInvalidRegistration", bad, err)
		}
	}
	if _, _, err := c.History(context.Background(), catalog.TableRef{Tenant: "globex", Namespace: "sales", Name: "orders"}, "", 0, 10); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("another tenant's table of the same name: %v, want ErrNotFound", err)
	}
}

// Only the newest HistoryVersions versions are kept; negative keeps none.
func TestHistoryIsBounded(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	c := catalog.New(st, catalog.Options{HistoryVersions: 2})
	mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 2)})
	for i := range 4 {
		if _, err := c.Update(context.Background(), orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 3+i)}, catalog.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	vs, _, err := c.History(context.Background(), orders, "", 0, 10)
	if err != nil || len(vs) != 2 || vs[0].Version != 5 || vs[1].Version != 4 {
		t.Fatalf("bounded history: %+v, %v", vs, err)
	}
	if kept, _ := st.ScanPrefix(context.Background(), catalog.VersionPrefix); len(kept) != 2 {
		t.Fatalf("%d version records stored, want 2", len(kept))
	}
	off := catalog.New(memstore.New(memstore.Options{}), catalog.Options{HistoryVersions: -1})
	mustRegister(t, off, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 2)})
	if vs, _, err := off.History(context.Background(), orders, "", 0, 10); err != nil || len(vs) != 0 {
		t.Fatalf("history off: %+v, %v", vs, err)
	}
}

// HistoryMaxAge bounds the history by age too: older versions are not
// listed, and the sweep deletes them and gives their bytes back.
func TestHistoryMaxAge(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	clk := &clock{now: t0}
	c := catalog.New(st, catalog.Options{Now: clk.Now, HistoryMaxAge: 24 * time.Hour})
	ctx := context.Background()
	mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 2)})
	clk.now = clk.now.Add(30 * time.Hour)
	if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 3)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if vs, _, err := c.History(ctx, orders, "", 0, 10); err != nil || len(vs) != 1 || vs[0].Version != 2 {
		t.Fatalf("history: %+v, %v; want version 2 alone (version 1 is 30 h old)", vs, err)
	}
	p, err := c.PurgeExpired(ctx)
	if err != nil || p.Versions != 1 {
		t.Fatalf("purge: %+v, %v; want version 1's record", p, err)
	}
	if u, _ := c.Usage(ctx, "acme"); u.Bytes != storedBytes(t, st, orders) {
		t.Fatalf("usage after the purge %+v, want the %d bytes left", u, storedBytes(t, st, orders))
	}
}
