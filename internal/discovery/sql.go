package discovery

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/preview"
	"github.com/lake-catalog/lake/internal/sqlcatalog"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// SQL. Statements (CommandStatementQuery) and prepared statements
// (CreatePreparedStatement, then GetFlightInfo / DoGet, then
// ClosePreparedStatement; without parameters) run read-only SQL over the
// caller's tenant alone, through package sqlcatalog: information_schema
// (schemata, tables, columns), SHOW TABLES, SHOW COLUMNS FROM t,
// DESCRIBE t, and the validation queries tools send (SELECT 1, version(),
// current_catalog(), current_user()…).
//
// Each tenant's engine is built from its prepared state (memory only, no
// metadata I/O), once per tenant and segment hash, and kept in the cache
// (cache.go) beside the prepared tenants, within the one budget
// (Options.CacheBytes); an engine evicted while a statement runs on it is
// closed when the statement ends. Statements' results are kept there too
// (per tenant, segment hash and SQL text), so a statement runs once for
// its GetFlightInfo and DoGet, and a repeat is answered before any engine
// is looked for. A statement's handle (statement ticket or
// prepared-statement handle) is its SQL text: nothing is kept per
// statement, the tenant comes from the token on every call, and closing a
// prepared statement frees nothing.
//
// Answers: malformed SQL, unknown names and several statements are
// INVALID_ARGUMENT with the position; writes, DDL, PRAGMA, ATTACH and
// transactions PERMISSION_DENIED (lake is read-only); a query over a
// registered table's rows reads them through Options.Door (rows.go), or,
// without a Door, is UNIMPLEMENTED, naming the table's location; a result
// past the row or byte cap, or a read past one of its caps,
// RESOURCE_EXHAUSTED; a statement past its time budget DEADLINE_EXCEEDED.

// sqlKey is the cache's key of the tenant's state of kind k as v holds it
// (the zero address for a tenant v holds nothing of: an engine of no
// tables), sub within it.
func sqlKey(k kind, v *View, tenant, sub string) cacheKey {
	info, _ := v.index.tenant(tenant)
	return cacheKey{kind: k, tenant: tenant, addr: info.Address, sub: sub}
}

// sqlEngine returns a handle on the tenant's engine, built on a miss; the
// caller releases it once its statement has ended. A tenant has two: its
// catalog engine, which answers from memory alone, and (rows) the engine
// that reads registered tables' rows (rows.go), so that a statement
// reading files never holds the engine a catalog statement waits for.
func (s *Service) sqlEngine(ctx context.Context, v *View, tenant string, rows bool) (handle, error) {
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return handle{}, err
	}
	sub := ""
	if rows {
		sub = "rows"
	}
	h, err := s.cache.get(ctx, sqlKey(kindEngine, v, tenant, sub), func() (any, int64, error) {
		// An engine and the results it keeps are cached state, like a prepared
		// tenant: Go memory.
		eng, err := sqlcatalog.Build(context.WithoutCancel(ctx), s.sqlTenant(tenant, ts, rows), s.checker, s.sqlLimits, memory.DefaultAllocator)
		if err != nil {
			return nil, 0, err
		}
		return eng, eng.Bytes(), nil
	})
	switch {
	case err == nil:
		return h, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return handle{}, status.FromContextError(err).Err()
	default:
		s.opts.Log.ErrorContext(ctx, "sql engine failed to build", slog.String("error", err.Error()))
		return handle{}, status.Error(codes.Internal, "this catalog's SQL engine could not be built")
	}
}

// sqlTenant lays a prepared tenant (emptyTenant: no tables) out for the
// engine, decoding each distinct schema once; the engine reads the tables
// from the segment's Arrow columns (sqlTables).
func (s *Service) sqlTenant(tenant string, ts *tenantState, rows bool) sqlcatalog.Tenant {
	t := sqlcatalog.Tenant{Catalog: tenant, Version: s.opts.Version}
	if ts.n == 0 {
		return t
	}
	t.Schemas = make([]*arrow.Schema, ts.cols.Schemas.Len())
	for i := range t.Schemas {
		// catalog.DecodeSchema verifies the bytes before arrow-go reads
		// them, as search and describe do: a segment's schema is outside
		// input to this reader (a crafted, cyclic one would recurse
		// without end). A schema that fails reads as unavailable.
		if sc, err := catalog.DecodeSchema(ts.cols.Schemas.Value(i)); err == nil {
			t.Schemas[i] = sc
		}
	}
	t.Tables = sqlTables{cols: &ts.cols, n: ts.n}
	if rows {
		t.Data = &sqlData{s: s, tenant: tenant, ts: ts}
	}
	return t
}

