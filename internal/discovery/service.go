// Package discovery is lake's Arrow Flight SQL server: tenant-filtered
// GetCatalogs, GetDbSchemas, GetTables (with exact schemas), GetTableTypes
// and GetSqlInfo, answered from a prepared in-memory View of the snapshot
// blob with no metadata I/O on the request path.
package discovery

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/like"
)

// Custom SqlInfo ids (Flight SQL reserves ids below 10,000).
const (
	// SqlInfoSnapshotGeneration (bigint) is the serving snapshot's generation.
	SqlInfoSnapshotGeneration = 10000
	// SqlInfoSnapshotCreatedAt (string, RFC 3339) is when it was built.
	SqlInfoSnapshotCreatedAt = 10001
	// SqlInfoTenantTables (bigint) is how many tables the caller's tenant has.
	SqlInfoTenantTables = 10002
)

// DefaultBatchBytes is the most schema bytes one record batch carries, far
// below gRPC's default 4 MiB receive limit.
const DefaultBatchBytes = 1 << 20

// Options configures a Service.
type Options struct {
	// ServerName and Version answer GetSqlInfo. Defaults "lake" and "dev".
	ServerName, Version string
	// BatchBytes caps the schema bytes per record batch. Default DefaultBatchBytes.
	BatchBytes int
	// Metrics records requests; nil records nothing.
	Metrics *Metrics
}

// Service implements the Flight SQL commands lake supports. Every other
// command answers UNIMPLEMENTED (from the embedded BaseServer).
type Service struct {
	flightsql.BaseServer
	opts Options
	mem  memory.Allocator
	view atomic.Pointer[View]
	// schemaBytes caches the serialized result schemas FlightInfo carries.
	schemaBytes map[*arrow.Schema][]byte
}

// NewService returns a Service with no view: requests get UNAVAILABLE until
// SetView.
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
	s := &Service{opts: opts, mem: memory.DefaultAllocator, schemaBytes: map[*arrow.Schema][]byte{}}
	s.Alloc = s.mem
	for _, sc := range []*arrow.Schema{schema_ref.Catalogs, schema_ref.DBSchemas, schema_ref.Tables,
		schema_ref.TablesWithIncludedSchema, schema_ref.TableTypes, schema_ref.SqlInfo} {
		s.schemaBytes[sc] = flight.SerializeSchema(sc, s.mem)
	}
	return s
}

// SetView swaps in a new view atomically.
func (s *Service) SetView(v *View) { s.view.Store(v) }

// View returns the serving view, or nil.
func (s *Service) View() *View { return s.view.Load() }

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

// begin resolves the caller's tenant and the serving view.
func (s *Service) begin(ctx context.Context) (string, *View, error) {
	tenant, ok := TenantFrom(ctx)
	if !ok {
		return "", nil, status.Error(codes.Unauthenticated, "unauthenticated")
	}
	v := s.view.Load()
	if v == nil {
		return "", nil, status.Error(codes.Unavailable, "the catalog snapshot is not loaded yet; retry")
	}
	return tenant, v, nil
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

func (s *Service) observe(cmd string, start time.Time, err error) {
	if s.opts.Metrics != nil {
		s.opts.Metrics.observe(cmd, start, err)
	}
}

// stream sends recs on a channel the Flight SQL server drains, releasing
// each after it is written; it stops early when ctx ends.
func stream(ctx context.Context, recs []arrow.RecordBatch) <-chan flight.StreamChunk {
	ch := make(chan flight.StreamChunk, 1)
	go func() {
		defer close(ch)
		for i, r := range recs {
			select {
			case ch <- flight.StreamChunk{Data: r}:
			case <-ctx.Done():
				for _, rest := range recs[i:] {
					rest.Release()
				}
				return
			}
		}
	}()
	return ch
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
	if _, _, err := s.begin(ctx); err != nil {
		return nil, err
	}
	return s.info(desc, schema_ref.Catalogs), nil
}

// DoGetCatalogs returns the caller's tenant: the one catalog it can see.
func (s *Service) DoGetCatalogs(ctx context.Context) (sch *arrow.Schema, ch <-chan flight.StreamChunk, err error) {
	defer s.observe("GetCatalogs", time.Now(), err)
	tenant, _, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	b := array.NewStringBuilder(s.mem)
	defer b.Release()
	b.Append(tenant)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema_ref.Catalogs, []arrow.Array{col}, 1)
	return schema_ref.Catalogs, stream(ctx, []arrow.RecordBatch{rec}), nil
}

