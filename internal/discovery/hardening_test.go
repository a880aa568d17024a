package discovery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/wire"
)

// sqlInfoCmd is a GetSqlInfo command as the Flight SQL layer hands it over.
type sqlInfoCmd []uint32

func (c sqlInfoCmd) GetInfo() []uint32 { return c }

// A GetSqlInfo naming a million ids (most repeated, some unknown) costs a
// set lookup per id: the answer holds each known id once, and what it
// allocates does not grow with the request (it was ~756 MB for a 4 MiB
// request).
func TestSqlInfoRepeatedIdsAllocateBoundedly(t *testing.T) {
	// Not parallel: it measures the whole process's allocations (MemStats.TotalAlloc).
	e := compatEnv(t)
	ctx := discovery.WithTenant(context.Background(), "acme")
	ids := make(sqlInfoCmd, 1_000_000)
	for i := range ids {
		ids[i] = []uint32{504, 0, 99999, wire.SqlInfoTenantTables}[i%4]
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, ch, err := e.svc.DoGetSqlInfo(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for chunk := range ch {
		if chunk.Err != nil {
			t.Fatal(chunk.Err)
		}
		rows += chunk.Data.NumRows()
		chunk.Data.Release()
	}
	runtime.ReadMemStats(&after)
	if rows != 3 {
		t.Errorf("rows = %d, want 3 (504, 0 and the tenant's table count, once each)", rows)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("allocated %d bytes for a million repeated ids, want under 8 MiB", alloc)
	}
}

// A table_types filter is a set with a length cap: more than MaxTableTypes
// types is INVALID_ARGUMENT, on both the streamed and the pre-encoded path.
func TestTableTypesFilterIsCapped(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	ctx := as(t, "acme")
	many := make([]string, discovery.MaxTableTypes+1)
	for i := range many {
		many[i] = fmt.Sprintf("T%d", i)
	}
	for _, opts := range []*flightsql.GetTablesOpts{{TableTypes: many}, {TableTypes: many, TableNameFilterPattern: strp("order%")}} {
		if _, err := e.tables(ctx, opts); codeOf(err) != codes.InvalidArgument {
			t.Errorf("GetTables with %d types: %v, want INVALID_ARGUMENT", len(many), err)
		}
	}
	rows, err := e.tables(ctx, &flightsql.GetTablesOpts{TableTypes: append(many[:discovery.MaxTableTypes-1], "TABLE")})
	if err != nil || len(rows) != 3 {
		t.Errorf("GetTables with %d types incl. TABLE: %d rows, %v; want 3", discovery.MaxTableTypes, len(rows), err)
	}
}

// panicky is an Authenticator that panics on one token: fault injection
// for the recovery interceptor.
type panicky struct{}

func (panicky) Tenant(token string) (string, error) {
	if token == "boom" {
		panic("injected")
	}
	return "acme", nil
}

// A handler panic is INTERNAL for that call; the server and later calls go
// on. A request over MaxRecvMsgSize is refused before any handler runs.
func TestServerRecoversAndBoundsRequests(t *testing.T) {
	t.Parallel()
	e := compatEnv(t)
	srv := discovery.NewGRPCServer(e.svc, panicky{}, health.NewServer(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	c, err := flightsql.NewClient(l.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bearer := func(tok string) context.Context {
		return metadataCtx("Bearer " + tok)
	}
	if _, err := c.GetCatalogs(bearer("boom")); codeOf(err) != codes.Internal || strings.Contains(err.Error(), "injected") {
		t.Fatalf("panicking call: %v, want INTERNAL without the panic's text", err)
	}
	info, err := c.GetCatalogs(bearer("fine"))
	if err != nil {
		t.Fatalf("call after a panic: %v", err)
	}
	if rdr, err := c.DoGet(bearer("boom"), info.Endpoint[0].Ticket); err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
		if codeOf(err) != codes.Internal {
			t.Fatalf("panicking DoGet: %v, want INTERNAL", err)
		}
	} else if codeOf(err) != codes.Internal {
		t.Fatalf("panicking DoGet: %v, want INTERNAL", err)
	}
	// Each panicking call is counted as INTERNAL under its name.
	text := e.scrape()
	for _, sample := range []string{
		`lake_discovery_requests_total{code="Internal",command="GetCatalogs"}`,
		`lake_discovery_requests_total{code="Internal",command="DoGet"}`,
	} {
		if got := metric(text, sample); got != "1" {
			t.Errorf("%s = %q, want 1", sample, got)
		}
	}
	huge := make([]flightsql.SqlInfo, discovery.MaxRecvMsgSize/2)
	for i := range huge {
		huge[i] = 576
	}
	if _, err := c.GetSqlInfo(bearer("fine"), huge); codeOf(err) != codes.ResourceExhausted {
		t.Fatalf("request over %d bytes: %v, want RESOURCE_EXHAUSTED", discovery.MaxRecvMsgSize, err)
	}
}

// BenchmarkGetTablesTypeFilter is GetTables over a 5,000-table tenant with
// a table_types filter of MaxTableTypes types (the most a request may
// name): each table costs one set lookup. (A 200k-type list cost 1.3 s per
// request before the cap and the set.)
func BenchmarkGetTablesTypeFilter(b *testing.B) {
	e := newEnv(b, discovery.Options{})
	for i := range 5000 {
		e.register("acme", "ns", fmt.Sprintf("t%05d", i), wide(i%50))
	}
	e.publish()
	ctx := as(b, "acme")
	types := make([]string, discovery.MaxTableTypes)
	for i := range types {
		types[i] = fmt.Sprintf("T%d", i)
	}
	types[len(types)-1] = "TABLE"
	opts := &flightsql.GetTablesOpts{TableTypes: types, TableNameFilterPattern: strp("t%")}
	b.ResetTimer()
	for range b.N {
		rows, err := e.tables(ctx, opts)
		if err != nil || len(rows) != 5000 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
}

func metadataCtx(authorization string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", authorization)
}
