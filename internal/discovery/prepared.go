package discovery

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/like"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// segmentColumns are the columns of a tenant's decoded segment that serving
// reads, sorted by (namespace, name), as the snapshot reader decoded them:
// the tables record batch's columns, and the segment's distinct schemas
// (SchemaRef indexes Schemas per row and is null where the schema is
// unavailable). They include each row's creation id and encoded Iceberg
// field ids (CreationID, FieldIDs: empty and null in a segment before
// format version 8), read by creationID and fieldIDs, and its earlier kept
// versions (Earlier, referencing Schemas: null in a segment before format
// version 10), read by earlier.
type segmentColumns struct {
	snapshot.TableColumns
	Schemas *array.Binary
}

// tenantState is one tenant prepared for serving: the segment's Arrow
// columns (schema bytes stored once), a namespace index, and the
// pre-serialized FlightData messages of its whole-tenant answers. It is
// immutable once built and safe for concurrent use.
type tenantState struct {
	tenant string
	cols   segmentColumns
	n      int
	// tombstones are the tenant's dropped tables still in retention, for
	// the change feed; no listing, describe, search or SQL serves them.
	tombstones snapshot.TombstoneColumns

	namespaces []string // sorted, distinct
	nsSpan     []rowRange
	tableTypes []string // sorted, distinct
	// unavailable counts rows without a schema.
	unavailable int
	// changes is the change feed's order (changeOrder): table rows (0 to
	// n-1) and tombstones (n and after) by publication, then key. It is
	// made by the tenant's first lake.changes (changeIndex), not when the
	// tenant is prepared, which every catalog request's first call does;
	// size counts its bytes from the start.
	changes     []int32
	changesOnce sync.Once

	// Whole-tenant answers as marshaled FlightData messages (schema message
	// first). tablesWithSchema is nil when a table has no schema.
	tables, tablesWithSchema, dbSchemas, catalogs [][]byte

	// tenantSettings are the operator's settings for the tenant as its
	// segment carries them (catalog.DecodeTenantSettings), zero when it
	// carries none or they do not decode (settingsErr says why: the
	// preparation's caller logs it): no prefix is then allowed.
	tenantSettings catalog.TenantSettings
	settingsErr    error

	// icebergLogged holds the rows whose Iceberg state was found not to
	// decode and logged (row index → struct{}), so each is logged once.
	icebergLogged sync.Map

	// bytes is what the state holds: Arrow buffers, messages and indexes.
	bytes int64
}

// rowRange is a run of rows [lo, hi).
type rowRange struct{ lo, hi int }

// prepareTenant prepares a tenant's decoded segment (checked by the
// snapshot reader: names, order, schema references): indexes, then the
// whole-tenant answers encoded once, in batches of at most batchBytes.
func prepareTenant(seg *snapshot.Segment, batchBytes int, mem memory.Allocator) (*tenantState, error) {
	cols := segmentColumns{TableColumns: seg.Tables, Schemas: seg.Schemas}
	n := cols.Name.Len()
	ts := &tenantState{tenant: seg.Tenant, cols: cols, n: n, tombstones: seg.Tombstones}
	tenant := seg.Tenant
	types := map[string]bool{}
	for i := range n {
		ns := cols.Namespace.Value(i)
		if k := len(ts.namespaces); k > 0 && ts.namespaces[k-1] == ns {
			ts.nsSpan[k-1].hi = i + 1
		} else {
			ts.namespaces = append(ts.namespaces, ns)
			ts.nsSpan = append(ts.nsSpan, rowRange{i, i + 1})
		}
		if t := cols.TableType.Value(i); !types[t] {
			types[t] = true
			ts.tableTypes = append(ts.tableTypes, t)
		}
		if cols.SchemaRef.IsNull(i) {
			ts.unavailable++
		}
	}
	slices.Sort(ts.tableTypes)

	all := []rowRange{{0, n}}
	var err error
	if ts.tables, err = encodeMessages(schema_ref.Tables, ts.records(mem, all, false, batchBytes), mem); err != nil {
		return nil, err
	}
	if ts.unavailable == 0 {
		if ts.tablesWithSchema, err = encodeMessages(schema_ref.TablesWithIncludedSchema, ts.records(mem, all, true, batchBytes), mem); err != nil {
			return nil, err
		}
	}
	if ts.dbSchemas, err = encodeMessages(schema_ref.DBSchemas, ts.dbSchemaRecords(mem, nil, batchBytes), mem); err != nil {
		return nil, err
	}
	if ts.catalogs, err = encodeMessages(schema_ref.Catalogs, []arrow.RecordBatch{catalogsRecord(mem, tenant)}, mem); err != nil {
		return nil, err
	}
	if raw := seg.Settings(); raw != nil {
		if ts.tenantSettings, err = catalog.DecodeTenantSettings(raw); err != nil {
			ts.tenantSettings, ts.settingsErr = catalog.TenantSettings{}, err
		}
	}
	ts.bytes = ts.size(seg.Bytes)
	return ts, nil
}

