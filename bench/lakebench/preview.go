package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/preview"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// ---- Preview: a table's first rows (issue 42) ----

// The section writes Parquet files with arrow-go (20 columns of mixed
// types, statistics on): one large file (1 GiB; quick 32 MiB) in 16 row
// groups, a location of 10,000 small files (quick 500), and hard links of
// the large file as 32 tenants' tables. Discovery runs in this process
// (discovery.NewService over a snapshot file, served on loopback by
// NewGRPCServer, tokens HS256) with a Door over the data root, as `lake
// local --data-root` has; the discovery binary has no data root (it reads
// s3:// only, through vending). DuckDB runs in a node child process
// (duckdb_preview.mjs, @duckdb/node-api from tools/npm) that times each of
// its queries itself; the driver alternates it with lake's runs.

const (
	previewTenant    = "acme"
	previewStatement = "SELECT * FROM ns.t LIMIT 100"
	previewLimit     = 100
	// previewRowGroups is the least number of the large file's row
	// groups (about that many, as its size is reached).
	previewRowGroups = 16
	// previewTenants preview at once while GetTables is timed.
	previewTenants = 32
	// previewFillers are acme's other tables (metadata only), so that
	// GetTables has a tenant of some size to answer.
	previewFillers = 200
	// previewCacheBytes is discovery's -cache-bytes in this section.
	previewCacheBytes = 256 << 20
	// previewBucket holds the S3 copy of the large file.
	previewBucket = "preview-data"
	// duckDBScript is DuckDB's side, run from the repository root.
	duckDBScript = "bench/lakebench/duckdb_preview.mjs"
)

var previewSecret = []byte("bench-preview-secret-0123456789abcdefgh")

// previewSchema is the files' schema and the tables' registered one.
var previewSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "customer_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ratio", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "comment", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "code", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "created_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "updated_at", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "active", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "flagged", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true},
	{Name: "balance", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
	{Name: "payload", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// previewColumns is the column list DuckDB is asked for: every column, in
// the registered order, as lake's SELECT * reads.
func previewColumns() string {
	names := make([]string, previewSchema.NumFields())
	for i, f := range previewSchema.Fields() {
		names[i] = `"` + f.Name + `"`
	}
	return strings.Join(names, ", ")
}

// ---- the files ----

// previewText is the pool the string columns are cut from.
var previewText = func() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	b := make([]byte, 1<<16)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return b
}()

var previewStatuses = []string{"new", "paid", "shipped", "delivered", "returned", "cancelled", "on hold", "refunded"}

// previewBatch builds rows rows of previewSchema, ids from first.
func previewBatch(rng *rand.Rand, first int64, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, previewSchema)
	defer b.Release()
	b.Reserve(rows)
	var name []byte
	for i := range rows {
		id := first + int64(i)
		null := id%13 == 5
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(rng.Int64N(10_000_000))
		b.Field(2).(*array.Int32Builder).Append(rng.Int32N(1000))
		b.Field(3).(*array.Int16Builder).Append(int16(rng.IntN(1 << 15)))
		b.Field(4).(*array.Float64Builder).Append(float64(rng.IntN(1_000_000)) / 100)
		b.Field(5).(*array.Float32Builder).Append(rng.Float32())
		if null {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.Float64Builder).Append(rng.NormFloat64())
		}
		name = strconv.AppendInt(append(name[:0], "customer-"...), rng.Int64N(1_000_000), 10)
		b.Field(7).(*array.StringBuilder).BinaryBuilder.Append(name)
		n := 24 + rng.IntN(48)
		off := rng.IntN(len(previewText) - n)
		if null {
			b.Field(8).AppendNull()
		} else {
			b.Field(8).(*array.StringBuilder).BinaryBuilder.Append(previewText[off : off+n])
		}
		b.Field(9).(*array.StringBuilder).Append(previewStatuses[rng.IntN(len(previewStatuses))])
		off = rng.IntN(len(previewText) - 8)
		b.Field(10).(*array.StringBuilder).BinaryBuilder.Append(previewText[off : off+8])
		at := 1_704_067_200_000_000 + id*1_000_000 + rng.Int64N(1_000_000)
		b.Field(11).(*array.TimestampBuilder).Append(arrow.Timestamp(at))
		b.Field(12).(*array.TimestampBuilder).Append(arrow.Timestamp(at/1000 + rng.Int64N(86_400_000)))
		b.Field(13).(*array.Date32Builder).Append(arrow.Date32(19_723 + int32(id/100_000)))
		b.Field(14).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		if null {
			b.Field(15).AppendNull()
		} else {
			b.Field(15).(*array.BooleanBuilder).Append(rng.IntN(10) == 0)
		}
		if id%7 == 0 {
			b.Field(16).AppendNull()
		} else {
			b.Field(16).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(100_000_000)))
		}
		b.Field(17).(*array.Decimal128Builder).Append(decimal128.New(rng.Int64N(1<<40), rng.Uint64()))
		off = rng.IntN(len(previewText) - 16)
		b.Field(18).(*array.BinaryBuilder).Append(previewText[off : off+16])
		b.Field(19).(*array.Int64Builder).Append(id * 3)
	}
	return b.NewRecordBatch()
}

