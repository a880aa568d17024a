package discovery_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/wire"
)

var secret = []byte("discovery-test-secret-0123456789abcdef")

// env is a running discovery server over a memstore catalog published to a
// blob file.
type env struct {
	t      testing.TB
	store  metastore.Store
	cat    *catalog.Catalog
	blobs  *blobstore.File
	svc    *discovery.Service
	src    *discovery.Source
	client *flightsql.Client
	addr   string
	gen    uint64
	reg    *prometheus.Registry
	// metrics are the Service's and the Source's, registered in reg.
	metrics *discovery.Metrics
}

func newEnv(t testing.TB, opts discovery.Options) *env {
	t.Helper()
	st := memstore.New(memstore.Options{})
	e := &env{t: t, store: st, cat: catalog.New(st, catalog.Options{}), blobs: blobstore.NewFile(filepath.Join(t.TempDir(), "catalog.lakesnap"))}
	reg := prometheus.NewRegistry()
	e.reg = reg
	opts.Metrics = discovery.NewMetrics(reg)
	e.metrics = opts.Metrics
	e.svc = discovery.NewService(opts)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.src = discovery.NewSource(e.blobs, e.svc, opts.Metrics, quiet)
	v, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	srv := discovery.NewGRPCServer(e.svc, v, hs, quiet)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	e.addr = l.Addr().String()
	e.client, err = flightsql.NewClient(e.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.client.Close() })
	return e
}

// register adds a table with schema (nil: a legacy registration without one).
func (e *env) register(tenant, ns, name string, schema *arrow.Schema) {
	e.t.Helper()
	ref := catalog.TableRef{Tenant: tenant, Namespace: ns, Name: name}
	if schema == nil {
		key, _ := ref.Key()
		if err := e.store.Put(context.Background(), key, []byte(`{"location":"/legacy","created_at":"2024-01-01T00:00:00Z"}`)); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	if _, _, err := e.cat.Register(context.Background(), ref, catalog.TableSpec{Location: "s3://lake/" + url.PathEscape(ref.String()), Schema: schema}); err != nil {
		e.t.Fatal(err)
	}
}

// publish builds the next snapshot, stores it as refresh does (the
// manifest alone, each segment beside it) and polls it in.
func (e *env) publish() {
	e.t.Helper()
	e.gen++
	e.put(func(prev []snapshot.Entry) *snapshot.Written {
		// As refresh does: the blob replaced is the base, so unchanged rows
		// keep the generation they were published in and unchanged
		// tenants keep their segments.
		opts := scan.BuildOptions{Generation: e.gen, CreatedAt: time.Now(), Previous: prev}
		if cur, err := e.blobs.Get(context.Background(), ""); err == nil {
			fetch := func(ctx context.Context, en snapshot.Entry) ([]byte, error) {
				return e.blobs.GetSegment(ctx, hex.EncodeToString(en.Address[:]), 1<<30)
			}
			if base, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{Fetch: fetch}); err == nil {
				opts.Base = base
			}
		}
		b, err := scan.Build(context.Background(), e.store, opts)
		if err != nil {
			e.t.Fatal(err)
		}
		return b.Written
	})
}

// load writes a blob of regs as the next generation, as refresh does
// (unchanged tenants keep the generation of their last change), and polls
// it in.
func (e *env) load(regs []scan.Registered) {
	e.t.Helper()
	e.gen++
	e.put(func(prev []snapshot.Entry) *snapshot.Written {
		w, err := scan.WriteRegistrations(regs, snapshot.WriterOptions{Generation: e.gen, CreatedAt: time.Now(), Previous: prev})
		if err != nil {
			e.t.Fatal(err)
		}
		return w
	})
}

