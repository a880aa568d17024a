package discovery

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/like"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// View is a snapshot prepared for serving: per tenant, the GetTables rows in
// spec order as Arrow arrays ready to slice and stream, and an index of
// namespaces. A request only filters and streams; it never reads metadata.
// A View is immutable and safe for concurrent use.
type View struct {
	Generation uint64
	CreatedAt  time.Time
	Counts     catalog.Counts
	tenants    map[string]*tenantView
}

// tenantView holds one tenant's tables sorted by (namespace, table).
type tenantView struct {
	tenant     string
	namespaces []string          // sorted, distinct
	nsSpan     map[string][2]int // namespace → [lo, hi) rows
	tableTypes []string          // sorted, distinct
	names      []string          // table name per row
	ns         []string          // namespace per row
	types      []string          // table type per row
	// schemaBytes[i] is len(schema IPC) of row i, or -1 when unavailable.
	schemaBytes []int
	// Prepared columns: catalog_name, db_schema_name, table_name,
	// table_type, table_schema (null where the schema is unavailable).
	cols [5]arrow.Array
}

// Prepare builds a View from a snapshot. The snapshot is not retained: its
// schema bytes are copied into the prepared Arrow arrays.
func Prepare(snap *catalog.Snapshot, mem memory.Allocator) *View {
	v := &View{Generation: snap.Generation, CreatedAt: snap.CreatedAt, Counts: snap.Counts, tenants: make(map[string]*tenantView)}
	for _, tenant := range snap.Tenants() {
		v.tenants[tenant] = prepareTenant(tenant, snap.Tenant(tenant), mem)
	}
	return v
}

func prepareTenant(tenant string, tables []catalog.Table, mem memory.Allocator) *tenantView {
	n := len(tables)
	tv := &tenantView{
		tenant:      tenant,
		nsSpan:      make(map[string][2]int),
		names:       make([]string, n),
		ns:          make([]string, n),
		types:       make([]string, n),
		schemaBytes: make([]int, n),
	}
	cat := array.NewStringBuilder(mem)
	nsb := array.NewStringBuilder(mem)
	nameb := array.NewStringBuilder(mem)
	typeb := array.NewStringBuilder(mem)
	schemab := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	total := 0
	for i := range tables {
		total += len(tables[i].SchemaIPC)
	}
	schemab.ReserveData(total)
	types := map[string]bool{}
	for i, t := range tables {
		// Snapshot order is (tenant, namespace, table): already spec order.
		tv.names[i], tv.ns[i], tv.types[i] = t.Ref.Name, t.Ref.Namespace, t.TableType
		types[t.TableType] = true
		if span, ok := tv.nsSpan[t.Ref.Namespace]; ok {
			tv.nsSpan[t.Ref.Namespace] = [2]int{span[0], i + 1}
		} else {
			tv.nsSpan[t.Ref.Namespace] = [2]int{i, i + 1}
			tv.namespaces = append(tv.namespaces, t.Ref.Namespace)
		}
		cat.Append(tenant)
		nsb.Append(t.Ref.Namespace)
		nameb.Append(t.Ref.Name)
		typeb.Append(t.TableType)
		if t.HasSchema() {
			schemab.Append(t.SchemaIPC)
			tv.schemaBytes[i] = len(t.SchemaIPC)
		} else {
			schemab.AppendNull()
			tv.schemaBytes[i] = -1
		}
	}
	for t := range types {
		tv.tableTypes = append(tv.tableTypes, t)
	}
	slices.Sort(tv.tableTypes)
	tv.cols = [5]arrow.Array{cat.NewArray(), nsb.NewArray(), nameb.NewArray(), typeb.NewArray(), schemab.NewArray()}
	for _, b := range []array.Builder{cat, nsb, nameb, typeb, schemab} {
		b.Release()
	}
	return tv
}

// tenant returns the tenant's prepared view, or nil when it has no tables.
func (v *View) tenant(t string) *tenantView { return v.tenants[t] }

// rowRange is a run of selected rows [lo, hi).
type rowRange struct{ lo, hi int }

// selectNamespaces returns the row span of each namespace matching p, in
// order, one span per namespace (table names are sorted within a span, not
// across spans).
func (tv *tenantView) selectNamespaces(p *like.Pattern) []rowRange {
	if p == nil || p.All() {
		out := make([]rowRange, len(tv.namespaces))
		for i, ns := range tv.namespaces {
			span := tv.nsSpan[ns]
			out[i] = rowRange{span[0], span[1]}
		}
		return out
	}
	if exact, ok := p.Exact(); ok {
		if span, ok := tv.nsSpan[exact]; ok {
			return []rowRange{{span[0], span[1]}}
		}
		return nil
	}
	var out []rowRange
	start := sort.SearchStrings(tv.namespaces, p.Prefix())
	for _, ns := range tv.namespaces[start:] {
		if !strings.HasPrefix(ns, p.Prefix()) {
			break
		}
		if p.Match(ns) {
			span := tv.nsSpan[ns]
			out = append(out, rowRange{span[0], span[1]})
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
// a namespace, so an exact name or a literal prefix is found by binary
// search rather than a scan.
func (tv *tenantView) selectTables(spans []rowRange, p *like.Pattern, types []string) []rowRange {
	var out []rowRange
	if (p == nil || p.All()) && len(types) == 0 {
		for _, s := range spans {
			out = appendRange(out, s.lo, s.hi)
		}
		return out
	}
	for _, s := range spans {
		lo, hi := s.lo, s.hi
		if p != nil && !p.All() {
			names := tv.names[lo:hi]
			start := lo + sort.SearchStrings(names, p.Prefix())
			end := start
			for end < hi && strings.HasPrefix(tv.names[end], p.Prefix()) {
				end++
			}
			lo, hi = start, end
		}
		for i := lo; i < hi; i++ {
			if p != nil && !p.Match(tv.names[i]) {
				continue
			}
			if len(types) > 0 && !slices.Contains(types, tv.types[i]) {
				continue
			}
			out = appendRange(out, i, i+1)
		}
	}
	return out
}
