// Command lakebench measures lake side by side with a peer and prints a
// markdown report (and writes it to bench/RESULTS.md with the date and the
// machine): discovery against arrow-go's example SQLite Flight SQL server on
// the same schemas, catalogs of growing size, refresh over dynalite, Lambda
// start-up against a hello-world bootstrap, and GetTables against a bare
// grpc-go server replaying lake's own messages (the transport's ceiling).
// `make bench` runs it; `make bench-quick` runs it with small sizes and
// without the SQLite peer.
//
// It expects, built by `make tools build`: bin/lake, bin/discovery,
// bin/aws-lambda-rie, bin/versitygw and tools/npm's dynalite; section 1
// also bin/sqlite_flightsql_server (`make bench-tools`). Every server it starts listens on 127.0.0.1 and is
// stopped before it exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/lake-catalog/lake/internal/testenv"
)

type config struct {
	quick        bool
	peerTables   int
	roundTime    time.Duration
	rounds       int
	scaleSizes   []int
	refreshSizes []int
	invokes      int
	// ceilingRounds rounds of ceilingRoundTime per side in section 5.
	ceilingRounds    int
	ceilingRoundTime time.Duration
	// peer runs section 1, which needs bin/sqlite_flightsql_server (built by
	// `make bench-tools`; `make bench-quick` skips it).
	peer     bool
	out      string
	plot     string
	heapSize int
	only     map[string]bool // empty: every section
	// todayDiscovery, when set, is a discovery binary built from main
	// before a change, run side by side in the sections that compare.
	todayDiscovery string
	// discoveryBin is the discovery binary the SQL section runs;
	// todaySQLDiscovery, when set, one built before issue 23, asked SELECT 1.
	discoveryBin, todaySQLDiscovery string
}