// settings returns the operator's settings for the tenant, as the
// snapshot's segment carries them: the prefixes under which credentials
// may be vended for its tables (issue 40). They are zero (no prefix
// allowed) when the segment carries none, they do not decode, or the
// tenant has no tables (emptyTenant). The prefixes are the caller's own
// copy.
func (ts *tenantState) settings() catalog.TenantSettings {
	s := ts.tenantSettings
	s.AllowedPrefixes = slices.Clone(s.AllowedPrefixes)
	return s
}

// size counts the state's real bytes: the decoded segment's (its record
// batches' bodies, the creation id, field id and Iceberg state columns
// among them, and
// its settings' bytes: snapshot.Segment.Bytes), the messages, the index
// slices and the decoded settings.
func (ts *tenantState) size(segment int64) int64 {
	total := segment
	for _, msgs := range [][][]byte{ts.tables, ts.tablesWithSchema, ts.dbSchemas, ts.catalogs} {
		for _, m := range msgs {
			total += int64(cap(m)) + int64(unsafe.Sizeof(m))
		}
	}
	total += int64(len(ts.namespaces))*int64(unsafe.Sizeof("")+unsafe.Sizeof(rowRange{})) +
		int64(len(ts.tableTypes))*int64(unsafe.Sizeof("")) + int64(ts.n+ts.numTombstones())*4 + int64(unsafe.Sizeof(*ts))
	for _, p := range ts.tenantSettings.AllowedPrefixes {
		total += int64(len(p)) + int64(unsafe.Sizeof(p))
	}
	total += int64(len(ts.tenantSettings.UpdatedBy))
	return total
}

// find returns the row of table namespace.name: a binary search for the
// namespace, then for the name within its span.
func (ts *tenantState) find(namespace, name string) (int, bool) {
	k, ok := slices.BinarySearch(ts.namespaces, namespace)
	if !ok {
		return 0, false
	}
	span, names := ts.nsSpan[k], ts.cols.Name
	i := span.lo + sort.Search(span.hi-span.lo, func(j int) bool { return names.Value(span.lo+j) >= name })
	if i < span.hi && names.Value(i) == name {
		return i, true
	}
	return 0, false
}

// properties returns row i's properties (nil when it has none), read from
// the segment's map column.
func (ts *tenantState) properties(i int) map[string]string {
	m := ts.cols.Properties
	if m.IsNull(i) {
		return nil
	}
	lo, hi := m.ValueOffsets(i)
	keys, items := m.Keys().(*array.String), m.Items().(*array.String)
	out := make(map[string]string, hi-lo)
	for j := lo; j < hi; j++ {
		out[keys.Value(int(j))] = items.Value(int(j))
	}
	return out
}

// creationID returns row i's creation id, the registration's
// (catalog.Registration.CreationID): it names one registration of the
// table's name, so the Iceberg front-end derives the table's uuid from it.
// Empty for a registration made before lake recorded one, and for every
// row of a segment before snapshot format version 8 (refresh republishes
// such a blob as version 8). The string is read-only memory of the
// segment's column, valid for as long as the state.
func (ts *tenantState) creationID(i int) string { return ts.cols.CreationID.Value(i) }

