package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	_ "github.com/apache/arrow-go/v18/arrow/flight/flightsql/driver"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// ---- One tenant cannot hurt the others (issue 38) ----

// boundsSecret signs the section's tokens.
var boundsSecret = []byte("bench-bounds-secret-0123456789abcdefghij")

// boundsDiscovery is a standalone discovery process serving a snapshot
// file.
type boundsDiscovery struct {
	proc                *testenv.Process
	flightAddr, admAddr string
	client              *flightsql.Client
}

// startBoundsDiscovery starts the section's discovery: c's binary with the
// deployed task's memory (GOMEMLIMIT 900 MiB), tokens of boundsSecret.
func startBoundsDiscovery(c config, procs *procSet, path string) (*boundsDiscovery, error) {
	return startDiscoveryOn(procs, c.discoveryBin, boundsSecret, path, "GOMEMLIMIT=900MiB")
}

// startDiscoveryOn starts bin on the snapshot file at path, validating
// tokens signed with secret, with env added, and returns once it serves
// (its /healthz answers 200: at least one tenant loaded).
func startDiscoveryOn(procs *procSet, bin string, secret []byte, path string, env ...string) (*boundsDiscovery, error) {
	d := &boundsDiscovery{flightAddr: "127.0.0.1:" + strconv.Itoa(freePort()), admAddr: "127.0.0.1:" + strconv.Itoa(freePort())}
	var err error
	d.proc, err = procs.start(append([]string{"LAKE_JWT_HS256_SECRET=" + string(secret)}, env...), bin,
		"-listen", d.flightAddr, "-http-listen", "-", "-admin-listen", d.admAddr, "-snapshot", path, "-poll-interval", "1h")
	if err != nil {
		return nil, err
	}
	if err := waitTCP(d.proc, d.flightAddr, 30*time.Second); err != nil {
		d.stop()
		return nil, err
	}
	if _, err := waitLoaded(d.admAddr, 2*time.Minute); err != nil {
		d.stop()
		return nil, err
	}
	d.client, err = flightsql.NewClient(d.flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), bigMessages)
	if err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

func (d *boundsDiscovery) stop() {
	if d.client != nil {
		d.client.Close()
	}
	d.proc.Stop()
}

func boundsAs(tenant string) context.Context {
	tok, _ := auth.IssueHS256(boundsSecret, auth.TokenClaims{Tenant: tenant, TTL: 2 * time.Hour, Now: time.Now()})
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

// boundsBlob writes a snapshot file of tenants × perTenant tables of 20
// columns and returns its path.
func boundsBlob(dir string, tenants []string, perTenant int) (string, error) {
	now := time.Now()
	var regs []scan.Registered
	for _, tn := range tenants {
		for i := range perTenant {
			reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "s3://lake/t", Schema: catalogtest.WideSchema(i, 20)}, now)
			if err != nil {
				return "", err
			}
			regs = append(regs, scan.Registered{Ref: catalog.TableRef{Tenant: tn, Namespace: "ns" + strconv.Itoa(i%10), Name: fmt.Sprintf("table_%04d", i)}, Registration: reg})
		}
	}
	blob, err := encodeRegistrations(regs)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "catalog.lakesnap")
	return path, os.WriteFile(path, blob, 0o644)
}

// idleAfter waits until pid uses less than 5% of a core over 200 ms and
// says how long after start that was (limit when it never is).
func idleAfter(pid int, start time.Time, limit time.Duration) time.Duration {
	prev := cpuSeconds(pid)
	for time.Since(start) < limit {
		time.Sleep(200 * time.Millisecond)
		cur := cpuSeconds(pid)
		if cur-prev < 0.01 {
			return time.Since(start) - 200*time.Millisecond
		}
		prev = cur
	}
	return limit
}

