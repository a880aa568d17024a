package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// ---- Iceberg sync of a 10,000-file location (issue 41, part 3) ----

// The synced location: syncFiles Parquet files of syncRows rows under
// syncPrefix of syncDataBucket; the metadata goes to syncMetaBucket.
const (
	syncFiles      = 10_000
	syncRows       = 4
	syncDataBucket = "lake-data"
	syncMetaBucket = "lake-meta"
	syncPrefix     = "t/"
	// syncFirstRead is icebergsync's first read from a file's end before
	// any footer of the location has been seen (footer.go).
	syncFirstRead = 8 << 10
)

// syncSchema is the files' schema and the table's.
var syncSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
}, nil)

// syncFigures are the sync measurement's results.
type syncFigures struct {
	files, rows int
	// fileBytes is the files' total size, footerBytes their footers'
	// (the Thrift footer plus its length and magic, 8 bytes).
	fileBytes, footerBytes int64
	// maxSize is the largest file's size.
	maxSize         int64
	took, unchanged time.Duration
	peakHeap        uint64
	res             icebergsync.Result
	// reads counts the reads from data files; outside those starting
	// before the file's last max(footer, first read) bytes.
	reads, outside int64
	// scanned is the rows iceberg-go's scan of the synced metadata
	// returned; scanErr why it failed.
	scanned int64
	scanErr error
}

// tailFiles is icebergsync.Files counting the reads and those that
// start before a file's footer window.
type tailFiles struct {
	icebergsync.Files
	footer         map[string]int64 // key → footer length; read-only
	reads, outside atomic.Int64
}

func (f *tailFiles) ReadAt(ctx context.Context, o icebergsync.Object, p []byte, off int64) error {
	f.reads.Add(1)
	if off < o.Size-max(f.footer[o.Key], syncFirstRead) {
		f.outside.Add(1)
	}
	return f.Files.ReadAt(ctx, o, p, off)
}

// syncParquet writes rows syncRows of file i as Parquet with pqarrow.
func syncParquet(i int) ([]byte, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, syncSchema)
	defer b.Release()
	for j := range syncRows {
		id := int64(i*syncRows + j)
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", id))
		b.Field(2).(*array.Float64Builder).Append(float64(id) / 100)
		b.Field(3).(*array.Date32Builder).Append(arrow.Date32(19_000 + i%365))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(syncSchema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// benchIcebergSync starts versitygw, writes the files with the S3 client,
// and times icebergsync.Sync over them in process, then an unchanged
// Sync, then scans the synced metadata with iceberg-go.
func benchIcebergSync(c config, procs *procSet) (syncFigures, error) {
	f := syncFigures{files: syncFiles}
	if c.quick {
		f.files = 1_000
	}
	f.rows = f.files * syncRows
	dir, err := os.MkdirTemp("", "lakebench-icebergsync-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	addr, vgw, err := startVersitygw(procs, dir, syncDataBucket)
	if err != nil {
		return f, err
	}
	defer vgw.Stop()
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://" + addr),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "testsecret", ""),
		UsePathStyle: true,
	})
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(syncMetaBucket)}); err != nil {
		return f, fmt.Errorf("create bucket %s: %w", syncMetaBucket, err)
	}

	keys := make([]string, f.files)
	footers := make([]int64, f.files)
	sizes := make([]int64, f.files)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range f.files {
		g.Go(func() error {
			body, err := syncParquet(i)
			if err != nil {
				return err
			}
			keys[i] = fmt.Sprintf("%spart-%05d.parquet", syncPrefix, i)
			footers[i] = int64(binary.LittleEndian.Uint32(body[len(body)-8:])) + 8
			sizes[i] = int64(len(body))
			_, err = client.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(syncDataBucket), Key: aws.String(keys[i]), Body: bytes.NewReader(body)})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return f, fmt.Errorf("put files: %w", err)
	}
	footer := make(map[string]int64, f.files)
	for i, k := range keys {
		footer[k] = footers[i]
		f.footerBytes += footers[i]
		f.fileBytes += sizes[i]
		f.maxSize = max(f.maxSize, sizes[i])
	}

	data := &tailFiles{Files: icebergsync.NewS3Files(client, syncDataBucket, syncPrefix), footer: footer}
	meta := icebergsync.NewS3MetaStore(client, syncMetaBucket)
	tbl := icebergsync.Table{
		Tenant: "bench", Namespace: "sync", Name: "t",
		UUID:     "3b0c8a52-7d1e-4f6a-9c2b-5e8d1f0a7c34",
		Location: "s3://" + syncDataBucket + "/" + syncPrefix,
		Schema:   syncSchema, IDs: icebergschema.Assign(nil, icebergschema.FieldIDs{}, syncSchema),
	}
	const metaPrefix = "tables/t/metadata/"
	start := time.Now()
	f.peakHeap = testenv.PeakHeap(func() {
		f.res, err = icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, meta, metaPrefix, icebergsync.Limits{}, time.Now)
	})
	f.took = time.Since(start)
	if err != nil {
		return f, err
	}
	f.reads, f.outside = data.reads.Load(), data.outside.Load()
	if f.res.Files != f.files || f.res.Records != int64(f.rows) || len(f.res.Skipped) != 0 {
		return f, fmt.Errorf("sync: %d files, %d records, %d skipped; want %d, %d, 0", f.res.Files, f.res.Records, len(f.res.Skipped), f.files, f.rows)
	}
	start = time.Now()
	u, err := icebergsync.Sync(ctx, tbl, f.res.State, data, meta, metaPrefix, icebergsync.Limits{}, time.Now)
	f.unchanged = time.Since(start)
	if err != nil {
		return f, fmt.Errorf("unchanged sync: %w", err)
	}
	if u.Changed {
		return f, fmt.Errorf("unchanged sync wrote snapshot %d", u.SnapshotID)
	}
	f.scanned, f.scanErr = syncScan(ctx, client, f.res.MetadataLocation)
	return f, nil
}

