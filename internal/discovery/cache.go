package discovery

import (
	"container/list"
	"context"
	"fmt"
	"sync"
)

// The cache. Everything discovery derives from a tenant's segment — the
// prepared tenant, its SQL engine, the statements' results and the
// filtered catalog answers kept for repeats, and whatever the next kinds
// are — lives in one cache with one byte budget (Options.CacheBytes), one
// least-recently-used order across kinds, one single-flight for builds,
// and one set of figures per kind (CacheStats, /metrics), as pebble keeps
// one block cache for every reader. An entry is keyed by its kind, its
// tenant and its segment's address, and what within them it is (a
// statement's text, a request's bytes), so a new view drops every kind of
// a changed tenant at once (retain).
//
// An entry is used through a handle: get and lookup return one with a
// reference, and release gives it back. An entry evicted, dropped or
// replaced while handles are out stays usable by them; a value that holds
// memory the garbage collector does not free (an SQL engine: SQLite's) is
// closed by the last release (or at once when none is out). Values that
// are Go memory alone (prepared tenants, results, answers) stay valid after
// release: the garbage collector frees them once no request holds them.

// kind is what an entry holds.
type kind uint8

const (
	// kindTenant is a prepared tenant (*tenantState).
	kindTenant kind = iota
	// kindEngine is a tenant's SQL engine (*sqlcatalog.Engine), closed
	// by the last release once out of the cache.
	kindEngine
	// kindResult is a statement's result (*sqlcatalog.Result), kept for
	// its DoGet and repeats; sub is the statement's text.
	kindResult
	// kindAnswer is a filtered catalog request's encoded answer
	// ([][]byte); sub is the request's ticket.
	kindAnswer
	numKinds
)

// kinds are each kind's name (its label in /metrics and its key in
// CacheStats.Kinds) and admission: an entry is refused when it is larger
// than budget/share (share 0: any size is kept; the newest entry stays
// even when it alone is over the budget).
var kinds = [numKinds]struct {
	name  string
	share int64
}{
	kindTenant: {name: "tenant"},
	kindEngine: {name: "sql_engine"},
	kindResult: {name: "sql_result"},
	// An answer is cheap to encode again: one large answer must not empty
	// the cache.
	kindAnswer: {name: "answer", share: 8},
}

func (k kind) String() string { return kinds[k].name }

// cacheKey names one entry: its kind, the tenant and its segment's address
// (the content hash: a reloaded blob whose segment for the tenant has the
// same address finds the same entries, so an unchanged tenant is not
// rebuilt; a tenant without a segment has the zero address), and sub, what
// within them the entry is (empty for a prepared tenant and an engine).
type cacheKey struct {
	kind   kind
	tenant string
	addr   [32]byte
	sub    string
}

// closer is a value that must be closed once no request uses it.
type closer interface{ Close() }

// entry is one kept value, or one being built.
type entry struct {
	key   cacheKey
	ready chan struct{} // closed once value or err is set
	value any
	err   error
	size  int64
	refs  int           // handles out
	elem  *list.Element // in the cache's order; nil while building and once out
	// out: the entry is no longer in the cache (evicted, dropped, or its
	// build failed or was dropped); its last release closes its value.
	out bool
}

// cache keeps entries of every kind within one byte budget, least
// recently used first out. It is safe for concurrent use.
//
// The most recently added entry is always kept (but an entry its kind
// refuses), even when it alone exceeds the budget; older entries are
// evicted to make room. The memory held is therefore at most
// max(budget, the largest entry), plus entries out of the cache that
// requests still hold.
type cache struct {
	budget int64

	mu      sync.Mutex
	entries map[cacheKey]*entry
	lru     list.List // of *entry, most recently used first; kept entries only
	bytes   int64
	kinds   [numKinds]KindStats
}

func newCache(budget int64) *cache {
	return &cache{budget: budget, entries: map[cacheKey]*entry{}}
}

// handle is a reference to an entry's value; release gives it back.
type handle struct {
	c *cache
	e *entry
}

// value is the entry's value.
func (h handle) value() any { return h.e.value }

