package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/wire"
)

// budgetSnapshot is the catalog of the work-per-request section: tenant
// "big" of 10,000 described tables (location, description, properties;
// 50 distinct 20-column schemas), tenant "probe" of 8 tables each with one
// 200,000-byte field name (stored before field names were bounded), and
// tenant "names" of 4,000 tables with 240-byte names.
func budgetSnapshot() ([]scan.Registered, error) {
	now := time.Now()
	var res []scan.Registered
	regs := make([]catalog.Registration, 50)
	for i := range regs {
		reg, err := catalog.NewRegistration(catalog.TableSpec{
			Location: fmt.Sprintf("s3://lake/big/%d/", i), Schema: catalogtest.WideSchema(i, 20),
			Description: strings.Repeat("A table of the big tenant. ", 10),
			Properties:  map[string]string{"owner": fmt.Sprintf("team-%d", i), "tier": "gold"},
		}, now)
		if err != nil {
			return nil, err
		}
		regs[i] = reg
	}
	for i := range 10_000 {
		res = append(res, scan.Registered{Registration: regs[i%len(regs)],
			Ref: catalog.TableRef{Tenant: "big", Namespace: fmt.Sprintf("ns%02d", i%20), Name: fmt.Sprintf("t%05d", i)}})
	}
	long := strings.Repeat("a", 200_000)
	for i := range 8 {
		s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: long + strconv.Itoa(i), Type: arrow.BinaryTypes.String}}, nil)
		raw, err := json.Marshal(map[string]string{"location": "/old", "created_at": "2024-01-01T00:00:00Z",
			"schema_ipc": base64.StdEncoding.EncodeToString(flight.SerializeSchema(s, memory.DefaultAllocator))})
		if err != nil {
			return nil, err
		}
		reg, err := catalog.DecodeRegistration(raw)
		if err != nil {
			return nil, err
		}
		res = append(res, scan.Registered{Registration: reg,
			Ref: catalog.TableRef{Tenant: "probe", Namespace: "ns", Name: fmt.Sprintf("t%d", i)}})
	}
	for i := range 4000 {
		res = append(res, scan.Registered{Registration: regs[0],
			Ref: catalog.TableRef{Tenant: "names", Namespace: "ns", Name: fmt.Sprintf("%s%04d", strings.Repeat("x", 236), i)}})
	}
	return res, nil
}

// budgetFigures are one discovery binary's figures in the section.
type budgetFigures struct {
	describe, probe, search32, getTables sample
	probeCode                            codes.Code
	peakRSS                              float64
	// With the ceiling: the same describe calls answered by the bare
	// grpc-go server replaying discovery's recorded answers, alternated
	// with discovery's rounds, and each serving process's CPU per call.
	describeCeiling         sample
	describeCPU, ceilingCPU float64 // µs per call
}

