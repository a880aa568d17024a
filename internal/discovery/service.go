// Package discovery is lake's Arrow Flight SQL server: tenant-filtered
// GetCatalogs, GetDbSchemas, GetTables (with exact schemas), GetTableTypes
// and GetSqlInfo, answered from the snapshot blob in memory with no
// metadata I/O on the request path.
//
// It is the server alone: the program that runs it (flags, the token keys,
// TLS, signals, the listeners and the catalog browser's) is
// functions/discovery/program, and this package imports none of its
// clients.
//
// # Lazy tenants
//
// Loading a blob verifies it and reads only its tenant index; the compressed
// tenant segments stay resident. A tenant is prepared on its first request:
// its segment is decompressed and decoded (memory only), indexed, and its
// whole-tenant answers (GetTables with and without schemas, GetDbSchemas,
// GetCatalogs) are encoded once into FlightData messages that DoGet then
// sends as they are. Prepared tenants live in a cache bounded by bytes
// (Options.CacheBytes), least recently used out; an evicted tenant is
// prepared again from its compressed segment when next asked for. Each
// distinct schema IPC message is stored once per prepared tenant.
//
// The cache is one for everything derived from a segment (cache.go): the
// prepared tenants, the SQL engines and their statements' kept results
// (sql.go), and the kept answers of filtered catalog requests share its
// one budget and its one least-recently-used order, each kind an entry
// keyed by its kind, tenant and segment address.
//
// The default budget (DefaultCacheBytes) is 40% of the smaller of the
// container's memory limit (cgroup v2 memory.max or v1
// memory.limit_in_bytes) and GOMEMLIMIT, at least 16 MiB, or 256 MiB when
// neither is set.
//
// # Reloads
//
// Everything cached of a tenant is keyed by its name and its segment's
// content hash. When a new blob arrives, tenants whose hash is unchanged
// keep their prepared state, engines and encoded answers; changed tenants
// are prepared again on their next request, and the cache drops every kind
// of entry that no longer matches.
//
// # Freshness
//
// GetSqlInfo 10000 and 10001 report the caller's own tenant's generation
// and change time, so no tenant can time another tenant's writes.
//
// # SQL
//
// Statements and prepared statements run read-only SQL over the caller's
// tenant alone (information_schema, SHOW, DESCRIBE, validation queries):
// one in-memory SQLite engine per tenant and generation (package
// sqlcatalog), built from the prepared tenant, kept in a byte-bounded
// cache; see sql.go. A Basic-auth Handshake (username = tenant, password =
// a token) answers the bearer token; see handshake.go.
//
// # Search
//
// The Flight action wire.SearchActionType ("lake.search") finds the caller's
// tables by table-name and column LIKE patterns (columns at any depth, by
// name or dotted path), from the same prepared tenant state; see search.go.
// wire.DescribeActionType ("lake.describe") answers one table from it too: the
// prepared state holds describe's columns (location, version, times,
// description, properties), so a describe is a binary search, not a
// segment decode.
// wire.ListTablesActionType and wire.ListNamespacesActionType ("lake.list_tables",
// "lake.list_namespaces") answer one page of the tenant's tables (with
// column counts and descriptions) or namespaces, reading the page's rows
// alone: GetTables has no offset or limit; see list.go.
//
// # Work per request
//
// Every Flight call runs under a server-side deadline
// (Options.RequestTimeout); LIKE patterns are bounded and matched in linear
// time (package like); search checks its context at every field and bounds
// each match (wire.MaxMatchBytes) and the whole answer (wire.MaxSearchBytes).
package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/preview"
	"github.com/lake-catalog/lake/internal/sqlcatalog"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/like"
)

// DefaultBatchBytes is the most bytes one record batch carries, far below
// gRPC's default 4 MiB receive limit.
const DefaultBatchBytes = 1 << 20