// put stores the blob make returns (given the current blob's index) in
// place of the current one, segments first, and polls it in.
func (e *env) put(make func(prev []snapshot.Entry) *snapshot.Written) {
	e.t.Helper()
	ctx := context.Background()
	cur, err := e.blobs.Get(ctx, "")
	cond := blobstore.Condition{IfNoneMatch: true}
	var prev []snapshot.Entry
	if err == nil {
		cond = blobstore.Condition{IfMatch: cur.ETag}
		if r, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{}); err == nil {
			prev = r.Entries()
		}
	}
	w := make(prev)
	for i, seg := range w.Segments {
		if err := e.blobs.PutSegment(ctx, hex.EncodeToString(w.Entries[i].Address[:]), seg); err != nil {
			e.t.Fatal(err)
		}
	}
	if _, err := e.blobs.Put(ctx, w.Manifest, cond); err != nil {
		e.t.Fatal(err)
	}
	if loaded, err := e.src.Poll(ctx); err != nil || !loaded {
		e.t.Fatalf("poll: loaded %v, %v", loaded, err)
	}
}

func token(t testing.TB, tenant string) string {
	t.Helper()
	tok, err := auth.IssueHS256(secret, auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func as(t testing.TB, tenant string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token(t, tenant))
}

// fetch runs DoGet on every endpoint of info and returns the batches.
func (e *env) fetch(ctx context.Context) func(*flight.FlightInfo, error) (*arrow.Schema, []arrow.RecordBatch, error) {
	return func(info *flight.FlightInfo, err error) (*arrow.Schema, []arrow.RecordBatch, error) {
		return e.doGet(ctx, info, err)
	}
}

func (e *env) doGet(ctx context.Context, info *flight.FlightInfo, err error) (*arrow.Schema, []arrow.RecordBatch, error) {
	if err != nil {
		return nil, nil, err
	}
	var recs []arrow.RecordBatch
	var schema *arrow.Schema
	for _, ep := range info.Endpoint {
		rdr, err := e.client.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, nil, err
		}
		schema = rdr.Schema()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		if err := rdr.Err(); err != nil {
			return nil, nil, err
		}
		rdr.Release()
	}
	return schema, recs, nil
}

// tableRow is one GetTables row.
type tableRow struct {
	catalog, ns, name, typ string
	schema                 []byte
}

func (e *env) tables(ctx context.Context, opts *flightsql.GetTablesOpts) ([]tableRow, error) {
	info, err := e.client.GetTables(ctx, opts)
	schema, recs, err := e.doGet(ctx, info, err)
	if err != nil {
		return nil, err
	}
	want := schema_ref.Tables
	if opts.IncludeSchema {
		want = schema_ref.TablesWithIncludedSchema
	}
	if !schema.Equal(want) {
		e.t.Fatalf("GetTables schema = %s, want the spec's %s", schema, want)
	}
	var rows []tableRow
	for _, rec := range recs {
		if !rec.Schema().Equal(want) {
			e.t.Fatalf("batch schema = %s", rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			r := tableRow{
				catalog: rec.Column(0).(*array.String).Value(i),
				ns:      rec.Column(1).(*array.String).Value(i),
				name:    rec.Column(2).(*array.String).Value(i),
				typ:     rec.Column(3).(*array.String).Value(i),
			}
			if opts.IncludeSchema {
				r.schema = append([]byte(nil), rec.Column(4).(*array.Binary).Value(i)...)
			}
			rows = append(rows, r)
		}
		rec.Release()
	}
	return rows, nil
}

func strp(s string) *string { return &s }

func codeOf(err error) codes.Code { return status.Code(err) }

func TestUnavailableBeforeFirstSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	_, err := e.client.GetCatalogs(as(t, "acme"))
	if codeOf(err) != codes.Unavailable {
		t.Fatalf("GetCatalogs before a snapshot: %v, want UNAVAILABLE", err)
	}
	if _, err := e.src.Poll(context.Background()); err == nil {
		t.Fatal("poll with no blob succeeded")
	}
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	if _, _, err := e.fetch(as(t, "acme"))(e.client.GetCatalogs(as(t, "acme"))); err != nil {
		t.Fatalf("GetCatalogs after the snapshot: %v", err)
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	expired, _ := auth.IssueHS256(secret, auth.TokenClaims{Tenant: "acme", TTL: -time.Hour, Now: time.Now().Add(-2 * time.Hour)})
	forged, _ := auth.IssueHS256([]byte("some-other-secret-0123456789abcdef"), auth.TokenClaims{Tenant: "acme", TTL: time.Hour, Now: time.Now()})
	for name, ctx := range map[string]context.Context{
		"no token":      context.Background(),
		"not bearer":    metadata.AppendToOutgoingContext(context.Background(), "authorization", "Basic YWNtZTpwdw=="),
		"expired":       metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+expired),
		"forged":        metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+forged),
		"tenant header": metadata.AppendToOutgoingContext(context.Background(), "x-tenant", "acme", "tenant", "acme"),
	} {
		_, err := e.client.GetTables(ctx, &flightsql.GetTablesOpts{})
		if codeOf(err) != codes.Unauthenticated || strings.Contains(err.Error(), "acme") {
			t.Errorf("%s: %v, want a generic UNAUTHENTICATED", name, err)
		}
	}
	// The health service needs no token.
	hc := healthpb.NewHealthClient(mustDial(t, e.addr))
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health check without a token: %v", err)
	}
}