// sqlTables are a prepared tenant's tables as an SQL engine reads them:
// its segment's columns, in the segment's (namespace, name) order.
type sqlTables struct {
	cols *segmentColumns
	n    int
}

var _ sqlcatalog.Tables = sqlTables{}

func (t sqlTables) Len() int               { return t.n }
func (t sqlTables) Namespace(i int) string { return t.cols.Namespace.Value(i) }
func (t sqlTables) Name(i int) string      { return t.cols.Name.Value(i) }
func (t sqlTables) Type(i int) string      { return t.cols.TableType.Value(i) }

// SchemaRef indexes the segment's distinct schemas (sqlTenant's
// Schemas), or is -1 where the schema is unavailable.
func (t sqlTables) SchemaRef(i int) int {
	if t.cols.SchemaRef.IsNull(i) {
		return -1
	}
	return int(t.cols.SchemaRef.Value(i))
}

// errTransactions answers a statement inside a transaction.
var errTransactions = status.Error(codes.PermissionDenied, "lake is read-only and has no transactions: send statements without a transaction id")

// runSQL runs one statement for the caller, or answers it from a kept
// result. r is charged for the result: while it is built, then (a kept
// one too) for the whole of it; the caller releases r when it no longer
// holds the result (after its stream, for a DoGet).
func (s *Service) runSQL(ctx context.Context, query string, r *sqlcatalog.Reservation) (res *sqlcatalog.Result, err error) {
	start := time.Now()
	outcome := "ok"
	defer func() { s.opts.Metrics.observeSQL(outcome, start) }()
	if len(query) > sqlcatalog.MaxSQLBytes {
		outcome = "invalid"
		return nil, status.Errorf(codes.InvalidArgument, "sql: statement of %d bytes, at most %d", len(query), sqlcatalog.MaxSQLBytes)
	}
	tenant, v, err := s.begin(ctx)
	if err != nil {
		outcome = "error"
		return nil, err
	}
	key := sqlKey(kindResult, v, tenant, query)
	// A result over tables' rows is kept for keptRowsFor only, under a key
	// of its own (rowsKey): the files change without the catalog. Only a
	// service that reads rows (a Door) has such results; the catalog's
	// kept results are answered without the key being built.
	var rowsKey cacheKey
	h, ok := s.cache.lookup(key)
	if !ok && s.opts.Door != nil {
		rowsKey = sqlKey(kindResult, v, tenant, query+"\x00rows@"+strconv.FormatInt(time.Now().UnixNano()/int64(keptRowsFor), 10))
		h, ok = s.cache.lookup(rowsKey)
	}
	if ok {
		// Go memory, immutable: valid after the release.
		res := h.value().(*sqlcatalog.Result)
		h.release()
		outcome = "kept"
		if err := r.Grow(res.Size()); err != nil {
			outcome = "busy"
			return nil, s.sqlStatus(ctx, v, tenant, err)
		}
		return res, nil
	}
	s.cache.missed(kindResult)
	h, err = s.sqlEngine(ctx, v, tenant, false)
	if err != nil {
		outcome = "error"
		return nil, err
	}
	defer h.release()
	res, err = h.value().(*sqlcatalog.Engine).Query(ctx, query, r)
	var se *sqlcatalog.Error
	if s.opts.Door != nil && errors.As(err, &se) && se.Kind == sqlcatalog.ErrTableData {
		// A statement over tables' rows: on the tenant's rows engine.
		rh, rerr := s.sqlEngine(ctx, v, tenant, true)
		if rerr != nil {
			outcome = "error"
			return nil, rerr
		}
		defer rh.release()
		leave, rerr := s.enterRows(ctx, tenant)
		if rerr != nil {
			outcome = "busy"
			return nil, rerr
		}
		defer leave()
		// At a lower CPU priority than the catalog's answers.
		lowPriority(func() { res, err = rh.value().(*sqlcatalog.Engine).Query(ctx, query, r) })
	}
	if err != nil {
		outcome = sqlOutcome(ctx, err)
		return nil, s.sqlStatus(ctx, v, tenant, err)
	}
	if res.Data {
		key = rowsKey
	}
	s.cache.add(key, res, res.Size()+int64(len(query))+64)
	return res, nil
}

