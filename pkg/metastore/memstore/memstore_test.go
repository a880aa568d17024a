package memstore_test

import (
	"testing"

	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/metastore/metastoretest"
)

func TestConformance(t *testing.T) {
	metastoretest.Run(t, metastoretest.Suite{
		New: func(testing.TB) metastore.Store { return memstore.New(memstore.Options{}) },
	})
}

func BenchmarkScanPrefix(b *testing.B) {
	metastoretest.BenchmarkScanPrefix(b, memstore.New(memstore.Options{}), 10_000, 2048)
}