// GetFlightInfoSchemas implements flightsql.Server.
func (s *Service) GetFlightInfoSchemas(ctx context.Context, cmd flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if _, _, err := s.begin(ctx); err != nil {
		return nil, err
	}
	if _, err := compile(cmd.GetDBSchemaFilterPattern(), "db_schema_filter_pattern"); err != nil {
		return nil, err
	}
	return s.info(desc, schema_ref.DBSchemas), nil
}

// DoGetDBSchemas returns the tenant's namespaces matching the filter.
func (s *Service) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (sch *arrow.Schema, ch <-chan flight.StreamChunk, err error) {
	defer s.observe("GetDbSchemas", time.Now(), err)
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	p, err := compile(cmd.GetDBSchemaFilterPattern(), "db_schema_filter_pattern")
	if err != nil {
		return nil, nil, err
	}
	cat, nsb := array.NewStringBuilder(s.mem), array.NewStringBuilder(s.mem)
	defer cat.Release()
	defer nsb.Release()
	if tv := v.tenant(tenant); tv != nil && catalogMatches(cmd.GetCatalog(), tenant) {
		for _, ns := range tv.namespaces {
			if p == nil || p.Match(ns) {
				cat.Append(tenant)
				nsb.Append(ns)
			}
		}
	}
	c1, c2 := cat.NewArray(), nsb.NewArray()
	defer c1.Release()
	defer c2.Release()
	rec := array.NewRecordBatch(schema_ref.DBSchemas, []arrow.Array{c1, c2}, int64(c1.Len()))
	return schema_ref.DBSchemas, stream(ctx, []arrow.RecordBatch{rec}), nil
}

func tablesSchema(includeSchema bool) *arrow.Schema {
	if includeSchema {
		return schema_ref.TablesWithIncludedSchema
	}
	return schema_ref.Tables
}

// selectTables resolves a GetTables request to row ranges of the tenant's
// view. With include_schema, any selected table without a schema fails the
// request with a generic FailedPrecondition that names no table.
func (s *Service) selectTables(ctx context.Context, cmd flightsql.GetTables) (*tenantView, []rowRange, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	nsPattern, err := compile(cmd.GetDBSchemaFilterPattern(), "db_schema_filter_pattern")
	if err != nil {
		return nil, nil, err
	}
	tablePattern, err := compile(cmd.GetTableNameFilterPattern(), "table_name_filter_pattern")
	if err != nil {
		return nil, nil, err
	}
	tv := v.tenant(tenant)
	if tv == nil || !catalogMatches(cmd.GetCatalog(), tenant) {
		return nil, nil, nil
	}
	rows := tv.selectTables(tv.selectNamespaces(nsPattern), tablePattern, cmd.GetTableTypes())
	if cmd.GetIncludeSchema() {
		for _, r := range rows {
			for i := r.lo; i < r.hi; i++ {
				if tv.schemaBytes[i] < 0 {
					return nil, nil, status.Error(codes.FailedPrecondition,
						"a table this request would return has no stored schema; list with include_schema=false, or backfill its schema")
				}
			}
		}
	}
	return tv, rows, nil
}

// GetFlightInfoTables implements flightsql.Server.
func (s *Service) GetFlightInfoTables(ctx context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if _, _, err := s.selectTables(ctx, cmd); err != nil {
		return nil, err
	}
	return s.info(desc, tablesSchema(cmd.GetIncludeSchema())), nil
}

