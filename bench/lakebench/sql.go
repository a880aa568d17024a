package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// ---- SQL (issue 23) ----

// sqlCatalogSize is the catalog the SQL section loads: a 1,000-table,
// 20-column tenant "acme" and filler tables over 10,000 tenants.
func sqlCatalogSize(c config) int {
	if c.quick {
		return 20_000
	}
	return 1_000_000
}

// drainFlight reads every endpoint of info and counts the rows.
func drainFlight(ctx context.Context, client *flightsql.Client, info *flight.FlightInfo) (int64, error) {
	var rows int64
	for _, ep := range info.Endpoint {
		rdr, err := client.DoGet(ctx, ep.Ticket)
		if err != nil {
			return 0, err
		}
		for rdr.Next() {
			rows += rdr.RecordBatch().NumRows()
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return 0, err
		}
	}
	return rows, nil
}

// jdbcFlow runs sql as the JDBC driver's Statement.executeQuery does:
// CreatePreparedStatement, GetFlightInfo, DoGet, ClosePreparedStatement.
func jdbcFlow(ctx context.Context, client *flightsql.Client, sql string) (int64, error) {
	stmt, err := client.Prepare(ctx, sql)
	if err != nil {
		return 0, err
	}
	defer func() { _ = stmt.Close(ctx) }()
	info, err := stmt.Execute(ctx)
	if err != nil {
		return 0, err
	}
	return drainFlight(ctx, client, info)
}

// statementFlow runs sql as a statement (Execute, DoGet).
func statementFlow(ctx context.Context, client *flightsql.Client, sql string) (int64, error) {
	info, err := client.Execute(ctx, sql)
	if err != nil {
		return 0, err
	}
	return drainFlight(ctx, client, info)
}

