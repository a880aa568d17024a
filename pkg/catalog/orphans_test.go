package catalog_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// versions counts the version records stored of ref's registration id.
func versions(t testing.TB, st metastore.Store, ref catalog.TableRef, id string) int {
	t.Helper()
	es, err := st.ScanPrefix(context.Background(), catalog.VersionPrefix+ref.String()+"/"+id+"/")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// The sweep deletes the histories nothing reaches and only those: a
// dropped table's whose tombstone is gone (as DynamoDB's TTL deletes it),
// and the first registration's of a name registered again since; it
// keeps a live table's, a dropped one's in retention, and one's whose
// tombstone is past retention but still stored (the tombstone points to
// it). PurgeOrphanedHistory deletes the same, one table at a time, and
// both do nothing the second time.
func TestSweepDeletesOnlyTheHistoryNothingReaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := catalog.New(st, catalog.Options{Now: func() time.Time { return at }, TombstoneRetention: 48 * time.Hour})
	ref := func(name string) catalog.TableRef {
		return catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: name}
	}
	reg := func(name string, seed int) string {
		t.Helper()
		r, _, err := c.Register(ctx, ref(name), catalog.TableSpec{Location: "/d/" + name, Schema: catalogtest.WideSchema(seed, 3)})
		if err != nil {
			t.Fatal(err)
		}
		return r.CreationID()
	}
	drop := func(name string) {
		t.Helper()
		if err := c.Drop(ctx, ref(name)); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(name, id string) {
		t.Helper()
		if err := st.Delete(ctx, catalog.TombstonePrefix+ref(name).String()+"/"+id); err != nil {
			t.Fatal(err)
		}
	}
	live, expired, inRetention := reg("live", 1), reg("expired", 2), reg("dropped", 3)
	orphan, first := reg("orphan", 4), reg("again", 5)
	for _, name := range []string{"expired", "dropped", "orphan", "again"} {
		drop(name)
	}
	gone("orphan", orphan)
	gone("again", first)
	second := reg("again", 6)
	at = at.Add(24 * time.Hour)
	// expired's tombstone ends its retention now, and is still stored.
	if _, err := st.Get(ctx, catalog.TombstonePrefix+ref("expired").String()+"/"+expired); err != nil {
		t.Fatal(err)
	}
	type history struct {
		name, id string
		want     int
	}
	kept := []history{{"live", live, 1}, {"expired", expired, 2}, {"dropped", inRetention, 2}, {"again", second, 1}}
	for _, h := range append(kept, history{"orphan", orphan, 2}, history{"again", first, 2}) {
		if got := versions(t, st, ref(h.name), h.id); got != h.want {
			t.Fatalf("before: %d version records of %s/%s, want %d", got, h.name, h.id, h.want)
		}
	}

	base := st
	t.Run("one table at a time", func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		t.Cleanup(func() { st.Close() })
		copyStore(t, base, st)
		p := catalog.New(st, catalog.Options{})
		for _, h := range append(kept, history{"orphan", orphan, 0}, history{"again", first, 0}) {
			got, err := p.PurgeOrphanedHistory(ctx, ref(h.name), h.id)
			want := 0 // kept
			if h.want == 0 {
				want = 2 // the orphans: create and drop
			}
			if err != nil || got.Versions != want {
				t.Fatalf("purge of %s/%s = %+v, %v; want %d records", h.name, h.id, got, err, want)
			}
			if got := versions(t, st, ref(h.name), h.id); got != h.want {
				t.Fatalf("%d version records of %s/%s left, want %d", got, h.name, h.id, h.want)
			}
			if again, err := p.PurgeOrphanedHistory(ctx, ref(h.name), h.id); err != nil || again.Versions != 0 {
				t.Fatalf("purge of %s/%s again = %+v, %v; want nothing", h.name, h.id, again, err)
			}
		}
	})

	p := catalog.New(st, catalog.Options{})
	got, err := p.SweepOrphanedHistories(ctx, 0)
	if err != nil || got.Histories != 2 || got.Versions != 4 || got.Left != 0 {
		t.Fatalf("sweep = %+v, %v; want the 4 records of 2 histories", got, err)
	}
	for _, h := range append(kept, history{"orphan", orphan, 0}, history{"again", first, 0}) {
		if got := versions(t, st, ref(h.name), h.id); got != h.want {
			t.Fatalf("after the sweep: %d version records of %s/%s, want %d", got, h.name, h.id, h.want)
		}
	}
	if got, err := p.SweepOrphanedHistories(ctx, 0); err != nil || got != (catalog.HistoryPurge{ScanPages: got.ScanPages}) {
		t.Fatalf("sweep again = %+v, %v; want nothing", got, err)
	}
}

