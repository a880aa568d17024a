package discovery_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lake-catalog/lake/internal/discovery"
)

// One budget (Options.CacheBytes) bounds every kind the Service keeps
// together — prepared tenants, SQL engines, statements' results, filtered
// answers — and tenants asked for later evict the state of those asked for
// earlier, every kind of it, while each answer stays exact.
func TestOneBudgetBoundsEveryKindServed(t *testing.T) {
	t.Parallel()
	const tenants = 6
	kinds := []string{"tenant", "sql_engine", "sql_result", "answer"}
	fill := func(e *env) {
		for i := range tenants {
			for j := range 40 {
				e.register(fmt.Sprintf("tenant%d", i), fmt.Sprintf("ns%d", j%3), fmt.Sprintf("t%02d", j), wide(i*100+j))
			}
		}
		e.publish()
	}
	// use asks as tenant i what a SQL tool does first: a filtered
	// GetTables (a prepared tenant and a kept answer) and a statement (an
	// engine and a kept result); it returns both answers.
	use := func(e *env, i int) string {
		t.Helper()
		ctx := as(t, fmt.Sprintf("tenant%d", i))
		rows, err := e.tables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: strp("t1%"), IncludeSchema: true})
		if err != nil {
			t.Fatal(err)
		}
		got, err := statement(e, ctx, "SELECT table_schema, table_name, count(*) FROM information_schema.columns GROUP BY 1, 2")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d tables %v\n%s", len(rows), rows, got)
	}

	roomy := newEnv(t, discovery.Options{CacheBytes: 1 << 30})
	fill(roomy)
	want := make([]string, tenants)
	for i := range tenants {
		want[i] = use(roomy, i)
	}
	// One tenant's state of every kind, and a budget for about two of
	// them.
	one := roomy.svc.CacheStats().Bytes / tenants
	for _, kind := range kinds {
		if roomy.svc.CacheStats().Kinds[kind].Entries != tenants {
			t.Fatalf("the roomy cache holds %+v, want %d entries of kind %s", roomy.svc.CacheStats().Kinds, tenants, kind)
		}
	}

	e := newEnv(t, discovery.Options{CacheBytes: one * 5 / 2})
	fill(e)
	for round := range 2 {
		for i := range tenants {
			if got := use(e, i); got != want[i] {
				t.Fatalf("round %d, tenant%d under a budget of %d bytes:\n%s\nwant\n%s", round, i, one*5/2, got, want[i])
			}
			if st := e.svc.CacheStats(); st.Bytes > st.BudgetBytes {
				t.Fatalf("round %d, tenant%d: the cache holds %d bytes, over its budget of %d: %+v", round, i, st.Bytes, st.BudgetBytes, st.Kinds)
			}
		}
	}
	st := e.svc.CacheStats()
	t.Logf("budget %d: %+v", st.BudgetBytes, st.Kinds)
	for _, kind := range kinds {
		if ks := st.Kinds[kind]; ks.Evictions == 0 || ks.Entries == 0 || ks.Entries == tenants {
			t.Errorf("kind %s: %+v; want some of %d tenants' entries kept and some evicted", kind, ks, tenants)
		}
	}
	// /metrics: a series per kind, and the names of the caches before the
	// one, from the same figures.
	for _, kind := range kinds {
		ks := st.Kinds[kind]
		for name, want := range map[string]float64{
			"lake_discovery_cache_bytes": float64(ks.Bytes), "lake_discovery_cache_entries": float64(ks.Entries),
			"lake_discovery_cache_hits_total": float64(ks.Hits), "lake_discovery_cache_misses_total": float64(ks.Misses),
			"lake_discovery_cache_evictions_total": float64(ks.Evictions),
		} {
			if got := metricValue(t, e.reg, name, "kind", kind); got != want {
				t.Errorf("%s{kind=%q} = %v, want %v", name, kind, got, want)
			}
		}
	}
	for name, want := range map[string]float64{
		"lake_discovery_cache_budget_bytes":           float64(st.BudgetBytes),
		"lake_discovery_tenant_cache_budget_bytes":    float64(st.BudgetBytes),
		"lake_discovery_tenant_builds_total":          float64(st.Builds),
		"lake_discovery_tenant_cache_evictions_total": float64(st.Evictions),
		"lake_discovery_sql_engine_builds_total":      float64(st.Kinds["sql_engine"].Misses),
		"lake_discovery_sql_result_cache_hits_total":  float64(st.Kinds["sql_result"].Hits),
		"lake_discovery_answer_cache_misses_total":    float64(st.Kinds["answer"].Misses),
	} {
		if got := metricValue(t, e.reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if sql := e.svc.SQLCacheStats(); sql.Builds < 2*tenants || sql.BudgetBytes != st.BudgetBytes {
		t.Errorf("SQL figures %+v: want an engine built again for every tenant in the second round, in the one budget %d", sql, st.BudgetBytes)
	}
}