// benchBudget measures what one request can cost discovery (issue 24):
// describe on a 10,000-table tenant, 32 calls at a time, and the
// pathological patterns of the issue's probes, one call at a time. With
// c.todayDiscovery it runs the same against that binary (main before the
// change) first, side by side.
func benchBudget(c config, r *report, procs *procSet) error {
	r.printf("## Work per request (issue 24)\n\n")
	r.printf("Discovery is the real binary loading a blob file. describe: `lake.describe` of one table of a 10,000-table tenant (location, description and two properties per table), 32 calls at a time. Search probe: column pattern `'%%a'×511 + '%%b'` over 8 tables with one 200,000-byte field name each; the same with `'%%a'×31 + '%%b'` (the most `%%` still accepted); GetTables probe: name pattern `'_%%'×240 + 'Q'` over 4,000 240-byte names; one call at a time. Peak RSS is the discovery process's VmHWM.\n\n")
	snap, err := budgetSnapshot()
	if err != nil {
		return err
	}
	blob, err := encodeRegistrations(snap)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "lakebench-budget-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "catalog.lakesnap")
	if err := os.WriteFile(path, blob, 0o644); err != nil {
		return err
	}
	rows := []struct {
		name string
		bin  string
	}{{"this build", "bin/discovery"}}
	if c.todayDiscovery != "" {
		rows = append([]struct {
			name string
			bin  string
		}{{"today (" + c.todayDiscovery + ")", c.todayDiscovery}}, rows...)
	}
	r.printf("| discovery | describe p50 ms | describe p99 ms | describe calls | peak RSS MB | search probe | p99 ms | search 32 %% p99 ms | GetTables probe p99 ms |\n|---|---|---|---|---|---|---|---|---|\n")
	var today, now *budgetFigures
	for k, row := range rows {
		// This build's describe is also timed against the transport's
		// ceiling (section 5's server, replaying this build's answers).
		f, err := budgetRun(c, procs, row.bin, path, k == len(rows)-1)
		if err != nil {
			return fmt.Errorf("%s: %w", row.name, err)
		}
		r.printf("| %s | %.2f | %.2f | %d | %.0f | %s | %.2f | %.2f | %.2f |\n", row.name, f.describe.pct(50), f.describe.pct(99), len(f.describe.lat), f.peakRSS,
			f.probeCode, f.probe.pct(99), f.search32.pct(99), f.getTables.pct(99))
		if k == len(rows)-1 {
			now = &f
		} else {
			today = &f
		}
	}
	r.printf("\n")
	if n := now.describeCeiling; len(n.lat) > 0 {
		r.printf("describe at the transport's ceiling: every one of the 10,000 tables' `lake.describe` answers as this build sent them, replayed from memory, pre-marshaled, by section 5's bare grpc-go server in a child process, with the same client code and token, 32 calls at a time, alternated with discovery's rounds (two rounds of %v each). Server CPU is each serving process's, from /proc.\n\n", c.roundTime)
		r.printf("| describe, 32 at a time | calls/s | p50 ms | p99 ms | server CPU µs per call |\n|---|---|---|---|---|\n")
		r.printf("| discovery (this build) | %.0f | %.2f | %.2f | %.0f |\n", now.describe.reqPerSec(), now.describe.pct(50), now.describe.pct(99), now.describeCPU)
		r.printf("| bare grpc-go replay (ceiling) | %.0f | %.2f | %.2f | %.0f |\n\n", n.reqPerSec(), n.pct(50), n.pct(99), now.ceilingCPU)
		r.target("describe p99, 10,000-table tenant, 32 concurrent (issue 22), beside the bare grpc-go replay of the same answers", "~560 ms per call at 4,000 tables, 3.1 GB peak RSS",
			"≤ 2 ms, RSS within the cache budget", now.describe.pct(99) <= 2, "%.2f ms (ceiling %.2f ms), peak RSS %.0f MB", now.describe.pct(99), n.pct(99), now.peakRSS)
	}
	// "today" is the side-by-side run when there is one, else what the Go
	// benchmarks measured on main before the change (this machine, the
	// session of the change).
	describeToday := "2,130–8,293 ms, peak heap 1.5–1.8 GB (BenchmarkDescribe on main, in process; issue: 0.56 s per call at 4,000 tables, 3.1 GB RSS)"
	probeToday, search32Today := "44,569 ms (BenchmarkSearchPathological on main; issue: 32 s of CPU)", "2,298 ms (BenchmarkSearchPathological on main)"
	if today != nil {
		describeToday = fmt.Sprintf("%.0f ms, peak RSS %.0f MB (side by side)", today.describe.pct(99), today.peakRSS)
		probeToday = fmt.Sprintf("%.0f ms (%s, side by side)", today.probe.pct(99), today.probeCode)
		search32Today = fmt.Sprintf("%.0f ms (side by side)", today.search32.pct(99))
	}
	r.target("describe p99, 10,000-table tenant, 32 concurrent", describeToday,
		"≤ 50 ms", now.describe.pct(99) <= 50, "%.2f ms, peak RSS %.0f MB", now.describe.pct(99), now.peakRSS)
	r.target("search p99, pattern '%a'×511+'%b' over 8 × 200,000-byte field names", probeToday,
		"refused or ≤ 100 ms", now.probe.pct(99) <= 100, "%.2f ms (%s)", now.probe.pct(99), now.probeCode)
	r.target("search p99, pattern '%a'×31+'%b' over the same", search32Today,
		"≤ 100 ms", now.search32.pct(99) <= 100, "%.2f ms", now.search32.pct(99))
	return nil
}