// writePreviewRows writes rows rows of previewSchema to w, ids from
// first, rowGroup rows per row group, Snappy, statistics on, the Arrow
// schema stored.
func writePreviewRows(w io.Writer, rng *rand.Rand, first, rows, rowGroup int64) error {
	props := parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(rowGroup))
	fw, err := pqarrow.NewFileWriter(previewSchema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	for done := int64(0); done < rows; {
		n := min(32_768, rows-done)
		// Batches end at row group boundaries: WriteBuffered fills a
		// group and starts the next one with the rest.
		rec := previewBatch(rng, first+done, int(n))
		err := fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			fw.Close()
			return err
		}
		done += n
	}
	return fw.Close()
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeLargePreviewFile writes at least size bytes to path, in row groups
// of a sixteenth of size as 65,536 rows written nowhere measure it, one
// group after another (each written whole, then counted) until the file
// holds size bytes. It returns the rows, the row groups and the file's
// size.
func writeLargePreviewFile(path string, size int64) (rows int64, groups int, written int64, err error) {
	probe := &countingWriter{w: io.Discard}
	if err := writePreviewRows(probe, rand.New(rand.NewPCG(7, 7)), 0, 65_536, 65_536); err != nil {
		return 0, 0, 0, err
	}
	group := max(1, size*65_536/probe.n/previewRowGroups)
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	cw := &countingWriter{w: bw}
	props := parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(group))
	fw, err := pqarrow.NewFileWriter(previewSchema, cw, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return 0, 0, 0, err
	}
	rng := rand.New(rand.NewPCG(42, 42))
	for groups < previewRowGroups || cw.n < size {
		// Write makes one row group of the batch and closes it: cw has
		// counted it after.
		rec := previewBatch(rng, rows, int(group))
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			fw.Close()
			return 0, 0, 0, err
		}
		rows += group
		groups++
	}
	if err := fw.Close(); err != nil {
		return 0, 0, 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, 0, 0, err
	}
	return rows, groups, cw.n, f.Close()
}

// writeManyPreviewFiles writes n files of perFile rows under dir,
// part-00000.parquet on, ids continuing from file to file.
func writeManyPreviewFiles(dir string, n, perFile int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(9, 9))
	var buf bytes.Buffer
	for i := range n {
		buf.Reset()
		if err := writePreviewRows(&buf, rng, int64(i*perFile), int64(perFile), int64(perFile)); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", i)), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// footerAndFirstChunks is a file's footer (its length, the length field
// and the magic) and the sizes of its first row group's column chunks.
func footerAndFirstChunks(path string) (footer int64, chunks int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	tail := make([]byte, 8)
	if _, err := f.ReadAt(tail, fi.Size()-8); err != nil {
		return 0, 0, err
	}
	footer = int64(binary.LittleEndian.Uint32(tail[:4])) + 8
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return 0, 0, err
	}
	defer pf.Close()
	rg := pf.MetaData().RowGroup(0)
	for i := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			return 0, 0, err
		}
		chunks += cc.TotalCompressedSize()
	}
	return footer, chunks, nil
}

// ---- lake's sides ----

// previewRequest is SELECT * … LIMIT 100 as package preview is asked.
var previewRequest = preview.Request{Table: "ns.t", Schema: previewSchema, Limit: previewLimit}

// readPreview runs preview.Read over files and times it (listing, footer,
// rows; the batches released after the clock stops).
func readPreview(ctx context.Context, files icebergsync.Files) (float64, preview.Stats, error) {
	t0 := time.Now()
	batches, st, err := preview.Read(ctx, files, previewRequest, preview.Limits{}, nil)
	ms := float64(time.Since(t0).Microseconds()) / 1000
	rows := int64(0)
	for _, b := range batches {
		rows += b.NumRows()
		b.Release()
	}
	if err == nil && rows != previewLimit {
		err = fmt.Errorf("preview read %d rows, want %d", rows, previewLimit)
	}
	return ms, st, err
}

// previewServeEnv, when set, makes benchPreview discovery's process
// instead of the driver: "<listen address> <payload file>" (a
// previewServePayload).
const previewServeEnv = "LAKEBENCH_PREVIEW_SERVE"

// previewServePayload is what discovery's process serves: a snapshot file,
// the Door's data root, and where it answers /stats.
type previewServePayload struct {
	Snapshot, DataRoot, StatsAddr string
}

// previewStats is discovery's process as /stats answers: its cache, and
// its Go heap now and at its peak since the last reset (/stats?reset=1
// collects garbage first and starts the peak again).
type previewStats struct {
	Cache    discovery.CacheStats `json:"cache"`
	HeapNow  int64                `json:"heap_now"`
	HeapPeak int64                `json:"heap_peak"`
}

