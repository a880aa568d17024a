package discovery

import (
	"fmt"
	"testing"
)

// answers is the cache seen as the cache of filtered answers it was before
// it held other kinds.
type answers struct{ *cache }

type answerKey struct {
	tenant cacheKey
	cmd    string
}

func (k answerKey) key() cacheKey {
	return cacheKey{kind: kindAnswer, tenant: k.tenant.tenant, addr: k.tenant.addr, sub: k.cmd}
}

func newAnswerCache(budget int64) answers { return answers{newCache(budget)} }

func (c answers) keep(k answerKey, msgs [][]byte) { c.add(k.key(), msgs, answerSize(k.key(), msgs)) }

func (c answers) get(k answerKey) [][]byte {
	h, ok := c.lookup(k.key())
	if !ok {
		return nil
	}
	defer h.release()
	return h.value().([][]byte)
}

func (c answers) retain(keep func(cacheKey) bool) {
	c.cache.retain(func(tenant string, addr [32]byte) bool { return keep(cacheKey{tenant: tenant, addr: addr}) })
}

type answerStats struct {
	BudgetBytes, Bytes int64
	Answers            int
}

func (c answers) Stats() answerStats {
	st := c.stats()
	return answerStats{st.BudgetBytes, st.Kinds[kindAnswer.String()].Bytes, st.Kinds[kindAnswer.String()].Entries}
}

// The cache keeps answers within its budget, least recently used out;
// refuses an answer over an eighth of it; and retain drops the answers of
// the tenants a reload changed.
func TestAnswerCacheBudget(t *testing.T) {
	t.Parallel()
	c := newAnswerCache(16 << 10)
	msg := make([]byte, 900)
	key := func(tenant string, i int) answerKey {
		return answerKey{cacheKey{tenant: tenant}, fmt.Sprint("cmd", i)}
	}
	for i := range 20 {
		c.keep(key("acme", i), [][]byte{msg})
	}
	st := c.Stats()
	if st.Bytes > st.BudgetBytes || st.Answers == 0 || st.Answers == 20 {
		t.Fatalf("after 20 answers of ~1 KiB in a 16 KiB budget: %+v", st)
	}
	if c.get(key("acme", 19)) == nil || c.get(key("acme", 0)) != nil {
		t.Fatal("want the newest kept and the oldest evicted")
	}
	c.keep(key("acme", 99), [][]byte{make([]byte, 2<<10)})
	if c.get(key("acme", 99)) != nil {
		t.Fatal("an answer over an eighth of the budget was kept")
	}
	c.keep(key("globex", 1), [][]byte{msg})
	c.retain(func(k cacheKey) bool { return k.tenant != "acme" })
	if st := c.Stats(); st.Answers != 1 || c.get(key("globex", 1)) == nil {
		t.Fatalf("after dropping acme's: %+v", st)
	}
}
