package discovery_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// drain runs one GetTables and reads every batch, returning the rows.
func drain(ctx context.Context, c *flightsql.Client, opts *flightsql.GetTablesOpts) (int, error) {
	info, err := c.GetTables(ctx, opts)
	if err != nil {
		return 0, err
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	n := 0
	for rdr.Next() {
		n += int(rdr.RecordBatch().NumRows())
	}
	return n, rdr.Err()
}

// measure runs b.N requests over workers goroutines and reports req/s, p50
// and p99.
func measure(b *testing.B, workers int, call func() error) {
	b.Helper()
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	var wg sync.WaitGroup
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	for range workers {
		wg.Go(func() {
			local := make([]time.Duration, 0, b.N/workers+1)
			for range next {
				t0 := time.Now()
				if err := call(); err != nil {
					b.Error(err)
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}

// BenchmarkGetTables: one tenant of 1,000 tables × 20 columns over loopback
// gRPC with the arrow-go flightsql client.
func BenchmarkGetTables(b *testing.B) {
	e := newEnv(b, discovery.Options{})
	for i := range 1000 {
		e.register("acme", fmt.Sprintf("ns%d", i%10), fmt.Sprintf("table_%04d", i), catalogtest.WideSchema(i, 20))
	}
	e.publish()
	ctx := as(b, "acme")
	for _, tc := range []struct {
		name string
		opts *flightsql.GetTablesOpts
		rows int
	}{
		{"include_schema=true", &flightsql.GetTablesOpts{IncludeSchema: true}, 1000},
		{"include_schema=false", &flightsql.GetTablesOpts{}, 1000},
		{"one_table_with_schema", &flightsql.GetTablesOpts{IncludeSchema: true, DbSchemaFilterPattern: strp("ns7"), TableNameFilterPattern: strp("table_0417")}, 1},
	} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(b *testing.B) {
				measure(b, workers, func() error {
					n, err := drain(ctx, e.client, tc.opts)
					if err == nil && n != tc.rows {
						err = fmt.Errorf("%d rows, want %d", n, tc.rows)
					}
					return err
				})
			})
		}
	}
}

// snapshotWith builds a snapshot of a 100-table "probe" tenant plus filler
// tables over many other tenants, total tables in all.
func snapshotWith(b *testing.B, total int) []scan.Registered {
	b.Helper()
	now := time.Now()
	filler, err := catalog.NewRegistration(catalog.TableSpec{Location: "s3://lake/filler", Schema: catalogtest.WideSchema(1, 4)}, now)
	if err != nil {
		b.Fatal(err)
	}
	res := make([]scan.Registered, 0, total)
	for i := range 100 {
		reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "s3://lake/probe", Schema: catalogtest.WideSchema(i, 20)}, now)
		if err != nil {
			b.Fatal(err)
		}
		res = append(res, scan.Registered{Ref: catalog.TableRef{Tenant: "probe", Namespace: "ns" + strconv.Itoa(i%4), Name: fmt.Sprintf("t%03d", i)}, Registration: reg})
	}
	for i := range total - 100 {
		res = append(res, scan.Registered{
			Ref:          catalog.TableRef{Tenant: fmt.Sprintf("tenant%05d", i%10000), Namespace: "ns" + strconv.Itoa(i%7), Name: "t" + strconv.Itoa(i)},
			Registration: filler,
		})
	}
	return res
}

// BenchmarkTenantScaling: GetTables (with schemas) for a 100-table tenant
// inside catalogs of 1,000 and 1,000,000 tables. The cost must not grow
// with other tenants' tables.
func BenchmarkTenantScaling(b *testing.B) {
	for _, total := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("catalog=%d", total), func(b *testing.B) {
			e := newEnv(b, discovery.Options{})
			e.load(snapshotWith(b, total))
			ctx := as(b, "probe")
			runtime.GC()
			measure(b, 1, func() error {
				n, err := drain(ctx, e.client, &flightsql.GetTablesOpts{IncludeSchema: true})
				if err == nil && n != 100 {
					err = fmt.Errorf("%d rows, want 100", n)
				}
				return err
			})
		})
	}
}
