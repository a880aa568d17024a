// Command lakebench measures lake side by side with a peer and prints a
// markdown report (and writes it to bench/RESULTS.md with the date and the
// machine): discovery against arrow-go's example SQLite Flight SQL server on
// the same schemas, catalogs of growing size, refresh over dynalite, Lambda
// start-up against a hello-world bootstrap, and the bytes a response moves
// against a plain copy. `make bench` runs it; `make bench-quick` runs it
// with small sizes.
//
// It expects, built by `make tools bench-tools`: bin/lake, bin/discovery,
// bin/sqlite_flightsql_server, bin/aws-lambda-rie, bin/versitygw and
// tools/npm's dynalite. Every server it starts listens on 127.0.0.1 and is
// stopped before it exits.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

type config struct {
	quick        bool
	peerTables   int
	roundTime    time.Duration
	rounds       int
	scaleSizes   []int
	refreshSizes []int
	invokes      int
	out          string
	plot         string
	heapSize     int
	only         map[string]bool // empty: every section
	// todayDiscovery, when set, is a discovery binary built from main
	// before a change, run side by side in the sections that compare.
	todayDiscovery string
	// discoveryBin is the discovery binary the SQL section runs;
	// todaySQLDiscovery, when set, one built before issue 23, asked SELECT 1.
	discoveryBin, todaySQLDiscovery string
}

func main() {
	var c config
	flag.BoolVar(&c.quick, "quick", false, "small sizes (under two minutes), for CI")
	flag.StringVar(&c.out, "out", "bench/RESULTS.md", "where to write the report ('' for none)")
	flag.StringVar(&c.plot, "plot", "bench/scale.png", "where to draw latency and RSS against catalog size ('' for none)")
	only := flag.String("only", "", "run only these sections, comma-separated: peer, scale, heap, budget, refresh, lambda, cost, freshness, writes, sql")
	flag.StringVar(&c.todayDiscovery, "today-discovery", "", "a discovery binary built from main before the change, measured beside bin/discovery in the budget section")
	flag.StringVar(&c.discoveryBin, "discovery", "bin/discovery", "the discovery binary the sql section runs")
	flag.StringVar(&c.todaySQLDiscovery, "today-discovery-sql", "", "a discovery binary built from main before issue 23, asked SELECT 1 in the sql section")
	flag.Parse()
	if c.quick {
		c.peerTables, c.roundTime, c.rounds = 100, 300*time.Millisecond, 2
		c.scaleSizes, c.refreshSizes, c.invokes, c.heapSize = []int{1_000, 10_000}, []int{2_000}, 2, 20_000
	} else {
		c.peerTables, c.roundTime, c.rounds = 1000, 2*time.Second, 3
		c.scaleSizes, c.refreshSizes, c.invokes, c.heapSize = []int{10_000, 100_000, 1_000_000}, []int{10_000, 100_000}, 9, 1_000_000
	}
	c.only = map[string]bool{}
	for _, sec := range strings.Split(*only, ",") {
		if sec = strings.TrimSpace(sec); sec != "" {
			c.only[sec] = true
		}
	}
	if c.out == "" {
		c.plot = "" // a printing-only run (CI) writes no files
	}
	r := &report{}
	err := run(c, r)
	fmt.Print(r.String())
	if err != nil {
		fmt.Fprintln(os.Stderr, "lakebench:", err)
		os.Exit(1)
	}
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(r.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "lakebench:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "lakebench: wrote", c.out)
	}
}

