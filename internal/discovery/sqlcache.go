package discovery

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/lake-catalog/lake/internal/sqlcatalog"
)

// engineCache keeps the SQL engines of tenants (one per tenant and
// segment hash, so per generation of the tenant's tables) within a byte
// budget, least recently used first out, as tenantCache keeps prepared
// tenants. Concurrent first requests build an engine once. An engine in
// use when evicted is closed when its last request releases it.
//
// It also keeps statements' results (immutable for an engine, since a
// generation's catalog does not change), within the results' budget, least
// recently used first out: a statement is run once for its GetFlightInfo
// (or CreatePreparedStatement) and answered from here at its DoGet, and
// the same statement again is not run again.
type engineCache struct {
	budget int64

	mu      sync.Mutex
	entries map[cacheKey]*engineEntry
	lru     list.List // of *engineEntry, most recently used first
	bytes   int64
	builds  uint64

	results    *byteLRU[resultKey, *sqlcatalog.Result]
	resultHits uint64
}

// engineEntry is one tenant's engine.
type engineEntry struct {
	key     cacheKey
	ready   chan struct{}
	eng     *sqlcatalog.Engine
	err     error
	size    int64
	refs    int
	removed bool
	elem    *list.Element
}

// resultKey names a statement's result: the engine entry (one tenant,
// one generation) and the SQL text. An entry is never shared between
// tenants, so neither is a result.
type resultKey struct {
	entry *engineEntry
	sql   string
}

func newEngineCache(budget, resultBudget int64) *engineCache {
	return &engineCache{budget: budget, entries: map[cacheKey]*engineEntry{},
		results: newByteLRU[resultKey, *sqlcatalog.Result](resultBudget)}
}

// result returns the kept result of sql on e's engine, or nil.
func (c *engineCache) result(e *engineEntry, sql string) *sqlcatalog.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.results.get(resultKey{e, sql})
	if !ok {
		return nil
	}
	c.resultHits++
	return r
}

// keep keeps the result of sql on e's engine when it fits the budget.
func (c *engineCache) keep(e *engineEntry, sql string, r *sqlcatalog.Result) {
	size := r.Size() + int64(len(sql)) + 64
	c.mu.Lock()
	defer c.mu.Unlock()
	if !e.removed {
		c.results.add(resultKey{e, sql}, r, size)
	}
}

// get returns key's engine entry, building it with build on a miss, with a
// reference the caller gives back with put.
func (c *engineCache) get(ctx context.Context, key cacheKey, build func() (*sqlcatalog.Engine, error)) (*engineEntry, error) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		e.refs++
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.mu.Unlock()
		select {
		case <-e.ready:
			if e.err != nil {
				c.put(e)
				return nil, e.err
			}
			return e, nil
		case <-ctx.Done():
			c.put(e)
			return nil, ctx.Err()
		}
	}
	e := &engineEntry{key: key, ready: make(chan struct{}), refs: 1}
	c.entries[key] = e
	c.mu.Unlock()

	eng, err := safeEngineBuild(build)

	c.mu.Lock()
	e.eng, e.err = eng, err
	close(e.ready)
	c.builds++
	if err != nil {
		if c.entries[key] == e {
			delete(c.entries, key)
		}
		e.refs--
		c.mu.Unlock()
		return nil, err
	}
	if e.removed {
		// Dropped while building (a new snapshot): serve this request only.
		c.mu.Unlock()
		return e, nil
	}
	e.size = eng.Bytes()
	e.elem = c.lru.PushFront(e)
	c.bytes += e.size
	for c.bytes > c.budget {
		last := c.lru.Back()
		if last == nil || last == e.elem {
			break
		}
		c.removeLocked(last.Value.(*engineEntry))
	}
	c.mu.Unlock()
	return e, nil
}

func safeEngineBuild(build func() (*sqlcatalog.Engine, error)) (eng *sqlcatalog.Engine, err error) {
	defer func() {
		if r := recover(); r != nil {
			eng, err = nil, fmt.Errorf("discovery: build sql engine: %v", r)
		}
	}()
	return build()
}

// put gives back a reference from get.
func (c *engineCache) put(e *engineEntry) {
	c.mu.Lock()
	e.refs--
	closeNow := e.removed && e.refs == 0 && e.eng != nil
	c.mu.Unlock()
	if closeNow {
		e.eng.Close()
	}
}

// removeLocked takes e out of the cache; its engine is closed now, or by
// the last request still using it.
func (c *engineCache) removeLocked(e *engineEntry) {
	if e.elem != nil {
		c.lru.Remove(e.elem)
		c.bytes -= e.size
		e.elem = nil
	}
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	e.removed = true
	c.results.removeIf(func(k resultKey) bool { return k.entry == e })
	if e.refs == 0 && e.eng != nil {
		e.eng.Close()
	}
}

// retain drops the entries keep refuses (tenants gone or changed).
func (c *engineCache) retain(keep func(cacheKey) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if !keep(k) {
			c.removeLocked(e)
		}
	}
}

// SQLCacheStats describe the SQL engine cache.
type SQLCacheStats struct {
	// BudgetBytes and Bytes: the engines' budget and what they hold.
	BudgetBytes int64 `json:"budget_bytes"`
	Bytes       int64 `json:"bytes"`
	// Engines is how many tenants' engines are kept; Builds counts engine
	// builds since start.
	Engines int    `json:"engines"`
	Builds  uint64 `json:"builds"`
	// ResultBudgetBytes and ResultBytes: the kept results' budget and
	// what they hold; Results how many, ResultHits how many statements
	// were answered from them.
	ResultBudgetBytes int64  `json:"result_budget_bytes"`
	ResultBytes       int64  `json:"result_bytes"`
	Results           int    `json:"results"`
	ResultHits        uint64 `json:"result_hits"`
}

func (c *engineCache) stats() SQLCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return SQLCacheStats{BudgetBytes: c.budget, Bytes: c.bytes, Engines: c.lru.Len(), Builds: c.builds,
		ResultBudgetBytes: c.results.budget, ResultBytes: c.results.size(), Results: c.results.len(), ResultHits: c.resultHits}
}
