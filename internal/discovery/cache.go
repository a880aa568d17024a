package discovery

import (
	"container/list"
	"context"
	"fmt"
	"sync"
)

// cacheKey names one prepared tenant: its name and the content hash of its
// segment. A reloaded blob whose segment for the tenant has the same hash
// finds the same entry, so unchanged tenants are not rebuilt.
type cacheKey struct {
	tenant string
	hash   [32]byte
}

// tenantCache keeps prepared tenants within a byte budget, least recently
// used first out. Concurrent first requests for one tenant build it once
// (the others wait for that build). An evicted entry is only dropped: a
// request still holding it finishes with it, and the garbage collector
// frees it afterwards (prepared state lives in Go memory).
//
// The most recently built entry is always kept, even when it alone exceeds
// the budget; older entries are evicted to make room. The memory held is
// therefore at most max(budget, the largest prepared tenant).
type tenantCache struct {
	budget int64

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	lru     list.List // of *cacheEntry, most recently used first; ready entries only
	bytes   int64
	stats   CacheStats
	// onChange, when set, is called (outside mu) after the counters change.
	onChange func(CacheStats)
}

type cacheEntry struct {
	key   cacheKey
	ready chan struct{} // closed when state or err is set
	state *tenantState
	err   error
	size  int64
	elem  *list.Element // nil while building, when dropped or evicted
	// dropped: the entry no longer belongs to any serving blob; a build in
	// flight delivers its result to its waiters but is not kept.
	dropped bool
}

// CacheStats describe the tenant cache.
type CacheStats struct {
	// BudgetBytes is the configured budget.
	BudgetBytes int64 `json:"budget_bytes"`
	// Bytes is what the prepared tenants in the cache hold.
	Bytes int64 `json:"bytes"`
	// Tenants is how many prepared tenants the cache holds.
	Tenants int `json:"tenants"`
	// Builds counts tenant preparations since start: a first request, a
	// request after an eviction, or a request after the tenant changed.
	Builds uint64 `json:"builds"`
	// Hits counts requests answered from a prepared tenant already cached
	// (or being built by another request).
	Hits uint64 `json:"hits"`
	// Evictions counts entries dropped to stay within the budget.
	Evictions uint64 `json:"evictions"`
	// BuildErrors counts preparations that failed (a corrupt segment).
	BuildErrors uint64 `json:"build_errors"`
}

func newTenantCache(budget int64) *tenantCache {
	c := &tenantCache{budget: budget, entries: make(map[cacheKey]*cacheEntry)}
	c.stats.BudgetBytes = budget
	return c
}

// get returns the prepared tenant for key, building it with build on a
// miss. Waiting for another request's build ends early with ctx.
func (c *tenantCache) get(ctx context.Context, key cacheKey, build func() (*tenantState, error)) (*tenantState, error) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.stats.Hits++
		st := c.snapshotLocked()
		c.mu.Unlock()
		c.notify(st)
		select {
		case <-e.ready:
			return e.state, e.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e := &cacheEntry{key: key, ready: make(chan struct{})}
	c.entries[key] = e
	c.mu.Unlock()

	state, err := safeBuild(build)

	c.mu.Lock()
	e.state, e.err = state, err
	close(e.ready)
	c.stats.Builds++
	switch {
	case err != nil:
		c.stats.BuildErrors++
		if c.entries[key] == e {
			delete(c.entries, key)
		}
	case e.dropped:
	default:
		e.size = state.bytes
		e.elem = c.lru.PushFront(e)
		c.bytes += e.size
		for c.bytes > c.budget {
			last := c.lru.Back()
			if last == nil || last == e.elem {
				break
			}
			c.removeLocked(last.Value.(*cacheEntry))
			c.stats.Evictions++
		}
	}
	st := c.snapshotLocked()
	c.mu.Unlock()
	c.notify(st)
	return state, err
}

// safeBuild turns a panic in build into an error, so waiters are released
// and the process keeps serving other tenants.
func safeBuild(build func() (*tenantState, error)) (state *tenantState, err error) {
	defer func() {
		if r := recover(); r != nil {
			state, err = nil, fmt.Errorf("discovery: prepare tenant: %v", r)
		}
	}()
	return build()
}

func (c *tenantCache) removeLocked(e *cacheEntry) {
	if e.elem != nil {
		c.lru.Remove(e.elem)
		c.bytes -= e.size
		e.elem = nil
	}
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
}

// retain drops every entry for which keep is false (tenants gone or
// changed in a new blob), builds in flight included.
func (c *tenantCache) retain(keep func(cacheKey) bool) {
	c.mu.Lock()
	for k, e := range c.entries {
		if !keep(k) {
			e.dropped = true
			c.removeLocked(e)
		}
	}
	st := c.snapshotLocked()
	c.mu.Unlock()
	c.notify(st)
}

// Stats returns the cache's counters.
func (c *tenantCache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked()
}

func (c *tenantCache) snapshotLocked() CacheStats {
	st := c.stats
	st.Bytes, st.Tenants = c.bytes, c.lru.Len()
	return st
}

func (c *tenantCache) notify(st CacheStats) {
	if c.onChange != nil {
		c.onChange(st)
	}
}