func run(c config, r *report) error {
	r.header(c)
	procs := &procSet{}
	defer procs.stopAll()
	want := func(sec string) bool { return len(c.only) == 0 || c.only[sec] }
	var yardstick string
	var err error
	if want("peer") {
		if yardstick, err = benchPeer(c, r, procs); err != nil {
			return fmt.Errorf("discovery vs peer: %w", err)
		}
	}
	if want("scale") {
		if err := benchScale(c, r, procs); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	if want("budget") {
		if err := benchBudget(c, r, procs); err != nil {
			return fmt.Errorf("work per request: %w", err)
		}
	}
	if want("sql") {
		if err := benchSQL(c, r, procs); err != nil {
			return fmt.Errorf("sql: %w", err)
		}
	}
	if want("heap") {
		if err := benchRefreshHeap(c, r); err != nil {
			return fmt.Errorf("refresh heap: %w", err)
		}
	}
	if want("refresh") || want("lambda") || want("cost") || want("freshness") || want("writes") {
		ddb, err := startDynalite(procs)
		if err != nil {
			return err
		}
		if want("cost") {
			if err := benchCost(c, r, ddb); err != nil {
				return fmt.Errorf("cost: %w", err)
			}
		}
		if want("freshness") {
			if err := benchFreshness(c, r, procs, ddb); err != nil {
				return fmt.Errorf("freshness: %w", err)
			}
		}
		if want("refresh") {
			if err := benchRefresh(c, r, ddb); err != nil {
				return fmt.Errorf("refresh: %w", err)
			}
		}
		if want("lambda") {
			if err := benchLambda(c, r, procs, ddb); err != nil {
				return fmt.Errorf("lambda: %w", err)
			}
		}
		if want("writes") {
			if err := benchWrites(c, r, ddb); err != nil {
				return fmt.Errorf("writes: %w", err)
			}
		}
	}
	r.printf("%s", yardstick)
	r.targetsTable()
	if len(r.points) > 1 && c.plot != "" {
		if err := plotScale(c.plot, r.points); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		r.printf("![latency and RSS against catalog size](%s)\n\n", filepath.Base(c.plot))
	}
	return nil
}

// ---- report ----

type report struct {
	b       strings.Builder
	targets []targetRow
	points  []scalePoint
}

// targetRow is one line of the targets table: an issue's figure, what main
// measured before the change ("today"), what this run measured, the target.
type targetRow struct {
	figure, today, measured, target string
	met                             bool
}

func (r *report) target(figure, today, target string, met bool, measured string, args ...any) {
	r.targets = append(r.targets, targetRow{figure: figure, today: today, measured: fmt.Sprintf(measured, args...), target: target, met: met})
}

func (r *report) targetsTable() {
	if len(r.targets) == 0 {
		return
	}
	r.printf("## Targets\n\n\"today\" is main before the change each figure belongs to, as its issue measured it; \"this run\" is the figure above.\n\n")
	r.printf("| figure | today | this run | target | met |\n|---|---|---|---|---|\n")
	for _, t := range r.targets {
		met := "no"
		if t.met {
			met = "**yes**"
		}
		r.printf("| %s | %s | %s | %s | %s |\n", t.figure, t.today, t.measured, t.target, met)
	}
	r.printf("\n")
}

func (r *report) String() string { return r.b.String() }

func (r *report) printf(format string, args ...any) { fmt.Fprintf(&r.b, format, args...) }

func (r *report) header(c config) {
	host, _ := os.Hostname()
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		if len(f) >= 2 {
			kb, _ := strconv.Atoi(f[1])
			mem = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	mode := "full"
	if c.quick {
		mode = "quick"
	}
	r.printf("# lake benchmark results\n\n")
	r.printf("- date: %s\n- machine: %s, %d cores (%s), %s memory, %s/%s, host %s\n- Go: %s; mode: %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), cpu, runtime.NumCPU(), "GOMAXPROCS "+strconv.Itoa(runtime.GOMAXPROCS(0)), mem,
		runtime.GOOS, runtime.GOARCH, host, runtime.Version(), mode)
	r.printf("- everything on loopback; client and servers share the same cores.\n\n")
}

// ---- processes ----

// procSet stops every process it started.
type procSet struct {
	mu    sync.Mutex
	procs []*testenv.Process
}

func (s *procSet) start(env []string, name string, args ...string) (*testenv.Process, error) {
	p, err := testenv.Launch(env, name, args...)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

func (s *procSet) stopAll() {
	for _, p := range s.procs {
		p.Stop()
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitTCP(p *testenv.Process, addr string, limit time.Duration) error {
	return p.WaitListening(addr, limit)
}

func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

// ---- latency measurement ----

type sample struct {
	lat   []time.Duration
	total time.Duration
	bytes int64
}

func (s *sample) reqPerSec() float64 {
	if s.total == 0 {
		return 0
	}
	return float64(len(s.lat)) / s.total.Seconds()
}

func (s *sample) pct(p int) float64 {
	if len(s.lat) == 0 {
		return 0
	}
	l := slices.Clone(s.lat)
	slices.Sort(l)
	return float64(l[min(len(l)-1, len(l)*p/100)].Microseconds()) / 1000
}

// runFor runs call on workers goroutines for d and adds to s.
func runFor(s *sample, workers int, d time.Duration, call func() (int64, error)) error {
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Since(start) < d {
				t0 := time.Now()
				n, err := call()
				el := time.Since(t0)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				s.lat = append(s.lat, el)
				s.bytes += n
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	s.total += time.Since(start)
	return firstErr
}

// getTables runs one GetTables and reads every batch; it returns the size of
// the response's record batches in Arrow IPC form.
func getTables(ctx context.Context, c *flightsql.Client, opts *flightsql.GetTablesOpts) (int64, int, error) {
	info, err := c.GetTables(ctx, opts)
	if err != nil {
		return 0, 0, err
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, 0, err
	}
	defer rdr.Release()
	var size int64
	rows := 0
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rows += int(rec.NumRows())
		for _, col := range rec.Columns() {
			for _, b := range col.Data().Buffers() {
				if b != nil {
					size += int64(b.Len())
				}
			}
		}
	}
	return size, rows, rdr.Err()
}

// ---- 1. discovery against the peer ----

func benchPeer(c config, r *report, procs *procSet) (string, error) {
	peerBin, lakeBin := "bin/sqlite_flightsql_server", "bin/lake"
	for _, b := range []string{peerBin, lakeBin} {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Errorf("%s missing: run `make bench-tools`", b)
		}
	}
	peerPort := freePort()
	peer, err := procs.start(nil, peerBin, "-host", "127.0.0.1", "-port", strconv.Itoa(peerPort))
	if err != nil {
		return "", err
	}
	defer peer.Stop()
	peerAddr := "127.0.0.1:" + strconv.Itoa(peerPort)
	if err := waitTCP(peer, peerAddr, 30*time.Second); err != nil {
		return "", err
	}
	// The peer answers GetTables in one record batch, over gRPC's default
	// 4 MiB receive limit at 1,000 tables: both clients get a 256 MiB limit.
	bigMessages := grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20))
	pc, err := flightsql.NewClient(peerAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
	if err != nil {
		return "", err
	}
	defer pc.Close()
	ctx := context.Background()
	types := []string{"INTEGER", "TEXT", "REAL", "BLOB"}
	for i := range c.peerTables {
		var cols []string
		for j := range 20 {
			cols = append(cols, fmt.Sprintf("c%02d_%d %s", j, i%7, types[(i+j)%4]))
		}
		if _, err := pc.ExecuteUpdate(ctx, fmt.Sprintf("CREATE TABLE t%05d (%s)", i, strings.Join(cols, ", "))); err != nil {
			return "", fmt.Errorf("peer: create table: %w", err)
		}
	}
	// The peer's own answer gives the exact schemas lake registers.
	info, err := pc.GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		return "", err
	}
	rdr, err := pc.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return "", err
	}
	type tbl struct {
		name string
		ipc  []byte
	}
	var tables []tbl
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			tables = append(tables, tbl{rec.Column(2).(*array.String).Value(i), bytes.Clone(rec.Column(4).(*array.Binary).Value(i))})
		}
	}
	err = rdr.Err()
	rdr.Release()
	if err != nil || len(tables) < c.peerTables {
		return "", fmt.Errorf("peer GetTables: %d tables, %v", len(tables), err)
	}

	dataDir, err := os.MkdirTemp("", "lakebench-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dataDir)
	apiAddr, flightAddr := "127.0.0.1:"+strconv.Itoa(freePort()), "127.0.0.1:"+strconv.Itoa(freePort())
	lake, err := procs.start(nil, lakeBin, "local", "--no-demo", "--data-dir", dataDir, "--api-listen", apiAddr, "--flight-listen", flightAddr, "--http-listen", "-")
	if err != nil {
		return "", err
	}
	defer lake.Stop()
	if err := waitTCP(lake, apiAddr, 60*time.Second); err != nil {
		return "", err
	}
	secret, err := os.ReadFile(filepath.Join(dataDir, "dev-secret"))
	if err != nil {
		return "", err
	}
	token, _ := auth.IssueHS256(bytes.TrimSpace(secret), "", "bench", "", "", 2*time.Hour, time.Now())
	var g errgroup.Group
	g.SetLimit(8)
	for _, t := range tables {
		g.Go(func() error {
			body, _ := json.Marshal(map[string]any{"name": t.name, "location": "/bench/" + t.name, "schema": base64.StdEncoding.EncodeToString(t.ipc)})
			req, _ := http.NewRequest("POST", "http://"+apiAddr+"/v1/tenants/bench/namespaces/main/tables", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("X-Lake-Request", "1") // local mode's guard
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 {
				return fmt.Errorf("register %s: %d %s", t.name, resp.StatusCode, msg)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	req, _ := http.NewRequest("POST", "http://"+apiAddr+"/v1/refresh", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Lake-Request", "1")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		return "", err
	} else {
		resp.Body.Close()
	}
	lc, err := flightsql.NewClient(flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
	if err != nil {
		return "", err
	}
	defer lc.Close()
	lctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	if _, rows, err := getTables(lctx, lc, &flightsql.GetTablesOpts{}); err != nil || rows != len(tables) {
		return "", fmt.Errorf("lake lists %d tables (%v), want %d", rows, err, len(tables))
	}

	one := tables[len(tables)/2].name
	kinds := []struct {
		name string
		opts func() *flightsql.GetTablesOpts
	}{
		{"GetTables with schemas (all)", func() *flightsql.GetTablesOpts { return &flightsql.GetTablesOpts{IncludeSchema: true} }},
		{"GetTables without schemas", func() *flightsql.GetTablesOpts { return &flightsql.GetTablesOpts{} }},
		{"one exact table with schema", func() *flightsql.GetTablesOpts {
			return &flightsql.GetTablesOpts{TableNameFilterPattern: &one, IncludeSchema: true}
		}},
	}
	r.printf("## 1. Discovery against arrow-go's SQLite Flight SQL server (%s)\n\n", arrowVersion())
	r.printf("%d tables × 20 columns created in the peer through ExecuteUpdate; the schemas it reports are registered unchanged in lake's local mode, so both answer with the same schema bytes. Same client, alternated A/B, %d rounds of %v per side.\n\n", len(tables), c.rounds, c.roundTime)
	r.printf("| request | workers | peer req/s | peer p50 ms | peer p99 ms | lake req/s | lake p50 ms | lake p99 ms | lake/peer |\n|---|---|---|---|---|---|---|---|---|\n")
	var yardstick sample
	ratios := map[string][]float64{}
	for _, k := range kinds {
		for _, workers := range []int{1, 2} {
			var ps, ls sample
			for range c.rounds {
				if err := runFor(&ps, workers, c.roundTime, func() (int64, error) { n, _, err := getTables(ctx, pc, k.opts()); return n, err }); err != nil {
					return "", fmt.Errorf("peer %s: %w", k.name, err)
				}
				if err := runFor(&ls, workers, c.roundTime, func() (int64, error) { n, _, err := getTables(lctx, lc, k.opts()); return n, err }); err != nil {
					return "", fmt.Errorf("lake %s: %w", k.name, err)
				}
			}
			r.printf("| %s | %d | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f | **%.1f×** |\n", k.name, workers,
				ps.reqPerSec(), ps.pct(50), ps.pct(99), ls.reqPerSec(), ls.pct(50), ls.pct(99), ls.reqPerSec()/ps.reqPerSec())
			ratios[k.name] = append(ratios[k.name], ls.reqPerSec()/ps.reqPerSec())
			if k.name == kinds[0].name && workers == 1 {
				yardstick = ls
			}
		}
	}
	ratioRange := func(rs []float64) (string, float64) {
		return fmt.Sprintf("%.1f–%.1f×", slices.Min(rs), slices.Max(rs)), slices.Min(rs)
	}
	txt, lo := ratioRange(ratios[kinds[0].name])
	r.target(fmt.Sprintf("GetTables with schemas, %d tables, vs the SQLite peer", len(tables)), "33–39×", "≥ 60×", lo >= 60, "%s", txt)
	txt, lo = ratioRange(ratios[kinds[1].name])
	r.target(fmt.Sprintf("GetTables names only, %d tables, vs the peer", len(tables)), "3.5–5.6×", "≥ 8×", lo >= 8, "%s", txt)
	// 5. The yardstick: bytes moved per response against a plain copy.
	perResp := float64(yardstick.bytes) / float64(len(yardstick.lat))
	served := perResp * yardstick.reqPerSec()
	src := make([]byte, int(perResp))
	dst := make([]byte, len(src))
	copies := 0
	start := time.Now()
	for time.Since(start) < time.Second {
		copy(dst, src)
		copies++
	}
	copyRate := float64(copies) * perResp / time.Since(start).Seconds()
	r.printf("\n")
	var y strings.Builder
	fmt.Fprintf(&y, "## 5. Yardstick: bytes per response against a plain copy\n\n")
	fmt.Fprintf(&y, "| GetTables with schemas, %d tables | value |\n|---|---|\n", len(tables))
	fmt.Fprintf(&y, "| Arrow bytes per response | %.0f (%.2f MB) |\n| lake serves (1 worker) | %.1f MB/s |\n| plain in-memory copy of the same bytes | %.0f MB/s |\n| lake / copy | %.3f |\n\n",
		perResp, perResp/1e6, served/1e6, copyRate/1e6, served/copyRate)
	r.target("bytes served per second / memcpy of the same bytes", "0.015", "≥ 0.10", served/copyRate >= 0.10, "%.3f", served/copyRate)
	return y.String(), nil
}

// arrowVersion is the arrow-go version this program (and the peer, a go.mod
// tool of the same module) is built with.
func arrowVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/apache/arrow-go/v18" {
				return "arrow-go " + m.Version
			}
		}
	}
	return "arrow-go, version unknown"
}

// ---- 2. scale ----

func benchScale(c config, r *report, procs *procSet) error {
	r.printf("## 2. Catalog scale: a 100-table tenant inside catalogs of growing size\n\n")
	r.printf("Filler tables spread over 10,000 tenants, 20 columns each (1,000 distinct schemas). Discovery is the real binary loading the blob file.\n\n")
	r.printf("Cold: the first GetTables with schemas of each of %d filler tenants never asked before (about tables/10,000 tables each). Warm: the 100-table tenant, asked repeatedly. RSS after load is read before any request; after requests, at the end.\n\n", coldProbes(c))
	r.printf("| tables | snapshot build s | blob MB | blob encode s | discovery load s | RSS after load MB | cold first GetTables p50 ms | warm GetTables p50 ms | p99 ms | RSS after requests MB |\n|---|---|---|---|---|---|---|---|---|---|\n")
	now := time.Now()
	pool := make([]catalog.Registration, 1000)
	for i := range pool {
		reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "s3://lake/t", Schema: catalogtest.WideSchema(i, 20)}, now)
		if err != nil {
			return err
		}
		pool[i] = reg
	}
	secret := []byte("bench-secret-0123456789abcdefghijklmnop")
	token, _ := auth.IssueHS256(secret, "", "probe", "", "", time.Hour, now)
	for _, total := range c.scaleSizes {
		res := catalog.ScanResult{Tables: make([]catalog.ScannedTable, 0, total)}
		for i := range 100 {
			res.Tables = append(res.Tables, catalog.ScannedTable{Ref: catalog.TableRef{Tenant: "probe", Namespace: "ns" + strconv.Itoa(i%4), Name: fmt.Sprintf("t%03d", i)}, Registration: pool[i]})
		}
		for i := range total - 100 {
			res.Tables = append(res.Tables, catalog.ScannedTable{
				Ref:          catalog.TableRef{Tenant: fmt.Sprintf("tenant%05d", i%10000), Namespace: "ns" + strconv.Itoa(i%7), Name: "t" + strconv.Itoa(i)},
				Registration: pool[i%len(pool)],
			})
		}
		t0 := time.Now()
		snap := catalog.BuildSnapshot(res, 1, now)
		build := time.Since(t0)
		res = catalog.ScanResult{}
		t0 = time.Now()
		blob, err := catalog.EncodeBlob(snap)
		if err != nil {
			return err
		}
		encode := time.Since(t0)
		snap = nil
		dir, err := os.MkdirTemp("", "lakebench-scale-")
		if err != nil {
			return err
		}
		path := filepath.Join(dir, "catalog.lakesnap")
		if err := os.WriteFile(path, blob, 0o644); err != nil {
			return err
		}
		blobMB := float64(len(blob)) / 1e6
		blob = nil
		runtime.GC()
		flightAddr, httpAddr := "127.0.0.1:"+strconv.Itoa(freePort()), "127.0.0.1:"+strconv.Itoa(freePort())
		d, err := procs.start([]string{"LAKE_JWT_HS256_SECRET=" + string(secret)}, "bin/discovery", "-listen", flightAddr, "-http-listen", "-", "-admin-listen", httpAddr, "-snapshot", path, "-poll-interval", "1h")
		if err != nil {
			return err
		}
		if err := waitTCP(d, flightAddr, 30*time.Second); err != nil {
			return err
		}
		loadSec, err := waitLoaded(httpAddr, 5*time.Minute)
		if err != nil {
			return err
		}
		loadRSS := rssMB(d.Pid())
		client, err := flightsql.NewClient(flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		var cold sample
		for i := range coldProbes(c) {
			tenant := fmt.Sprintf("tenant%05d", (i*7919)%min(10000, total-100))
			tok, _ := auth.IssueHS256(secret, "", tenant, "", "", time.Hour, now)
			cctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
			t0 := time.Now()
			_, rows, err := getTables(cctx, client, &flightsql.GetTablesOpts{IncludeSchema: true})
			cold.lat = append(cold.lat, time.Since(t0))
			if err == nil && rows == 0 {
				err = fmt.Errorf("cold tenant %s: no tables", tenant)
			}
			if err != nil {
				client.Close()
				d.Stop()
				return err
			}
		}
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
		var s sample
		err = runFor(&s, 1, c.roundTime*2, func() (int64, error) {
			n, rows, err := getTables(ctx, client, &flightsql.GetTablesOpts{IncludeSchema: true})
			if err == nil && rows != 100 {
				err = fmt.Errorf("%d rows, want 100", rows)
			}
			return n, err
		})
		client.Close()
		rss := rssMB(d.Pid())
		d.Stop()
		os.RemoveAll(dir)
		if err != nil {
			return err
		}
		r.printf("| %d | %.2f | %.1f | %.2f | %.2f | %.0f | %.2f | %.2f | %.2f | %.0f |\n", total, build.Seconds(), blobMB, encode.Seconds(), loadSec, loadRSS, cold.pct(50), s.pct(50), s.pct(99), rss)
		r.points = append(r.points, scalePoint{tables: total, coldP50: cold.pct(50), warmP50: s.pct(50), loadRSS: loadRSS, loadSec: loadSec})
	}
	if last := r.points[len(r.points)-1]; last.tables == 1_000_000 {
		r.target("discovery RSS after load, 1M tables (10k tenants, 20 columns)", "4,254 MB", "≤ 300 MB", last.loadRSS <= 300, "%.0f MB", last.loadRSS)
		r.target("discovery load time, 1M tables", "14.2 s", "≤ 1.5 s", last.loadSec <= 1.5, "%.2f s", last.loadSec)
		r.target("first GetTables (with schemas) on a cold 100-table tenant, p50", "—", "≤ 5 ms", last.coldP50 <= 5, "%.2f ms", last.coldP50)
	}
	r.printf("\n")
	return nil
}

// coldProbes is how many never-asked tenants the scale section times.
func coldProbes(c config) int {
	if c.quick {
		return 20
	}
	return 200
}

// scalePoint is one catalog size's figures, for the plot.
type scalePoint struct {
	tables                    int
	coldP50, warmP50, loadRSS float64
	loadSec                   float64
}

// waitLoaded polls discovery's /healthz and returns the load time it reports.
func waitLoaded(httpAddr string, limit time.Duration) (float64, error) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			continue
		}
		resp, err = http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			return 0, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "lake_discovery_snapshot_load_seconds ") {
				return strconv.ParseFloat(strings.Fields(line)[1], 64)
			}
		}
		return 0, errors.New("no load time in /metrics")
	}
	return 0, errors.New("discovery did not load the snapshot")
}

