package discovery

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
)

// fakeEngine stands for an SQL engine: a value the cache closes once out
// of it and no longer used.
type fakeEngine struct{ closed atomic.Bool }

func (f *fakeEngine) Close() { f.closed.Store(true) }

// One budget bounds every kind together, and the least recently used entry
// goes first whatever its kind: a tenant's preparation evicts another
// tenant's engine, an answer a result. An engine evicted while a statement
// holds it is closed by its last release, one evicted unused at once.
func TestOneBudgetBoundsEveryKind(t *testing.T) {
	t.Parallel()
	c := newCache(1000)
	ctx := context.Background()
	check := func(step string) {
		t.Helper()
		st := c.stats()
		var sum int64
		for _, ks := range st.Kinds {
			sum += ks.Bytes
		}
		if st.Bytes > st.BudgetBytes || sum != st.Bytes {
			t.Fatalf("%s: %d bytes (kinds sum to %d) in a budget of %d", step, st.Bytes, sum, st.BudgetBytes)
		}
	}
	kindOf := func(k kind, tenant, sub string) cacheKey { return cacheKey{kind: k, tenant: tenant, sub: sub} }
	build := func(v any, n int64) func() (any, int64, error) {
		return func() (any, int64, error) { return v, n, nil }
	}
	// Tenant a: its prepared state, its engine (held: a statement runs on
	// it), a kept result and a kept answer.
	h, err := c.get(ctx, kindOf(kindTenant, "a", ""), build(&tenantState{}, 300))
	if err != nil {
		t.Fatal(err)
	}
	h.release()
	engA := &fakeEngine{}
	heldA, err := c.get(ctx, kindOf(kindEngine, "a", ""), build(engA, 300))
	if err != nil {
		t.Fatal(err)
	}
	if !c.add(kindOf(kindResult, "a", "SELECT 1"), "result a", 200) || !c.add(kindOf(kindAnswer, "a", "t1"), [][]byte{}, 100) {
		t.Fatal("a result or an answer within the budget was refused")
	}
	check("tenant a")
	if st := c.stats(); st.Bytes != 900 || st.Entries != 4 {
		t.Fatalf("after tenant a: %+v, want 4 entries of 900 bytes", st)
	}

	// Tenant b's state takes the room of a's, oldest first: a's prepared
	// state, then a's engine, which is held and stays open.
	h, err = c.get(ctx, kindOf(kindTenant, "b", ""), build(&tenantState{}, 300))
	if err != nil {
		t.Fatal(err)
	}
	h.release()
	check("tenant b")
	engB := &fakeEngine{}
	h, err = c.get(ctx, kindOf(kindEngine, "b", ""), build(engB, 300))
	if err != nil {
		t.Fatal(err)
	}
	h.release()
	check("engine b")
	if c.contains(kindOf(kindTenant, "a", "")) || c.contains(kindOf(kindEngine, "a", "")) {
		t.Fatal("tenant a's prepared state or engine outlived newer entries of tenant b")
	}
	if engA.closed.Load() {
		t.Fatal("engine a was closed while a statement held it")
	}
	heldA.release()
	if !engA.closed.Load() {
		t.Fatal("engine a was not closed by its last release once evicted")
	}

	// A result of b's evicts a's result; an answer of b's a's answer.
	if !c.add(kindOf(kindResult, "b", "SELECT 1"), "result b", 300) {
		t.Fatal("result b refused")
	}
	check("result b")
	if c.contains(kindOf(kindResult, "a", "SELECT 1")) || !c.contains(kindOf(kindAnswer, "a", "t1")) {
		t.Fatal("want a's result evicted (least recently used) and a's answer kept")
	}
	if !c.add(kindOf(kindAnswer, "b", "t1"), [][]byte{}, 125) {
		t.Fatal("an answer of an eighth of the budget was refused")
	}
	check("answer b")
	if c.add(kindOf(kindAnswer, "b", "t2"), [][]byte{}, 126) {
		t.Fatal("an answer over an eighth of the budget was kept")
	}

	// A large prepared tenant evicts b's engine (unused: closed at once).
	h, err = c.get(ctx, kindOf(kindTenant, "c", ""), build(&tenantState{}, 800))
	if err != nil {
		t.Fatal(err)
	}
	h.release()
	check("tenant c")
	if !engB.closed.Load() {
		t.Fatal("engine b, evicted unused, was not closed")
	}
	st := c.stats()
	for _, k := range []kind{kindTenant, kindEngine, kindResult, kindAnswer} {
		if ks := st.Kinds[k.String()]; ks.Evictions == 0 {
			t.Errorf("kind %s: no eviction (%+v)", k, ks)
		}
	}
	if st.Tenants != 1 || st.Builds != 3 || st.Evictions != 2 {
		t.Errorf("tenants' figures %+v, want 1 kept of 3 built, 2 evicted", st)
	}

	// A new view drops every kind of a changed tenant: c's state.
	c.retain(func(tenant string, _ [32]byte) bool { return tenant != "c" })
	if st := c.stats(); st.Kinds[kindTenant.String()].Entries != 0 {
		t.Fatalf("after dropping c: %+v", st)
	}
}