// release gives the reference back: the value of an entry out of the cache
// is closed by its last release.
func (h handle) release() {
	h.c.mu.Lock()
	h.e.refs--
	closeNow := h.e.out && h.e.refs == 0
	h.c.mu.Unlock()
	if closeNow {
		closeValue(h.e.value)
	}
}

func closeValue(v any) {
	if c, ok := v.(closer); ok {
		c.Close()
	}
}

// closeValues closes the values of entries dropped with no handle out,
// outside the cache's lock.
func closeValues(vs []any) {
	for _, v := range vs {
		closeValue(v)
	}
}

// get returns a handle on key's value, building it with build (the value
// and the bytes it holds) on a miss. Concurrent first requests for one key
// build it once: the others wait for that build, or give up with their
// ctx. A build that fails (an error or a panic) is not kept: each waiter
// gets its error and the next request builds again.
func (c *cache) get(ctx context.Context, key cacheKey, build func() (any, int64, error)) (handle, error) {
	c.mu.Lock()
	ks := &c.kinds[key.kind]
	if e, ok := c.entries[key]; ok {
		e.refs++
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		ks.Hits++
		c.mu.Unlock()
		h := handle{c, e}
		select {
		case <-e.ready:
			if e.err != nil {
				h.release()
				return handle{}, e.err
			}
			return h, nil
		case <-ctx.Done():
			h.release()
			return handle{}, ctx.Err()
		}
	}
	e := &entry{key: key, ready: make(chan struct{}), refs: 1}
	c.entries[key] = e
	ks.Misses++
	c.mu.Unlock()

	value, size, err := safeBuild(key.kind, build)

	var closing []any
	c.mu.Lock()
	e.value, e.err = value, err
	close(e.ready)
	switch {
	case err != nil:
		ks.BuildErrors++
		e.refs--
		closing = c.dropLocked(e, closing)
	case e.out:
		// Dropped while building (a new view): served to this request
		// and its waiters only.
	default:
		e.size = size
		closing = c.insertLocked(e, closing)
	}
	c.mu.Unlock()
	closeValues(closing)
	if err != nil {
		return handle{}, err
	}
	return handle{c, e}, nil
}

// safeBuild turns a panic in build into an error, so waiters are released
// and the process keeps serving other tenants.
func safeBuild(k kind, build func() (any, int64, error)) (value any, size int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			value, size, err = nil, 0, fmt.Errorf("discovery: build %s: %v", k, r)
		}
	}()
	return build()
}

// lookup returns a handle on key's value when it is kept (a hit, which
// makes it the most recently used), or false. A miss is not counted: the
// caller counts one with missed when it goes on to make the value.
func (c *cache) lookup(key cacheKey) (handle, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.elem == nil {
		return handle{}, false
	}
	e.refs++
	c.lru.MoveToFront(e.elem)
	c.kinds[key.kind].Hits++
	return handle{c, e}, true
}

// contains reports whether key's value is kept, counting nothing and
// leaving the order as it is.
func (c *cache) contains(key cacheKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	return ok && e.elem != nil
}

// missed counts a request of kind k that found nothing kept and makes the
// value itself (then adds it).
func (c *cache) missed(k kind) {
	c.mu.Lock()
	c.kinds[k].Misses++
	c.mu.Unlock()
}

// add keeps value, which holds size bytes, under key, unless key is kept
// (or being built) already or its kind refuses the size; it evicts the
// least recently used entries to stay within the budget. value must not
// change afterwards. A refused value is not closed: the caller keeps it.
func (c *cache) add(key cacheKey, value any, size int64) bool {
	c.mu.Lock()
	if _, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return false
	}
	if share := kinds[key.kind].share; share > 0 && size > c.budget/share {
		c.mu.Unlock()
		return false
	}
	e := &entry{key: key, ready: closedChan, value: value, size: size}
	c.entries[key] = e
	closing := c.insertLocked(e, nil)
	c.mu.Unlock()
	closeValues(closing)
	return true
}