// ---- 2b. refresh peak heap, in process ----

// benchRefreshHeap runs one refresh in process over a memstore of
// c.heapSize registrations (10,000 tenants, 20 columns, 1,000 distinct
// schemas) and compares its peak heap with the bytes it scans.
func benchRefreshHeap(c config, r *report) error {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	cat := catalog.New(store, catalog.Options{Quota: catalog.Quota{MaxTables: -1, MaxBytes: -1}})
	// 1,000 registrations made through the catalog; the rest copy their
	// stored bytes (a registration's value holds no name), which is what a
	// scan reads.
	pool := make([][]byte, 1000)
	for i := range pool {
		ref := catalog.TableRef{Tenant: "pool", Namespace: "ns", Name: fmt.Sprintf("t%04d", i)}
		if _, _, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/t", Schema: catalogtest.WideSchema(i, 20)}); err != nil {
			return err
		}
		key, _ := ref.Key()
		v, err := store.Get(ctx, key)
		if err != nil {
			return err
		}
		pool[i] = v
		if err := store.Delete(ctx, key); err != nil {
			return err
		}
	}
	tenants := min(10_000, max(1, c.heapSize/100))
	var scanned int64
	for i := range c.heapSize {
		ref := catalog.TableRef{Tenant: fmt.Sprintf("tenant%05d", i%tenants), Namespace: "ns" + strconv.Itoa(i%7), Name: "t" + strconv.Itoa(i)}
		key, _ := ref.Key()
		v := pool[i%len(pool)]
		if err := store.Put(ctx, key, v); err != nil {
			return err
		}
		scanned += int64(len(v))
	}
	pool = nil
	dir, err := os.MkdirTemp("", "lakebench-heap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := &refresh.Publisher{Store: store, Blobs: blobstore.NewFile(filepath.Join(dir, "catalog.lakesnap"))}
	var res refresh.Result
	t0 := time.Now()
	peak := testenv.PeakHeap(func() { res, err = p.Run(ctx) })
	el := time.Since(t0)
	if err != nil {
		return err
	}
	if res.Counts.Tables != c.heapSize {
		return fmt.Errorf("refresh saw %d tables, want %d", res.Counts.Tables, c.heapSize)
	}
	ratio := float64(peak) / float64(scanned)
	r.printf("## 2b. Refresh peak heap, in process over a memstore\n\n")
	r.printf("| registrations | tenants | bytes scanned MB | refresh s | peak heap MB | peak heap / bytes scanned | blob MB |\n|---|---|---|---|---|---|---|\n")
	r.printf("| %d | %d | %.0f | %.2f | %.0f | %.2f | %.2f |\n\n", c.heapSize, tenants, float64(scanned)/1e6, el.Seconds(), float64(peak)/1e6, ratio, float64(res.BlobBytes)/1e6)
	if c.heapSize == 1_000_000 {
		r.target("refresh peak heap / bytes scanned, 1M registrations (in process, memstore)", "—", "≤ 2", ratio <= 2, "%.2f", ratio)
	}
	return nil
}

