package discovery_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lake-catalog/lake/internal/discovery"
)

// TestBaseTableAlias: a table_types filter of "BASE TABLE" (the ANSI name
// Grafana's table picker sends) keeps lake's TABLE tables, which are still
// reported as TABLE; types otherwise match exactly.
func TestBaseTableAlias(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(2))
	e.register("acme", "sales", "returns", wide(3))
	e.register("acme", "hr", "people", wide(1))
	e.register("globex", "sales", "secret", wide(1))
	e.publish()
	ctx := as(t, "acme")
	tests := []struct {
		name string
		opts *flightsql.GetTablesOpts
		want string
	}{
		{"whole tenant", &flightsql.GetTablesOpts{TableTypes: []string{"BASE TABLE"}}, "hr.people:TABLE sales.orders:TABLE sales.returns:TABLE"},
		{"with schemas", &flightsql.GetTablesOpts{TableTypes: []string{"BASE TABLE"}, IncludeSchema: true}, "hr.people:TABLE sales.orders:TABLE sales.returns:TABLE"},
		{"filtered", &flightsql.GetTablesOpts{TableTypes: []string{"BASE TABLE"}, DbSchemaFilterPattern: strp("sales"), TableNameFilterPattern: strp("ret%")}, "sales.returns:TABLE"},
		{"beside VIEW", &flightsql.GetTablesOpts{TableTypes: []string{"VIEW", "BASE TABLE"}, TableNameFilterPattern: strp("people")}, "hr.people:TABLE"},
		{"exact case", &flightsql.GetTablesOpts{TableTypes: []string{"base table"}}, ""},
		{"VIEW alone", &flightsql.GetTablesOpts{TableTypes: []string{"VIEW"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, err := e.tables(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.ns+"."+r.name+":"+r.typ)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("GetTables(%+v) = %q, want %q", tt.opts, g, tt.want)
			}
		})
	}
}