// closedChan is the ready channel of an entry added built.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// insertLocked makes e the most recently used entry, then evicts the
// least recently used others until the cache is within its budget; it
// appends the values to close to closing.
func (c *cache) insertLocked(e *entry, closing []any) []any {
	e.elem = c.lru.PushFront(e)
	c.bytes += e.size
	ks := &c.kinds[e.key.kind]
	ks.Bytes += e.size
	ks.Entries++
	for c.bytes > c.budget {
		last := c.lru.Back()
		if last == e.elem {
			break
		}
		victim := last.Value.(*entry)
		c.kinds[victim.key.kind].Evictions++
		closing = c.dropLocked(victim, closing)
	}
	return closing
}

// dropLocked takes e out of the cache. When no handle is out it appends
// e's value to closing, for the caller to close once it has let go of
// c.mu; else the last release closes it.
func (c *cache) dropLocked(e *entry, closing []any) []any {
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
		c.bytes -= e.size
		ks := &c.kinds[e.key.kind]
		ks.Bytes -= e.size
		ks.Entries--
	}
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	if !e.out {
		e.out = true
		if e.refs == 0 && e.value != nil {
			closing = append(closing, e.value)
		}
	}
	return closing
}

// retain drops every entry of a tenant and segment address keep refuses
// (a new view's changed or removed tenants), of every kind, builds in
// flight included (their requests still get the result).
func (c *cache) retain(keep func(tenant string, addr [32]byte) bool) {
	var closing []any
	c.mu.Lock()
	for k, e := range c.entries {
		if !keep(k.tenant, k.addr) {
			closing = c.dropLocked(e, closing)
		}
	}
	c.mu.Unlock()
	closeValues(closing)
}

// KindStats describe the entries of one kind in the cache.
type KindStats struct {
	// Bytes and Entries: what the kind's kept entries hold, and how many.
	Bytes   int64 `json:"bytes"`
	Entries int   `json:"entries"`
	// Hits counts requests that found the value kept (or being built by
	// another request); Misses those that did not, each of which built
	// the value (prepared tenants, engines) or made it to keep it
	// (results, answers).
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
	// Evictions counts entries evicted to stay within the budget (not
	// those a new view dropped).
	Evictions uint64 `json:"evictions"`
	// BuildErrors counts builds that failed (a corrupt segment).
	BuildErrors uint64 `json:"build_errors"`
}

// CacheStats describe the cache of everything derived from segments:
// its one budget, what all kinds hold together, and each kind's figures.
type CacheStats struct {
	// BudgetBytes is the budget (Options.CacheBytes), Bytes what every
	// kind holds together, Entries how many entries.
	BudgetBytes int64 `json:"budget_bytes"`
	Bytes       int64 `json:"bytes"`
	Entries     int   `json:"entries"`
	// Kinds has each kind's figures, by name: tenant (prepared tenants),
	// sql_engine, sql_result (statements' kept results), answer (filtered
	// catalog answers).
	Kinds map[string]KindStats `json:"kinds"`
	// The prepared tenants' figures (Kinds["tenant"]): Tenants is how
	// many are kept; Builds counts preparations since start (a first
	// request, a request after an eviction, or after the tenant
	// changed); Hits requests answered from one already prepared (or
	// being prepared by another request); Evictions those evicted to stay
	// within the budget; BuildErrors preparations that failed.
	Tenants     int    `json:"tenants"`
	Builds      uint64 `json:"builds"`
	Hits        uint64 `json:"hits"`
	Evictions   uint64 `json:"evictions"`
	BuildErrors uint64 `json:"build_errors"`
}

// stats returns the cache's figures.
func (c *cache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := CacheStats{BudgetBytes: c.budget, Bytes: c.bytes, Entries: c.lru.Len(), Kinds: make(map[string]KindStats, numKinds)}
	for k, ks := range c.kinds {
		st.Kinds[kinds[k].name] = ks
	}
	t := c.kinds[kindTenant]
	st.Tenants, st.Builds, st.Hits, st.Evictions, st.BuildErrors = t.Entries, t.Misses, t.Hits, t.Evictions, t.BuildErrors
	return st
}