// fieldIDs returns row i's Iceberg field ids as the catalog recorded them
// (catalog.Registration.FieldIDs: one per icebergschema.Paths of the
// table's schema, in that order; fresh ones, 1 to N, for a registration
// made before ids were recorded) and its last column id. None (nil, 0) for
// a table without a schema, and for every row of a segment before snapshot
// format version 8. The ids are decoded from the segment's column on each
// call: a new slice, the caller's own.
func (ts *tenantState) fieldIDs(i int) (ids []int32, last int32) { return ts.cols.FieldIDsOf(i) }

// icebergState returns row i's Iceberg state item as the catalog stored
// it (catalog.DecodeIcebergState reads it), nil when the row has none (and
// for every row of a segment before snapshot format version 9). The bytes
// are read-only memory of the segment's column, valid for as long as the
// state, and counted in its size (snapshot.Segment.Bytes).
func (ts *tenantState) icebergState(i int) []byte { return ts.cols.IcebergStateOf(i) }

// earlier returns row i's earlier kept versions (the catalog's history of
// its registration below its version, those with a schema), oldest
// first: what Iceberg REST lists before its current schema. None for a
// table of one version, and for every row of a segment before snapshot
// format version 10. The list is decoded from the segment's column on
// each call, the caller's own; each schema is read-only memory of the
// segment's distinct schemas, valid for as long as the state.
func (ts *tenantState) earlier(i int) []snapshot.Earlier {
	return ts.cols.EarlierOf(i, ts.cols.Schemas)
}

// schemaLen is row i's schema IPC length, or -1 when unavailable.
func (ts *tenantState) schemaLen(i int) int {
	if ts.cols.SchemaRef.IsNull(i) {
		return -1
	}
	return ts.cols.Schemas.ValueLen(int(ts.cols.SchemaRef.Value(i)))
}

// schema is row i's schema IPC message (nil when unavailable).
func (ts *tenantState) schema(i int) []byte {
	if ts.cols.SchemaRef.IsNull(i) {
		return nil
	}
	return ts.cols.Schemas.Value(int(ts.cols.SchemaRef.Value(i)))
}

// rowBytes is what row i adds to a GetTables batch: its strings, its
// schema (when included) and one 4-byte offset per variable-width column.
func (ts *tenantState) rowBytes(i int, includeSchema bool) int {
	size := len(ts.tenant) + ts.cols.Namespace.ValueLen(i) + ts.cols.Name.ValueLen(i) + ts.cols.TableType.ValueLen(i) + 16
	if includeSchema {
		size += max(ts.schemaLen(i), 0) + 4
	}
	return size
}

// records builds GetTables batches over the selected rows, in order, each of
// at most batchBytes (a single larger row gets a batch of its own). A batch
// that is one run of rows slices the segment's name columns; a scattered one
// gathers them. The table_schema column is always gathered from the
// tenant's distinct schemas.
func (ts *tenantState) records(mem memory.Allocator, rows []rowRange, includeSchema bool, batchBytes int) []arrow.RecordBatch {
	schema := tablesSchema(includeSchema)
	var (
		recs  []arrow.RecordBatch
		batch []rowRange
		size  int
	)
	flush := func() {
		recs = append(recs, ts.batch(mem, schema, batch, includeSchema))
		batch, size = nil, 0
	}
	for _, r := range rows {
		for i := r.lo; i < r.hi; i++ {
			rb := ts.rowBytes(i, includeSchema)
			if len(batch) > 0 && size+rb > batchBytes {
				flush()
			}
			batch = appendRange(batch, i, i+1)
			size += rb
		}
	}
	if len(batch) > 0 || len(recs) == 0 {
		flush()
	}
	return recs
}