// ---- 3. refresh over dynalite ----

type dynalite struct{ endpoint string }

func startDynalite(procs *procSet) (*dynalite, error) {
	bin := "tools/npm/node_modules/.bin/dynalite"
	port := freePort()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := procs.start(nil, bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--createTableMs", "0")
	if err != nil {
		return nil, err
	}
	return &dynalite{endpoint: "http://" + addr}, waitTCP(p, addr, 30*time.Second)
}

func (d *dynalite) client() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(d.endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}, dynamo.RetryOptions(dynamo.RetryPolicy{}))
}

func benchRefresh(c config, r *report, d *dynalite) error {
	r.printf("## 3. Refresh: one paginated, strongly consistent scan of dynalite → snapshot → blob\n\n")
	r.printf("| registrations | segments | pages | time s | items/s | peak heap MB | blob MB |\n|---|---|---|---|---|---|---|\n")
	ctx := context.Background()
	for _, n := range c.refreshSizes {
		table := fmt.Sprintf("bench-%d", n)
		if err := dynamo.CreateTable(ctx, d.client(), table); err != nil {
			return err
		}
		seedStore, _ := dynamo.New(d.client(), dynamo.Options{Table: table})
		cat := catalog.New(seedStore, catalog.Options{Quota: catalog.Quota{MaxTables: -1, MaxBytes: -1}})
		var g errgroup.Group
		g.SetLimit(16)
		for i := range n {
			g.Go(func() error {
				ref := catalog.TableRef{Tenant: fmt.Sprintf("tenant%03d", i%200), Namespace: "ns", Name: fmt.Sprintf("t%06d", i)}
				_, _, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/t", Schema: catalogtest.WideSchema(i, 20)})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		for _, segments := range []int{1, 4} {
			store, _ := dynamo.New(d.client(), dynamo.Options{Table: table, Segments: segments})
			dir, _ := os.MkdirTemp("", "lakebench-refresh-")
			p := &refresh.Publisher{Store: store, Blobs: blobstore.NewFile(filepath.Join(dir, "catalog.lakesnap"))}
			var res refresh.Result
			t0 := time.Now()
			var err error
			peak := testenv.PeakHeap(func() { res, err = p.Run(ctx) })
			el := time.Since(t0)
			os.RemoveAll(dir)
			if err != nil {
				return err
			}
			if res.Counts.Tables != n {
				return fmt.Errorf("refresh saw %d tables, want %d", res.Counts.Tables, n)
			}
			r.printf("| %d | %d | %d | %.2f | %.0f | %.0f | %.2f |\n", n, segments, res.Scan.Pages, el.Seconds(), float64(n)/el.Seconds(), float64(peak)/(1<<20), float64(res.BlobBytes)/1e6)
		}
	}
	r.printf("\n")
	return nil
}

// ---- 4. Lambda start-up ----

func benchLambda(c config, r *report, procs *procSet, d *dynalite) error {
	rie := "bin/aws-lambda-rie"
	if _, err := os.Stat(rie); err != nil {
		return fmt.Errorf("%s missing: run `make tools`", rie)
	}
	dir, err := os.MkdirTemp("", "lakebench-lambda-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	if err := dynamo.CreateTable(ctx, d.client(), "bench-lambda"); err != nil {
		return err
	}
	fns := []struct {
		name, pkg string
		event     any
	}{
		{"hello-world", "./functions/testdata/hello", map[string]any{}},
		{"getitem", "./functions/testdata/getitem", map[string]any{}},
		{"register", "./functions/register", map[string]any{"version": "2.0", "rawPath": "/v1/tenants/acme/namespaces/s/tables/missing",
			"requestContext": map[string]any{"http": map[string]any{"method": "GET", "path": "/v1/tenants/acme/namespaces/s/tables/missing"}}}},
		{"refresh", "./functions/refresh", map[string]any{"detail-type": "Scheduled Event", "source": "aws.events", "detail": map[string]any{}}},
	}
	// A real S3-protocol server, so refresh's first invoke does real work.
	s3Addr, vgw, err := startVersitygw(procs, dir, "bench-lambda")
	if err != nil {
		return err
	}
	defer vgw.Stop()
	r.printf("## 4. Lambda: bootstrap size and first invoke under the runtime interface emulator\n\n")
	// The full run measures the shipped build; the quick run (CI) builds with
	// the tests' settings so it reuses their build cache instead of
	// compiling the dependency graph again.
	buildFlags, buildEnv, how := []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w"}, []string{"CGO_ENABLED=0"},
		"Built like `make lambdas` (static, `-tags lambda.norpc`, `-s -w`), for this machine."
	if c.quick {
		buildFlags, buildEnv, how = []string{"-tags", "lambda.norpc"}, nil,
			"Quick mode: built with the tests' settings (`-tags lambda.norpc`, not stripped), so sizes and times are not the shipped build's."
	}
	r.printf("%s The emulator starts the bootstrap on the first invoke, so the time is init plus one call: register "+
		"reads a missing table (one GetItem); refresh runs a scheduled event on the same table and bucket each time (the "+
		"first run publishes, the others find nothing changed). getitem is the smallest function making register's AWS "+
		"call (`config.LoadDefaultConfig`, a DynamoDB client, one GetItem): the floor for a Go function using the SDK. "+
		"The functions take turns, %d fresh starts each; median. Each bootstrap sees the environment Lambda would give "+
		"it: this machine's other `AWS_*` variables are cleared, since the emulator passes its own environment through "+
		"(an `AWS_CA_BUNDLE` makes `LoadDefaultConfig` parse a certificate bundle at every start). The emulators are plain "+
		"HTTP: on AWS the first call also pays DNS, a TLS handshake and loading the system root certificates.\n\n", how, c.invokes)
	bins := make([]string, len(fns))
	sizes := make([]int64, len(fns))
	for i, fn := range fns {
		bins[i] = filepath.Join(dir, fn.name, "bootstrap")
		build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bins[i], fn.pkg)...)
		build.Env = append(os.Environ(), buildEnv...)
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v %s", fn.pkg, err, out)
		}
		st, err := os.Stat(bins[i])
		if err != nil {
			return err
		}
		sizes[i] = st.Size()
	}
	env := lambdaEnv("AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=testsecret", "AWS_REGION=us-east-1",
		"LAKE_TABLE=bench-lambda", "LAKE_BUCKET=bench-lambda", "AWS_ENDPOINT_URL_DYNAMODB="+d.endpoint,
		"AWS_ENDPOINT_URL_S3=http://"+s3Addr, "LAKE_S3_PATH_STYLE=true")
	times := make([][]float64, len(fns))
	for round := range c.invokes {
		for k := range fns {
			i := (round + k) % len(fns) // each round starts with the next function
			url, p, err := startRIE(procs, env, bins[i])
			if err != nil {
				return err
			}
			body, _ := json.Marshal(fns[i].event)
			t0 := time.Now()
			resp, err := http.Post(url, "application/json", bytes.NewReader(body))
			el := time.Since(t0)
			if err != nil {
				return err
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			p.Stop()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Amz-Function-Error") != "" || bytes.Contains(out, []byte(`"errorType"`)) {
				return fmt.Errorf("%s: first invoke answered %d: %s", fns[i].name, resp.StatusCode, out)
			}
			times[i] = append(times[i], float64(el.Microseconds())/1000)
		}
	}
	r.printf("| function | bootstrap MB | first invoke ms | × hello-world | × getitem |\n|---|---|---|---|---|\n")
	med := make([]float64, len(fns))
	for i := range fns {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
	}
	for i, fn := range fns {
		r.printf("| %s | %.1f | %.1f | %.2f | %.2f |\n", fn.name, float64(sizes[i])/1e6, med[i], med[i]/med[0], med[i]/med[1])
	}
	r.printf("\n")
	reg, ref := med[2]/med[0], med[3]/med[0]
	r.target("register / refresh first invoke ÷ hello-world", "3.45× / 4.26×", "≤ 1.5×", reg <= 1.5 && ref <= 1.5, "%.2f× / %.2f×", reg, ref)
	return nil
}

