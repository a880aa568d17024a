package rocksdb_test

import (
	"context"
	"testing"

	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/metastoretest"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
)

func open(tb testing.TB, dir string) *rocksdb.Store {
	tb.Helper()
	st, err := rocksdb.Open(dir, rocksdb.Options{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return st
}

func TestConformance(t *testing.T) {
	metastoretest.Run(t, metastoretest.Suite{
		New: func(tb testing.TB) metastore.Store { return open(tb, tb.TempDir()) },
	})
}

func TestDataSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st := open(t, dir)
	if err := st.Put(ctx, "tbl/a/b/c", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "tbl/a/b/c"); err == nil {
		t.Fatal("Get after Close succeeded, want an error")
	}
	st = open(t, dir)
	defer st.Close()
	got, err := st.Get(ctx, "tbl/a/b/c")
	if err != nil || string(got) != "kept" {
		t.Fatalf("Get after reopen = %q, %v; want \"kept\"", got, err)
	}
}

func TestSecondOpenOfADirectoryFails(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir)
	defer st.Close()
	if st2, err := rocksdb.Open(dir, rocksdb.Options{}); err == nil {
		st2.Close()
		t.Fatal("second Open of a locked directory succeeded, want an error")
	}
}

func BenchmarkScanPrefix(b *testing.B) {
	st := open(b, b.TempDir())
	defer st.Close()
	metastoretest.BenchmarkScanPrefix(b, st, 10_000, 2048)
}
