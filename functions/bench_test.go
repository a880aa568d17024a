package functions_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// BenchmarkFirstInvoke measures each function's first invocation under the
// runtime interface emulator (the emulator starts the bootstrap on the first
// invoke, so this is init plus one call), next to a hello-world
// aws-lambda-go bootstrap built the same way (as `make lambdas` builds them
// for AWS); "x-hello" is the ratio.
func BenchmarkFirstInvoke(b *testing.B) {
	s := &stack{ddb: testenv.SharedDynamoDB(b), s3: testenv.SharedS3(b)}
	s.table, s.bucket = s.ddb.NewTable(b), s.s3.NewBucket(b)
	fns := []struct {
		name, pkg string
		event     any
	}{
		{"hello", "./functions/testdata/hello", map[string]any{}},
		{"register", "./functions/register", apiEvent("GET", "/v1/tenants/acme/namespaces/sales/tables/missing", nil)},
		{"refresh", "./functions/refresh", events.CloudWatchEvent{DetailType: "Scheduled Event", Source: "aws.events"}},
	}
	var hello float64
	for _, fn := range fns {
		bootstrap := testenv.BuildRelease(b, fn.pkg)
		st, _ := os.Stat(bootstrap)
		b.Run(fn.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				l := testenv.StartLambda(b, bootstrap, s.env("", "")...)
				b.StartTimer()
				start := time.Now()
				if _, err := l.Invoke(context.Background(), fn.event); err != nil {
					b.Fatalf("first invoke of %s: %v", fn.name, err)
				}
				total += time.Since(start)
				b.StopTimer()
				l.Process.Stop()
				b.StartTimer()
			}
			ms := float64(total.Microseconds()) / 1000 / float64(b.N)
			if fn.name == "hello" {
				hello = ms
			}
			b.ReportMetric(ms, "first-invoke-ms")
			if hello > 0 {
				b.ReportMetric(ms/hello, "x-hello")
			}
			b.ReportMetric(float64(st.Size())/(1<<20), "bootstrap-MB")
		})
	}
}

// BenchmarkRefresh measures the refresh Lambda over 10,000 registrations of
// 20 columns in dynalite, one sequential Scan and four parallel segments.
func BenchmarkRefresh(b *testing.B) {
	const n = 10_000
	s := &stack{ddb: testenv.SharedDynamoDB(b), s3: testenv.SharedS3(b)}
	s.table, s.bucket = s.ddb.NewTable(b), s.s3.NewBucket(b)
	store, err := dynamo.New(s.ddb.Client(), dynamo.Options{Table: s.table})
	if err != nil {
		b.Fatal(err)
	}
	c := catalog.New(store, catalog.Options{})
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			ref := catalog.TableRef{Tenant: fmt.Sprintf("tenant%02d", i%40), Namespace: "ns", Name: fmt.Sprintf("table_%05d", i)}
			_, _, err := c.Register(context.Background(), ref, catalog.TableSpec{Location: "s3://lake/" + ref.String(), Schema: catalogtest.WideSchema(i, 20)})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	bootstrap := testenv.BuildLambda(b, "./functions/refresh")
	for _, segments := range []int{1, 4} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
			l := testenv.StartLambda(b, bootstrap, s.env("", "", fmt.Sprintf("LAKE_SCAN_SEGMENTS=%d", segments))...)
			pages := 0
			for b.Loop() {
				// Drop the blob so every run scans, builds and publishes.
				b.StopTimer()
				_ = os.RemoveAll(s.s3.Dir + "/" + s.bucket + "/snapshots")
				b.StartTimer()
				res, err := invokeRefresh(b, l)
				if err != nil {
					b.Fatal(err)
				}
				if res.Counts.Tables != n || res.Outcome != "published" {
					b.Fatalf("refresh = %s with %d tables, want published with %d", res.Outcome, res.Counts.Tables, n)
				}
				pages = res.Scan.Pages
			}
			b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "items/s")
			b.ReportMetric(float64(pages), "pages")
		})
	}
}
