package discovery

import "sync"

// answerCache keeps the encoded answers of filtered catalog requests
// (GetTables and GetDbSchemas that keep some of a tenant's rows: a table's
// columns, a namespace's tables) within a byte budget, least recently used
// first out, so a tool that asks the same question again is sent the
// messages encoded the first time, as they are, as the whole-tenant
// answers are. An answer is keyed by the prepared tenant it was read from
// (the tenant's name and its segment's hash, so a tenant's change or
// another tenant never finds it) and the request's command bytes (the
// ticket: the same bytes are the same question).
type answerCache struct {
	mu    sync.Mutex
	lru   *byteLRU[answerKey, [][]byte]
	stats AnswerCacheStats
}

type answerKey struct {
	tenant cacheKey
	cmd    string
}

// AnswerCacheStats describe the cache of filtered answers.
type AnswerCacheStats struct {
	BudgetBytes int64  `json:"budget_bytes"`
	Bytes       int64  `json:"bytes"`
	Answers     int    `json:"answers"`
	Hits        uint64 `json:"hits"`
	Misses      uint64 `json:"misses"`
}

func newAnswerCache(budget int64) *answerCache {
	return &answerCache{lru: newByteLRU[answerKey, [][]byte](budget)}
}

// get returns the kept answer for k (a hit), or nil. A request that then
// encodes its answer counts the miss (missed): a request whose answer is
// never kept (a whole tenant's, already encoded) is neither.
func (c *answerCache) get(k answerKey) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs, ok := c.lru.get(k)
	if !ok {
		return nil
	}
	c.stats.Hits++
	return msgs
}

// has reports whether an answer is kept for k, counting nothing and
// leaving the order of eviction as it is (a GetFlightInfo that will be
// followed by its DoGet).
func (c *answerCache) has(k answerKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.contains(k)
}

// missed counts a request that found no kept answer and encodes one.
func (c *answerCache) missed() {
	c.mu.Lock()
	c.stats.Misses++
	c.mu.Unlock()
}

// keep keeps msgs as k's answer when it fits an eighth of the budget
// (one large answer never empties the cache), evicting the least recently
// used to make room. msgs must not change afterwards.
func (c *answerCache) keep(k answerKey, msgs [][]byte) {
	size := int64(len(k.cmd)+len(k.tenant.tenant)) + 128
	for _, m := range msgs {
		size += int64(len(m)) + 24
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if size <= c.lru.budget/8 {
		c.lru.add(k, msgs, size)
	}
}

// retain drops the answers of prepared tenants keep refuses (a reload's
// changed or removed tenants).
func (c *answerCache) retain(keep func(cacheKey) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.removeIf(func(k answerKey) bool { return !keep(k.tenant) })
}

// Stats reports the cache.
func (c *answerCache) Stats() AnswerCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.BudgetBytes, s.Bytes, s.Answers = c.lru.budget, c.lru.size(), c.lru.len()
	return s
}