// Options configures a Service.
type Options struct {
	// ServerName and Version answer GetSqlInfo. Defaults "lake" and "dev".
	ServerName, Version string
	// BatchBytes caps the bytes (names, schemas, offsets) per record batch.
	// Default DefaultBatchBytes.
	BatchBytes int
	// CacheBytes bounds everything kept in memory that is derived from
	// the tenants' segments, all kinds together (cache.go): prepared
	// tenants, SQL engines, statements' kept results and filtered
	// answers. 0 means DefaultCacheBytes().
	CacheBytes int64
	// Metrics records requests and the cache; nil records nothing.
	Metrics *Metrics
	// Log reports segments that fail to prepare. Default slog.Default().
	Log *slog.Logger
	// RequestTimeout is the server-side deadline of every Flight call
	// (NewGRPCServer applies it; a client's shorter deadline still wins).
	// 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// SQLLimits bound each SQL statement (zero fields: sqlcatalog's
	// defaults).
	SQLLimits sqlcatalog.Limits
	// SQLInFlightBytes bounds the memory of SQL results in flight, all
	// tenants together: results being built and results streaming to
	// their clients (sqlcatalog.Budget). A statement the budget cannot
	// hold now is refused at once (RESOURCE_EXHAUSTED). 0 means half of
	// CacheBytes, and at least twice the result cap (SQLLimits.MaxBytes).
	// It is apart from CacheBytes: results in flight are not
	// prepared state, and a reader that does not read keeps its result.
	SQLInFlightBytes int64
	// SQLStreamsPerTenant is how many SQL statements one tenant may have
	// in progress at once — running, or their results streaming until the
	// stream ends; one more is refused at once (RESOURCE_EXHAUSTED). 0
	// means DefaultSQLStreamsPerTenant.
	SQLStreamsPerTenant int
	// Allocator holds the Arrow memory of every request (the batches a
	// DoGet, an action or a statement builds, released when it is sent)
	// and the batches a tenant's preparation encodes. Default
	// memory.DefaultAllocator. The prepared tenants themselves (decoded
	// segments, encoded answers) are Go memory the garbage collector owns:
	// the cache evicts them without waiting for requests still reading
	// them. Tests pass a memory.CheckedAllocator and assert that nothing is
	// left after each request.
	Allocator memory.Allocator
	// Door answers the Flight action lake.credentials (credentials.go):
	// access to one of the caller's tables' files. nil answers
	// UNIMPLEMENTED, saying vending is not configured.
	Door *vending.Door
	// Rows configure statements that read tables' rows through Door
	// (rows.go); without a Door such statements are refused.
	Rows RowsOptions
}

// DefaultRequestTimeout is the server-side deadline of a Flight call: far
// above what any answer from memory takes (milliseconds), short enough
// that no request can hold a core for long.
const DefaultRequestTimeout = 30 * time.Second

// Service implements the Flight SQL commands lake supports. Every other
// command answers UNIMPLEMENTED (from the embedded BaseServer).
type Service struct {
	flightsql.BaseServer
	opts Options
	mem  memory.Allocator
	view atomic.Pointer[View]
	// cache keeps everything derived from segments: prepared tenants,
	// SQL engines and results, filtered answers.
	cache *cache
	// schemaBytes caches the serialized result schemas FlightInfo carries.
	schemaBytes map[*arrow.Schema][]byte
	// schemaMessages holds the first FlightData message of a DoGet answer
	// (its schema) of the catalog commands' result schemas, marshaled.
	schemaMessages map[*arrow.Schema]encodedMessage
	// sqlInfo holds the static GetSqlInfo answers.
	sqlInfo *sqlInfoTable
	// checker and sqlLimits serve SQL (sql.go).
	checker   *sqlcatalog.Checker
	sqlLimits sqlcatalog.Limits
	// sqlBudget bounds SQL results in flight; sqlStreams each tenant's
	// streams.
	sqlBudget  *sqlcatalog.Budget
	sqlStreams *streamLimiter
	// rowsGate bounds reads of tables' rows in progress per tenant;
	// rowsTurns holds a token per read running (rows.go).
	rowsGate  *preview.Gate
	rowsTurns chan struct{}
}

