package icebergsync_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, nil) }

func put(tb testing.TB, c *s3.Client, bucket, key string, b []byte) {
	tb.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
		tb.Fatalf("put %s: %v", key, err)
	}
}

func objects(tb testing.TB, c *s3.Client, bucket, prefix string) int {
	tb.Helper()
	n := 0
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		n += len(page.Contents)
	}
	return n
}

// Data and metadata in one bucket, under separate prefixes; the table read
// back with iceberg-go's scan through S3.
func TestSyncS3(t *testing.T) {
	ctx := context.Background()
	srv := testenv.SharedS3(t)
	c := srv.Client()
	bucket := srv.NewBucket(t)
	a := rowsOf([]int64{1, 2, 3}, "a")
	b := rowsOf([]int64{10, 11}, "b")
	put(t, c, bucket, "data/orders/a.parquet", parquetBytes(t, a, false, true))
	put(t, c, bucket, "data/orders/b.parquet", parquetBytes(t, b, false, true))
	put(t, c, bucket, "data/orders/bad.parquet", conflicting(t))
	put(t, c, bucket, "data/orders/_SUCCESS", nil)

	data := icebergsync.NewS3Files(c, bucket, "data/orders/")
	meta := icebergsync.NewS3MetaStore(c, bucket)
	tbl := testTable("s3://" + bucket + "/data/orders/")
	prefix := "lake/" + metaPrefix
	now := clock()
	fsys := testenv.IcebergS3IO{Client: c}

	r1, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, meta, prefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Changed || r1.Files != 2 || r1.Records != 5 || !slices.Equal(skippedKeys(r1.Skipped), []string{"data/orders/bad.parquet"}) {
		t.Fatalf("first sync: got %+v", r1)
	}
	if !strings.HasPrefix(r1.MetadataLocation, "s3://"+bucket+"/lake/acme/") {
		t.Errorf("metadata location %s", r1.MetadataLocation)
	}
	want := append(append([]row{}, a...), b...)
	if got := scan(t, r1.MetadataLocation, fsys); !slices.Equal(got, want) {
		t.Fatalf("scan: got %v, want %v", got, want)
	}

	written := objects(t, c, bucket, "lake/")
	r2, err := icebergsync.Sync(ctx, tbl, r1.State, data, meta, prefix, icebergsync.Limits{}, now)
	if err != nil || r2.Changed || objects(t, c, bucket, "lake/") != written {
		t.Fatalf("unchanged sync: got %+v, %v", r2, err)
	}

	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("data/orders/a.parquet")}); err != nil {
		t.Fatal(err)
	}
	put(t, c, bucket, "data/orders/c.parquet", parquetBytes(t, rowsOf([]int64{20}, "c"), false, true))
	r3, err := icebergsync.Sync(ctx, tbl, r2.State, data, meta, prefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Added != 1 || r3.Removed != 1 || r3.Records != 3 {
		t.Fatalf("add and remove: got %+v", r3)
	}
	want = append(b, rowsOf([]int64{20}, "c")...)
	if got := scan(t, r3.MetadataLocation, fsys); !slices.Equal(got, want) {
		t.Fatalf("scan after add and remove: got %v, want %v", got, want)
	}

	// Metadata is never overwritten: a sync from a stale state fails.
	_, err = icebergsync.Sync(ctx, tbl, r1.State, data, meta, prefix, icebergsync.Limits{}, now)
	if !errors.Is(err, icebergsync.ErrExists) {
		t.Fatalf("a sync from a stale state: got %v, want ErrExists", err)
	}
}

// BenchmarkSync10kFiles syncs a location of 10,000 small Parquet files in
// the S3-protocol server from nothing (files of 2 rows, about 400 bytes,
// and of 1,000 rows, about 18 KiB), and reports files/s, the bytes read
// from the files against their footers and their whole size, and the peak
// heap; then an unchanged sync. It asserts nothing on timing.
func BenchmarkSync10kFiles(b *testing.B) {
	for _, rows := range []int{2, 1000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) { benchSync(b, 10_000, rows) })
	}
}

func benchSync(b *testing.B, n, rows int) {
	ctx := context.Background()
	srv := testenv.SharedS3(b)
	c := srv.Client()
	bucket := srv.NewBucket(b)
	var footers atomic.Int64
	g := new(errgroup.Group)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			ids := make([]int64, rows)
			for j := range ids {
				ids[j] = int64(i*rows + j)
			}
			body := parquetBytes(b, rowsOf(ids, "r"), false, true)
			footers.Add(int64(binary.LittleEndian.Uint32(body[len(body)-8:])) + 8)
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("data/t/part-%05d.parquet", i)), Body: bytes.NewReader(body)})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	data := icebergsync.NewS3Files(c, bucket, "data/t/")
	meta := icebergsync.NewS3MetaStore(c, bucket)
	tbl := testTable("s3://" + bucket + "/data/t/")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var r icebergsync.Result
		var err error
		prefix := fmt.Sprintf("lake/run-%d/metadata/", i)
		start := time.Now()
		peak := testenv.PeakHeap(func() {
			r, err = icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, meta, prefix, icebergsync.Limits{}, time.Now)
		})
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if r.Files != n || r.Records != int64(n*rows) {
			b.Fatalf("got %d files, %d records", r.Files, r.Records)
		}
		ustart := time.Now()
		u, err := icebergsync.Sync(ctx, tbl, r.State, data, meta, prefix, icebergsync.Limits{}, time.Now)
		if err != nil || u.Changed {
			b.Fatalf("unchanged sync: %+v %v", u, err)
		}
		utook := time.Since(ustart)
		b.ReportMetric(float64(n)/took.Seconds(), "files/s")
		b.ReportMetric(float64(r.FooterBytes), "read-bytes")
		b.ReportMetric(float64(r.DataBytes), "file-bytes")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(utook.Milliseconds()), "unchanged-ms")
		b.Logf("%d files of %d rows in %v (%.0f files/s): read %d bytes of %d (%.1f%%; the footers themselves %d), peak heap %.1f MiB, unchanged sync %v",
			n, rows, took.Round(time.Millisecond), float64(n)/took.Seconds(), r.FooterBytes, r.DataBytes,
			100*float64(r.FooterBytes)/float64(r.DataBytes), footers.Load(), float64(peak)/(1<<20), utook.Round(time.Millisecond))
	}
}
