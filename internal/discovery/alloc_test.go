package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Every Flight call releases all the Arrow memory it took from the
// server's allocator, answered or refused: the server runs on a checked
// allocator and each call, over gRPC with the arrow-go client, must leave
// it at zero once the client has read the whole answer. Tenant preparation
// runs inside the first call, so its batches are counted too.
func TestEveryCallReleasesItsMemory(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	// Small batches: the answers span several messages.
	e := newEnv(t, discovery.Options{Allocator: mem, BatchBytes: 4 << 10})
	for i := range 60 {
		e.register("acme", fmt.Sprintf("ns%d", i%3), fmt.Sprintf("t%02d", i), wide(i))
	}
	e.registerSpec("acme", "ops", "described", catalog.TableSpec{Location: "/d", Schema: nestedSchema(), Description: "orders"})
	e.register("acme", "ops", "legacy", nil)
	e.register("globex", "ns0", "secret", wide(1))
	e.publish()
	acme := as(t, "acme")
	mem.AssertSize(t, 0)

	get := func(info *flight.FlightInfo, err error) error {
		_, recs, err := e.doGet(acme, info, err)
		release(recs)
		return err
	}
	action := func(typ, body string) error {
		stream, err := e.client.Client.DoAction(acme, &flight.Action{Type: typ, Body: []byte(body)})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	ctx := context.Background()
	calls := []struct {
		name    string
		call    func() error
		refused bool
	}{
		{"catalogs", func() error { return get(e.client.GetCatalogs(acme)) }, false},
		{"schemas all", func() error { return get(e.client.GetDBSchemas(acme, &flightsql.GetDBSchemasOpts{})) }, false},
		{"schemas pattern", func() error {
			p := "ns%"
			return get(e.client.GetDBSchemas(acme, &flightsql.GetDBSchemasOpts{DbSchemaFilterPattern: &p}))
		}, false},
		{"tables names", func() error { return get(e.client.GetTables(acme, &flightsql.GetTablesOpts{})) }, false},
		// The legacy table has no stored schema: refused.
		{"tables with schemas", func() error { return get(e.client.GetTables(acme, &flightsql.GetTablesOpts{IncludeSchema: true})) }, true},
		{"namespace with schemas", func() error {
			ns := "ns2"
			return get(e.client.GetTables(acme, &flightsql.GetTablesOpts{DbSchemaFilterPattern: &ns, IncludeSchema: true}))
		}, false},
		{"tables pattern with schemas", func() error {
			p := "t1%"
			return get(e.client.GetTables(acme, &flightsql.GetTablesOpts{TableNameFilterPattern: &p, IncludeSchema: true}))
		}, false},
		{"one table", func() error {
			ns, name := "ns1", "t01"
			return get(e.client.GetTables(acme, &flightsql.GetTablesOpts{DbSchemaFilterPattern: &ns, TableNameFilterPattern: &name, IncludeSchema: true}))
		}, false},
		{"table types filter", func() error {
			return get(e.client.GetTables(acme, &flightsql.GetTablesOpts{TableTypes: []string{"VIEW"}}))
		}, false},
		{"too many wildcards", func() error {
			p := "%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a"
			return get(e.client.GetTables(acme, &flightsql.GetTablesOpts{TableNameFilterPattern: &p}))
		}, true},
		{"table types", func() error { return get(e.client.GetTableTypes(acme)) }, false},
		{"sqlinfo", func() error { return get(e.client.GetSqlInfo(acme, nil)) }, false},
		{"xdbc type info", func() error { return get(e.client.GetXdbcTypeInfo(acme, nil)) }, false},
		{"primary keys", func() error {
			return get(e.client.GetPrimaryKeys(acme, flightsql.TableRef{Table: "t01"}))
		}, false},
		{"statement", func() error {
			_, err := statement(e, acme, "SELECT table_name FROM information_schema.tables ORDER BY table_name")
			return err
		}, false},
		{"prepared statement", func() error {
			_, err := jdbcPrepared(e, acme, "SELECT count(*) FROM information_schema.columns")
			return err
		}, false},
		{"bad statement", func() error {
			_, err := statement(e, acme, "SELECT * FROM no_such_table")
			return err
		}, true},
		{"describe", func() error { return action(wire.DescribeActionType, describeBody(t, "ops", "described")) }, false},
		{"search", func() error { return action(wire.SearchActionType, searchBody(t, "", "%id%")) }, false},
		{"list tables", func() error { return action(wire.ListTablesActionType, `{"limit":10}`) }, false},
		{"list namespaces", func() error { return action(wire.ListNamespacesActionType, `{"limit":10}`) }, false},
		{"no token", func() error { return get(e.client.GetTables(ctx, &flightsql.GetTablesOpts{})) }, true},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if (err != nil) != c.refused {
				t.Fatalf("err = %v, want refused %v", err, c.refused)
			}
			mem.AssertSize(t, 0)
		})
	}
}
