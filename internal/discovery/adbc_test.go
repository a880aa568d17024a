package discovery_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
)

func adbcConn(t *testing.T, e *env, tenant string) adbc.Connection {
	t.Helper()
	drv := adbcflight.NewDriver(memory.DefaultAllocator)
	db, err := drv.NewDatabase(map[string]string{
		adbc.OptionKeyURI:                    "grpc://" + e.addr,
		adbcflight.OptionAuthorizationHeader: "Bearer " + token(t, tenant),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cn.Close() })
	return cn
}

// The ADBC Flight SQL driver (what DBeaver-style tools and pyarrow's ADBC
// use) sees exact schemas through GetTableSchema and the columns through
// GetObjects, including tables whose names contain LIKE's '_'.
func TestADBCDriver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	items, lookalike, rich := wide(5), wide(6), richSchema()
	e.register("acme", "sales", "order_items", items)
	e.register("acme", "sales", "orderXitems", lookalike)
	e.register("acme", "sales", "everything", rich)
	e.register("globex", "sales", "order_items", wide(9))
	e.publish()
	cn := adbcConn(t, e, "acme")
	ctx := context.Background()

	for name, want := range map[string]*arrow.Schema{"order_items": items, "orderXitems": lookalike, "everything": rich} {
		got, err := cn.GetTableSchema(ctx, strp("acme"), strp("sales"), name)
		if err != nil {
			t.Fatalf("GetTableSchema(%s): %v", name, err)
		}
		if !catalog.SchemaEqual(got, want) {
			t.Fatalf("GetTableSchema(%s) =\n%v\nwant\n%v", name, got, want)
		}
	}
	if _, err := cn.GetTableSchema(ctx, strp("globex"), strp("sales"), "order_items"); err == nil {
		t.Fatal("GetTableSchema of another tenant's table succeeded")
	}

	rdr, err := cn.GetObjects(ctx, adbc.ObjectDepthAll, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatalf("GetObjects: %v", err)
	}
	defer rdr.Release()
	columns := map[string][]string{}
	catalogs := 0
	for rdr.Next() {
		rec := rdr.RecordBatch()
		catNames := rec.Column(0).(*array.String)
		schemas := rec.Column(1).(*array.List)
		schemaStruct := schemas.ListValues().(*array.Struct)
		tables := schemaStruct.Field(1).(*array.List)
		tableStruct := tables.ListValues().(*array.Struct)
		tableNames := tableStruct.Field(0).(*array.String)
		cols := tableStruct.Field(2).(*array.List)
		colStruct := cols.ListValues().(*array.Struct)
		colNames := colStruct.Field(0).(*array.String)
		for c := 0; c < int(rec.NumRows()); c++ {
			catalogs++
			if catNames.Value(c) != "acme" {
				t.Fatalf("GetObjects shows catalog %q", catNames.Value(c))
			}
			s0, s1 := schemas.ValueOffsets(c)
			for s := s0; s < s1; s++ {
				t0, t1 := tables.ValueOffsets(int(s))
				for tb := t0; tb < t1; tb++ {
					c0, c1 := cols.ValueOffsets(int(tb))
					var names []string
					for col := c0; col < c1; col++ {
						names = append(names, colNames.Value(int(col)))
					}
					columns[tableNames.Value(int(tb))] = names
				}
			}
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	if catalogs != 1 || len(columns) != 3 {
		t.Fatalf("GetObjects: %d catalogs, tables %v", catalogs, columns)
	}
	for name, want := range map[string]*arrow.Schema{"order_items": items, "orderXitems": lookalike, "everything": rich} {
		got := columns[name]
		if len(got) != want.NumFields() {
			t.Fatalf("GetObjects columns of %s = %v, want %d", name, got, want.NumFields())
		}
		for i, f := range want.Fields() {
			if got[i] != f.Name {
				t.Fatalf("GetObjects column %d of %s = %q, want %q", i, name, got[i], f.Name)
			}
		}
	}
}