// An engine a new view drops is closed by the last request using it, and
// one dropped while it is being built is handed to that build's requests
// and closed when they are done.
func TestRetainClosesEnginesWhenUnused(t *testing.T) {
	t.Parallel()
	c := newCache(1 << 20)
	ctx := context.Background()
	key := cacheKey{kind: kindEngine, tenant: "a"}
	eng := &fakeEngine{}
	held, err := c.get(ctx, key, func() (any, int64, error) { return eng, 10, nil })
	if err != nil {
		t.Fatal(err)
	}
	c.retain(func(string, [32]byte) bool { return false })
	if eng.closed.Load() || c.contains(key) {
		t.Fatalf("after the drop: closed %v, kept %v; want open (held) and gone", eng.closed.Load(), c.contains(key))
	}
	held.release()
	if !eng.closed.Load() {
		t.Fatal("not closed by its last release")
	}

	building := &fakeEngine{}
	h, err := c.get(ctx, key, func() (any, int64, error) {
		c.retain(func(string, [32]byte) bool { return false })
		return building, 10, nil
	})
	if err != nil || h.value() != building {
		t.Fatalf("the build's request got %v, %v", h.value(), err)
	}
	if building.closed.Load() || c.contains(key) {
		t.Fatal("an engine dropped while built was closed before its request was done, or kept")
	}
	h.release()
	if !building.closed.Load() {
		t.Fatal("an engine dropped while built was not closed by its request's release")
	}
}

// BenchmarkCache: what the one cache costs a request — a hit (lookup and
// release, from every core at once: one lock for every kind), and an
// entry added that evicts the least recently used one.
func BenchmarkCache(b *testing.B) {
	const entries = 10_000
	c := newCache(entries * 100)
	for i := range entries {
		c.add(cacheKey{kind: kindAnswer, tenant: "acme", sub: fmt.Sprint(i)}, [][]byte{}, 100)
	}
	b.Run("hit/parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				h, ok := c.lookup(cacheKey{kind: kindAnswer, tenant: "acme", sub: strconv.Itoa(i % entries)})
				if !ok {
					b.Fatal("miss")
				}
				h.release()
				i++
			}
		})
	})
	b.Run("add_evict", func(b *testing.B) {
		i := 0
		for b.Loop() {
			c.add(cacheKey{kind: kindResult, tenant: "acme", sub: strconv.Itoa(entries + i)}, nil, 100)
			i++
		}
		if st := c.stats(); st.Bytes > st.BudgetBytes {
			b.Fatalf("%d bytes over the budget %d", st.Bytes, st.BudgetBytes)
		}
	})
}