// NewService returns a Service with no view: requests get UNAVAILABLE until
// a Source loads a blob.
func NewService(opts Options) *Service {
	if opts.ServerName == "" {
		opts.ServerName = "lake"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultBatchBytes
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes()
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	sqlOptions(&opts)
	checker, err := sqlcatalog.NewChecker()
	if err != nil {
		// An in-memory SQLite with a fixed schema: a programming error.
		panic(err)
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	s := &Service{
		opts:        opts,
		mem:         opts.Allocator,
		cache:       newCache(opts.CacheBytes),
		schemaBytes: map[*arrow.Schema][]byte{},
		checker:     checker,
		sqlLimits:   opts.SQLLimits,
		sqlBudget:   sqlcatalog.NewBudget(opts.SQLInFlightBytes),
		sqlStreams:  newStreamLimiter(opts.SQLStreamsPerTenant),
		rowsGate:    opts.Rows.Gate,
	}
	if s.opts.Rows.Limits.MaxRows <= 0 {
		// Rows read, not rows out: an aggregate reads more than it answers.
		s.opts.Rows.Limits.MaxRows = int64(max(opts.SQLLimits.MaxRows, sqlcatalog.DefaultMaxRows))
	}
	if s.opts.Rows.Reads <= 0 {
		s.opts.Rows.Reads = DefaultRowsReads()
	}
	s.rowsTurns = make(chan struct{}, s.opts.Rows.Reads)
	if s.rowsGate == nil {
		s.rowsGate = preview.NewGate(0, 0)
	}
	s.Alloc = s.mem
	for _, sc := range []*arrow.Schema{schema_ref.Catalogs, schema_ref.DBSchemas, schema_ref.Tables,
		schema_ref.TablesWithIncludedSchema, schema_ref.TableTypes, schema_ref.SqlInfo, schema_ref.PrimaryKeys,
		schema_ref.ImportedKeys, schema_ref.XdbcTypeInfo} {
		s.schemaBytes[sc] = flight.SerializeSchema(sc, s.mem)
	}
	s.schemaMessages = map[*arrow.Schema]encodedMessage{}
	for _, sc := range []*arrow.Schema{schema_ref.Catalogs, schema_ref.DBSchemas, schema_ref.Tables, schema_ref.TablesWithIncludedSchema} {
		msgs, err := encodeMessages(sc, nil, s.mem)
		if err != nil || len(msgs) != 1 {
			// Fixed schemas without dictionaries: a programming error.
			panic(fmt.Sprintf("discovery: schema message of %v: %d messages, %v", sc, len(msgs), err))
		}
		s.schemaMessages[sc] = msgs[0]
	}
	// The static GetSqlInfo table lives as long as the Service: Go memory.
	info, err := newSqlInfoTable(memory.DefaultAllocator, opts.ServerName, opts.Version, sqlcatalog.EffectiveTimeout(opts.SQLLimits))
	if err != nil {
		// The table is static: this is a programming error, caught by tests.
		panic(err)
	}
	s.sqlInfo = info
	if opts.Metrics != nil {
		opts.Metrics.cache.Store(s.cache)
		opts.Metrics.sql.Store(s)
	}
	return s
}

// setView swaps in a new view and drops what the cache holds of tenants
// the view does not hold with the same content, every kind.
func (s *Service) setView(v *View) {
	s.view.Store(v)
	s.cache.retain(func(tenant string, addr [32]byte) bool {
		info, ok := v.index.tenant(tenant)
		if !ok {
			// A tenant the blob does not hold has an engine and results
			// too (of no tables), keyed by the zero address.
			return addr == [32]byte{}
		}
		return info.Address == addr
	})
}

// View returns the serving view, or nil.
func (s *Service) View() *View { return s.view.Load() }

// CacheStats reports the cache of everything derived from segments.
func (s *Service) CacheStats() CacheStats { return s.cache.stats() }

type tenantKey struct{}

// WithTenant returns ctx carrying the authenticated tenant. Only the auth
// interceptor calls it.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the authenticated tenant in ctx.
func TenantFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok && t != ""
}

var (
	errUnauthenticated = status.Error(codes.Unauthenticated, "unauthenticated")
	errNotLoaded       = status.Error(codes.Unavailable, "the catalog snapshot is not loaded yet; retry")
	errNoSchema        = status.Error(codes.FailedPrecondition,
		"a table this request would return has no stored schema; list with include_schema=false, or backfill its schema")
)

// begin resolves the caller's tenant and the serving view: UNAVAILABLE
// before the first view, and for a degraded tenant the view cannot serve
// (degraded.go).
func (s *Service) begin(ctx context.Context) (string, *View, error) {
	tenant, ok := TenantFrom(ctx)
	if !ok {
		return "", nil, errUnauthenticated
	}
	v := s.view.Load()
	if v == nil {
		return "", nil, errNotLoaded
	}
	if err := v.unavailable(tenant); err != nil {
		return "", nil, err
	}
	return tenant, v, nil
}

// tenantState returns the tenant's prepared state, preparing it from its
// compressed segment on a cache miss (memory only), or emptyTenant when
// the tenant has no tables. It never returns nil: on an error, the state is
// emptyTenant too.
func (s *Service) tenantState(ctx context.Context, v *View, tenant string) (*tenantState, error) {
	ts, err := s.preparedTenant(ctx, v, tenant)
	if err != nil || ts == nil || ts.n == 0 {
		return emptyTenant, err
	}
	return ts, nil
}

// emptyTenant is the state of a tenant without tables: no rows, no
// namespaces, no pre-encoded answers. Shared and never modified.
var emptyTenant = &tenantState{}

// preparedTenant is tenantState, also for a tenant whose segment holds
// tombstones and no tables (nil when the blob holds neither).
func (s *Service) preparedTenant(ctx context.Context, v *View, tenant string) (*tenantState, error) {
	info, ok := v.index.tenant(tenant)
	if !ok {
		return nil, nil
	}
	h, err := s.cache.get(ctx, cacheKey{kind: kindTenant, tenant: tenant, addr: info.Address}, func() (any, int64, error) {
		seg, err := v.index.segment(tenant)
		if err != nil {
			return nil, 0, err
		}
		ts, err := prepareTenant(seg, s.opts.BatchBytes, s.mem)
		if err != nil {
			return nil, 0, err
		}
		if ts.settingsErr != nil {
			// Once per preparation, not per request: none apply.
			s.opts.Log.WarnContext(ctx, "tenant settings in the snapshot do not decode; no prefix is allowed", slog.String("tenant", tenant),
				slog.Uint64("generation", v.Generation), slog.String("error", ts.settingsErr.Error()))
		}
		return ts, ts.bytes, nil
	})
	switch {
	case err == nil:
		// Go memory: valid after the release, for as long as the request
		// holds it.
		ts := h.value().(*tenantState)
		h.release()
		return ts, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, status.FromContextError(err).Err()
	default:
		// A segment that passed the blob's checks but does not decode: the
		// tenant cannot be served from this blob. Other tenants can.
		s.opts.Log.ErrorContext(ctx, "tenant segment failed to prepare", slog.Uint64("generation", v.Generation), slog.String("error", err.Error()))
		return nil, status.Error(codes.Internal, "this catalog's snapshot segment is unreadable; a newer snapshot will replace it")
	}
}

// infoFor checks the caller and the snapshot, then answers the FlightInfo
// of a command whose result schema is schema.
func (s *Service) infoFor(ctx context.Context, desc *flight.FlightDescriptor, schema *arrow.Schema) (*flight.FlightInfo, error) {
	if _, _, err := s.begin(ctx); err != nil {
		return nil, err
	}
	return s.info(desc, schema), nil
}

func (s *Service) info(desc *flight.FlightDescriptor, schema *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		FlightDescriptor: desc,
		Schema:           s.schemaBytes[schema],
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// stream hands recs to the Flight SQL server through
// flight.StreamChunksFromReader, which releases them as they are written.
func stream(ctx context.Context, schema *arrow.Schema, recs []arrow.RecordBatch) (<-chan flight.StreamChunk, error) {
	return streamThen(ctx, schema, recs, nil)
}

// streamThen streams recs, as stream does, then calls end (when not nil)
// once the stream is over: every batch handed on, or ctx done (the call
// ended: its reader gone, cancelled or past its deadline). recs are
// released either way. On an error end is not called.
func streamThen(ctx context.Context, schema *arrow.Schema, recs []arrow.RecordBatch, end func()) (<-chan flight.StreamChunk, error) {
	rdr, err := array.NewRecordReader(schema, recs)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "stream: %v", err)
	}
	ch := make(chan flight.StreamChunk, 1)
	go func() {
		if end != nil {
			defer end()
		}
		flight.StreamChunksFromReader(ctx, rdr, ch)
	}()
	return ch, nil
}

