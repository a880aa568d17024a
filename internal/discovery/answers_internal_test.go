package discovery

import (
	"fmt"
	"testing"
)

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
