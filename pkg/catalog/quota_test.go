package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

func quotaCatalog(tb testing.TB, q catalog.Quota) (*catalog.Catalog, metastore.Store) {
	tb.Helper()
	st := memstore.New(memstore.Options{})
	tb.Cleanup(func() { st.Close() })
	return catalog.New(st, catalog.Options{Quota: q}), st
}

func ref(tenant, name string) catalog.TableRef {
	return catalog.TableRef{Tenant: tenant, Namespace: "ns", Name: name}
}

func tableKeys(tb testing.TB, st metastore.Store, tenant string) int {
	tb.Helper()
	es, err := st.ScanPrefix(context.Background(), "tbl/"+tenant+"/")
	if err != nil {
		tb.Fatal(err)
	}
	return len(es)
}

// A tenant at its table limit can register nothing more (and nothing is
// stored), can still retry an identical registration, and frees a place by
// dropping one; other tenants are not affected.
func TestQuotaTables(t *testing.T) {
	t.Parallel()
	c, st := quotaCatalog(t, catalog.Quota{MaxTables: 3})
	ctx := context.Background()
	spec := catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(1, 3)}
	for i := range 3 {
		mustRegister(t, c, ref("acme", fmt.Sprint("t", i)), spec)
	}
	_, _, err := c.Register(ctx, ref("acme", "t3"), spec)
	if !errors.Is(err, catalog.ErrQuotaExceeded) || !strings.Contains(err.Error(), "3 tables, limit 3") {
		t.Fatalf("4th table: %v, want ErrQuotaExceeded naming the limit", err)
	}
	if n := tableKeys(t, st, "acme"); n != 3 {
		t.Fatalf("%d tables stored, want 3", n)
	}
	if _, created, err := c.Register(ctx, ref("acme", "t0"), spec); err != nil || created {
		t.Fatalf("identical retry at the limit: created %v, %v; want the stored one", created, err)
	}
	mustRegister(t, c, ref("globex", "t0"), spec)
	if err := c.Drop(ctx, ref("acme", "t1")); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, c, ref("acme", "t3"), spec)
	if u, err := c.Usage(ctx, "acme"); err != nil || u.Tables != 3 {
		t.Fatalf("usage = %+v, %v; want 3 tables", u, err)
	}
}