// servePreview is discovery's process: discovery.NewService over the
// snapshot with a Door over the data root, served on addr by
// NewGRPCServer (HS256 tokens), until it is stopped.
func servePreview(addr, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var p previewServePayload
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("preview server: read %s: %w", file, err)
	}
	quiet := slog.New(slog.DiscardHandler)
	svc := discovery.NewService(discovery.Options{CacheBytes: previewCacheBytes, Log: quiet, Door: &vending.Door{DataRoot: p.DataRoot}})
	src := discovery.NewSource(blobstore.NewFile(p.Snapshot), svc, nil, quiet)
	if loaded, err := src.Poll(context.Background()); err != nil || !loaded {
		return fmt.Errorf("preview server: load the snapshot: loaded %v, %v", loaded, err)
	}
	v, err := auth.New(auth.Config{HS256Secret: previewSecret})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	peak := heapObjects()
	go func() {
		for range time.Tick(5 * time.Millisecond) {
			h := heapObjects()
			mu.Lock()
			peak = max(peak, h)
			mu.Unlock()
		}
	}()
	stats := &http.Server{Addr: p.StatsAddr, ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("reset") != "" {
			runtime.GC()
			mu.Lock()
			peak = heapObjects()
			mu.Unlock()
		}
		mu.Lock()
		st := previewStats{Cache: svc.CacheStats(), HeapNow: heapObjects(), HeapPeak: peak}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})}
	go func() { _ = stats.ListenAndServe() }()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return discovery.NewGRPCServer(svc, v, health.NewServer(), quiet).Serve(l)
}

// previewService is discovery's process, on loopback.
type previewService struct {
	proc            *testenv.Process
	addr, statsAddr string
}

// startPreviewDiscovery serves regs (written to a snapshot file in dir)
// with a Door over dataRoot, in a child process: this program
// re-executed with -only preview and previewServeEnv set, so that its heap,
// garbage collector and RSS are its own as a deployed discovery's are.
func startPreviewDiscovery(procs *procSet, dir, dataRoot string, regs []scan.Registered) (*previewService, error) {
	blob, err := encodeRegistrations(regs)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "catalog.lakesnap")
	if err := os.WriteFile(path, blob, 0o644); err != nil {
		return nil, err
	}
	statsAddr := "127.0.0.1:" + strconv.Itoa(freePort())
	proc, addr, err := startReplayChild(procs, "preview discovery", previewServeEnv, previewServePayload{Snapshot: path, DataRoot: dataRoot, StatsAddr: statsAddr},
		"-only", "preview", "-out", "", "-peer=false")
	if err != nil {
		return nil, err
	}
	if err := waitTCP(proc, statsAddr, 30*time.Second); err != nil {
		proc.Stop()
		return nil, err
	}
	return &previewService{proc: proc, addr: addr, statsAddr: statsAddr}, nil
}

// stats asks discovery's process for its cache and heap; reset starts the
// heap's peak again after a garbage collection.
func (p *previewService) stats(reset bool) (previewStats, error) {
	url := "http://" + p.statsAddr + "/stats"
	if reset {
		url += "?reset=1"
	}
	var st previewStats
	resp, err := http.Get(url)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func (p *previewService) client() (*flightsql.Client, error) {
	return flightsql.NewClient(p.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
}

func previewCtx(tenant string) context.Context {
	tok, _ := auth.IssueHS256(previewSecret, auth.TokenClaims{Tenant: tenant, TTL: 2 * time.Hour, Now: time.Now()})
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

// previewRun numbers the statements so that none is answered from a
// result discovery kept (a statement's result is kept 10 s under its text).
var previewRun atomic.Int64

// flightPreview runs the statement through Flight SQL (Execute, DoGet),
// made unique by a trailing comment, and times it on the client.
func flightPreview(ctx context.Context, client *flightsql.Client) (float64, error) {
	sql := fmt.Sprintf("%s -- run %d", previewStatement, previewRun.Add(1))
	t0 := time.Now()
	rows, err := statementFlow(ctx, client, sql)
	ms := float64(time.Since(t0).Microseconds()) / 1000
	if err == nil && rows != previewLimit {
		err = fmt.Errorf("%s: %d rows, want %d", sql, rows, previewLimit)
	}
	return ms, err
}

// ---- DuckDB's side ----

// duckDB is duckdb_preview.mjs running in node.
type duckDB struct {
	cmd                         *exec.Cmd
	in                          io.WriteCloser
	out                         *bufio.Reader
	stderr                      *bytes.Buffer
	version, threads, fileCache string
}

// startDuckDB starts DuckDB's side, or says why it cannot.
func startDuckDB() (*duckDB, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return nil, errors.New("node is not installed")
	}
	if _, err := os.Stat("tools/npm/node_modules/@duckdb/node-api/package.json"); err != nil {
		return nil, errors.New("@duckdb/node-api is not installed in tools/npm (make tools)")
	}
	if _, err := os.Stat(duckDBScript); err != nil {
		return nil, fmt.Errorf("%s not found (run lakebench from the repository root)", duckDBScript)
	}
	d := &duckDB{stderr: &bytes.Buffer{}}
	d.cmd = exec.Command("node", duckDBScript)
	d.cmd.Stderr = d.stderr
	var err error
	if d.in, err = d.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	d.out = bufio.NewReader(out)
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	kill := time.AfterFunc(time.Minute, func() { _ = d.cmd.Process.Kill() })
	defer kill.Stop()
	var ready struct {
		Ready                   bool
		Version, Threads, Error string
		ExternalFileCache       string `json:"external_file_cache"`
	}
	line, err := d.out.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &ready)
	}
	if err != nil || !ready.Ready {
		d.close()
		return nil, fmt.Errorf("DuckDB did not start: %v %s %s", err, ready.Error, strings.TrimSpace(d.stderr.String()))
	}
	d.version, d.threads, d.fileCache = ready.Version, ready.Threads, ready.ExternalFileCache
	return d, nil
}