// DoGetTables streams the selected rows as zero-copy slices of the prepared
// arrays, in batches of at most Options.BatchBytes schema bytes.
func (s *Service) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (sch *arrow.Schema, ch <-chan flight.StreamChunk, err error) {
	defer s.observe("GetTables", time.Now(), err)
	tv, rows, err := s.selectTables(ctx, cmd)
	if err != nil {
		return nil, nil, err
	}
	schema := tablesSchema(cmd.GetIncludeSchema())
	ncols := 4
	if cmd.GetIncludeSchema() {
		ncols = 5
	}
	var recs []arrow.RecordBatch
	slice := func(lo, hi int) {
		cols := make([]arrow.Array, ncols)
		for c := range cols {
			cols[c] = array.NewSlice(tv.cols[c], int64(lo), int64(hi))
		}
		recs = append(recs, array.NewRecordBatch(schema, cols, int64(hi-lo)))
		for _, c := range cols {
			c.Release()
		}
	}
	total := 0
	if ncols == 5 {
		for _, r := range rows {
			for i := r.lo; i < r.hi; i++ {
				total += tv.schemaBytes[i]
			}
		}
	}
	if len(rows) > 64 || len(rows) > 1 && total <= s.opts.BatchBytes {
		// A scattered selection: gather it into as few batches as the
		// budget allows (clients such as ADBC's GetTableSchema read only
		// the first batch) rather than stream many small slices.
		recs = s.gather(tv, rows, schema, ncols)
	} else {
		for _, r := range rows {
			lo, size := r.lo, 0
			for i := r.lo; i < r.hi; i++ {
				if ncols == 5 && size > 0 && size+tv.schemaBytes[i] > s.opts.BatchBytes {
					slice(lo, i)
					lo, size = i, 0
				}
				if ncols == 5 {
					size += tv.schemaBytes[i]
				}
			}
			slice(lo, r.hi)
		}
	}
	if len(recs) == 0 {
		cols := make([]arrow.Array, ncols)
		for c := range cols {
			cols[c] = array.MakeArrayOfNull(s.mem, schema.Field(c).Type, 0)
		}
		recs = append(recs, array.NewRecordBatch(schema, cols, 0))
		for _, c := range cols {
			c.Release()
		}
	}
	return schema, stream(ctx, recs), nil
}

// gather copies scattered rows into batches of at most BatchBytes.
func (s *Service) gather(tv *tenantView, rows []rowRange, schema *arrow.Schema, ncols int) []arrow.RecordBatch {
	var recs []arrow.RecordBatch
	b := array.NewRecordBuilder(s.mem, schema)
	defer b.Release()
	size, n := 0, 0
	flush := func() {
		recs = append(recs, b.NewRecordBatch())
		size, n = 0, 0
	}
	strs := [4]*array.String{}
	for c := range 4 {
		strs[c] = tv.cols[c].(*array.String)
	}
	for _, r := range rows {
		for i := r.lo; i < r.hi; i++ {
			if ncols == 5 && n > 0 && size+tv.schemaBytes[i] > s.opts.BatchBytes {
				flush()
			}
			for c := range 4 {
				b.Field(c).(*array.StringBuilder).Append(strs[c].Value(i))
			}
			if ncols == 5 {
				b.Field(4).(*array.BinaryBuilder).Append(tv.cols[4].(*array.Binary).Value(i))
				size += tv.schemaBytes[i]
			}
			n++
		}
	}
	if n > 0 {
		flush()
	}
	return recs
}

// GetFlightInfoTableTypes implements flightsql.Server.
func (s *Service) GetFlightInfoTableTypes(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if _, _, err := s.begin(ctx); err != nil {
		return nil, err
	}
	return s.info(desc, schema_ref.TableTypes), nil
}