// keptRowsFor is how long a result over tables' rows is kept: long enough
// for a statement's GetFlightInfo and DoGet, and a tool's repeat, to be
// answered by one read; short enough that new files show.
const keptRowsFor = 10 * time.Second

// sqlErrorKinds are the statement failures: each kind's metrics label and
// the gRPC code it is answered with (ErrTableData's message is sqlStatus's
// own).
var sqlErrorKinds = map[sqlcatalog.ErrorKind]struct {
	outcome string
	code    codes.Code
}{
	sqlcatalog.ErrInvalid:   {"invalid", codes.InvalidArgument},
	sqlcatalog.ErrReadOnly:  {"read_only", codes.PermissionDenied},
	sqlcatalog.ErrTableData: {"table_data", codes.Unimplemented},
	sqlcatalog.ErrLimit:     {"limit", codes.ResourceExhausted},
	sqlcatalog.ErrTimeout:   {"timeout", codes.DeadlineExceeded},
	sqlcatalog.ErrBusy:      {"busy", codes.ResourceExhausted},
	sqlcatalog.ErrData:      {"data", codes.FailedPrecondition},
}

// sqlOutcome is the metrics label of a statement's failure.
func sqlOutcome(ctx context.Context, err error) string {
	var se *sqlcatalog.Error
	if !errors.As(err, &se) {
		if ctx.Err() != nil {
			return "canceled"
		}
		return "error"
	}
	if k, ok := sqlErrorKinds[se.Kind]; ok {
		return k.outcome
	}
	return "error"
}

// admitSQL counts a statement against the caller's tenant's SQL in
// progress and opens its reservation in the budget of results in flight;
// done gives both back. Past the tenant's cap it answers at once.
func (s *Service) admitSQL(ctx context.Context) (r *sqlcatalog.Reservation, done func(), err error) {
	tenant, ok := TenantFrom(ctx)
	if !ok {
		return nil, nil, errUnauthenticated
	}
	if !s.sqlStreams.acquire(tenant) {
		return nil, nil, s.tooManyStatements()
	}
	r = s.sqlBudget.Reserve()
	return r, func() {
		r.Release()
		s.sqlStreams.release(tenant)
	}, nil
}

// runSQLOnce runs a statement whose result is not streamed (a
// GetFlightInfo, a GetSchema, a CreatePreparedStatement): it counts
// against the tenant's SQL in progress, and its result is charged to the
// in-flight budget, only while it runs.
func (s *Service) runSQLOnce(ctx context.Context, query string) (*sqlcatalog.Result, error) {
	r, done, err := s.admitSQL(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.runSQL(ctx, query, r)
}

// tooManyStatements answers a statement past the tenant's cap.
func (s *Service) tooManyStatements() error {
	s.opts.Metrics.observeSQL("streams", time.Now())
	return status.Errorf(codes.ResourceExhausted,
		"sql: this catalog has %d statements running or streaming, at most %d at once; read or cancel one first", s.sqlStreams.max, s.sqlStreams.max)
}

// sqlStatus maps an engine failure to the client's answer.
func (s *Service) sqlStatus(ctx context.Context, v *View, tenant string, err error) error {
	var se *sqlcatalog.Error
	if !errors.As(err, &se) {
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		s.opts.Log.ErrorContext(ctx, "sql statement failed", slog.String("error", err.Error()))
		return status.Error(codes.Internal, "sql: internal error")
	}
	k, ok := sqlErrorKinds[se.Kind]
	switch {
	case !ok:
		return status.Error(codes.Internal, se.Msg)
	case se.Kind == sqlcatalog.ErrTableData:
		where := "at the location its registration names"
		if ts, err := s.tenantState(ctx, v, tenant); err == nil {
			if i, ok := ts.find(se.Namespace, se.Table); ok && ts.cols.Location.Value(i) != "" {
				where = "at " + ts.cols.Location.Value(i)
			}
		}
		return status.Errorf(k.code,
			"lake is a table catalog and does not read table data: the data of %s.%s is %s; query it there with your engine. "+
				"Lake answers SQL over its catalog: information_schema.schemata, .tables and .columns, SHOW TABLES, SHOW COLUMNS FROM t, DESCRIBE t",
			se.Namespace, se.Table, where)
	case se.Kind == sqlcatalog.ErrData:
		return status.Error(rowsCode(se.Err), se.Msg)
	default:
		return status.Error(k.code, se.Msg)
	}
}

// rowsCode is the answer's code for a failure to read a table's rows: the
// Door's refusals as lake.credentials answers them, a file that does not
// match the registration or a table without a schema FAILED_PRECONDITION,
// the store's failures UNAVAILABLE.
func rowsCode(err error) codes.Code {
	var me *preview.MismatchError
	switch {
	case errors.As(err, &me), errors.Is(err, errNoRowSchema):
		return codes.FailedPrecondition
	}
	switch vending.Code(err) {
	case wire.CodeLocationNotAllowed:
		return codes.PermissionDenied
	case wire.CodeVendingNotConfigured:
		return codes.Unimplemented
	}
	return codes.Unavailable
}

// statementInfo is the FlightInfo of a statement's result: one endpoint whose
// ticket is ticket.
func (s *Service) statementInfo(desc *flight.FlightDescriptor, ticket []byte, res *sqlcatalog.Result) *flight.FlightInfo {
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		FlightDescriptor: desc,
		Schema:           flight.SerializeSchema(res.Schema, s.mem),
		TotalRecords:     int64(res.Rows),
		TotalBytes:       -1,
	}
}

