package cli_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/wire"
)

// customersSchema nests a customer struct beside a top-level customer_id.
var customersSchema = arrow.NewSchema([]arrow.Field{
	{Name: "customer", Type: arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "address", Type: arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	), Nullable: true},
	{Name: "customer_id", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// lake search in process against local mode: text and --json, escaping,
// and another tenant's tables never shown.
func TestSearchCommand(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	dir := t.TempDir()
	for _, r := range []struct {
		tenant, table string
		schema        *arrow.Schema
	}{
		{"acme", "order_items", customersSchema},
		{"acme", "orderXitems", ordersSchema},
		{"acme", "orders", ordersSchema},
		{"globex", "order_items_secret", customersSchema},
	} {
		pq := filepath.Join(dir, r.tenant, r.table, "part-0.parquet")
		writeParquet(t, pq, r.schema)
		l.must("register", "--tenant", r.tenant, "-n", "sales", "-t", r.table, "--parquet", pq)
	}
	l.refresh()

	tests := []struct {
		name       string
		args       []string
		out, count string
	}{
		{"table pattern", []string{"--table", "order%"},
			"NAMESPACE  TABLE\nsales      orderXitems\nsales      order_items\nsales      orders\n", "3 tables in acme\n"},
		{"escaped underscore", []string{"--table", `order\_items`},
			"NAMESPACE  TABLE\nsales      order_items\n", "1 tables in acme\n"},
		{"nested column paths", []string{"-c", "customer%"},
			"NAMESPACE  TABLE        COLUMNS\nsales      order_items  customer, customer.id, customer.address, customer.address.zip, customer_id\n", "1 tables in acme\n"},
		{"table and column", []string{"-t", "order%", "-c", "%zip"},
			"NAMESPACE  TABLE        COLUMNS\nsales      order_items  customer.address.zip\n", "1 tables in acme\n"},
		{"nothing", []string{"-c", "no\\_such"}, "NAMESPACE  TABLE  COLUMNS\n", "0 tables in acme\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := l.run(append([]string{"search", "--tenant", "acme"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("got exit %d (%s), want 0", code, errOut)
			}
			if out != tt.out {
				t.Errorf("got stdout\n%s\nwant\n%s", out, tt.out)
			}
			if errOut != tt.count {
				t.Errorf("got stderr %q, want %q", errOut, tt.count)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		var got []wire.SearchMatch
		if err := json.Unmarshal([]byte(l.must("search", "--tenant", "acme", "-c", `customer\_id`, "--json")), &got); err != nil {
			t.Fatal(err)
		}
		want := []wire.SearchMatch{{Namespace: "sales", Table: "order_items", TableType: "TABLE",
			Columns: []wire.SearchColumn{{Path: "customer_id", Type: "int64", Nullable: false}}}}
		if !slices.EqualFunc(got, want, func(a, b wire.SearchMatch) bool {
			return a.Namespace == b.Namespace && a.Table == b.Table && a.TableType == b.TableType && slices.Equal(a.Columns, b.Columns)
		}) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		if out := l.must("search", "--tenant", "acme", "-t", "orders", "--json"); !strings.Contains(out, `"columns": []`) {
			t.Fatalf("got %s, want an empty columns array without --column", out)
		}
	})

	t.Run("tenant isolation", func(t *testing.T) {
		for _, args := range [][]string{{"--tenant", "acme"}, {"--tenant", "acme", "-t", "%secret"}, {"--tenant", "initech", "-c", "%"}} {
			out, _, code := l.run(append([]string{"search", "--json"}, args...)...)
			if code != 0 || strings.Contains(out, "secret") {
				t.Fatalf("search %q: got exit %d, %s; want no globex table", args, code, out)
			}
		}
	})

	t.Run("invalid pattern", func(t *testing.T) {
		_, errOut, code := l.run("search", "--tenant", "acme", "-t", `orders\`)
		if code == 0 || !strings.Contains(errOut, "invalid request") || !strings.Contains(errOut, "table_pattern") {
			t.Fatalf("got exit %d, %q; want an invalid-request error naming table_pattern", code, errOut)

		}
	})
}
