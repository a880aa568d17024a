package discovery

import "container/list"

// byteLRU keeps values within a byte budget, least recently used first
// out: what the engine cache keeps of statements' results and the answer
// cache of filtered answers. It is not safe for concurrent use; its owner
// holds a lock around every call.
type byteLRU[K comparable, V any] struct {
	budget int64
	m      map[K]*list.Element
	l      list.List // of *lruItem[K, V], most recently used first
	bytes  int64
}

type lruItem[K comparable, V any] struct {
	key  K
	val  V
	size int64
}

func newByteLRU[K comparable, V any](budget int64) *byteLRU[K, V] {
	return &byteLRU[K, V]{budget: budget, m: map[K]*list.Element{}}
}

// get returns k's value and makes it the most recently used.
func (c *byteLRU[K, V]) get(k K) (V, bool) {
	el, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.l.MoveToFront(el)
	return el.Value.(*lruItem[K, V]).val, true
}

// contains reports whether k is kept, without making it more recent.
func (c *byteLRU[K, V]) contains(k K) bool {
	_, ok := c.m[k]
	return ok
}

// add keeps v, which takes size bytes, under k, unless k is kept already or
// size alone exceeds the budget; it evicts the least recently used values
// to stay within the budget.
func (c *byteLRU[K, V]) add(k K, v V, size int64) {
	if _, ok := c.m[k]; ok || size > c.budget {
		return
	}
	c.m[k] = c.l.PushFront(&lruItem[K, V]{key: k, val: v, size: size})
	c.bytes += size
	for c.bytes > c.budget {
		c.remove(c.l.Back())
	}
}

// removeIf drops every value whose key drop accepts.
func (c *byteLRU[K, V]) removeIf(drop func(K) bool) {
	for el := c.l.Front(); el != nil; {
		next := el.Next()
		if drop(el.Value.(*lruItem[K, V]).key) {
			c.remove(el)
		}
		el = next
	}
}

func (c *byteLRU[K, V]) remove(el *list.Element) {
	it := c.l.Remove(el).(*lruItem[K, V])
	delete(c.m, it.key)
	c.bytes -= it.size
}

// len and size say how many values are kept and the bytes they take.
func (c *byteLRU[K, V]) len() int    { return len(c.m) }
func (c *byteLRU[K, V]) size() int64 { return c.bytes }