// startVersitygw serves an S3-protocol server on loopback over a folder
// of dir holding bucket (versitygw's posix layout), and returns its address.
func startVersitygw(procs *procSet, dir, bucket string) (string, *testenv.Process, error) {
	s3Dir := filepath.Join(dir, "s3")
	if err := os.MkdirAll(filepath.Join(s3Dir, bucket), 0o755); err != nil {
		return "", nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	p, err := procs.start(nil, "bin/versitygw", "--access", "test", "--secret", "testsecret", "--port", addr, "posix", s3Dir)
	if err != nil {
		return "", nil, err
	}
	return addr, p, waitTCP(p, addr, 30*time.Second)
}

// startRIE runs bootstrap under the Lambda runtime interface emulator
// (started on its first invoke) and returns the URL that invokes it.
func startRIE(procs *procSet, env []string, bootstrap string) (string, *testenv.Process, error) {
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	p, err := procs.start(env, "bin/aws-lambda-rie", "--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(freePort()), bootstrap)
	if err != nil {
		return "", nil, err
	}
	return "http://" + addr + "/2015-03-31/functions/function/invocations", p, waitTCP(p, addr, 30*time.Second)
}

// lambdaEnv is set plus an empty value for every other AWS_* variable of
// this process's environment: the emulator hands its environment to the
// bootstrap, and a developer's AWS_CA_BUNDLE or AWS_PROFILE would make the
// SDK do work at start that it does not do on Lambda. (The SDK reads an
// empty variable as unset.)
func lambdaEnv(set ...string) []string {
	env := slices.Clone(set)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AWS_") && !slices.ContainsFunc(set, func(s string) bool { return strings.HasPrefix(s, name+"=") }) {
			env = append(env, name+"=")
		}
	}
	return env
}