// catalogMatches applies a request's catalog filter: absent matches the
// tenant; a value must be the tenant's own name. Another tenant's name, or
// the empty string ("no catalog"), matches nothing.
func catalogMatches(filter *string, tenant string) bool {
	return filter == nil || *filter == tenant
}

func compile(pattern *string, what string) (*like.Pattern, error) {
	if pattern == nil {
		return nil, nil
	}
	p, err := like.Compile(*pattern)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", what, err)
	}
	return p, nil
}

// GetFlightInfoCatalogs implements flightsql.Server.
func (s *Service) GetFlightInfoCatalogs(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(ctx, desc, schema_ref.Catalogs)
}

// catalogsAnswer is the GetCatalogs answer: the caller's tenant, the one
// catalog it can see (pre-encoded once the tenant is prepared).
func (s *Service) catalogsAnswer(ctx context.Context) (answer, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return answer{}, err
	}
	a := answer{schema: schema_ref.Catalogs}
	ts, err := s.tenantState(ctx, v, tenant)
	switch {
	case err != nil:
		return a, err
	case ts.catalogs != nil:
		a.msgs, a.prepared = ts.catalogs, true
	default:
		a.recs = []arrow.RecordBatch{catalogsRecord(s.mem, tenant)}
	}
	return a, nil
}