func mustDial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// The plan's flight_table_discovery_returns_cached_real_schema.
func TestFlightTableDiscoveryReturnsCachedRealSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	rich := richSchema()
	e.register("acme", "sales", "orders", rich)
	e.register("acme", "sales", "customers", wide(2))
	e.register("globex", "sales", "orders", wide(3))
	e.publish()
	before := e.src.Status().MetadataReads

	ctx := as(t, "acme")
	rows, err := e.tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].name != "customers" || rows[1].name != "orders" {
		t.Fatalf("rows = %+v", rows)
	}
	for _, r := range rows {
		if r.catalog != "acme" || r.ns != "sales" || r.typ != "TABLE" {
			t.Fatalf("row = %+v", r)
		}
	}
	got, err := flight.DeserializeSchema(rows[1].schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !catalog.SchemaEqual(got, rich) {
		t.Fatalf("table_schema decodes to\n%v\nwant\n%v", got, rich)
	}
	for range 20 {
		if _, err := e.tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true, TableNameFilterPattern: strp("ord%")}); err != nil {
			t.Fatal(err)
		}
	}
	if after := e.src.Status().MetadataReads; after != before {
		t.Fatalf("metadata reads went from %d to %d while serving requests, want no change", before, after)
	}
}

// The plan's flight_table_discovery_rejects_unknown_legacy_schema.
func TestFlightTableDiscoveryRejectsUnknownLegacySchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.register("acme", "legacy", "old_orders", nil)
	e.publish()
	before := e.src.Status().MetadataReads
	ctx := as(t, "acme")

	_, err := e.tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if codeOf(err) != codes.FailedPrecondition || strings.Contains(err.Error(), "old_orders") || strings.Contains(err.Error(), "legacy") {
		t.Fatalf("include_schema over a legacy table: %v, want a generic FAILED_PRECONDITION", err)
	}
	rows, err := e.tables(ctx, &flightsql.GetTablesOpts{})
	if err != nil || len(rows) != 2 || rows[0].name != "old_orders" {
		t.Fatalf("include_schema=false: %+v, %v; want both tables", rows, err)
	}
	// A request that does not reach the legacy table still gets schemas.
	rows, err = e.tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true, DbSchemaFilterPattern: strp("sales")})
	if err != nil || len(rows) != 1 {
		t.Fatalf("include_schema within sales: %+v, %v", rows, err)
	}
	if after := e.src.Status().MetadataReads; after != before {
		t.Fatalf("the rejection read metadata: %d → %d", before, after)
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	for _, r := range []struct{ ns, name string }{
		{"sales", "orders"}, {"sales", "order_items"}, {"sales", "orderXitems"}, {"sales", "returns"},
		{"sales_eu", "orders"}, {"salesXeu", "orders"}, {"hr", "people"}, {"100%", "x"},
	} {
		e.register("acme", r.ns, r.name, wide(len(r.name)))
	}
	e.publish()
	ctx := as(t, "acme")
	names := func(opts *flightsql.GetTablesOpts) string {
		t.Helper()
		rows, err := e.tables(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.ns+"."+r.name)
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		opts *flightsql.GetTablesOpts
		want string
	}{
		{&flightsql.GetTablesOpts{}, "100%.x hr.people sales.orderXitems sales.order_items sales.orders sales.returns salesXeu.orders sales_eu.orders"},
		{&flightsql.GetTablesOpts{DbSchemaFilterPattern: strp("sales")}, "sales.orderXitems sales.order_items sales.orders sales.returns"},
		{&flightsql.GetTablesOpts{DbSchemaFilterPattern: strp(`sales\_eu`)}, "sales_eu.orders"},
		{&flightsql.GetTablesOpts{DbSchemaFilterPattern: strp(`sales_eu`)}, "salesXeu.orders sales_eu.orders"},
		{&flightsql.GetTablesOpts{DbSchemaFilterPattern: strp(`100\%`)}, "100%.x"},
		{&flightsql.GetTablesOpts{TableNameFilterPattern: strp(`order\_items`)}, "sales.order_items"},
		{&flightsql.GetTablesOpts{TableNameFilterPattern: strp(`order_items`)}, "sales.orderXitems sales.order_items"},
		{&flightsql.GetTablesOpts{TableNameFilterPattern: strp(`%s`), DbSchemaFilterPattern: strp("sal%")}, "sales.orderXitems sales.order_items sales.orders sales.returns salesXeu.orders sales_eu.orders"},
		{&flightsql.GetTablesOpts{TableNameFilterPattern: strp("")}, ""},
		{&flightsql.GetTablesOpts{Catalog: strp("acme"), TableNameFilterPattern: strp("people")}, "hr.people"},
		{&flightsql.GetTablesOpts{Catalog: strp("")}, ""},
		{&flightsql.GetTablesOpts{Catalog: strp("globex")}, ""},
		{&flightsql.GetTablesOpts{TableTypes: []string{"VIEW"}}, ""},
		{&flightsql.GetTablesOpts{TableTypes: []string{"VIEW", "TABLE"}, TableNameFilterPattern: strp("returns")}, "sales.returns"},
	}
	for _, tt := range tests {
		if got := names(tt.opts); got != tt.want {
			t.Errorf("GetTables(%v) = %q, want %q", tt.opts, got, tt.want)
		}
	}
	if _, err := e.tables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: strp(`bad\`)}); codeOf(err) != codes.InvalidArgument {
		t.Fatalf("invalid pattern: %v, want INVALID_ARGUMENT", err)
	}
}

func TestOtherCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{ServerName: "lake-test", Version: "1.2.3"})
	e.register("acme", "sales", "orders", wide(1))
	e.register("acme", "hr", "people", wide(2))
	e.register("globex", "secret_ns", "secret", wide(3))
	e.publish()
	ctx := as(t, "acme")

	schema, recs, err := e.fetch(ctx)(e.client.GetCatalogs(ctx))
	if err != nil || !schema.Equal(schema_ref.Catalogs) || len(recs) != 1 || recs[0].NumRows() != 1 || recs[0].Column(0).(*array.String).Value(0) != "acme" {
		t.Fatalf("GetCatalogs: %v %v", recs, err)
	}

	schema, recs, err = e.fetch(ctx)(e.client.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{}))
	if err != nil || !schema.Equal(schema_ref.DBSchemas) {
		t.Fatalf("GetDbSchemas: %v %v", schema, err)
	}
	var ns []string
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			ns = append(ns, r.Column(0).(*array.String).Value(i)+"."+r.Column(1).(*array.String).Value(i))
		}
	}
	if strings.Join(ns, " ") != "acme.hr acme.sales" {
		t.Fatalf("GetDbSchemas = %q", ns)
	}
	_, recs, err = e.fetch(ctx)(e.client.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{DbSchemaFilterPattern: strp("s%")}))
	if err != nil || recs[0].NumRows() != 1 {
		t.Fatalf("GetDbSchemas s%%: %v", err)
	}

	schema, recs, err = e.fetch(ctx)(e.client.GetTableTypes(ctx))
	if err != nil || !schema.Equal(schema_ref.TableTypes) || recs[0].NumRows() != 1 || recs[0].Column(0).(*array.String).Value(0) != "TABLE" {
		t.Fatalf("GetTableTypes: %v %v", recs, err)
	}

	schema, recs, err = e.fetch(ctx)(e.client.GetSqlInfo(ctx, []flightsql.SqlInfo{
		flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerReadOnly, wire.SqlInfoSnapshotGeneration, wire.SqlInfoTenantTables, 99999,
	}))
	if err != nil || !schema.Equal(schema_ref.SqlInfo) {
		t.Fatalf("GetSqlInfo: %v %v", schema, err)
	}
	info := map[uint32]any{}
	for _, r := range recs {
		ids, vals := r.Column(0).(*array.Uint32), r.Column(1).(*array.DenseUnion)
		for i := 0; i < int(r.NumRows()); i++ {
			child, off := vals.Field(vals.ChildID(i)), int(vals.ValueOffset(i))
			switch c := child.(type) {
			case *array.String:
				info[ids.Value(i)] = c.Value(off)
			case *array.Boolean:
				info[ids.Value(i)] = c.Value(off)
			case *array.Int64:
				info[ids.Value(i)] = c.Value(off)
			}
		}
	}
	want := map[uint32]any{0: "lake-test", 3: true, wire.SqlInfoSnapshotGeneration: int64(1), wire.SqlInfoTenantTables: int64(2)}
	if fmt.Sprint(info) != fmt.Sprint(want) {
		t.Fatalf("GetSqlInfo = %v, want %v", info, want)
	}

	if _, err := e.client.ExecuteUpdate(ctx, "DELETE FROM information_schema.tables"); codeOf(err) != codes.Unimplemented {
		t.Fatalf("ExecuteUpdate: %v, want UNIMPLEMENTED", err)
	}
}

// Large responses are split into batches far below gRPC's 4 MiB limit.
func TestBatchesStaySmall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{BatchBytes: 64 << 10})
	for i := range 300 {
		e.register("acme", "ns", fmt.Sprintf("t%03d", i), wide(i%40+60))
	}
	e.publish()
	ctx := as(t, "acme")
	info, err := e.client.GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	_, recs, err := e.doGet(ctx, info, err)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range recs {
		size := len(r.Column(4).(*array.Binary).ValueBytes())
		if size > 64<<10+8192 {
			t.Fatalf("a batch carries %d schema bytes, over the 64 KiB budget plus one schema", size)
		}
		total += int(r.NumRows())
	}
	if len(recs) < 2 || total != 300 {
		t.Fatalf("%d batches with %d rows, want several batches with 300 rows", len(recs), total)
	}
}

// A blob of a format version this build does not read (what a discovery of
// the previous release meets when refresh is deployed first) is rejected,
// and the last good snapshot keeps serving.
func TestUnknownBlobVersionKeepsServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	cur, _ := e.blobs.Get(context.Background(), "")
	next := append([]byte{}, cur.Data...)
	next[8], next[9] = snapshot.Version+1, 0
	if _, err := e.blobs.Put(context.Background(), next, blobstore.Condition{IfMatch: cur.ETag}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.src.Poll(context.Background()); !errors.Is(err, snapshot.ErrVersion) {
		t.Fatalf("poll of a version %d blob: %v, want ErrVersion", snapshot.Version+1, err)
	}
	if st := e.src.Status(); st.Generation != 1 || st.LastError == "" {
		t.Fatalf("status after a blob of an unknown version = %+v", st)
	}
	if rows, err := e.tables(as(t, "acme"), &flightsql.GetTablesOpts{}); err != nil || len(rows) != 1 {
		t.Fatalf("serving after a blob of an unknown version: %v %v", rows, err)
	}
}

// A blob that fails its checks is rejected and the previous view keeps
// serving; so is a blob of an older generation.
func TestRejectedBlobKeepsServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	cur, _ := e.blobs.Get(context.Background(), "")
	bad := append([]byte{}, cur.Data...)
	bad[len(bad)-1] ^= 0xff
	if _, err := e.blobs.Put(context.Background(), bad, blobstore.Condition{IfMatch: cur.ETag}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.src.Poll(context.Background()); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("poll of a corrupt blob: %v, want ErrCorrupt", err)
	}
	if st := e.src.Status(); st.Generation != 1 || st.LastError == "" {
		t.Fatalf("status after a rejected blob = %+v", st)
	}
	if rows, err := e.tables(as(t, "acme"), &flightsql.GetTablesOpts{}); err != nil || len(rows) != 1 {
		t.Fatalf("serving after a rejected blob: %v %v", rows, err)
	}
}

// Requests are counted with the gRPC code they were answered with: one
// before any snapshot is UNAVAILABLE, one without a token UNAUTHENTICATED,
// and a served one OK (the deferred observe once recorded every request as
// OK). Every action is counted and timed under its type, successes and
// errors alike (successful lake.search and lake.describe calls once went
// uncounted), and an action type lake does not know under "other".
func TestMetricsCountTheRealCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	// count sums lake_discovery_requests_total over the series whose
	// command and code are the given ones ("" matches any).
	count := func(command, code string) float64 {
		t.Helper()
		families, err := e.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, f := range families {
			if f.GetName() != "lake_discovery_requests_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if (command == "" || labels["command"] == command) && (code == "" || labels["code"] == code) {
					total += m.GetCounter().GetValue()
				}
			}
		}
		return total
	}
	// timed is the number of durations lake_discovery_request_seconds
	// holds for command.
	timed := func(command string) uint64 {
		t.Helper()
		families, err := e.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "lake_discovery_request_seconds" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "command" && l.GetValue() == command {
						return m.GetHistogram().GetSampleCount()
					}
				}
			}
		}
		return 0
	}
	// action runs a DoAction to its end and returns its error.
	action := func(ctx context.Context, typ, body string) error {
		t.Helper()
		stream, err := e.client.Client.DoAction(ctx, &flight.Action{Type: typ, Body: []byte(body)})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}

	if _, err := e.client.GetTables(as(t, "acme"), &flightsql.GetTablesOpts{}); codeOf(err) != codes.Unavailable {
		t.Fatalf("GetTables before a snapshot: %v, want UNAVAILABLE", err)
	}
	if got := count("", "Unavailable"); got != 1 {
		t.Fatalf("requests counted Unavailable = %v, want 1", got)
	}
	if _, err := e.client.GetTables(context.Background(), &flightsql.GetTablesOpts{}); codeOf(err) != codes.Unauthenticated {
		t.Fatalf("GetTables without a token: %v, want UNAUTHENTICATED", err)
	}
	if got := count("", "Unauthenticated"); got != 1 {
		t.Fatalf("requests counted Unauthenticated = %v, want 1", got)
	}
	if got := count("", "OK"); got != 0 {
		t.Fatalf("requests counted OK = %v before any succeeded, want 0", got)
	}
	if err := action(as(t, "acme"), wire.SearchActionType, `{}`); codeOf(err) != codes.Unavailable {
		t.Fatalf("search before a snapshot: %v, want UNAVAILABLE", err)
	}
	if err := action(context.Background(), wire.DescribeActionType, `{"namespace":"sales","table":"orders"}`); codeOf(err) != codes.Unauthenticated {
		t.Fatalf("describe without a token: %v, want UNAUTHENTICATED", err)
	}
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	if _, _, err := e.fetch(as(t, "acme"))(e.client.GetTables(as(t, "acme"), &flightsql.GetTablesOpts{})); err != nil {
		t.Fatal(err)
	}
	if got := count("", "OK"); got < 1 {
		t.Fatalf("requests counted OK = %v after a served request, want ≥ 1", got)
	}

	acme := as(t, "acme")
	for _, a := range []struct{ typ, body string }{
		{wire.SearchActionType, `{"table_pattern":"ord%"}`},
		{wire.DescribeActionType, `{"namespace":"sales","table":"orders"}`},
		{wire.ListTablesActionType, `{"offset":0,"limit":10}`},
		{wire.ListNamespacesActionType, `{"offset":0,"limit":10}`},
	} {
		if err := action(acme, a.typ, a.body); err != nil {
			t.Fatalf("%s: %v", a.typ, err)
		}
	}
	if err := action(acme, wire.DescribeActionType, `{"namespace":"sales","table":"nothing"}`); codeOf(err) != codes.NotFound {
		t.Fatalf("describe of a missing table: %v, want NOT_FOUND", err)
	}
	if err := action(acme, wire.ListTablesActionType, `{"limit":0}`); codeOf(err) != codes.InvalidArgument {
		t.Fatalf("list_tables with limit 0: %v, want INVALID_ARGUMENT", err)
	}
	// Flight SQL's own actions keep their names.
	stmt, err := e.client.Prepare(acme, "SELECT table_name FROM information_schema.tables")
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	if err := stmt.Close(acme); err != nil {
		t.Fatalf("close prepared statement: %v", err)
	}
	for _, typ := range []string{"lake.nothing", "made-up-" + strings.Repeat("x", 100)} {
		if err := action(acme, typ, ""); err == nil {
			t.Fatalf("action %q answered, want an error", typ)
		}
	}
	tests := []struct {
		command, code string
		want          float64
	}{
		{wire.SearchActionType, "Unavailable", 1},
		{wire.SearchActionType, "OK", 1},
		{wire.DescribeActionType, "Unauthenticated", 1},
		{wire.DescribeActionType, "OK", 1},
		{wire.DescribeActionType, "NotFound", 1},
		{wire.ListTablesActionType, "OK", 1},
		{wire.ListTablesActionType, "InvalidArgument", 1},
		{wire.ListNamespacesActionType, "OK", 1},
		{"other", "", 2},
		{"CreatePreparedStatement", "OK", 1},
		{"ClosePreparedStatement", "OK", 1},
		{"lake.nothing", "", 0},
		{"DoAction", "", 0},
	}
	for _, tt := range tests {
		if got := count(tt.command, tt.code); got != tt.want {
			t.Errorf("requests{command=%q, code=%q} = %v, want %v", tt.command, tt.code, got, tt.want)
		}
	}
	for _, tt := range []struct {
		command string
		want    uint64
	}{
		{wire.SearchActionType, 2}, {wire.DescribeActionType, 3}, {wire.ListTablesActionType, 2},
		{wire.ListNamespacesActionType, 1}, {"other", 2},
	} {
		if got := timed(tt.command); got != tt.want {
			t.Errorf("request_seconds{command=%q} holds %d durations, want %d", tt.command, got, tt.want)
		}
	}
}

// /status speaks snake_case like the rest of lake's JSON.
func TestStatusJSONIsSnakeCase(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	b, err := json.Marshal(e.src.Status())
	if err != nil {
		t.Fatal(err)
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, child := range m {
			if k != strings.ToLower(k) || strings.ContainsAny(k, " -") {
				t.Errorf("/status key %s%s is not snake_case", prefix, k)
			}
			walk(prefix+k+".", child)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"generation", "loaded", "last_poll", "metadata_reads", "last_successful_poll", "max_staleness_seconds", "stale"} {
		if _, ok := doc[want]; !ok {
			t.Errorf("/status lacks %q: %s", want, b)
		}
	}
	walk("", doc)
}
