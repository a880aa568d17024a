package catalog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

const benchTables = 100_000

var benchFixture struct {
	once     sync.Once
	scan     catalog.ScanResult
	snap     *catalog.Snapshot
	blob     []byte
	rawBytes int // sum of the raw schema IPC bytes
}

// fixture registers benchTables tables of 20 columns over 100 tenants.
func fixture(b *testing.B) {
	benchFixture.once.Do(func() {
		st := memstore.New(memstore.Options{})
		c := catalog.New(st, catalog.Options{})
		ctx := context.Background()
		for i := range benchTables {
			ref := catalog.TableRef{Tenant: fmt.Sprintf("tenant%03d", i%100), Namespace: fmt.Sprintf("ns%02d", i%17), Name: fmt.Sprintf("table_%06d", i)}
			reg, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/" + ref.String() + "/", Schema: catalogtest.WideSchema(i, 20)})
			if err != nil {
				b.Fatal(err)
			}
			benchFixture.rawBytes += len(reg.SchemaIPC())
		}
		var err error
		benchFixture.scan, err = catalog.ScanTables(ctx, st)
		if err != nil {
			b.Fatal(err)
		}
		benchFixture.snap = catalog.BuildSnapshot(benchFixture.scan, 1, time.Now())
		if benchFixture.blob, err = catalog.EncodeBlob(benchFixture.snap); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkBuildSnapshot: one scan result of 100,000 registrations of 20
// columns into a snapshot (every schema decoded to check it).
func BenchmarkBuildSnapshot(b *testing.B) {
	fixture(b)
	var peak uint64
	for b.Loop() {
		peak = max(peak, testenv.PeakHeap(func() { catalog.BuildSnapshot(benchFixture.scan, 2, time.Now()) }))
	}
	b.ReportMetric(float64(benchTables)/(b.Elapsed().Seconds()/float64(b.N)), "tables/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

func BenchmarkBlobEncode(b *testing.B) {
	fixture(b)
	b.SetBytes(int64(benchFixture.rawBytes))
	var peak uint64
	for b.Loop() {
		peak = max(peak, testenv.PeakHeap(func() {
			if _, err := catalog.EncodeBlob(benchFixture.snap); err != nil {
				b.Fatal(err)
			}
		}))
	}
	b.ReportMetric(float64(len(benchFixture.blob))/(1<<20), "blob-MB")
	b.ReportMetric(float64(benchFixture.rawBytes)/(1<<20), "raw-schema-MB")
	b.ReportMetric(float64(len(benchFixture.blob))/float64(benchFixture.rawBytes), "blob/raw")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// BenchmarkBlobDecode: the goal is ≤ 1 s for 100,000 tables here, and a blob
// of at most half the raw schema bytes. MB/s counts raw schema bytes.
func BenchmarkBlobDecode(b *testing.B) {
	fixture(b)
	b.SetBytes(int64(benchFixture.rawBytes))
	var peak uint64
	for b.Loop() {
		peak = max(peak, testenv.PeakHeap(func() {
			s, err := catalog.DecodeBlob(benchFixture.blob, catalog.DecodeOptions{})
			if err != nil || s.Counts.Tables != benchTables {
				b.Fatalf("decode: %v", err)
			}
		}))
	}
	b.ReportMetric(float64(len(benchFixture.blob))/(1<<20), "blob-MB")
	b.ReportMetric(float64(len(benchFixture.blob))/float64(benchFixture.rawBytes), "blob/raw")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}
