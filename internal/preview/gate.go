package preview

import "sync"

// gate counts previews in progress, per tenant and in all.
type gate struct {
	perTenant, total int

	mu     sync.Mutex
	n      int
	tenant map[string]int
}

func newGate(perTenant, total int) *gate {
	if perTenant <= 0 {
		perTenant = DefaultPerTenant
	}
	if total <= 0 {
		total = DefaultTotal
	}
	return &gate{perTenant: perTenant, total: total, tenant: make(map[string]int)}
}

// enter admits one preview of tenant's or refuses it at once; release is
// idempotent.
func (g *gate) enter(tenant string) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n >= g.total {
		return nil, &LimitError{Table: "tenant " + tenant, Limit: "concurrent previews", Max: int64(g.total)}
	}
	if g.tenant[tenant] >= g.perTenant {
		return nil, &LimitError{Table: "tenant " + tenant, Limit: "concurrent previews", Max: int64(g.perTenant)}
	}
	g.n++
	g.tenant[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.n--
			if g.tenant[tenant]--; g.tenant[tenant] == 0 {
				delete(g.tenant, tenant)
			}
		})
	}, nil
}