// copyStore copies every entry of from into to.
func copyStore(t testing.TB, from, to metastore.Store) {
	t.Helper()
	es, err := from.ScanPrefix(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := to.Put(context.Background(), e.Key, e.Value); err != nil {
			t.Fatal(err)
		}
	}
}

// pausingStore runs hook once before the first operation it names on a
// key under prefix.
type pausingStore struct {
	metastore.Store
	op, prefix string
	once       sync.Once
	hook       func()
}

func (s *pausingStore) pause(op, key string) {
	if op == s.op && strings.HasPrefix(key, s.prefix) {
		s.once.Do(s.hook)
	}
}

func (s *pausingStore) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.Store.Get(ctx, key)
	s.pause("get", key) // after the read: what was read stands
	return v, err
}

func (s *pausingStore) CompareAndDelete(ctx context.Context, key string, old []byte) error {
	s.pause("delete", key) // before the delete
	return s.Store.CompareAndDelete(ctx, key, old)
}

// An undrop that read its tombstone before the TTL deleted it, and lands
// after the purge of its history has looked (tombstone gone, registration
// gone) and before it has finished: the purge finds the table reached
// again when it looks after its deletes, and writes the records back, so
// the undropped table keeps its whole history (create, update, drop,
// undrop) and the usage agrees with a recount.
func TestPurgeRacedByAnUndropWritesTheHistoryBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	c := catalog.New(st, catalog.Options{})
	reg, _, err := c.Register(ctx, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 4)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	tombKey := catalog.TombstonePrefix + orders.String() + "/" + reg.CreationID()

	// The undrop reads the tombstone, then waits; the TTL deletes it.
	read, land, landed := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	undropper := catalog.New(&pausingStore{Store: st, op: "get", prefix: tombKey, hook: func() { close(read); <-land }}, catalog.Options{})
	go func() {
		_, err := undropper.Undrop(ctx, orders, reg.CreationID())
		landed <- err
	}()
	<-read
	raw, err := st.Get(ctx, tombKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, tombKey); err != nil {
		t.Fatal(err)
	}
	// The purge looks (nothing reaches the history), and the undrop lands
	// before its first delete.
	purger := catalog.New(&pausingStore{Store: st, op: "delete", prefix: catalog.VersionPrefix, hook: func() {
		close(land)
		if err := <-landed; err != nil {
			t.Errorf("undrop: %v", err)
		}
	}}, catalog.Options{})
	got, err := purger.PurgeOrphanedHistory(ctx, orders, reg.CreationID())
	if err != nil || got.Versions != 0 || got.Histories != 0 {
		t.Fatalf("purge raced by an undrop = %+v, %v; want its records written back", got, err)
	}
	vs, _, err := c.History(ctx, orders, "", 0, catalog.MaxHistoryPage)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, v := range vs {
		ops = append(ops, v.Registration.Op())
	}
	if strings.Join(ops, " ") != "undrop drop update create" {
		t.Fatalf("history of the undropped table: %v, want undrop drop update create", ops)
	}
	running, err := c.Usage(ctx, orders.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecomputeUsage(ctx); err != nil {
		t.Fatal(err)
	}
	// The tombstone deleted behind the catalog's back is counted until
	// the recount, and nothing else differs.
	ttl := int64(len(tombKey) + len(raw))
	if recounted, err := c.Usage(ctx, orders.Tenant); err != nil || recounted.Tables != running.Tables || running.Bytes-recounted.Bytes != ttl {
		t.Fatalf("usage %+v, recounted %+v, %v; want %d bytes apart (the tombstone)", running, recounted, err, ttl)
	}
}
