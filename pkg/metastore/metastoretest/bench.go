package metastoretest

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// BenchmarkScanPrefix seeds st with n entries of size bytes under "tbl/"
// (eight writers at once) and measures ScanPrefix("tbl/") over them,
// reporting bytes/s and, where the store reports them, pages per scan.
func BenchmarkScanPrefix(b *testing.B, st metastore.Store, n, size int) {
	ctx := context.Background()
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			return st.Put(ctx, fmt.Sprintf("tbl/tenant%02d/ns/table%06d", i%50, i), pattern(size, i))
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("seed: %v", err)
	}
	b.SetBytes(int64(n * size))
	b.ResetTimer()
	pages := 0
	for b.Loop() {
		var got []metastore.Entry
		var err error
		if ss, ok := st.(metastore.StatsScanner); ok {
			var stats metastore.ScanStats
			got, stats, err = ss.ScanPrefixStats(ctx, "tbl/")
			pages += stats.Pages
		} else {
			got, err = st.ScanPrefix(ctx, "tbl/")
		}
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != n {
			b.Fatalf("scan returned %d entries, want %d", len(got), n)
		}
	}
	b.ReportMetric(float64(pages)/float64(b.N), "pages/op")
}