// run has DuckDB run sql and returns the time it measured around the query.
func (d *duckDB) run(sql string) (float64, error) {
	req, _ := json.Marshal(map[string]string{"sql": sql})
	if _, err := d.in.Write(append(req, '\n')); err != nil {
		return 0, fmt.Errorf("DuckDB: %w (%s)", err, strings.TrimSpace(d.stderr.String()))
	}
	line, err := d.out.ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("DuckDB: %w (%s)", err, strings.TrimSpace(d.stderr.String()))
	}
	var res struct {
		MS    float64
		Rows  int64
		Error string
	}
	if err := json.Unmarshal(line, &res); err != nil {
		return 0, fmt.Errorf("DuckDB answered %q: %w", line, err)
	}
	if res.Error != "" {
		return 0, fmt.Errorf("DuckDB: %s", res.Error)
	}
	if res.Rows != previewLimit {
		return 0, fmt.Errorf("DuckDB: %d rows, want %d", res.Rows, previewLimit)
	}
	return res.MS, nil
}

func (d *duckDB) close() {
	_ = d.in.Close()
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
	}
}

// ---- alternation ----

// previewSide is one contender: a run returns its own measured ms.
type previewSide struct {
	name string
	run  func() (float64, error)
}

// alternate runs warm unmeasured rounds, then n measured rounds; each
// round runs every side once, the first side rotating from round to round.
func alternate(sides []previewSide, warm, n int) ([][]float64, error) {
	out := make([][]float64, len(sides))
	for round := range warm + n {
		for k := range sides {
			i := (round + k) % len(sides)
			ms, err := sides[i].run()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sides[i].name, err)
			}
			if round >= warm {
				out[i] = append(out[i], ms)
			}
		}
	}
	return out, nil
}

func medianMS(xs []float64) float64 { return pctMS(xs, 50) }