func main() {
	if v, ok := os.LookupEnv(ceilingEnv); ok {
		// This process is section 5's ceiling server, started by a driver.
		addr, file, _ := strings.Cut(v, " ")
		if err := serveCeiling(addr, file); err != nil {
			fmt.Fprintln(os.Stderr, "lakebench ceiling:", err)
			os.Exit(1)
		}
		return
	}
	var c config
	flag.BoolVar(&c.quick, "quick", false, "small sizes (under two minutes), for CI")
	flag.StringVar(&c.out, "out", "bench/RESULTS.md", "where to write the report ('' for none)")
	flag.StringVar(&c.plot, "plot", "bench/scale.png", "where to draw latency and RSS against catalog size ('' for none)")
	only := flag.String("only", "", "run only these sections, comma-separated: peer, ceiling, scale, heap, bounds, publish, history, budget, refresh, lambda, cost, freshness, writes, sql, vending, iceberg, preview")
	flag.StringVar(&c.todayDiscovery, "today-discovery", "", "a discovery binary built from main before the change, measured beside bin/discovery in the budget section")
	flag.StringVar(&c.discoveryBin, "discovery", "bin/discovery", "the discovery binary the sql section runs")
	flag.StringVar(&c.todaySQLDiscovery, "today-discovery-sql", "", "a discovery binary built from main before issue 23, asked SELECT 1 in the sql section")
	flag.BoolVar(&c.peer, "peer", true, "run section 1 against arrow-go's SQLite Flight SQL server (bin/sqlite_flightsql_server, from `make bench-tools`)")
	flag.Parse()
	if c.quick {
		c.peerTables, c.roundTime, c.rounds = 100, 300*time.Millisecond, 2
		c.scaleSizes, c.refreshSizes, c.invokes, c.heapSize = []int{1_000, 10_000}, []int{2_000}, 2, 20_000
		c.ceilingRounds, c.ceilingRoundTime = 4, 250*time.Millisecond
	} else {
		c.peerTables, c.roundTime, c.rounds = 1000, 2*time.Second, 3
		c.scaleSizes, c.refreshSizes, c.invokes, c.heapSize = []int{10_000, 100_000, 1_000_000}, []int{10_000, 100_000}, 9, 1_000_000
		c.ceilingRounds, c.ceilingRoundTime = 8, time.Second
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
	// timed runs a section and says on stderr how long it took.
	timed := func(sec string, f func() error) error {
		start := time.Now()
		err := f()
		fmt.Fprintf(os.Stderr, "lakebench: %s took %.1f s\n", sec, time.Since(start).Seconds())
		return err
	}
	if want("peer") && c.peer {
		if err := timed("peer", func() error { return benchPeer(c, r, procs) }); err != nil {
			return fmt.Errorf("discovery vs peer: %w", err)
		}
	}
	if want("ceiling") {
		if err := timed("ceiling", func() error { return benchCeiling(c, r, procs) }); err != nil {
			return fmt.Errorf("transport ceiling: %w", err)
		}
	}
	if want("scale") {
		if err := timed("scale", func() error { return benchScale(c, r, procs) }); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	if want("budget") {
		if err := timed("budget", func() error { return benchBudget(c, r, procs) }); err != nil {
			return fmt.Errorf("work per request: %w", err)
		}
	}
	if want("sql") {
		if err := timed("sql", func() error { return benchSQL(c, r, procs) }); err != nil {
			return fmt.Errorf("sql: %w", err)
		}
	}
	if want("bounds") {
		if err := timed("bounds", func() error { return benchBounds(c, r, procs) }); err != nil {
			return fmt.Errorf("bounds: %w", err)
		}
	}
	if want("publish") {
		if err := timed("publish", func() error { return benchPublish(c, r) }); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	if want("vending") {
		if err := timed("vending", func() error { return benchVending(c, r) }); err != nil {
			return fmt.Errorf("vending: %w", err)
		}
	}
	if want("iceberg") {
		if err := timed("iceberg", func() error { return benchIceberg(c, r, procs) }); err != nil {
			return fmt.Errorf("iceberg: %w", err)
		}
	}
	if want("preview") {
		if err := timed("preview", func() error { return benchPreview(c, r, procs) }); err != nil {
			return fmt.Errorf("preview: %w", err)
		}
	}
	if want("history") {
		if err := timed("history", func() error { return benchHistory(c, r) }); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	if want("heap") {
		if err := timed("heap", func() error { return benchRefreshHeap(c, r) }); err != nil {
			return fmt.Errorf("refresh heap: %w", err)
		}
	}
	if want("refresh") || want("lambda") || want("cost") || want("freshness") || want("writes") {
		ddb, err := startDynalite(procs)
		if err != nil {
			return err
		}
		if want("cost") {
			if err := timed("cost", func() error { return benchCost(c, r, ddb) }); err != nil {
				return fmt.Errorf("cost: %w", err)
			}
		}
		if want("freshness") {
			if err := timed("freshness", func() error { return benchFreshness(c, r, procs, ddb) }); err != nil {
				return fmt.Errorf("freshness: %w", err)
			}
		}
		if want("refresh") {
			if err := timed("refresh", func() error { return benchRefresh(c, r, ddb) }); err != nil {
				return fmt.Errorf("refresh: %w", err)
			}
		}
		if want("lambda") {
			if err := timed("lambda", func() error { return benchLambda(c, r, procs, ddb) }); err != nil {
				return fmt.Errorf("lambda: %w", err)
			}
		}
		if want("writes") {
			if err := timed("writes", func() error { return benchWrites(c, r, ddb) }); err != nil {
				return fmt.Errorf("writes: %w", err)
			}
		}
	}
	r.targetsTable()
	if len(r.points) > 1 && c.plot != "" && !plotting {
		fmt.Fprintln(os.Stderr, "lakebench: no plot: built without -tags plot (make bench builds it with)")
	}
	if len(r.points) > 1 && c.plot != "" && plotting {
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

// freePort is a loopback port below the kernel's ephemeral range (see
// testenv.PickPort), so no outgoing connection takes it before the server
// the benchmark starts binds it.
func freePort() int {
	port, err := testenv.PickPort()
	if err != nil {
		panic(err)
	}
	return port
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

// merge adds o's requests to s.
func (s *sample) merge(o *sample) {
	s.lat = append(s.lat, o.lat...)
	s.total += o.total
	s.bytes += o.bytes
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