// GetFlightInfoSchemas implements flightsql.Server.
func (s *Service) GetFlightInfoSchemas(ctx context.Context, cmd flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	if !s.kept(v, tenant, desc.Cmd) {
		if _, err := compile(cmd.GetDBSchemaFilterPattern(), "db_schema_filter_pattern"); err != nil {
			return nil, err
		}
	}
	return s.info(desc, schema_ref.DBSchemas), nil
}

// dbSchemasAnswer is the GetDbSchemas answer: the tenant's namespaces
// matching the filter, pre-encoded when the filter keeps them all.
func (s *Service) dbSchemasAnswer(ctx context.Context, cmd *pb.CommandGetDbSchemas, ticket []byte) (answer, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return answer{}, err
	}
	if msgs := s.keptAnswer(v, tenant, ticket); msgs != nil {
		return answer{schema: schema_ref.DBSchemas, msgs: msgs}, nil
	}
	p, err := compile(cmd.DbSchemaFilterPattern, "db_schema_filter_pattern")
	if err != nil {
		return answer{}, err
	}
	a := answer{schema: schema_ref.DBSchemas}
	ts := emptyTenant
	if catalogMatches(cmd.Catalog, tenant) {
		if ts, err = s.tenantState(ctx, v, tenant); err != nil {
			return a, err
		}
	}
	if ts.dbSchemas != nil && (p == nil || p.All()) {
		a.msgs, a.prepared = ts.dbSchemas, true
		return a, nil
	}
	a.msgs, err = s.filteredAnswer(ctx, v, tenant, ticket, a.schema, ts.dbSchemaRecords(s.mem, p, s.opts.BatchBytes))
	return a, err
}

// answerKeyOf is the cache's key of the answer to the request ticket to
// tenant as v holds it (the tenant's name and segment address, and the
// ticket's bytes: the same bytes are the same question); ok is false when
// v holds no such tenant: nothing is kept for it.
func answerKeyOf(v *View, tenant string, ticket []byte) (cacheKey, bool) {
	return answerKeyFor(v, tenant, string(ticket))
}