// benchSQL loads a catalog into the real discovery binary and times SQL:
// SELECT 1 through the JDBC flow, information_schema.columns of the
// 1,000-table tenant (first after load, then warm), and the RSS after 200
// other tenants each ran one information_schema query. "today" is main
// before issue 23, which answered every statement UNIMPLEMENTED.
func benchSQL(c config, r *report, procs *procSet) error {
	total := sqlCatalogSize(c)
	r.printf("## SQL over the catalog (issue 23)\n\n")
	r.printf("Discovery is the real binary (%s) loading a %d-table blob: tenant `acme` with 1,000 tables × 20 columns (20,000 rows of information_schema.columns) and filler tables over 10,000 tenants.\n\n", c.discoveryBin, total)
	now := time.Now()
	pool := make([]catalog.Registration, 1000)
	for i := range pool {
		reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "s3://lake/t", Schema: catalogtest.WideSchema(i, 20)}, now)
		if err != nil {
			return err
		}
		pool[i] = reg
	}
	res := make([]scan.Registered, 0, total)
	for i := range 1000 {
		res = append(res, scan.Registered{Ref: catalog.TableRef{Tenant: "acme", Namespace: "ns" + strconv.Itoa(i%10), Name: fmt.Sprintf("table_%04d", i)}, Registration: pool[i]})
	}
	for i := range total - 1000 {
		res = append(res, scan.Registered{
			Ref:          catalog.TableRef{Tenant: fmt.Sprintf("tenant%05d", i%10000), Namespace: "ns" + strconv.Itoa(i%7), Name: "t" + strconv.Itoa(i)},
			Registration: pool[i%len(pool)],
		})
	}
	blob, err := encodeRegistrations(res)
	if err != nil {
		return err
	}
	res = nil
	dir, err := os.MkdirTemp("", "lakebench-sql-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "catalog.lakesnap")
	if err := os.WriteFile(path, blob, 0o644); err != nil {
		return err
	}
	blob = nil
	runtime.GC()

	secret := []byte("bench-secret-0123456789abcdefghijklmnop")
	as := func(tenant string) context.Context {
		tok, _ := auth.IssueHS256(secret, auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: now})
		return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	}
	flightAddr, httpAddr := "127.0.0.1:"+strconv.Itoa(freePort()), "127.0.0.1:"+strconv.Itoa(freePort())
	d, err := procs.start([]string{"LAKE_JWT_HS256_SECRET=" + string(secret)}, c.discoveryBin, "-listen", flightAddr, "-http-listen", "-", "-admin-listen", httpAddr, "-snapshot", path, "-poll-interval", "1h")
	if err != nil {
		return err
	}
	defer d.Stop()
	if err := waitTCP(d, flightAddr, 30*time.Second); err != nil {
		return err
	}
	if _, err := waitLoaded(httpAddr, 5*time.Minute); err != nil {
		return err
	}
	loadRSS := rssMB(d.Pid())
	client, err := flightsql.NewClient(flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer client.Close()
	acme := as("acme")
	const columns = "SELECT * FROM information_schema.columns"
	want := func(n int64, err error, rows int64) error {
		if err == nil && n != rows {
			err = fmt.Errorf("%d rows, want %d", n, rows)
		}
		return err
	}

	t0 := time.Now()
	n, err := statementFlow(acme, client, columns)
	first := float64(time.Since(t0).Microseconds()) / 1000
	if err := want(n, err, 20_000); err != nil {
		return fmt.Errorf("first information_schema.columns: %w", err)
	}
	var warm, select1 sample
	if err := runFor(&warm, 1, c.roundTime, func() (int64, error) {
		n, err := statementFlow(acme, client, columns)
		return n, want(n, err, 20_000)
	}); err != nil {
		return err
	}
	if err := runFor(&select1, 1, c.roundTime, func() (int64, error) {
		n, err := jdbcFlow(acme, client, "SELECT 1")
		return n, want(n, err, 1)
	}); err != nil {
		return err
	}
	var tenants sample
	for i := range 200 {
		ctx := as(fmt.Sprintf("tenant%05d", i))
		t0 := time.Now()
		if _, err := statementFlow(ctx, client, columns); err != nil {
			return fmt.Errorf("tenant%05d: %w", i, err)
		}
		tenants.lat = append(tenants.lat, time.Since(t0))
	}
	rss := rssMB(d.Pid())

	today := "UNIMPLEMENTED"
	if c.todaySQLDiscovery != "" {
		if today, err = todaySQL(c, procs, path, secret, now); err != nil {
			return fmt.Errorf("today's discovery: %w", err)
		}
	}
	r.printf("| figure | this run |\n|---|---|\n")
	r.printf("| RSS after load MB | %.0f |\n", loadRSS)
	r.printf("| SELECT 1 through the JDBC flow p50 / p99 ms | %.2f / %.2f |\n", select1.pct(50), select1.pct(99))
	r.printf("| information_schema.columns (20k rows) first after load ms | %.1f |\n", first)
	r.printf("| information_schema.columns (20k rows) warm p50 / p99 ms | %.1f / %.1f |\n", warm.pct(50), warm.pct(99))
	r.printf("| information_schema.columns of 200 other tenants, each its first query, p50 / p99 ms | %.1f / %.1f |\n", tenants.pct(50), tenants.pct(99))
	r.printf("| RSS after those 200 tenants MB | %.0f |\n\n", rss)
	r.target("SELECT 1 through the JDBC flow (prepare, execute, DoGet, close), p50", today, "≤ 2 ms", select1.pct(50) <= 2, "%.2f ms", select1.pct(50))
	r.target("information_schema.columns of a 1,000-table, 20-column tenant, first after load", today, "≤ 100 ms", first <= 100, "%.1f ms", first)
	r.target("information_schema.columns of a 1,000-table, 20-column tenant, warm p50", today, "≤ 20 ms", warm.pct(50) <= 20, "%.1f ms", warm.pct(50))
	if total == 1_000_000 {
		r.target("discovery RSS at 1M tables after 200 tenants each ran one information_schema query", "—", "≤ 300 MB", rss <= 300, "%.0f MB", rss)
	}
	return nil
}

// todaySQL starts the -today-discovery binary on the same blob and says
// what it answers to SELECT 1.
func todaySQL(c config, procs *procSet, path string, secret []byte, now time.Time) (string, error) {
	flightAddr, httpAddr := "127.0.0.1:"+strconv.Itoa(freePort()), "127.0.0.1:"+strconv.Itoa(freePort())
	d, err := procs.start([]string{"LAKE_JWT_HS256_SECRET=" + string(secret)}, c.todaySQLDiscovery, "-listen", flightAddr, "-http-listen", "-", "-admin-listen", httpAddr, "-snapshot", path, "-poll-interval", "1h")
	if err != nil {
		return "", err
	}
	defer d.Stop()
	if err := waitTCP(d, flightAddr, 30*time.Second); err != nil {
		return "", err
	}
	if _, err := waitLoaded(httpAddr, 5*time.Minute); err != nil {
		return "", err
	}
	client, err := flightsql.NewClient(flightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer client.Close()
	tok, _ := auth.IssueHS256(secret, auth.TokenClaims{Tenant: "acme", TTL: time.Hour, Now: now})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	if _, err := jdbcFlow(ctx, client, "SELECT 1"); err != nil {
		return status.Code(err).String(), nil
	}
	return "answered", nil
}
