package sqlcatalog

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// wideTenant is 1,000 tables of 20 columns (each its own schema) over 10
// namespaces: 20,000 rows of information_schema.columns.
func wideTenant() Tenant {
	t := Tenant{Catalog: "acme", Version: "bench"}
	var tables tableList
	for i := range 1000 {
		t.Schemas = append(t.Schemas, catalogtest.WideSchema(i, 20))
	}
	for ns := range 10 {
		for i := ns; i < 1000; i += 10 {
			tables = append(tables, table{Namespace: fmt.Sprintf("ns%d", ns), Name: fmt.Sprintf("table_%04d", i), Type: "TABLE", Schema: i})
		}
	}
	t.Tables = tables
	return t
}

// BenchmarkEngine: building a 1,000-table, 20-column tenant's engine, and
// reading all of information_schema.columns from it (no gRPC).
func BenchmarkEngine(b *testing.B) {
	c, err := NewChecker()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	t := wideTenant()
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			e, err := Build(context.Background(), t, c, Limits{}, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(e.Bytes())/(1<<20), "engine-MiB")
			e.Close()
		}
	})
	e, err := Build(context.Background(), t, c, Limits{}, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.Run("columns_20k", func(b *testing.B) {
		for b.Loop() {
			res, err := e.Query(context.Background(), "SELECT * FROM information_schema.columns", nil)
			if err != nil || res.Rows != 20_000 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("describe_one_table", func(b *testing.B) {
		for b.Loop() {
			res, err := e.Query(context.Background(), "DESCRIBE ns7.table_0417", nil)
			if err != nil || res.Rows != 20 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("select1", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Query(context.Background(), "SELECT 1", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