// answerKeyFor is answerKeyOf for a sub-key already a string.
func answerKeyFor(v *View, tenant, sub string) (cacheKey, bool) {
	info, ok := v.index.tenant(tenant)
	return cacheKey{kind: kindAnswer, tenant: tenant, addr: info.Address, sub: sub}, ok
}

// keptAnswer is the answer kept for the same request (the ticket's bytes)
// to the same state of the tenant, or nil. A request answered once is
// valid and has the same answer again, so a kept answer is sent before the
// request's patterns are compiled or any row is selected.
func (s *Service) keptAnswer(v *View, tenant string, ticket []byte) [][]byte {
	key, ok := answerKeyOf(v, tenant, ticket)
	if !ok {
		return nil
	}
	h, ok := s.cache.lookup(key)
	if !ok {
		return nil
	}
	// Go memory, never changed: valid after the release.
	msgs := h.value().([][]byte)
	h.release()
	return msgs
}

// kept reports whether an answer is kept for ticket (GetFlightInfo's check:
// the request was valid when it was answered, so it need not be checked
// again). It counts nothing and leaves the order of eviction as it is (a
// GetFlightInfo that will be followed by its DoGet).
func (s *Service) kept(v *View, tenant string, ticket []byte) bool {
	key, ok := answerKeyOf(v, tenant, ticket)
	return ok && s.cache.contains(key)
}

// filteredAnswer encodes records, the answer of a catalog request that
// keeps some of the tenant's rows, and keeps it for the same request to
// the same state of the tenant (keptAnswer finds it) when it takes at most
// an eighth of the cache's budget. A request whose answer is never kept (a
// whole tenant's, already encoded) counts neither a hit nor a miss.
func (s *Service) filteredAnswer(ctx context.Context, v *View, tenant string, ticket []byte, schema *arrow.Schema, records []arrow.RecordBatch) ([][]byte, error) {
	key, ok := answerKeyOf(v, tenant, ticket)
	s.cache.missed(kindAnswer)
	msgs, err := s.encodeAnswer(ctx, schema, records)
	if err == nil && ok {
		s.cache.add(key, msgs, answerSize(key, msgs))
	}
	return msgs, err
}

// answerSize is what a kept answer holds: its messages and its key.
func answerSize(key cacheKey, msgs [][]byte) int64 {
	size := int64(len(key.sub)+len(key.tenant)) + 128
	for _, m := range msgs {
		size += int64(len(m)) + 24
	}
	return size
}

func tablesSchema(includeSchema bool) *arrow.Schema {
	if includeSchema {
		return schema_ref.TablesWithIncludedSchema
	}
	return schema_ref.Tables
}

// tablesQuery is a GetTables request with its patterns compiled and its
// type filter built, once per call.
type tablesQuery struct {
	catalog          *string
	namespace, table *like.Pattern
	types            typeFilter
	includeSchema    bool
}

func newTablesQuery(catalog, namespace, table *string, types []string, includeSchema bool) (tablesQuery, error) {
	q := tablesQuery{catalog: catalog, includeSchema: includeSchema}
	var err error
	if q.namespace, err = compile(namespace, "db_schema_filter_pattern"); err != nil {
		return q, err
	}
	if q.table, err = compile(table, "table_name_filter_pattern"); err != nil {
		return q, err
	}
	q.types, err = newTypeFilter(types)
	return q, err
}

// whole reports whether q keeps every table of ts (so the pre-encoded
// whole-tenant answer is the answer).
func (q tablesQuery) whole(ts *tenantState) bool {
	all := func(p *like.Pattern) bool { return p == nil || p.All() }
	return all(q.namespace) && all(q.table) && ts.coversTypes(q.types)
}