// batch builds one GetTables record batch of the rows in rs.
func (ts *tenantState) batch(mem memory.Allocator, schema *arrow.Schema, rs []rowRange, includeSchema bool) arrow.RecordBatch {
	rows := 0
	for _, r := range rs {
		rows += r.hi - r.lo
	}
	cat := array.NewStringBuilder(mem)
	defer cat.Release()
	cat.Reserve(rows)
	cat.ReserveData(rows * len(ts.tenant))
	for range rows {
		cat.Append(ts.tenant)
	}
	cols := []arrow.Array{cat.NewArray()}
	for _, src := range []*array.String{ts.cols.Namespace, ts.cols.Name, ts.cols.TableType} {
		cols = append(cols, gatherStrings(mem, src, rs, rows))
	}
	if includeSchema {
		b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		total := 0
		for _, r := range rs {
			for i := r.lo; i < r.hi; i++ {
				total += max(ts.schemaLen(i), 0)
			}
		}
		b.Reserve(rows)
		b.ReserveData(total)
		for _, r := range rs {
			for i := r.lo; i < r.hi; i++ {
				b.Append(ts.schema(i))
			}
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	rec := array.NewRecordBatch(schema, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// gatherStrings returns the rows rs of src: a zero-copy slice when rs is one
// run, else a copy.
func gatherStrings(mem memory.Allocator, src *array.String, rs []rowRange, rows int) arrow.Array {
	if len(rs) == 1 {
		return array.NewSlice(src, int64(rs[0].lo), int64(rs[0].hi))
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	if rows == 0 {
		return b.NewArray()
	}
	offsets, total := src.ValueOffsets(), 0
	for _, r := range rs {
		total += int(offsets[r.hi] - offsets[r.lo])
	}
	b.Reserve(rows)
	b.ReserveData(total)
	for _, r := range rs {
		for i := r.lo; i < r.hi; i++ {
			b.Append(src.Value(i))
		}
	}
	return b.NewArray()
}

// dbSchemaRecords builds GetDbSchemas batches of the namespaces matching p
// (all when nil).
func (ts *tenantState) dbSchemaRecords(mem memory.Allocator, p *like.Pattern, batchBytes int) []arrow.RecordBatch {
	var recs []arrow.RecordBatch
	cat, nsb := array.NewStringBuilder(mem), array.NewStringBuilder(mem)
	defer cat.Release()
	defer nsb.Release()
	size := 0
	flush := func() {
		c1, c2 := cat.NewArray(), nsb.NewArray()
		recs = append(recs, array.NewRecordBatch(schema_ref.DBSchemas, []arrow.Array{c1, c2}, int64(c1.Len())))
		c1.Release()
		c2.Release()
		size = 0
	}
	for _, ns := range ts.namespaces {
		if p != nil && !p.Match(ns) {
			continue
		}
		rb := len(ts.tenant) + len(ns) + 8
		if cat.Len() > 0 && size+rb > batchBytes {
			flush()
		}
		cat.Append(ts.tenant)
		nsb.Append(ns)
		size += rb
	}
	if cat.Len() > 0 || len(recs) == 0 {
		flush()
	}
	return recs
}

// catalogsRecord is the GetCatalogs answer: the caller's tenant.
func catalogsRecord(mem memory.Allocator, tenant string) arrow.RecordBatch {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Append(tenant)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(schema_ref.Catalogs, []arrow.Array{col}, 1)
}

// messageCapture collects the FlightData messages a flight.Writer sends,
// marshaled (the writer reuses its message between sends).
type messageCapture struct{ msgs [][]byte }

func (c *messageCapture) Send(fd *flight.FlightData) error {
	b, err := proto.Marshal(fd)
	if err != nil {
		return err
	}
	c.msgs = append(c.msgs, b)
	return nil
}

// encodeMessages encodes recs as the FlightData messages of a DoGet answer:
// the schema message, then one message per batch. It releases recs.
func encodeMessages(schema *arrow.Schema, recs []arrow.RecordBatch, mem memory.Allocator) ([][]byte, error) {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	c := &messageCapture{}
	w := flight.NewRecordWriter(c, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			w.Close()
			return nil, fmt.Errorf("discovery: encode answer: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("discovery: encode answer: %w", err)
	}
	return c.msgs, nil
}

// selectNamespaces returns the row span of each namespace matching p, in
// order (table names are sorted within a span, not across spans).
func (ts *tenantState) selectNamespaces(p *like.Pattern) []rowRange {
	if p == nil || p.All() {
		return ts.nsSpan
	}
	if exact, ok := p.Exact(); ok {
		if i, found := slices.BinarySearch(ts.namespaces, exact); found {
			return []rowRange{ts.nsSpan[i]}
		}
		return nil
	}
	var out []rowRange
	for i := sort.SearchStrings(ts.namespaces, p.Prefix()); i < len(ts.namespaces); i++ {
		ns := ts.namespaces[i]
		if !strings.HasPrefix(ns, p.Prefix()) {
			break
		}
		if p.Match(ns) {
			out = append(out, ts.nsSpan[i])
		}
	}
	return out
}

// appendRange appends [lo, hi), merging with the last range when adjacent.
func appendRange(rs []rowRange, lo, hi int) []rowRange {
	if n := len(rs); n > 0 && rs[n-1].hi == lo {
		rs[n-1].hi = hi
		return rs
	}
	return append(rs, rowRange{lo, hi})
}

// selectTables narrows namespace spans to rows whose table name matches p
// and whose type is in types (any type when empty). Names are sorted within
// a namespace, so a literal prefix is found by binary search.
func (ts *tenantState) selectTables(spans []rowRange, p *like.Pattern, types typeFilter) []rowRange {
	var out []rowRange
	if (p == nil || p.All()) && types == nil {
		for _, s := range spans {
			out = appendRange(out, s.lo, s.hi)
		}
		return out
	}
	names := ts.cols.Name
	for _, s := range spans {
		lo, hi := s.lo, s.hi
		if p != nil && !p.All() {
			prefix := p.Prefix()
			start := lo + sort.Search(hi-lo, func(k int) bool { return names.Value(lo+k) >= prefix })
			end := start
			for end < hi && strings.HasPrefix(names.Value(end), prefix) {
				end++
			}
			lo, hi = start, end
		}
		for i := lo; i < hi; i++ {
			if p != nil && !p.Match(names.Value(i)) {
				continue
			}
			if !types.keeps(ts.cols.TableType.Value(i)) {
				continue
			}
			out = appendRange(out, i, i+1)
		}
	}
	return out
}

// coversTypes reports whether a table_types filter keeps every table of
// the tenant.
func (ts *tenantState) coversTypes(types typeFilter) bool {
	for _, t := range ts.tableTypes {
		if !types.keeps(t) {
			return false
		}
	}
	return true
}

// MaxTableTypes is the most table types a GetTables filter may name.
const MaxTableTypes = 256

// typeFilter is a GetTables table_types filter as a set; nil keeps every
// type.
type typeFilter map[string]struct{}

// tableTypeAlias returns lake's own table type for a type other systems
// name it by: a GetTables table_types filter naming an alias keeps the
// tables of the type it stands for. "BASE TABLE" is the ANSI
// information_schema name of a plain table (and what Grafana's table picker
// and DuckDB-based servers filter on); lake reports such tables as "TABLE".
func tableTypeAlias(t string) (string, bool) {
	if t == "BASE TABLE" {
		return "TABLE", true
	}
	return "", false
}

// newTypeFilter builds the set of a request's table types (none: nil),
// refusing more than MaxTableTypes with INVALID_ARGUMENT, so a request's
// cost is bounded before any table is looked at. Types match exactly
// (case-sensitive), and an alias (tableTypeAlias) also keeps the type it
// stands for.
func newTypeFilter(types []string) (typeFilter, error) {
	if len(types) == 0 {
		return nil, nil
	}
	if len(types) > MaxTableTypes {
		return nil, status.Errorf(codes.InvalidArgument, "table_types: %d types, at most %d", len(types), MaxTableTypes)
	}
	f := make(typeFilter, len(types))
	for _, t := range types {
		f[t] = struct{}{}
		if own, ok := tableTypeAlias(t); ok {
			f[own] = struct{}{}
		}
	}
	return f, nil
}

// keeps reports whether the filter keeps tables of type t.
func (f typeFilter) keeps(t string) bool {
	if f == nil {
		return true
	}
	_, ok := f[t]
	return ok
}