// GetFlightInfoStatement runs the query (so that its errors come now and
// the schema is exact) and answers a ticket holding the query.
func (s *Service) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return nil, errTransactions
	}
	res, err := s.runSQLOnce(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	ticket, err := flightsql.CreateStatementQueryTicket([]byte(cmd.GetQuery()))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "sql: ticket: %v", err)
	}
	return s.statementInfo(desc, ticket, res), nil
}

// GetSchemaStatement implements flightsql.Server.
func (s *Service) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return nil, errTransactions
	}
	res, err := s.runSQLOnce(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(res.Schema, s.mem)}, nil
}

// DoGetStatement streams the result of the ticket's query.
func (s *Service) DoGetStatement(ctx context.Context, ticket flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.streamSQL(ctx, string(ticket.GetStatementHandle()))
}

// streamSQL runs (or finds kept) the query's result and streams it. The
// result is charged to the process's budget of SQL results in flight and
// counts against the tenant's streams from before it is built until its
// stream ends (sent, or its call over: the reader gone, cancelled or past
// its deadline); past either bound the call is refused at once with
// RESOURCE_EXHAUSTED saying which.
func (s *Service) streamSQL(ctx context.Context, query string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	r, end, err := s.admitSQL(ctx)
	if err != nil {
		return nil, nil, err
	}
	res, err := s.runSQL(ctx, query, r)
	if err != nil {
		end()
		return nil, nil, err
	}
	ch, err := streamThen(ctx, res.Schema, res.Batches(), end)
	if err != nil {
		end()
		return nil, nil, err
	}
	return res.Schema, ch, nil
}

// streamLimiter counts each tenant's SQL in progress — statements
// running, and results streaming until their stream ends — up to max
// each, so that one tenant cannot queue work on its engine past its
// share: one more is refused at once.
type streamLimiter struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newStreamLimiter(max int) *streamLimiter {
	return &streamLimiter{max: max, n: map[string]int{}}
}

// acquire counts one more stream of tenant's, or returns false when it
// has max already.
func (l *streamLimiter) acquire(tenant string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[tenant] >= l.max {
		return false
	}
	l.n[tenant]++
	return true
}

func (l *streamLimiter) release(tenant string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[tenant]--; l.n[tenant] <= 0 {
		delete(l.n, tenant)
	}
}

// streaming is the number of SQL results streaming, all tenants.
func (l *streamLimiter) streaming() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.n {
		n += c
	}
	return n
}

