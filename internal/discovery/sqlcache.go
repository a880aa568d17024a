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
type engineCache struct {
	budget int64

	mu      sync.Mutex
	entries map[cacheKey]*engineEntry
	lru     list.List // of *engineEntry, most recently used first
	bytes   int64
	builds  uint64
}

// engineEntry is one tenant's engine, and the last small result it gave
// (a prepared statement is answered three times in a row: when created,
// at GetFlightInfo and at DoGet).
type engineEntry struct {
	key     cacheKey
	ready   chan struct{}
	eng     *sqlcatalog.Engine
	err     error
	size    int64
	refs    int
	removed bool
	elem    *list.Element

	lastMu  sync.Mutex
	lastSQL string
	lastRes *sqlcatalog.Result
}

// maxRememberedBytes is the largest result an engine entry remembers.
const maxRememberedBytes = 1 << 20

func newEngineCache(budget int64) *engineCache {
	return &engineCache{budget: budget, entries: map[cacheKey]*engineEntry{}}
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
	e.size = eng.Bytes() + maxRememberedBytes
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
	BudgetBytes int64  `json:"budget_bytes"`
	Bytes       int64  `json:"bytes"`
	Engines     int    `json:"engines"`
	Builds      uint64 `json:"builds"`
}

func (c *engineCache) stats() SQLCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return SQLCacheStats{BudgetBytes: c.budget, Bytes: c.bytes, Engines: c.lru.Len(), Builds: c.builds}
}

// remembered returns the result of sql when it is the entry's last.
func (e *engineEntry) remembered(sql string) *sqlcatalog.Result {
	e.lastMu.Lock()
	defer e.lastMu.Unlock()
	if e.lastRes != nil && e.lastSQL == sql {
		return e.lastRes
	}
	return nil
}

func (e *engineEntry) remember(sql string, r *sqlcatalog.Result) {
	if r.Bytes > maxRememberedBytes {
		return
	}
	e.lastMu.Lock()
	e.lastSQL, e.lastRes = sql, r
	e.lastMu.Unlock()
}
