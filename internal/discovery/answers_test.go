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
// the first time (the cache's hit counter moves), byte for byte the same
// rows; the same request from another tenant with a table of the same name
// gets its own tenant's answer; after the tenant's table changes, the
// answer is the new one, never the kept one; nothing is left on the
// checked allocator.
func TestFilteredAnswersAreKeptPerTenantAndGeneration(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	e := newEnv(t, discovery.Options{Allocator: mem})
	e.register("acme", "sales", "orders", wide(1))
	e.register("acme", "sales", "returns", wide(2))
	e.register("globex", "sales", "orders", wide(3))
	e.publish()
	hits := func() string { return metric(e.scrape(), "lake_discovery_answer_cache_hits_total") }
	one := &flightsql.GetTablesOpts{TableNameFilterPattern: new("orders"), IncludeSchema: true}
	first, err := e.tables(as(t, "acme"), one)
	if err != nil || len(first) != 1 {
		t.Fatalf("first: %v, %v", first, err)
	}
	if h := hits(); h != "0" {
		t.Fatalf("hits after the first request: %s, want 0", h)
	}
	again, err := e.tables(as(t, "acme"), one)
	if err != nil || len(again) != 1 || !bytes.Equal(again[0].schema, first[0].schema) || again[0].name != "orders" {
		t.Fatalf("again: %v, %v", again, err)
	}
	if h := hits(); h != "1" {
		t.Fatalf("hits after the same request again: %s, want 1", h)
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
