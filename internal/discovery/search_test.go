package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/wire"
)

// nestedSchema has customer_id columns at several depths, under a struct, a
// list, a map and a union.
func nestedSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "customer", Type: arrow.StructOf(
			arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: "address", Type: arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		), Nullable: true},
		{Name: "items", Type: arrow.ListOf(arrow.StructOf(
			arrow.Field{Name: "sku", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "customer_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		)), Nullable: true},
		{Name: "tags", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(
			arrow.Field{Name: "customer_id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		)), Nullable: true},
		{Name: "u", Type: arrow.DenseUnionOf([]arrow.Field{
			{Name: "customer_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		}, []arrow.UnionTypeCode{0, 1}), Nullable: true},
		{Name: "customer_id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
}

// search runs the search action as ctx's tenant and returns the matches and
// the truncation marker, if any.
func (e *env) search(ctx context.Context, body string) ([]wire.SearchMatch, *wire.SearchTruncated, error) {
	e.t.Helper()
	stream, err := e.client.Client.DoAction(ctx, &flight.Action{Type: wire.SearchActionType, Body: []byte(body)})
	if err != nil {
		return nil, nil, err
	}
	var (
		out   []wire.SearchMatch
		trunc *wire.SearchTruncated
	)
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, trunc, nil
		}
		if err != nil {
			return out, trunc, err
		}
		if trunc != nil {
			e.t.Fatalf("a result after the truncation marker: %s", r.Body)
		}
		var probe map[string]any
		if err := json.Unmarshal(r.Body, &probe); err != nil {
			e.t.Fatalf("result %q: %v", r.Body, err)
		}
		if _, ok := probe["truncated"]; ok {
			trunc = &wire.SearchTruncated{}
			if err := json.Unmarshal(r.Body, trunc); err != nil {
				e.t.Fatal(err)
			}
			continue
		}
		var m wire.SearchMatch
		if err := json.Unmarshal(r.Body, &m); err != nil {
			e.t.Fatalf("result %q: %v", r.Body, err)
		}
		out = append(out, m)
	}
}

func searchBody(t testing.TB, table, column string) string {
	t.Helper()
	b, err := json.Marshal(wire.SearchRequest{TablePattern: table, ColumnPattern: column})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// summary is "ns.table[path,path]" per match.
func summary(ms []wire.SearchMatch) []string {
	var out []string
	for _, m := range ms {
		var paths []string
		for _, c := range m.Columns {
			paths = append(paths, c.Path)
		}
		out = append(out, m.Namespace+"."+m.Table+"["+strings.Join(paths, ",")+"]")
	}
	return out
}

func TestSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", nestedSchema())
	e.register("acme", "sales", "order_items", wide(1))
	e.register("acme", "sales", "orderXitems", wide(2))
	e.register("acme", "ops", "events", wide(3))
	e.register("acme", "ops", "legacy", nil)
	e.register("globex", "sales", "orders", nestedSchema())
	e.register("globex", "sales", "customers", nestedSchema())
	e.publish()
	acme := as(t, "acme")

	tests := []struct {
		name, table, column string
		want                []string
	}{
		{"everything", "", "", []string{"ops.events[]", "ops.legacy[]", "sales.orderXitems[]", "sales.order_items[]", "sales.orders[]"}},
		{"table prefix", "order%", "", []string{"sales.orderXitems[]", "sales.order_items[]", "sales.orders[]"}},
		{"underscore is a wildcard", "order_items", "", []string{"sales.orderXitems[]", "sales.order_items[]"}},
		{"escaped underscore is literal", `order\_items`, "", []string{"sales.order_items[]"}},
		{"exact table", "orders", "", []string{"sales.orders[]"}},
		{"no table", "customers", "", nil},
		{"column by name at any depth", "", `customer\_id`, []string{
			"sales.orders[items.item.customer_id,tags.value.customer_id,u.customer_id,customer_id]"}},
		{"underscore matches the path's dot", "", "customer_id", []string{
			"sales.orders[customer.id,items.item.customer_id,tags.value.customer_id,u.customer_id,customer_id]"}},
		{"column by dotted path", "", "customer.address.zip", []string{"sales.orders[customer.address.zip]"}},
		{"column path pattern", "", "customer.%", []string{"sales.orders[customer.id,customer.address,customer.address.zip]"}},
		{"column name pattern", "", "%id", []string{
			"sales.orders[customer.id,items.item.customer_id,tags.value.customer_id,u.customer_id,customer_id]"}},
		{"map key", "", "tags.key", []string{"sales.orders[tags.key]"}},
		{"table and column", "order%", "sku", []string{"sales.orders[items.item.sku]"}},
		{"column excludes tables", "events", "customer_id", nil},
		{"no column", "", "nothing_like_this", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, trunc, err := e.search(acme, searchBody(t, tt.table, tt.column))
			if err != nil {
				t.Fatalf("search: %v", err)
			}
			if trunc != nil {
				t.Fatalf("got truncated %+v, want none", trunc)
			}
			if s := summary(got); !slices.Equal(s, tt.want) {
				t.Fatalf("got %q, want %q", s, tt.want)
			}
		})
	}

	t.Run("columns carry type and nullability", func(t *testing.T) {
		got, _, err := e.search(acme, searchBody(t, "orders", "customer%"))
		if err != nil || len(got) != 1 {
			t.Fatalf("got %v, %v; want one match", got, err)
		}
		m := got[0]
		if m.TableType != "TABLE" {
			t.Errorf("got table_type %q, want TABLE", m.TableType)
		}
		want := map[string]wire.SearchColumn{
			"customer.address.zip": {Path: "customer.address.zip", Type: "utf8", Nullable: true},
			"customer_id":          {Path: "customer_id", Type: "int64", Nullable: false},
			"customer.id":          {Path: "customer.id", Type: "int64", Nullable: false},
		}
		for _, c := range m.Columns {
			if w, ok := want[c.Path]; ok && c != w {
				t.Errorf("got %+v, want %+v", c, w)
			}
		}
	})

}

// Search reports every column's exact type, as arrowtype.String writes it
// and as the browser and lake show print it: a 128-bit decimal is
// decimal128(38, 10), not arrow-go's "decimal(38, 10)", and children carry
// their names and nullability.
func TestSearchReportsExactTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "prices", arrow.NewSchema([]arrow.Field{
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "lines", Type: arrow.ListOfNonNullable(&arrow.Decimal128Type{Precision: 10, Scale: 2}), Nullable: true},
		{Name: "id", Type: &arrow.FixedSizeBinaryType{ByteWidth: 16}},
		{Name: "code", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}, nil))
	e.publish()
	got, _, err := e.search(as(t, "acme"), searchBody(t, "", "%"))
	if err != nil || len(got) != 1 {
		t.Fatalf("got %v, %v; want one match", got, err)
	}
	want := []wire.SearchColumn{
		{Path: "amount", Type: "decimal128(38, 10)"},
		{Path: "at", Type: "timestamp[us, tz=UTC]", Nullable: true},
		{Path: "lines", Type: "list<item: decimal128(10, 2) not null>", Nullable: true},
		{Path: "lines.item", Type: "decimal128(10, 2)"},
		{Path: "id", Type: "fixed_size_binary[16]"},
		{Path: "code", Type: "dictionary<values=utf8, indices=int8>", Nullable: true},
	}
	if !slices.Equal(got[0].Columns, want) {
		t.Fatalf("got columns %+v, want %+v", got[0].Columns, want)
	}
}

func TestSearchInvalidRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", nestedSchema())
	e.publish()
	tests := []struct{ name, body string }{
		{"lone escape in table", searchBody(t, `orders\`, "")},
		{"bad escape in column", searchBody(t, "", `\x`)},
		{"overlong pattern", searchBody(t, strings.Repeat("a", 1025), "")},
		{"not JSON", "table_pattern=orders"},
		{"unknown field", `{"table": "orders"}`},
		{"trailing data", `{} {}`},
		{"huge body", `{"table_pattern": "` + strings.Repeat("%", 4000) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := e.search(as(t, "acme"), tt.body)
			if got := codeOf(err); got != codes.InvalidArgument {
				t.Fatalf("got %v (%v), want INVALID_ARGUMENT", got, err)
			}
		})
	}
	t.Run("empty body lists every table", func(t *testing.T) {
		got, _, err := e.search(as(t, "acme"), "")
		if err != nil || len(got) != 1 {
			t.Fatalf("got %v, %v; want one match", got, err)
		}
	})
}

func TestSearchCapsMatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	small := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for i := range wire.MaxSearchMatches + 5 {
		e.register("acme", "bulk", fmt.Sprintf("t%05d", i), small)
	}
	e.publish()
	for _, column := range []string{"", "id"} {
		t.Run("column "+column, func(t *testing.T) {
			t.Parallel()
			got, trunc, err := e.search(as(t, "acme"), searchBody(t, "", column))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != wire.MaxSearchMatches {
				t.Fatalf("got %d matches, want %d", len(got), wire.MaxSearchMatches)
			}
			if trunc == nil || !trunc.Truncated || trunc.Limit != wire.MaxSearchMatches {
				t.Fatalf("got truncation marker %+v, want {true %d}", trunc, wire.MaxSearchMatches)
			}
			if last := got[len(got)-1].Table; last != fmt.Sprintf("t%05d", wire.MaxSearchMatches-1) {
				t.Fatalf("got last match %q, want the first %d in order", last, wire.MaxSearchMatches)
			}
		})
	}
	t.Run("exactly at the cap is not truncated", func(t *testing.T) {
		got, trunc, err := e.search(as(t, "acme"), searchBody(t, "t00%", ""))
		if err != nil || len(got) != 1000 || trunc != nil {
			t.Fatalf("got %d matches, truncated %+v, %v; want 1000, none", len(got), trunc, err)
		}
	})
}

func TestSearchTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	_, _, err := e.search(as(t, "acme"), "")
	if got := codeOf(err); got != codes.Unavailable {
		t.Fatalf("before the first snapshot: got %v (%v), want UNAVAILABLE", got, err)
	}
	e.register("acme", "sales", "orders", nestedSchema())
	e.register("globex", "secret", "globex_orders", nestedSchema())
	e.register("globex", "sales", "orders", nestedSchema())
	e.publish()

	patterns := []string{"", "%", "_%", "globex%", "orders", "%orders", `globex\_orders`}
	for _, tenant := range []string{"acme", "initech"} {
		for _, table := range patterns {
			for _, column := range []string{"", "%", "customer_id"} {
				t.Run(fmt.Sprintf("%s/%q/%q", tenant, table, column), func(t *testing.T) {
					t.Parallel()
					got, _, err := e.search(as(t, tenant), searchBody(t, table, column))
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range got {
						if tenant != "acme" || m.Namespace != "sales" || m.Table != "orders" {
							t.Fatalf("got %s.%s, want only acme's own tables", m.Namespace, m.Table)
						}
					}
				})
			}
		}
	}

	t.Run("unauthenticated", func(t *testing.T) {
		_, _, err := e.search(context.Background(), searchBody(t, "%", ""))
		if got := codeOf(err); got != codes.Unauthenticated {
			t.Fatalf("got %v (%v), want UNAUTHENTICATED", got, err)
		}
	})

	t.Run("other actions still reach Flight SQL", func(t *testing.T) {
		stream, err := e.client.Client.ListActions(as(t, "acme"), &flight.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for {
			a, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			types = append(types, a.Type)
		}
		if !slices.Contains(types, wire.SearchActionType) || !slices.Contains(types, wire.DescribeActionType) || !slices.Contains(types, flight.CancelFlightInfoActionType) {
			t.Fatalf("got actions %q, want %q, %q and Flight SQL's", types, wire.SearchActionType, wire.DescribeActionType)
		}
		// An unknown action is the Flight SQL server's answer, not search's.
		s, err := e.client.Client.DoAction(as(t, "acme"), &flight.Action{Type: "lake.nothing"})
		if err == nil {
			_, err = s.Recv()
		}
		if got := codeOf(err); got == codes.OK || got == codes.InvalidArgument && strings.Contains(err.Error(), "search") {
			t.Fatalf("got %v (%v) for an unknown action, want the Flight SQL server's error", got, err)
		}
	})
}