// syncScan counts the rows iceberg-go's scan of the table at
// metadataLocation returns, reading metadata and files over client.
func syncScan(ctx context.Context, client *s3.Client, metadataLocation string) (int64, error) {
	tbl, err := table.NewFromLocation(ctx, table.Identifier{"sync", "t"}, metadataLocation,
		func(context.Context) (iceio.IO, error) { return testenv.IcebergS3IO{Client: client}, nil }, nil)
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", metadataLocation, err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return 0, fmt.Errorf("scan: %w", err)
	}
	defer at.Release()
	return at.NumRows(), nil
}

// report prints the figures and the section's sync row.
func (f syncFigures) report(c config, r *report) {
	n := float64(f.files)
	r.printf("Sync of a location in the S3-protocol server (versitygw, posix backend, on loopback): %d Parquet files of %d rows and %d columns (pqarrow), mean %.0f bytes, footers mean %.0f bytes (Thrift footer + 8), put concurrently with the S3 client under one prefix; then `icebergsync.Sync` in this process (NewS3Files over the prefix, NewS3MetaStore on a second bucket, the table's ids from icebergschema.Assign, default Limits: 8 footers at once).",
		f.files, syncRows, len(syncSchema.Fields()), float64(f.fileBytes)/n, float64(f.footerBytes)/n)
	if c.quick {
		r.printf(" **Quick mode: %d files, not 10,000.**", f.files)
	}
	r.printf(" Peak memory is the Go heap (live and not yet collected objects, runtime/metrics, sampled every millisecond, above the start after a GC), not RSS. Sync reads a file's tail: %d KiB first until a footer has been seen, then 1.25× the largest footer seen (at least 1 KiB); a file smaller than that read is read whole as its footer read. \"Reads before the footer window\" counts reads starting earlier than a file's last max(footer, %d KiB) bytes: reads of data pages.\n\n", syncFirstRead>>10, syncFirstRead>>10)
	r.printf("| files | sync s | files/s | peak Go heap MiB | bytes read (FooterBytes) | file bytes (DataBytes) | read ÷ size | read per file | footer per file | reads | reads before the footer window | unchanged sync ms | iceberg-go scan rows |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	scan := fmt.Sprintf("%d of %d", f.scanned, f.rows)
	if f.scanErr != nil {
		scan = "failed: " + f.scanErr.Error()
	}
	r.printf("| %d | %.2f | %.0f | %.1f | %d | %d | %.2f | %.0f | %.0f | %d | %d | %.0f | %s |\n\n",
		f.files, f.took.Seconds(), n/f.took.Seconds(), float64(f.peakHeap)/(1<<20), f.res.FooterBytes, f.res.DataBytes,
		float64(f.res.FooterBytes)/float64(f.res.DataBytes), float64(f.res.FooterBytes)/n, float64(f.footerBytes)/n,
		f.reads, f.outside, float64(f.unchanged.Microseconds())/1000, scan)
}

// target adds the sync row.
func (f syncFigures) target(c config, r *report) {
	figure := "sync of a 10,000-file location in the S3-protocol server"
	if c.quick {
		figure = fmt.Sprintf("sync of a %d-file location in the S3-protocol server (quick, not 10,000)", f.files)
	}
	peak := float64(f.peakHeap) / (1 << 20)
	tails := fmt.Sprintf("%d reads, %d before a footer window", f.reads, f.outside)
	if f.outside == 0 {
		tails = fmt.Sprintf("%d reads, each of a file's tail, none before its footer window", f.reads)
	}
	if f.res.FooterBytes == f.res.DataBytes {
		tails += fmt.Sprintf("; the files (≤ %d bytes) are smaller than the first read, so each whole small file is its footer read", f.maxSize)
	}
	r.target(figure, "—", "≤ 10 s, peak ≤ 256 MB, footers only read", f.took <= 10*time.Second && peak <= 256 && f.outside == 0,
		"%.2f s, peak Go heap %.1f MiB (not RSS); read %d of %d bytes, %.2f of the files' size (%.0f bytes per file, footers %.0f; %s); unchanged sync %.0f ms",
		f.took.Seconds(), peak, f.res.FooterBytes, f.res.DataBytes, float64(f.res.FooterBytes)/float64(f.res.DataBytes),
		float64(f.res.FooterBytes)/float64(f.files), float64(f.footerBytes)/float64(f.files), tails, f.unchanged.Seconds()*1000)
}

// scannedAll reports whether iceberg-go's scan of the synced metadata
// returned every row written.
func (f syncFigures) scannedAll() bool { return f.scanErr == nil && f.scanned == int64(f.rows) }