// DoGetTableTypes returns the table types of the caller's tables, and TABLE.
func (s *Service) DoGetTableTypes(ctx context.Context) (sch *arrow.Schema, ch <-chan flight.StreamChunk, err error) {
	defer s.observe("GetTableTypes", time.Now(), err)
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	types := []string{"TABLE"}
	if tv := v.tenant(tenant); tv != nil {
		types = mergeSorted(types, tv.tableTypes)
	}
	b := array.NewStringBuilder(s.mem)
	defer b.Release()
	b.AppendValues(types, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema_ref.TableTypes, []arrow.Array{col}, int64(len(types)))
	return schema_ref.TableTypes, stream(ctx, []arrow.RecordBatch{rec}), nil
}

func mergeSorted(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// GetFlightInfoSqlInfo implements flightsql.Server.
func (s *Service) GetFlightInfoSqlInfo(ctx context.Context, _ flightsql.GetSqlInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if _, _, err := s.begin(ctx); err != nil {
		return nil, err
	}
	return s.info(desc, schema_ref.SqlInfo), nil
}

// sqlInfoValue is one GetSqlInfo answer: a string, bool or int64.
type sqlInfoValue struct {
	id  uint32
	val any
}

// DoGetSqlInfo answers the requested ids (all when none are named) that
// lake knows; unknown ids are left out.
func (s *Service) DoGetSqlInfo(ctx context.Context, cmd flightsql.GetSqlInfo) (sch *arrow.Schema, ch <-chan flight.StreamChunk, err error) {
	defer s.observe("GetSqlInfo", time.Now(), err)
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	tables := int64(0)
	if tv := v.tenant(tenant); tv != nil {
		tables = int64(len(tv.names))
	}
	all := []sqlInfoValue{
		{uint32(flightsql.SqlInfoFlightSqlServerName), s.opts.ServerName},
		{uint32(flightsql.SqlInfoFlightSqlServerVersion), s.opts.Version},
		{uint32(flightsql.SqlInfoFlightSqlServerArrowVersion), arrow.PkgVersion},
		{uint32(flightsql.SqlInfoFlightSqlServerReadOnly), true},
		{uint32(flightsql.SqlInfoFlightSqlServerSql), false},
		{uint32(flightsql.SqlInfoFlightSqlServerSubstrait), false},
		{uint32(flightsql.SqlInfoFlightSqlServerCancel), false},
		{uint32(flightsql.SqlInfoFlightSqlServerBulkIngestion), false},
		{SqlInfoSnapshotGeneration, int64(v.Generation)},
		{SqlInfoSnapshotCreatedAt, v.CreatedAt.UTC().Format(time.RFC3339Nano)},
		{SqlInfoTenantTables, tables},
	}
	want := cmd.GetInfo()
	var rows []sqlInfoValue
	if len(want) == 0 {
		rows = all
	} else {
		for _, id := range want {
			for _, r := range all {
				if r.id == id {
					rows = append(rows, r)
				}
			}
		}
	}
	rec, err := buildSqlInfo(s.mem, rows)
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "sql info: %v", err)
	}
	return schema_ref.SqlInfo, stream(ctx, []arrow.RecordBatch{rec}), nil
}

func buildSqlInfo(mem memory.Allocator, rows []sqlInfoValue) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(mem, schema_ref.SqlInfo)
	defer b.Release()
	names := b.Field(0).(*array.Uint32Builder)
	vals := b.Field(1).(*array.DenseUnionBuilder)
	for _, r := range rows {
		names.Append(r.id)
		switch v := r.val.(type) {
		case string:
			vals.Append(0)
			vals.Child(0).(*array.StringBuilder).Append(v)
		case bool:
			vals.Append(1)
			vals.Child(1).(*array.BooleanBuilder).Append(v)
		case int64:
			vals.Append(2)
			vals.Child(2).(*array.Int64Builder).Append(v)
		default:
			return nil, fmt.Errorf("sql info %d: unsupported value %T", r.id, v)
		}
	}
	return b.NewRecordBatch(), nil
}