// budgetRun starts bin on the blob at path and measures it; withCeiling,
// it also times its describe answers replayed by the ceiling server.
func budgetRun(c config, procs *procSet, bin, path string, withCeiling bool) (budgetFigures, error) {
	var f budgetFigures
	secret := []byte("bench-secret-0123456789abcdefghijklmnop")
	flightAddr, httpAddr := "127.0.0.1:"+strconv.Itoa(freePort()), "127.0.0.1:"+strconv.Itoa(freePort())
	d, err := procs.start([]string{"LAKE_JWT_HS256_SECRET=" + string(secret)}, bin, "-listen", flightAddr, "-http-listen", "-", "-admin-listen", httpAddr, "-snapshot", path, "-poll-interval", "1h")
	if err != nil {
		return f, err
	}
	defer d.Stop()
	if err := waitTCP(d, flightAddr, 30*time.Second); err != nil {
		return f, err
	}
	if _, err := waitLoaded(httpAddr, 5*time.Minute); err != nil {
		return f, err
	}
	conn, err := grpc.NewClient(flightAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return f, err
	}
	defer conn.Close()
	client := flight.NewClientFromConn(conn, nil)
	as := func(tenant string) context.Context {
		tok, _ := auth.IssueHS256(secret, auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: time.Now()})
		return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	}
	actionOn := func(ctx context.Context, client flight.Client, typ string, body any) (int64, error) {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		stream, err := client.DoAction(ctx, &flight.Action{Type: typ, Body: b})
		if err != nil {
			return 0, err
		}
		var n int64
		for {
			res, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			n += int64(len(res.Body))
		}
	}
	action := func(ctx context.Context, typ string, body any) (int64, error) {
		return actionOn(ctx, client, typ, body)
	}

	big := as("big")
	// The first describe prepares the tenant in this build (main decoded
	// the segment on every call): not counted.
	if _, err := action(big, wire.DescribeActionType, wire.DescribeRequest{Namespace: "ns00", Table: "t00000"}); err != nil {
		return f, err
	}
	describeReq := func(i int) wire.DescribeRequest {
		return wire.DescribeRequest{Namespace: fmt.Sprintf("ns%02d", i%20), Table: fmt.Sprintf("t%05d", i)}
	}
	describeOn := func(cl flight.Client) func() (int64, error) {
		var next atomic.Int64
		return func() (int64, error) {
			return actionOn(big, cl, wire.DescribeActionType, describeReq(int(next.Add(7919)%10_000)))
		}
	}
	if !withCeiling {
		if err := runFor(&f.describe, 32, c.roundTime*2, describeOn(client)); err != nil {
			return f, fmt.Errorf("describe: %w", err)
		}
	} else if err := describeAtCeiling(big, c, procs, &f, d.Pid(), client, describeReq, describeOn); err != nil {
		return f, err
	}

	probe := as("probe")
	search := func(s *sample, pattern string) (codes.Code, error) {
		var code codes.Code
		err := runFor(s, 1, c.roundTime, func() (int64, error) {
			n, err := action(probe, wire.SearchActionType, wire.SearchRequest{ColumnPattern: pattern})
			code = status.Code(err)
			if code == codes.InvalidArgument {
				return n, nil // refused: that is the answer
			}
			return n, err
		})
		return code, err
	}
	if f.probeCode, err = search(&f.probe, strings.Repeat("%a", 511)+"%b"); err != nil {
		return f, fmt.Errorf("search probe: %w", err)
	}
	if _, err := search(&f.search32, strings.Repeat("%a", 31)+"%b"); err != nil {
		return f, fmt.Errorf("search 32: %w", err)
	}

	fsql, err := flightsql.NewClient(flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return f, err
	}
	defer fsql.Close()
	names := as("names")
	pattern := strings.Repeat("_%", 240) + "Q"
	if err := runFor(&f.getTables, 1, c.roundTime, func() (int64, error) {
		n, _, err := getTables(names, fsql, &flightsql.GetTablesOpts{TableNameFilterPattern: &pattern})
		if status.Code(err) == codes.InvalidArgument {
			return n, nil
		}
		return n, err
	}); err != nil {
		return f, fmt.Errorf("GetTables probe: %w", err)
	}
	f.peakRSS = peakRSSMB(d.Pid())
	return f, nil
}

// describeAtCeiling records discovery's describe answer of each of the
// 10,000 tables (describeReq), serves them from the ceiling server, and
// times the same calls on both, alternated over two rounds of c.roundTime
// each (the first side alternating too), with each serving process's CPU.
func describeAtCeiling(ctx context.Context, c config, procs *procSet, f *budgetFigures, pid int, client flight.Client,
	describeReq func(int) wire.DescribeRequest, describeOn func(flight.Client) func() (int64, error)) error {
	answers := make([]recordedAnswer, 10_000)
	for i := range answers {
		body, err := json.Marshal(describeReq(i))
		if err != nil {
			return err
		}
		if answers[i], err = recordAction(ctx, client, wire.DescribeActionType, body); err != nil {
			return fmt.Errorf("record describe: %w", err)
		}
	}
	child, addr, err := startCeiling(procs, answers)
	if err != nil {
		return err
	}
	defer child.Stop()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ceiling := flight.NewClientFromConn(conn, nil)
	// The replay answers exactly what discovery did.
	if got, err := recordAction(ctx, ceiling, wire.DescribeActionType, answers[0].Body); err != nil {
		return fmt.Errorf("ceiling describe: %w", err)
	} else if !slices.EqualFunc(got.Messages, answers[0].Messages, bytes.Equal) {
		return errors.New("ceiling describe: the replay differs from discovery's answer")
	}
	var lakeCPU, ceilCPU float64
	for round := range 2 {
		sides := []struct {
			s   *sample
			cl  flight.Client
			pid int
			cpu *float64
		}{{&f.describe, client, pid, &lakeCPU}, {&f.describeCeiling, ceiling, child.Pid(), &ceilCPU}}
		if round == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			var s sample
			before := cpuSeconds(side.pid)
			if err := runFor(&s, 32, c.roundTime, describeOn(side.cl)); err != nil {
				return fmt.Errorf("describe: %w", err)
			}
			*side.cpu += cpuSeconds(side.pid) - before
			side.s.merge(&s)
		}
	}
	f.describeCPU = 1e6 * lakeCPU / float64(len(f.describe.lat))
	f.ceilingCPU = 1e6 * ceilCPU / float64(len(f.describeCeiling.lat))
	return nil
}

// peakRSSMB is a process's peak resident set (VmHWM).
func peakRSSMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

// encodeRegistrations writes a blob of regs at generation 1 with the
// snapshot writer, as refresh would of the same registrations.
func encodeRegistrations(regs []scan.Registered) ([]byte, error) {
	w, err := scan.WriteRegistrations(regs, snapshot.WriterOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		return nil, err
	}
	return w.Blob()
}
