package discovery_test

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// A filtered GetTables asked again is answered with the messages encoded
// the first time (the cache's hit counter moves; its GetFlightInfo and
// DoGet select and encode nothing, so the miss counter does not), byte for
// byte the same rows; a whole tenant's answer (encoded with the tenant)
// counts neither; the same request from another tenant with a table of the same name
// gets its own tenant's answer; after the tenant's table changes, the
// answer is the new one, never the kept one; nothing is left on the
// checked allocator.
func TestFilteredAnswersAreKeptPerTenantAndGeneration(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	e := newEnv(t, discovery.Options{Allocator: mem})
	e.register("acme", "sales", "orders", wide(1))
	e.register("acme", "sales", "returns", wide(2))
	e.register("globex", "sales", "orders", wide(3))
	e.publish()
	counts := func() string {
		m := e.scrape()
		return metric(m, "lake_discovery_answer_cache_hits_total") + " hits, " + metric(m, "lake_discovery_answer_cache_misses_total") + " misses"
	}
	one := &flightsql.GetTablesOpts{TableNameFilterPattern: new("orders"), IncludeSchema: true}
	first, err := e.tables(as(t, "acme"), one)
	if err != nil || len(first) != 1 {
		t.Fatalf("first: %v, %v", first, err)
	}
	if c := counts(); c != "0 hits, 1 misses" {
		t.Fatalf("after the first request: %s, want 0 hits, 1 misses", c)
	}
	again, err := e.tables(as(t, "acme"), one)
	if err != nil || len(again) != 1 || !bytes.Equal(again[0].schema, first[0].schema) || again[0].name != "orders" {
		t.Fatalf("again: %v, %v", again, err)
	}
	if c := counts(); c != "1 hits, 1 misses" {
		t.Fatalf("after the same request again: %s, want 1 hits, 1 misses", c)
	}
	if all, err := e.tables(as(t, "acme"), &flightsql.GetTablesOpts{IncludeSchema: true}); err != nil || len(all) != 2 {
		t.Fatalf("the whole tenant: %v, %v", all, err)
	}
	if c := counts(); c != "1 hits, 1 misses" {
		t.Fatalf("after a whole tenant's request: %s, want 1 hits, 1 misses", c)
	}
	other, err := e.tables(as(t, "globex"), one)
	if err != nil || len(other) != 1 || other[0].catalog != "globex" || bytes.Equal(other[0].schema, first[0].schema) {
		t.Fatalf("globex asking the same: %v, %v; want globex's own orders", other, err)
	}
	// acme's orders changes: the next snapshot's answer is the new schema.
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	if _, err := e.cat.Update(t.Context(), ref, catalog.TableSpec{Schema: wide(4)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.publish()
	after, err := e.tables(as(t, "acme"), one)
	if err != nil || len(after) != 1 || bytes.Equal(after[0].schema, first[0].schema) {
		t.Fatalf("after the change: %v, %v; want the new schema", after, err)
	}
}