// CreatePreparedStatement runs the query, so the dataset schema is known
// (and errors are told) before execution; the handle is the query.
func (s *Service) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	if len(req.GetTransactionId()) > 0 {
		return flightsql.ActionCreatePreparedStatementResult{}, errTransactions
	}
	res, err := s.runSQLOnce(ctx, req.GetQuery())
	if err != nil {
		return flightsql.ActionCreatePreparedStatementResult{}, err
	}
	isUpdate := false
	return flightsql.ActionCreatePreparedStatementResult{
		Handle:          []byte(req.GetQuery()),
		DatasetSchema:   res.Schema,
		ParameterSchema: arrow.NewSchema(nil, nil),
		IsUpdate:        &isUpdate,
	}, nil
}

// ClosePreparedStatement implements flightsql.Server: nothing is kept per
// statement.
func (s *Service) ClosePreparedStatement(ctx context.Context, _ flightsql.ActionClosePreparedStatementRequest) error {
	if _, ok := TenantFrom(ctx); !ok {
		return errUnauthenticated
	}
	return nil
}

// GetFlightInfoPreparedStatement answers the FlightInfo of the handle's
// query; the ticket is the command itself.
func (s *Service) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	res, err := s.runSQLOnce(ctx, string(cmd.GetPreparedStatementHandle()))
	if err != nil {
		return nil, err
	}
	return s.statementInfo(desc, desc.GetCmd(), res), nil
}

// GetSchemaPreparedStatement implements flightsql.Server.
func (s *Service) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	res, err := s.runSQLOnce(ctx, string(cmd.GetPreparedStatementHandle()))
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(res.Schema, s.mem)}, nil
}

// DoGetPreparedStatement streams the result of the handle's query.
func (s *Service) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.streamSQL(ctx, string(cmd.GetPreparedStatementHandle()))
}

// DoPutPreparedStatementQuery refuses parameters: lake's prepared
// statements take none.
func (s *Service) DoPutPreparedStatementQuery(context.Context, flightsql.PreparedStatementQuery, flight.MessageReader, flight.MetadataWriter) ([]byte, error) {
	return nil, status.Error(codes.InvalidArgument, "sql: lake's prepared statements take no parameters; write the values into the statement")
}

// SQLCacheStats describe the SQL engines and the statements' results kept
// in the cache (CacheStats' sql_engine and sql_result kinds).
type SQLCacheStats struct {
	// BudgetBytes is the cache's one budget, which the engines and results
	// share with every other kind; Bytes is what the engines hold.
	BudgetBytes int64 `json:"budget_bytes"`
	Bytes       int64 `json:"bytes"`
	// Engines is how many tenants' engines are kept; Builds counts engine
	// builds since start.
	Engines int    `json:"engines"`
	Builds  uint64 `json:"builds"`
	// ResultBytes is what the kept results hold; Results how many,
	// ResultHits how many statements were answered from them.
	ResultBytes int64  `json:"result_bytes"`
	Results     int    `json:"results"`
	ResultHits  uint64 `json:"result_hits"`
}

// SQLCacheStats reports the SQL engines and results in the cache.
func (s *Service) SQLCacheStats() SQLCacheStats {
	st := s.cache.stats()
	eng, res := st.Kinds[kindEngine.String()], st.Kinds[kindResult.String()]
	return SQLCacheStats{BudgetBytes: st.BudgetBytes, Bytes: eng.Bytes, Engines: eng.Entries, Builds: eng.Misses,
		ResultBytes: res.Bytes, Results: res.Entries, ResultHits: res.Hits}
}

// Defaults of Options' SQL bounds.
const (
	// DefaultSQLStreamsPerTenant is how many statements one tenant may
	// have running or streaming at once by default: more than a tool
	// opens (one per query tab), few enough that one tenant cannot hold
	// the budget alone.
	DefaultSQLStreamsPerTenant = 8
)

// sqlOptions resolves Options' SQL settings.
func sqlOptions(opts *Options) {
	if opts.SQLInFlightBytes <= 0 {
		// Never less than two results at the cap: a result at the cap
		// holds about twice its bytes while it is laid out.
		opts.SQLInFlightBytes = max(opts.CacheBytes/2, 2*int64(sqlcatalog.EffectiveMaxBytes(opts.SQLLimits)))
	}
	if opts.SQLStreamsPerTenant <= 0 {
		opts.SQLStreamsPerTenant = DefaultSQLStreamsPerTenant
	}
}
