package catalog_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// countingStore counts the calls made to the real store it wraps, by
// method and by the kind of key (its first path segment: tbl, ver,
// dropped, quota, meta). countingExpiring is the same over a store whose
// entries expire by themselves (DynamoDB), so the catalog sees that too.
type countingStore struct {
	metastore.Store
	mu    sync.Mutex
	calls map[string]int
}

type countingExpiring struct {
	*countingStore
	ep metastore.ExpiringPutter
}

func countCalls(st metastore.Store) metastore.Store {
	cs := &countingStore{Store: st, calls: map[string]int{}}
	if ep, ok := st.(metastore.ExpiringPutter); ok {
		return countingExpiring{cs, ep}
	}
	return cs
}

func (s *countingStore) count(method, key string) {
	kind, _, _ := strings.Cut(key, "/")
	s.mu.Lock()
	s.calls[method+" "+kind]++
	s.mu.Unlock()
}

// take returns the calls counted since the last take, and starts again.
func (s *countingStore) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = map[string]int{}
	return out
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.count("Get", key)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) Put(ctx context.Context, key string, value []byte) error {
	s.count("Put", key)
	return s.Store.Put(ctx, key, value)
}

func (s *countingStore) Create(ctx context.Context, key string, value []byte) error {
	s.count("Create", key)
	return s.Store.Create(ctx, key, value)
}

func (s *countingStore) CompareAndSwap(ctx context.Context, key string, old, value []byte) error {
	s.count("CompareAndSwap", key)
	return s.Store.CompareAndSwap(ctx, key, old, value)
}

func (s *countingStore) Delete(ctx context.Context, key string) error {
	s.count("Delete", key)
	return s.Store.Delete(ctx, key)
}

func (s *countingStore) CompareAndDelete(ctx context.Context, key string, old []byte) error {
	s.count("CompareAndDelete", key)
	return s.Store.CompareAndDelete(ctx, key, old)
}

func (s *countingStore) ScanPrefix(ctx context.Context, prefix string) ([]metastore.Entry, error) {
	s.count("ScanPrefix", prefix)
	return s.Store.ScanPrefix(ctx, prefix)
}

func (s *countingStore) AddCounter(ctx context.Context, key string, delta uint64) (uint64, error) {
	s.count("AddCounter", key)
	return s.Store.AddCounter(ctx, key, delta)
}

func (s *countingStore) Counter(ctx context.Context, key string) (uint64, error) {
	s.count("Counter", key)
	return s.Store.Counter(ctx, key)
}

func (s countingExpiring) PutExpiring(ctx context.Context, key string, value []byte, at time.Time) error {
	s.count("PutExpiring", key)
	return s.ep.PutExpiring(ctx, key, value, at)
}

func (s countingExpiring) CreateExpiring(ctx context.Context, key string, value []byte, at time.Time) error {
	s.count("CreateExpiring", key)
	return s.ep.CreateExpiring(ctx, key, value, at)
}

func (s countingExpiring) CompareAndSwapExpiring(ctx context.Context, key string, old, value []byte, at time.Time) error {
	s.count("CompareAndSwapExpiring", key)
	return s.ep.CompareAndSwapExpiring(ctx, key, old, value, at)
}

func counter(st metastore.Store) *countingStore {
	if ce, ok := st.(countingExpiring); ok {
		return ce.countingStore
	}
	return st.(*countingStore)
}

func total(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// usageWrites counts the writes of a tenant's usage item among calls.
func usageWrites(calls map[string]int) int {
	n := 0
	for k, c := range calls {
		if strings.HasSuffix(k, " quota") && !strings.HasPrefix(k, "Get ") {
			n += c
		}
	}
	return n
}

func describeCalls(calls map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		fmt.Fprintf(&b, " %s×%d", k, calls[k])
	}
	return fmt.Sprintf("%d calls:%s", total(calls), b.String())
}

// A drop and an undrop cost a fixed number of store round trips however
// many versions the history keeps: no kept version is read or rewritten
// (the tombstone governs their expiry), and the tenant's usage is written
// once each. Counted on memory and on DynamoDB (dynalite), whose entries
// expire by themselves, with a full history of 10 and of 100 versions
// (each drop then moves the oldest out of the kept count, so the two
// histories do the same work). Before the one commit path, on DynamoDB a
// drop with 100 kept versions read and rewrote each of them (216 calls
// against 36 with 10 kept) and so did an undrop (212 against 32), and on
// either store a drop wrote the usage item four times, an undrop three.
func TestDropAndUndropCostNoRoundTripPerKeptVersion(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name string
		open func(t *testing.T) metastore.Store
	}{
		{"memstore", func(t *testing.T) metastore.Store {
			st := memstore.New(memstore.Options{})
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"dynamo", func(t *testing.T) metastore.Store {
			d := testenv.SharedDynamoDB(t)
			st, err := dynamo.New(d.Client(), dynamo.Options{Table: d.NewTable(t)})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			type cost struct{ drop, undrop map[string]int }
			costs := map[int]cost{}
			for _, kept := range []int{10, 100} {
				st := countCalls(b.open(t))
				clk := &clock{now: t0}
				c := catalog.New(st, catalog.Options{Now: clk.Now, HistoryVersions: kept})
				ctx := context.Background()
				reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 2)})
				for i := 1; i < kept; i++ {
					clk.now = clk.now.Add(time.Minute)
					if _, err := c.Update(ctx, orders, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 2), Description: fmt.Sprint("v", i+1)}, catalog.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if vs, _, err := c.History(ctx, orders, "", 0, catalog.MaxHistoryPage); err != nil || len(vs) != kept {
					t.Fatalf("%d kept: history of %d versions, %v", kept, len(vs), err)
				}
				counter(st).take()
				if err := c.Drop(ctx, orders); err != nil {
					t.Fatal(err)
				}
				drop := counter(st).take()
				if _, err := c.Undrop(ctx, orders, reg.CreationID()); err != nil {
					t.Fatal(err)
				}
				undrop := counter(st).take()
				costs[kept] = cost{drop, undrop}
				t.Logf("%d kept: drop %s", kept, describeCalls(drop))
				t.Logf("%d kept: undrop %s", kept, describeCalls(undrop))
				for op, calls := range map[string]map[string]int{"drop": drop, "undrop": undrop} {
					if n := usageWrites(calls); n != 1 {
						t.Errorf("%d kept: the %s wrote the usage item %d times, want once", kept, op, n)
					}
				}
				// The history is whole after the undrop: the kept count
				// of versions, the undrop and the drop newest.
				vs, _, err := c.History(ctx, orders, "", 0, catalog.MaxHistoryPage)
				if err != nil || len(vs) != kept || vs[0].Registration.Op() != catalog.OpUndrop || vs[1].Registration.Op() != catalog.OpDrop {
					t.Fatalf("%d kept: history after the undrop: %d versions, %v", kept, len(vs), err)
				}
			}
			if got, want := total(costs[100].drop), total(costs[10].drop); got != want {
				t.Errorf("a drop with 100 kept versions costs %d store calls, with 10 %d: want the same", got, want)
			}
			if got, want := total(costs[100].undrop), total(costs[10].undrop); got != want {
				t.Errorf("an undrop with 100 kept versions costs %d store calls, with 10 %d: want the same", got, want)
			}
		})
	}
}