// slowRowsSQL is issue 38's first finding: 40 rows, the first cheap, each
// later one a correlated subquery counting to (i-1)·3,000,000.
const slowRowsSQL = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 40)
SELECT i, (WITH RECURSIVE m(j) AS (SELECT 0 UNION ALL SELECT j+1 FROM m WHERE j < (i-1)*3000000) SELECT count(*) FROM m) FROM n`

func benchBounds(c config, r *report, procs *procSet) error {
	r.printf("## One tenant cannot hurt the others (issue 38)\n\n")
	dir, err := os.MkdirTemp("", "lakebench-bounds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path, err := boundsBlob(dir, []string{"acme", "globex"}, 1000)
	if err != nil {
		return err
	}
	d, err := startBoundsDiscovery(c, procs, path)
	if err != nil {
		return err
	}
	defer d.stop()

	// 1. A statement whose later rows are slow.
	t0 := time.Now()
	_, err = d.client.Execute(boundsAs("acme"), slowRowsSQL)
	waited := time.Since(t0)
	waitCode := status.Code(err)
	idleWait := idleAfter(d.proc.Pid(), t0.Add(waited), 2*time.Minute)
	ctx, cancel := context.WithTimeout(boundsAs("acme"), 3*time.Second)
	t0 = time.Now()
	_, err = d.client.Execute(ctx, slowRowsSQL)
	cancel()
	left := time.Since(t0)
	leaveCode := status.Code(err)
	idleLeave := idleAfter(d.proc.Pid(), t0.Add(left), 2*time.Minute)
	r.printf("Slow-rows statement (40 rows, the first cheap): the client waiting got %s after %.1f s, the server idle %.1f s later; the client leaving at 3 s got %s, the server idle %.1f s after it left.\n\n",
		waitCode, waited.Seconds(), idleWait.Seconds(), leaveCode, idleLeave.Seconds())
	budget := 5 * time.Second
	r.target("slow-rows statement: client waits (ends) / client leaves at 3 s (server idle after)", "52–97 s, CPU 80–110 s after",
		"ends ≤ budget + 1 s; idle within 1 s", waited <= budget+time.Second && idleWait <= time.Second && idleLeave <= time.Second,
		"ends %.1f s (%s), idle %.1f s / idle %.1f s after leaving", waited.Seconds(), waitCode, idleWait.Seconds(), idleLeave.Seconds())

	// 2. 64 unread results of one tenant.
	for _, size := range []struct {
		name  string
		width int
		rows  int
	}{{"~60 MB (past the 32 MiB result cap)", 1000, 60_000}, {"~24 MB (under the cap)", 400, 60_000}} {
		hold := 5 * time.Second
		if c.quick {
			hold = 2 * time.Second
		}
		out, err := unreadResults(d, 64, size.width, size.rows, hold)
		if err != nil {
			return err
		}
		r.printf("64 unread results of %s, one tenant: %s; peak RSS %.0f MB.\n\n", size.name, out.summary(), peakRSSMB(d.proc.Pid()))
	}
	peak := peakRSSMB(d.proc.Pid())
	r.target("64 unread ~60 MB results (and 64 of ~24 MB), one tenant, standalone task at GOMEMLIMIT 900 MiB: peak RSS", "2,430 MiB",
		"peak ≤ 1 GiB; each streams or is refused at once", peak <= 1024, "%.0f MB", peak)

	// 4. A follower of lake.changes under concurrent writers.
	writers, dur := 16, 30*time.Second
	if c.quick {
		dur = 5 * time.Second
	}
	missed, total, err := measureFollowerMisses(context.Background(), writers, dur)
	if err != nil {
		return fmt.Errorf("follower: %w", err)
	}
	r.printf("A follower of lake.changes (lake local in this process) under %d writers for %s: missed %d of %d changes.\n\n", writers, dur, missed, total)
	r.target(fmt.Sprintf("follower misses under %d writers × %s", writers, dur), "446 of 10,000 (16 × 30 s)", "0", missed == 0, "%d of %d", missed, total)

	// 6. A new task with one tenant's segment damaged (lake local).
	dmg, err := measureDamagedSegment(context.Background(), procs, c.discoveryBin, 10)
	if err != nil {
		return fmt.Errorf("damaged segment: %w", err)
	}
	r.printf("A new discovery task on a blob with one of %d tenants' segments damaged: served %d tenants; the damaged one answered %q; served again after one refresh run (lake local): %v.\n\n",
		dmg.tenants, dmg.served, dmg.damaged, dmg.repaired)
	r.target("new task, one tenant's segment damaged", "0 tenants served", "every other tenant served; repaired by the next refresh run",
		dmg.served == dmg.tenants-1 && strings.HasPrefix(dmg.damaged, "Unavailable") && dmg.repaired, "%d of %d served; repaired: %v", dmg.served, dmg.tenants, dmg.repaired)

	// 5. A 409 for a schema of 3,000 breaking changes under 60 nested structs.
	body, growth, err := bigDiff(procs)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	r.printf("A PUT breaking 3,000 fields under 60 nested structs (names of 1,000 bytes) against lake local: a 409 of %d bytes, lake local's peak RSS %.0f MB above its peak before.\n\n", body, growth)
	r.target("409 body / RSS growth for the 3,000-change schema", "361 MB / +2 GB", "≤ 1 MB / ≤ +50 MB", body <= 1<<20 && growth <= 50,
		"%.1f KB / +%.0f MB", float64(body)/1024, growth)

	// 6. arrow-go's database/sql driver with user:password.
	dsnOK, dsnMsg := dsnLogin(d.flightAddr)
	r.target("`user:password` DSN through arrow-go's `database/sql` driver", "UNAUTHENTICATED", "works, same isolation", dsnOK, "%s", dsnMsg)

	// 7. information_schema.columns first after load, in fresh processes,
	// alternated with today's binary when -today-discovery names one.
	first := func(bin string) (float64, error) {
		c2 := c
		c2.discoveryBin = bin
		d2, err := startBoundsDiscovery(c2, procs, path)
		if err != nil {
			return 0, err
		}
		defer d2.stop()
		t0 := time.Now()
		n, err := statementFlow(boundsAs("acme"), d2.client, "SELECT * FROM information_schema.columns")
		ms := float64(time.Since(t0).Microseconds()) / 1000
		if err == nil && n != 20_000 {
			err = fmt.Errorf("%d rows, want 20000", n)
		}
		return ms, err
	}
	var firsts, todays []float64
	var todayErr error
	runs := 5
	if c.quick {
		runs = 3
	}
	for range runs {
		ms, err := first(c.discoveryBin)
		if err != nil {
			return fmt.Errorf("information_schema.columns: %w", err)
		}
		firsts = append(firsts, ms)
		if todayErr == nil && c.todayDiscovery != "" {
			// A binary from before a snapshot format change cannot load
			// this blob: say so and go on without it.
			var ms float64
			if ms, todayErr = first(c.todayDiscovery); todayErr == nil {
				todays = append(todays, ms)
			}
		}
	}
	slices.Sort(firsts)
	today := "200.9 ms"
	median := firsts[len(firsts)/2]
	r.printf("information_schema.columns (20,000 rows) first after load, %d fresh processes: %s ms", runs, joinMS(firsts))
	if todayErr != nil {
		r.printf(" (today's binary not alternated: %v)", todayErr)
	} else if len(todays) > 0 {
		slices.Sort(todays)
		today = fmt.Sprintf("%.1f ms (median, alternated in this run)", todays[len(todays)/2])
		r.printf("; today's binary alternated with it: %s ms", joinMS(todays))
	}
	r.printf(".\n\n")
	r.target(fmt.Sprintf("information_schema.columns first after load (20k rows), median of %d fresh processes", runs), today, "≤ 100 ms", median <= 100, "%.1f ms", median)
	return nil
}

// joinMS prints sorted milliseconds as "a / b / c".
func joinMS(ms []float64) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%.1f", m)
	}
	return strings.Join(parts, " / ")
}

// bigDiff registers DeepBreakingSchemas(60, 3000, 1000)'s old schema in
// a fresh lake local (backward compatibility), PUTs the new one, and
// returns the 409's body size and how far lake local's peak RSS rose.
func bigDiff(procs *procSet) (int, float64, error) {
	l, err := startLocalLake(procs, "acme")
	if err != nil {
		return 0, 0, err
	}
	defer l.stop()
	old, new := catalogtest.DeepBreakingSchemas(60, 3000, 1000)
	send := func(method, path string, body map[string]any) (int, []byte, error) {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		req, err := http.NewRequest(method, "http://"+l.apiAddr+path, bytes.NewReader(b))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+l.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		msg, err := io.ReadAll(resp.Body)
		return resp.StatusCode, msg, err
	}
	ipc := func(s *arrow.Schema) string {
		return base64.StdEncoding.EncodeToString(flight.SerializeSchema(s, memory.DefaultAllocator))
	}
	base := "/v1/tenants/acme/namespaces/main/tables"
	if code, msg, err := send("POST", base, map[string]any{"name": "deep", "location": "s3://lake/deep/", "schema": ipc(old), "compatibility": "backward"}); err != nil || code != http.StatusCreated {
		return 0, 0, fmt.Errorf("register: %d %.200s %v", code, msg, err)
	}
	before := peakRSSMB(l.proc.Pid())
	code, msg, err := send("PUT", base+"/deep", map[string]any{"schema": ipc(new)})
	if err != nil || code != http.StatusConflict {
		return 0, 0, fmt.Errorf("PUT: %d %.200s %v, want 409", code, msg, err)
	}
	return len(msg), peakRSSMB(l.proc.Pid()) - before, nil
}

// unreadOutcome counts what a burst of unread DoGets got.
type unreadOutcome struct {
	streamed      int
	refused       map[string]int
	slowestRefuse time.Duration
}

func (o unreadOutcome) summary() string {
	var parts []string
	for k, v := range o.refused {
		parts = append(parts, fmt.Sprintf("%d refused (%s)", v, k))
	}
	slices.Sort(parts)
	return fmt.Sprintf("%d streamed, %s; the slowest refusal took %d ms", o.streamed, strings.Join(parts, ", "), o.slowestRefuse.Milliseconds())
}

// unreadResults has n clients of tenant acme (8 connections) each run a
// distinct statement of rows × width bytes and open its DoGet without
// reading past the first message, all at once, holding them for hold.
func unreadResults(d *boundsDiscovery, n, width, rows int, hold time.Duration) (unreadOutcome, error) {
	out := unreadOutcome{refused: map[string]int{}}
	var clients []*flightsql.Client
	for range 8 {
		cl, err := flightsql.NewClient(d.flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return out, err
		}
		defer cl.Close()
		clients = append(clients, cl)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	release := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			cl := clients[i%len(clients)]
			ctx, cancel := context.WithCancel(boundsAs("acme"))
			defer cancel()
			q := fmt.Sprintf("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d) SELECT i, %d, printf('%%0%dd', i) FROM n", rows, i, width)
			t0 := time.Now()
			info, err := cl.Execute(ctx, q)
			if err == nil {
				var rdr interface{ Release() }
				rd, derr := cl.DoGet(ctx, info.Endpoint[0].Ticket)
				err = derr
				if derr == nil {
					rdr = rd
					defer rdr.Release()
				}
			}
			took := time.Since(t0)
			mu.Lock()
			if err == nil {
				out.streamed++
			} else {
				msg := status.Convert(err).Message()
				why := status.Code(err).String()
				switch {
				case strings.Contains(msg, "in flight"):
					why = "results in flight budget"
				case strings.Contains(msg, "at most"):
					why = "tenant's statements cap"
				case strings.Contains(msg, "bytes"):
					why = "result cap"
				}
				out.refused[why]++
				out.slowestRefuse = max(out.slowestRefuse, took)
			}
			mu.Unlock()
			if err == nil {
				<-release
			}
		})
	}
	time.Sleep(hold)
	close(release)
	wg.Wait()
	return out, nil
}

// dsnLogin logs in with arrow-go's database/sql driver both ways (user:
// password, and ?token=) and checks that each sees its own tenant alone.
func dsnLogin(addr string) (bool, string) {
	var got []string
	for _, tn := range []string{"acme", "globex"} {
		tok, _ := auth.IssueHS256(boundsSecret, auth.TokenClaims{Tenant: tn, TTL: time.Hour, Now: time.Now()})
		for _, dsn := range []string{"flightsql://" + tn + ":" + tok + "@" + addr, "flightsql://" + addr + "?token=" + tok} {
			db, err := sql.Open("flightsql", dsn)
			if err != nil {
				return false, err.Error()
			}
			var catalogs int
			var name string
			err = db.QueryRow("SELECT count(DISTINCT table_catalog), min(table_catalog) FROM information_schema.tables").Scan(&catalogs, &name)
			db.Close()
			if err == nil && (catalogs != 1 || name != tn) {
				err = fmt.Errorf("%s saw %d catalogs (%s)", tn, catalogs, name)
			}
			if err != nil {
				if s, ok := status.FromError(err); ok && s.Code() == codes.Unauthenticated {
					return false, "UNAUTHENTICATED"
				}
				return false, err.Error()
			}
			got = append(got, tn)
		}
	}
	return true, fmt.Sprintf("works: %d logins (user:password and ?token=, two tenants), each saw its own catalog alone", len(got))
}