func pctMS(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func fmtMiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// ---- the section ----

func benchPreview(c config, r *report, procs *procSet) error {
	if v, ok := os.LookupEnv(previewServeEnv); ok {
		addr, file, _ := strings.Cut(v, " ")
		return servePreview(addr, file)
	}
	r.printf("## Preview: a table's first rows (issue 42)\n\n")
	ctx := context.Background()
	size, many, perFile := int64(1<<30), 10_000, 50
	rounds, warm := 31, 3
	if c.quick {
		size, many, rounds = 32<<20, 500, 11
	}
	root, err := os.MkdirTemp("", "lakebench-preview-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	data := filepath.Join(root, "data")
	bigDir := filepath.Join(data, "acme", "orders")
	bigPath := filepath.Join(bigDir, "part-0.parquet")
	manyDir := filepath.Join(data, "acme", "many")
	if err := os.MkdirAll(bigDir, 0o755); err != nil {
		return err
	}

	t0 := time.Now()
	rows, groups, written, err := writeLargePreviewFile(bigPath, size)
	if err != nil {
		return fmt.Errorf("write %s: %w", bigPath, err)
	}
	writeTook := time.Since(t0)
	footer, chunks, err := footerAndFirstChunks(bigPath)
	if err != nil {
		return err
	}
	t0 = time.Now()
	if err := writeManyPreviewFiles(manyDir, many, perFile); err != nil {
		return err
	}
	manyTook := time.Since(t0)
	r.printf("Files written with arrow-go's pqarrow (20 columns: int64 ×3, int32, int16, float64 ×2, float32, string ×4, timestamp[us, UTC], timestamp[ms], date32, bool ×2, decimal128(18,2), decimal128(38,10), binary; Snappy, statistics on, dictionary encoding as arrow-go defaults): "+
		"a %s file of %d rows in %d row groups (footer %d bytes; first row group's column chunks %s) in %.1f s, and a location of %d files of %d rows in %.1f s.\n\n",
		fmtMiB(written), rows, groups, footer, fmtMiB(chunks), writeTook.Seconds(), many, perFile, manyTook.Seconds())

	// The 32 tenants' tables: hard links of the large file.
	regs := []scan.Registered{}
	now := time.Now()
	register := func(tenant, ns, name, location string, schema *arrow.Schema) error {
		reg, err := catalog.NewRegistration(catalog.TableSpec{Location: location, Schema: schema}, now)
		if err != nil {
			return fmt.Errorf("register %s/%s.%s: %w", tenant, ns, name, err)
		}
		regs = append(regs, scan.Registered{Ref: catalog.TableRef{Tenant: tenant, Namespace: ns, Name: name}, Registration: reg})
		return nil
	}
	if err := register(previewTenant, "ns", "t", "file://"+bigDir+"/", previewSchema); err != nil {
		return err
	}
	for i := range previewFillers {
		if err := register(previewTenant, "meta", fmt.Sprintf("f%04d", i), "s3://lake/acme/meta/"+strconv.Itoa(i)+"/", catalogtest.WideSchema(i, 20)); err != nil {
			return err
		}
	}
	tenants := make([]string, previewTenants)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("p%02d", i)
		dir := filepath.Join(data, tenants[i], "t")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.Link(bigPath, filepath.Join(dir, "part-0.parquet")); err != nil {
			return err
		}
		if err := register(tenants[i], "ns", "t", "file://"+dir+"/", previewSchema); err != nil {
			return err
		}
	}
	svc, err := startPreviewDiscovery(procs, root, data, regs)
	if err != nil {
		return err
	}
	defer svc.proc.Stop()
	client, err := svc.client()
	if err != nil {
		return err
	}
	defer client.Close()
	acme := previewCtx(previewTenant)

	// 1. The statement through Flight SQL.
	got, err := statementFlow(acme, client, previewStatement)
	if err != nil {
		return fmt.Errorf("%s: %w", previewStatement, err)
	}
	r.printf("`%s` through arrow-go's flightsql client (Execute, then DoGet) against discovery in a child process (this program re-executed: discovery.NewService over a snapshot of %d tables, -cache-bytes 256 MiB, its Door over the data root as `lake local --data-root` has, served by discovery.NewGRPCServer; bin/discovery has no data root and reads s3:// only through vending): %d rows of %d columns. "+
		"The SQL tools' replays over a table's rows are `make compat`'s TestCompatRows* (Grafana's query builder, DBeaver's data tab, Metabase's table view, the JDBC driver's prepared statement), not run here.\n\n",
		previewStatement, len(regs), got, previewSchema.NumFields())
	r.target("`SELECT * FROM ns.t LIMIT 100` through Flight SQL", `UNIMPLEMENTED ("lake is a catalog")`, "rows, in every replayed tool", got == previewLimit,
		"%d rows × %d columns (arrow-go flightsql client, this run); replays: `make compat`'s TestCompatRows*", got, previewSchema.NumFields())

	// 2. The first 100 rows of the large file: preview.Read, the Flight
	// SQL statement and DuckDB, alternated.
	duck, duckErr := startDuckDB()
	if duck != nil {
		defer duck.close()
	}
	local := icebergsync.NewLocalFiles(bigDir)
	sides := []previewSide{
		{"preview.Read", func() (float64, error) { ms, _, err := readPreview(ctx, local); return ms, err }},
		{"Flight SQL", func() (float64, error) { return flightPreview(acme, client) }},
	}
	duckSQL := fmt.Sprintf("SELECT %s FROM read_parquet('%s') LIMIT %d", previewColumns(), bigPath, previewLimit)
	if duck != nil {
		sides = append(sides, previewSide{"DuckDB", func() (float64, error) { return duck.run(duckSQL) }})
	}
	res, err := alternate(sides, warm, rounds)
	if err != nil {
		return err
	}
	_, readStats, err := readPreview(ctx, local)
	if err != nil {
		return err
	}
	readP50, flightP50 := medianMS(res[0]), medianMS(res[1])
	duckCol, readRatio, flightRatio := "not run ("+errString(duckErr)+")", "—", "—"
	duckP50 := 0.0
	if duck != nil {
		duckP50 = medianMS(res[2])
		duckCol = fmt.Sprintf("%.2f ms", duckP50)
		readRatio, flightRatio = fmt.Sprintf("%.2f×", readP50/duckP50), fmt.Sprintf("%.2f×", flightP50/duckP50)
	}
	who := "DuckDB not run: " + errString(duckErr)
	if duck != nil {
		who = fmt.Sprintf("DuckDB %s through @duckdb/node-api (threads %s, external file cache %s, as it defaults) in a node child process (%s), opened once; each query timed inside node around runAndReadAll (the rows materialized in DuckDB's vectors), so the pipe to this driver is not in its figure",
			duck.version, duck.threads, duck.fileCache, duckDBScript)
	}
	r.printf("First %d rows of the %s file, every column, alternated A/B/C (%d warm-up rounds, then %d rounds, the first side rotating), medians; each side timed on its own side: "+
		"preview.Read in this process (icebergsync.NewLocalFiles; listing, footer, the first pages of 20 columns; one goroutine), the Flight SQL statement on the client here (Execute and DoGet against discovery's process, each statement made unique with a trailing `-- run N` comment so no kept result answers it), "+
		"`SELECT <the 20 columns> FROM read_parquet('<file>') LIMIT 100` in DuckDB (%s). The OS page cache holds the file for every side.\n\n",
		previewLimit, fmtMiB(written), warm, rounds, who)
	r.printf("| side | p50 ms | p90 ms | ÷ DuckDB p50 |\n|---|---|---|---|\n")
	r.printf("| lake preview.Read | %.2f | %.2f | %s |\n", readP50, pctMS(res[0], 90), readRatio)
	r.printf("| lake, Flight SQL `%s` | %.2f | %.2f | %s |\n", previewStatement, flightP50, pctMS(res[1], 90), flightRatio)
	if duck != nil {
		r.printf("| DuckDB read_parquet … LIMIT 100 | %.2f | %.2f | 1 |\n", duckP50, pctMS(res[2], 90))
	} else {
		r.printf("| DuckDB | %s | | |\n", duckCol)
	}
	r.printf("\npreview.Read's stats: %d file listed, %d opened, %d row group read, %d skipped, %d bytes read of %d.\n\n",
		readStats.FilesListed, readStats.FilesOpened, readStats.RowGroupsRead, readStats.RowGroupsSkipped, readStats.BytesRead, written)
	fig := fmt.Sprintf("first 100 rows of a %s, 20-column local file (%d row groups), p50", fmtMiB(written), groups)
	r.target(fig+": preview.Read", "—", "≤ 50 ms and ≤ 2× DuckDB on the same file, same run",
		duck != nil && readP50 <= 50 && readP50 <= 2*duckP50, "%.2f ms; DuckDB %s; %s", readP50, duckCol, readRatio)
	r.target(fig+": Flight SQL statement", "—", "≤ 50 ms and ≤ 2× DuckDB on the same file, same run",
		duck != nil && flightP50 <= 50 && flightP50 <= 2*duckP50, "%.2f ms; DuckDB %s; %s", flightP50, duckCol, flightRatio)

	// 3. The same preview over the S3-protocol server, and reads outside.
	if err := previewS3(ctx, c, r, bigPath, filepath.Join(manyDir, "part-00000.parquet"), footer, chunks, written); err != nil {
		return fmt.Errorf("over S3: %w", err)
	}

	// 4. A location of many files.
	manyFiles := icebergsync.NewLocalFiles(manyDir)
	sides = []previewSide{{"preview.Read", func() (float64, error) { ms, _, err := readPreview(ctx, manyFiles); return ms, err }}}
	manySQL := fmt.Sprintf("SELECT %s FROM read_parquet('%s/*.parquet') LIMIT %d", previewColumns(), manyDir, previewLimit)
	if duck != nil {
		sides = append(sides, previewSide{"DuckDB", func() (float64, error) { return duck.run(manySQL) }})
	}
	manyRounds := 21
	if c.quick {
		manyRounds = 7
	}
	res, err = alternate(sides, 2, manyRounds)
	if err != nil {
		return err
	}
	_, manyStats, err := readPreview(ctx, manyFiles)
	if err != nil {
		return err
	}
	manyP50 := medianMS(res[0])
	manyDuck := "DuckDB not run (" + errString(duckErr) + ")"
	if duck != nil {
		manyDuck = fmt.Sprintf("DuckDB's read_parquet('…/*.parquet') %.2f ms, %.2f×", medianMS(res[1]), manyP50/medianMS(res[1]))
	}
	alternated := ""
	if duck != nil {
		alternated = ", alternated with DuckDB"
	}
	r.printf("A location of %d files of %d rows each: the first %d rows by preview.Read, p50 %.2f ms, p90 %.2f ms (%d rounds%s); %d files listed, %d opened, %d bytes read; %s.\n\n",
		many, perFile, previewLimit, manyP50, pctMS(res[0], 90), manyRounds, alternated, manyStats.FilesListed, manyStats.FilesOpened, manyStats.BytesRead, manyDuck)
	r.target(fmt.Sprintf("a %d-file location: first 100 rows, p50; files listed / opened", many), "—", "— (none set; here: 100 rows within preview's default caps)",
		manyStats.Rows == previewLimit, "%.2f ms; %d / %d (%s)", manyP50, manyStats.FilesListed, manyStats.FilesOpened, manyDuck)

	// 5. 32 concurrent previews over 32 tenants beside GetTables.
	return previewConcurrency(c, r, svc, tenants)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// previewS3 uploads the large file to versitygw, previews it through
// vended credentials (the vending section's Door and STS stand-in) and
// counts the bytes read; then asks, with the same credentials, for a
// neighbour table's and another tenant's file.
func previewS3(ctx context.Context, c config, r *report, bigPath, smallPath string, footer, chunks, written int64) error {
	dir, err := os.MkdirTemp("", "lakebench-preview-s3-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e, stop, err := startVending(dir)
	if err != nil {
		return err
	}
	defer stop()
	root := e.gw.Client()
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(previewBucket)}); err != nil {
		return fmt.Errorf("create bucket %s: %w", previewBucket, err)
	}
	put := func(key, path string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		_, err = root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(previewBucket), Key: aws.String(key), Body: f, ContentLength: aws.Int64(fi.Size())})
		if err != nil {
			return fmt.Errorf("put s3://%s/%s: %w", previewBucket, key, err)
		}
		return nil
	}
	t0 := time.Now()
	if err := put("acme/orders/part-0.parquet", bigPath); err != nil {
		return err
	}
	upload := time.Since(t0)
	outside := map[string]string{
		"acme/customers/part-0.parquet": "another table of the tenant",
		"globex/orders/part-0.parquet":  "another tenant's table",
		"acme/orders-archive/x.parquet": "a sibling prefix",
	}
	for key := range outside {
		if err := put(key, smallPath); err != nil {
			return err
		}
	}
	cr, _, _, err := e.vend(ctx, "orders", "s3://"+previewBucket+"/acme/orders/", "s3://"+previewBucket+"/acme/")
	if err != nil {
		return err
	}
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(e.gw.Endpoint)}
	files, err := preview.FilesFor(cr, cfg, true)
	if err != nil {
		return err
	}
	n := 11
	if c.quick {
		n = 5
	}
	var lat []float64
	var st preview.Stats
	for i := range n + 1 {
		ms, s, err := readPreview(ctx, files)
		if err != nil {
			return err
		}
		if i > 0 {
			lat = append(lat, ms)
		}
		st = s
	}
	bound := footer + chunks
	r.printf("Over the S3-protocol server (versitygw, loopback; the file uploaded in %.1f s): preview.FilesFor with the vended credentials of acme's table s3://%s/acme/orders/ (wire.AccessVended, from the vending section's Door: `vending.Open` over testenv's AssumeRole stand-in, a session policy naming the table's prefix), "+
		"the first %d rows of every column: %d bytes read (the footer and the first pages of each column; %d file opened), p50 %.1f ms over %d reads; "+
		"bound: the footer (%d bytes) + the first row group's 20 column chunks (%d bytes) = %d bytes; the file is %d bytes.\n\n",
		upload.Seconds(), previewBucket, previewLimit, st.BytesRead, st.FilesOpened, medianMS(lat), n, footer, chunks, bound, written)
	r.target("bytes read from S3 for that preview (vended credentials, versitygw)", "—", "≤ the footer + the first row group's asked columns", st.BytesRead <= bound,
		"%d bytes (%.1f%% of the bound: footer %d + first row group's 20 chunks %d = %d; file %d)", st.BytesRead, 100*float64(st.BytesRead)/float64(bound), footer, chunks, bound, written)

	// Reads outside the table with the same credentials: a preview of a
	// neighbour's location (listing) and a GET of each outside object.
	allowed, asked := 0, 0
	var denied []string
	neighbour := cr
	neighbour.Location = "s3://" + previewBucket + "/acme/customers/"
	theirs, err := preview.FilesFor(neighbour, cfg, true)
	if err != nil {
		return err
	}
	_, nst, err := readPreview(ctx, theirs)
	asked++
	if code := s3ErrorCode(err); code == "AccessDenied" && nst.BytesRead == 0 && nst.Rows == 0 {
		denied = append(denied, "preview of acme/customers/ (list): AccessDenied")
	} else {
		allowed++
		denied = append(denied, fmt.Sprintf("preview of acme/customers/: %v, %d bytes read", err, nst.BytesRead))
	}
	client := e.clientFor(cr)
	for _, key := range slices.Sorted(maps.Keys(outside)) {
		asked++
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(previewBucket), Key: aws.String(key)})
		if err == nil {
			out.Body.Close()
		}
		code := s3ErrorCode(err)
		if code != "AccessDenied" {
			allowed++
		}
		denied = append(denied, fmt.Sprintf("GET %s (%s): %s", key, outside[key], codeOrOK(code)))
	}
	r.printf("With the same credentials, outside the table: %s. The suite's test of it is internal/preview's TestVendedPreviewOverS3 (versitygw: the table's preview reads no more than the footer and the first row group's asked chunks; a neighbour's listing and read are AccessDenied).\n\n",
		strings.Join(denied, "; "))
	r.target("reads outside the table's files", "—", "0 (vended credentials; versitygw suite)", allowed == 0,
		"%d of %d (this run: a preview of a neighbour's location and GETs of %d outside objects, AccessDenied; suite: internal/preview TestVendedPreviewOverS3)", allowed, asked, len(outside))
	return nil
}