// rows resolves q to row ranges of ts. With include_schema, any selected
// table without a schema fails the request with a generic
// FailedPrecondition that names no table.
func (q tablesQuery) rows(ts *tenantState) ([]rowRange, error) {
	rows := ts.selectTables(ts.selectNamespaces(q.namespace), q.table, q.types)
	if q.includeSchema && ts.unavailable > 0 {
		for _, r := range rows {
			for i := r.lo; i < r.hi; i++ {
				if ts.schemaLen(i) < 0 {
					return nil, errNoSchema
				}
			}
		}
	}
	return rows, nil
}

// GetFlightInfoTables implements flightsql.Server. It checks the request
// (the caller, the snapshot, the patterns and types) without selecting
// tables: only a request with schemas over a tenant that has tables without
// one is resolved here, so that it fails before its DoGet.
func (s *Service) GetFlightInfoTables(ctx context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	if s.kept(v, tenant, desc.Cmd) {
		return s.info(desc, tablesSchema(cmd.GetIncludeSchema())), nil
	}
	q, err := newTablesQuery(cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern(), cmd.GetTableNameFilterPattern(), cmd.GetTableTypes(), cmd.GetIncludeSchema())
	if err != nil {
		return nil, err
	}
	if info, ok := v.index.tenant(tenant); ok && q.includeSchema && info.SchemaUnavailable > 0 && catalogMatches(q.catalog, tenant) {
		ts, err := s.tenantState(ctx, v, tenant)
		if err != nil {
			return nil, err
		}
		if _, err := q.rows(ts); err != nil {
			return nil, err
		}
	}
	return s.info(desc, tablesSchema(q.includeSchema)), nil
}

// tablesAnswer is the GetTables answer: the pre-encoded whole-tenant
// answer when the request keeps every table, else the selected rows in
// batches of at most Options.BatchBytes (runs of rows slice the segment's
// columns, scattered rows are gathered).
func (s *Service) tablesAnswer(ctx context.Context, cmd *pb.CommandGetTables, ticket []byte) (answer, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return answer{}, err
	}
	if msgs := s.keptAnswer(v, tenant, ticket); msgs != nil {
		return answer{schema: tablesSchema(cmd.IncludeSchema), msgs: msgs}, nil
	}
	q, err := newTablesQuery(cmd.Catalog, cmd.DbSchemaFilterPattern, cmd.TableNameFilterPattern, cmd.TableTypes, cmd.IncludeSchema)
	if err != nil {
		return answer{}, err
	}
	a := answer{schema: tablesSchema(q.includeSchema)}
	if !catalogMatches(q.catalog, tenant) {
		return a, nil
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil || ts.n == 0 {
		return a, err
	}
	if q.whole(ts) {
		if !q.includeSchema {
			a.msgs = ts.tables
		} else if a.msgs = ts.tablesWithSchema; a.msgs == nil {
			return a, errNoSchema
		}
		a.prepared = true
		return a, nil
	}
	rows, err := q.rows(ts)
	if err != nil {
		return a, err
	}
	a.msgs, err = s.filteredAnswer(ctx, v, tenant, ticket, a.schema, ts.records(s.mem, rows, q.includeSchema, s.opts.BatchBytes))
	return a, err
}

// GetFlightInfoTableTypes implements flightsql.Server.
func (s *Service) GetFlightInfoTableTypes(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(ctx, desc, schema_ref.TableTypes)
}

// DoGetTableTypes returns the table types of the caller's tables, and TABLE.
// These are the types lake reports; a GetTables table_types filter matches
// them exactly, and also takes the aliases of tableTypeAlias ("BASE
// TABLE" keeps TABLE tables), which this list does not repeat.
func (s *Service) DoGetTableTypes(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return nil, nil, err
	}
	types := mergeSorted([]string{"TABLE"}, ts.tableTypes)
	b := array.NewStringBuilder(s.mem)
	defer b.Release()
	b.AppendValues(types, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema_ref.TableTypes, []arrow.Array{col}, int64(len(types)))
	ch, err := stream(ctx, schema_ref.TableTypes, []arrow.RecordBatch{rec})
	return schema_ref.TableTypes, ch, err
}

func mergeSorted(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