// Registration bytes are counted per tenant: a registration or an update
// that would pass the limit is refused and changes nothing; a shrinking
// update and a drop give bytes back.
func TestQuotaBytes(t *testing.T) {
	t.Parallel()
	small, big := catalogtest.WideSchema(1, 2), catalogtest.WideSchema(1, 40)
	// Here a drop frees its bytes: no tombstone, no history
	// (TestHistoryAndTombstonesCountInTheQuota has them).
	quotaCatalog := func(t *testing.T, q catalog.Quota) (*catalog.Catalog, metastore.Store) {
		st := memstore.New(memstore.Options{})
		t.Cleanup(func() { st.Close() })
		return catalog.New(st, catalog.Options{Quota: q, TombstoneRetention: -1, HistoryVersions: -1}), st
	}
	probe, probeStore := quotaCatalog(t, catalog.Quota{MaxBytes: -1})
	mustRegister(t, probe, ref("acme", "a"), catalog.TableSpec{Location: "/a", Schema: small})
	mustRegister(t, probe, ref("acme", "b"), catalog.TableSpec{Location: "/b", Schema: big})
	smallBytes, bigBytes := storedBytes(t, probeStore, ref("acme", "a")), storedBytes(t, probeStore, ref("acme", "b"))
	c, st := quotaCatalog(t, catalog.Quota{MaxBytes: bigBytes + smallBytes/2})
	ctx := context.Background()

	mustRegister(t, c, ref("acme", "a"), catalog.TableSpec{Location: "/a", Schema: small})
	if _, _, err := c.Register(ctx, ref("acme", "b"), catalog.TableSpec{Location: "/b", Schema: big}); !errors.Is(err, catalog.ErrQuotaExceeded) {
		t.Fatalf("register past the byte limit: %v, want ErrQuotaExceeded", err)
	}
	mustRegister(t, c, ref("acme", "b"), catalog.TableSpec{Location: "/b", Schema: small})
	if _, err := c.Update(ctx, ref("acme", "a"), catalog.TableSpec{Schema: big}, catalog.UpdateOptions{}); !errors.Is(err, catalog.ErrQuotaExceeded) {
		t.Fatalf("update past the byte limit: %v, want ErrQuotaExceeded", err)
	}
	if got, _ := c.Get(ctx, ref("acme", "a")); got.Version() != 1 {
		t.Fatalf("the refused update changed the registration: version %d", got.Version())
	}
	if u, want := mustUsage(t, c, "acme"), storedBytes(t, st, ref("acme", "a"))+storedBytes(t, st, ref("acme", "b")); u.Bytes != want || u.Tables != 2 {
		t.Fatalf("usage = %+v, want 2 tables of %d bytes", u, want)
	}
	if err := c.Drop(ctx, ref("acme", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Update(ctx, ref("acme", "a"), catalog.TableSpec{Schema: big}, catalog.UpdateOptions{}); err != nil {
		t.Fatalf("update within the limit after a drop: %v", err)
	}
	if _, err := c.Update(ctx, ref("acme", "a"), catalog.TableSpec{Schema: small}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if u, _ := c.Usage(ctx, "acme"); u.Bytes != storedBytes(t, st, ref("acme", "a")) || u.Tables != 1 {
		t.Fatalf("usage after shrinking = %+v, want 1 table of %d bytes", u, storedBytes(t, st, ref("acme", "a")))
	}
}

func mustUsage(tb testing.TB, c *catalog.Catalog, tenant string) catalog.Usage {
	tb.Helper()
	u, err := c.Usage(context.Background(), tenant)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// slowReads delays every Get, as a remote store's round trip does, so that
// concurrent writers interleave between their read and their write (fault
// injection: memstore answers at once).
type slowReads struct{ metastore.Store }

func (s slowReads) Get(ctx context.Context, key string) ([]byte, error) {
	time.Sleep(20 * time.Millisecond)
	return s.Store.Get(ctx, key)
}

// Concurrent writers of one tenant never pass its limit together: of 24
// registrations racing for 5 places exactly 5 are stored and counted.
func TestQuotaUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	st := slowReads{memstore.New(memstore.Options{})}
	t.Cleanup(func() { st.Close() })
	c := catalog.New(st, catalog.Options{Quota: catalog.Quota{MaxTables: 5}})
	spec := catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(1, 3)}
	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		created, exceeded int
	)
	for i := range 24 {
		wg.Go(func() {
			_, ok, err := c.Register(context.Background(), ref("acme", fmt.Sprint("t", i)), spec)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && ok:
				created++
			case errors.Is(err, catalog.ErrQuotaExceeded):
				exceeded++
			default:
				t.Errorf("register t%d: created %v, %v", i, ok, err)
			}
		})
	}
	wg.Wait()
	u, err := c.Usage(context.Background(), "acme")
	if created != 5 || exceeded != 19 || tableKeys(t, st, "acme") != 5 || err != nil || u.Tables != 5 {
		t.Fatalf("created %d, exceeded %d, stored %d, usage %+v (%v); want 5, 19, 5, 5", created, exceeded, tableKeys(t, st, "acme"), u, err)
	}
}

// A negative limit is no limit; usage is still counted.
func TestQuotaUnlimited(t *testing.T) {
	t.Parallel()
	c, _ := quotaCatalog(t, catalog.Quota{MaxTables: -1, MaxBytes: -1})
	spec := catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(1, 3)}
	for i := range 20 {
		mustRegister(t, c, ref("acme", fmt.Sprint("t", i)), spec)
	}
	if u, err := c.Usage(context.Background(), "acme"); err != nil || u.Tables != 20 {
		t.Fatalf("usage = %+v, %v", u, err)
	}
}