// previewConcurrency times GetTables (acme, %d tables) from one client
// alone and while 32 goroutines, one per tenant, loop the preview
// statement, in alternated rounds, and samples this process's Go heap and
// RSS meanwhile.
func previewConcurrency(c config, r *report, svc *previewService, tenants []string) error {
	rounds, phase := 3, 4*time.Second
	if c.quick {
		rounds, phase = 2, 1500*time.Millisecond
	}
	gt, err := svc.client()
	if err != nil {
		return err
	}
	defer gt.Close()
	acme := previewCtx(previewTenant)
	getTablesCall := func() (int64, error) {
		_, rows, err := getTables(acme, gt, &flightsql.GetTablesOpts{})
		if err == nil && rows != previewFillers+1 {
			err = fmt.Errorf("GetTables: %d rows, want %d", rows, previewFillers+1)
		}
		return 0, err
	}
	if _, err := getTablesCall(); err != nil {
		return err
	}
	clients := make([]*flightsql.Client, len(tenants))
	ctxs := make([]context.Context, len(tenants))
	for i, t := range tenants {
		if clients[i], err = svc.client(); err != nil {
			return err
		}
		defer clients[i].Close()
		ctxs[i] = previewCtx(t)
	}
	pid := svc.proc.Pid()
	base, err := svc.stats(true)
	if err != nil {
		return err
	}
	baseRSS := rssMB(pid)
	var alone, loaded sample
	var previews, refused atomic.Int64
	var firstRefusal atomic.Value
	var peakHeap, peakRSS int64
	for range rounds {
		if err := runFor(&alone, 1, phase, getTablesCall); err != nil {
			return err
		}
		stopLoad := make(chan struct{})
		var wg sync.WaitGroup
		for i := range tenants {
			wg.Go(func() {
				for {
					select {
					case <-stopLoad:
						return
					default:
					}
					if _, err := flightPreview(ctxs[i], clients[i]); err != nil {
						refused.Add(1)
						firstRefusal.CompareAndSwap(nil, fmt.Sprintf("%s: %v", tenants[i], status.Convert(err).Message()))
						time.Sleep(time.Millisecond)
						continue
					}
					previews.Add(1)
				}
			})
		}
		if _, err := svc.stats(true); err != nil {
			return err
		}
		stopSample := make(chan struct{})
		var sampled sync.WaitGroup
		sampled.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopSample:
					return
				case <-tick.C:
					peakRSS = max(peakRSS, int64(rssMB(pid)))
				}
			}
		})
		time.Sleep(200 * time.Millisecond) // every previewer under way
		err := runFor(&loaded, 1, phase, getTablesCall)
		close(stopLoad)
		wg.Wait()
		close(stopSample)
		sampled.Wait()
		if err != nil {
			return err
		}
		st, err := svc.stats(false)
		if err != nil {
			return err
		}
		peakHeap = max(peakHeap, st.HeapPeak)
	}
	after, err := svc.stats(false)
	if err != nil {
		return err
	}
	cs := after.Cache
	ratio := loaded.pct(99) / alone.pct(99)
	refusal := ""
	if v := firstRefusal.Load(); v != nil {
		refusal = fmt.Sprintf(" (the first: %s)", v)
	}
	r.printf("%d tenants, each with a table over a hard link of the large file, preview it at once through Flight SQL (one client and goroutine each, the statement in a loop, each made unique), while one client times GetTables of acme (%d tables), serially; "+
		"%d rounds of %.1f s alone, then %.1f s under the previews, alternated. GetTables p50 / p99: alone %.2f / %.2f ms (%d calls), under the previews %.2f / %.2f ms (%d calls), p99 ×%.2f. "+
		"Previews done: %d, refused or failed: %d%s. Discovery's cache (-cache-bytes %s): %s held after, %d entries. "+
		"Discovery's process: Go heap objects %s before (after a collection), peak %s under the previews (sampled every 5 ms inside it); RSS %.0f MB before, peak %d MB (sampled every 10 ms). The clients run in this driver; both share the 2 cores.\n\n",
		len(tenants), previewFillers+1, rounds, phase.Seconds(), phase.Seconds(), alone.pct(50), alone.pct(99), len(alone.lat), loaded.pct(50), loaded.pct(99), len(loaded.lat), ratio,
		previews.Load(), refused.Load(), refusal, fmtMiB(previewCacheBytes), fmtMiB(cs.Bytes), cs.Entries,
		fmtMiB(base.HeapNow), fmtMiB(peakHeap), baseRSS, peakRSS)
	within := cs.Bytes <= previewCacheBytes && peakHeap <= previewCacheBytes
	r.target(fmt.Sprintf("%d concurrent previews over %d tenants", len(tenants), len(tenants)), "—",
		"within `-cache-bytes`; none starves metadata answers (GetTables p99 unchanged ±20%)",
		within && ratio >= 0.8 && ratio <= 1.2 && refused.Load() == 0,
		"GetTables p99 %.2f ms alone, %.2f ms under the previews (×%.2f); %d previews, %d refused; cache %s of %s; discovery's Go heap peak %s, RSS peak %d MB",
		alone.pct(99), loaded.pct(99), ratio, previews.Load(), refused.Load(), fmtMiB(cs.Bytes), fmtMiB(previewCacheBytes), fmtMiB(peakHeap), peakRSS)
	return nil
}

// heapObjects is the Go heap's live and not yet swept objects, in bytes.
func heapObjects() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
