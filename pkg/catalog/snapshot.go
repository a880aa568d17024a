package catalog

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// ScannedTable is one registration read by ScanTables.
type ScannedTable struct {
	Ref          TableRef
	Registration Registration
}

// ScanResult is what one scan of the registrations read.
type ScanResult struct {
	// Tables are the decoded registrations, in key order.
	Tables []ScannedTable
	// Skipped counts entries with a malformed key or value.
	Skipped int
	// SkippedKeys holds the first few skipped keys, for logs.
	SkippedKeys []string
	// Stats is what the metastore reported, where it reports (pages etc.).
	Stats metastore.ScanStats
}

const maxSkippedKeys = 16

// ScanTables reads every registration with one ScanPrefix(KeyPrefix). A
// malformed key or undecodable value is skipped and counted, never fatal.
func ScanTables(ctx context.Context, store metastore.Store) (ScanResult, error) {
	var (
		entries []metastore.Entry
		res     ScanResult
		err     error
	)
	if ss, ok := store.(metastore.StatsScanner); ok {
		entries, res.Stats, err = ss.ScanPrefixStats(ctx, KeyPrefix)
	} else {
		entries, err = store.ScanPrefix(ctx, KeyPrefix)
		res.Stats = metastore.ScanStats{Pages: 1, Scanned: len(entries), Kept: len(entries)}
	}
	if err != nil {
		return ScanResult{}, during("scan registrations", "", err)
	}
	res.Tables = make([]ScannedTable, 0, len(entries))
	skip := func(key string) {
		res.Skipped++
		if len(res.SkippedKeys) < maxSkippedKeys {
			res.SkippedKeys = append(res.SkippedKeys, KeyPrefix+key)
		}
	}
	for _, e := range entries {
		ref, err := ParseKey(e.Key)
		if err != nil {
			skip(e.Key)
			continue
		}
		reg, err := DecodeRegistration(e.Value)
		if err != nil {
			skip(e.Key)
			continue
		}
		res.Tables = append(res.Tables, ScannedTable{Ref: ref, Registration: reg})
	}
	return res, nil
}

// Table is one table in a Snapshot. Its fields are read-only.
type Table struct {
	Ref       TableRef
	Location  string
	TableType string
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// SchemaIPC holds the exact Arrow IPC schema bytes, checked to decode, or
	// nil when the schema is unavailable.
	SchemaIPC []byte
	// SchemaError says why the schema is unavailable ("" when available).
	SchemaError string
	// Description and Properties are the registration's (empty, nil when
	// it has none).
	Description string
	Properties  map[string]string
}

// HasSchema reports whether the table's schema is available.
func (t *Table) HasSchema() bool { return t.SchemaIPC != nil }

// Schema decodes the table's schema, or returns ErrSchemaUnavailable.
func (t *Table) Schema() (*arrow.Schema, error) {
	if t.SchemaIPC == nil {
		return nil, &Error{Ref: t.Ref.String(), Kind: ErrSchemaUnavailable, Detail: t.SchemaError}
	}
	return DecodeSchema(t.SchemaIPC)
}

// Counts summarize a snapshot.
type Counts struct {
	// Tables is how many tables the snapshot holds.
	Tables int
	// SchemaUnavailable is how many of them have no usable schema.
	SchemaUnavailable int
	// Skipped is how many registrations the scan skipped as malformed.
	Skipped int
}

// Snapshot is an immutable view of every registered table and its schema,
// sorted by (tenant, namespace, table) and indexed per tenant. Names and
// schemas in one snapshot come from one scan. Safe for concurrent use.
type Snapshot struct {
	// Generation grows with each snapshot published.
	Generation uint64
	// CreatedAt is when the snapshot was built (UTC).
	CreatedAt time.Time
	Counts    Counts

	tables  []Table
	tenants map[string][2]int // tenant -> [lo, hi) in tables
}

// Schema reasons for unavailability.
const (
	SchemaMissing     = "registered without a schema"
	SchemaUndecodable = "stored schema bytes do not decode"
)

// BuildSnapshot makes a snapshot from one scan. Each schema is decoded to
// check it (in parallel); a table without schema bytes, or whose bytes do not
// decode, is kept and marked schema-unavailable.
func BuildSnapshot(res ScanResult, generation uint64, createdAt time.Time) *Snapshot {
	tables := make([]Table, len(res.Tables))
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), max(1, len(tables)/256))
	chunk := (len(tables) + workers - 1) / max(workers, 1)
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(tables))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				tables[i] = makeTable(res.Tables[i])
			}
		})
	}
	wg.Wait()
	return newSnapshot(tables, generation, createdAt, res.Skipped)
}

func makeTable(st ScannedTable) Table { return tableOf(st.Ref, st.Registration, nil) }

// newSnapshot sorts tables, indexes them and counts.
func newSnapshot(tables []Table, generation uint64, createdAt time.Time, skipped int) *Snapshot {
	slices.SortFunc(tables, func(a, b Table) int { return a.Ref.Compare(b.Ref) })
	s := &Snapshot{
		Generation: generation,
		CreatedAt:  createdAt.UTC(),
		tables:     tables,
		tenants:    make(map[string][2]int),
	}
	s.Counts = Counts{Tables: len(tables), Skipped: skipped}
	for i := 0; i < len(tables); {
		j := i
		for j < len(tables) && tables[j].Ref.Tenant == tables[i].Ref.Tenant {
			if !tables[j].HasSchema() {
				s.Counts.SchemaUnavailable++
			}
			j++
		}
		s.tenants[tables[i].Ref.Tenant] = [2]int{i, j}
		i = j
	}
	return s
}

// Tables returns every table in order. The slice is shared: do not modify it.
func (s *Snapshot) Tables() []Table { return s.tables }

// Tenant returns the tenant's tables in order (nil for an unknown tenant).
// The slice is shared: do not modify it.
func (s *Snapshot) Tenant(tenant string) []Table {
	span, ok := s.tenants[tenant]
	if !ok {
		return nil
	}
	return s.tables[span[0]:span[1]:span[1]]
}

// Tenants returns the tenants that have tables, sorted.
func (s *Snapshot) Tenants() []string {
	out := make([]string, 0, len(s.tenants))
	for t := range s.tenants {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Refresh scans store once and builds a snapshot of the given generation.
func Refresh(ctx context.Context, store metastore.Store, generation uint64, now time.Time) (*Snapshot, ScanResult, error) {
	res, err := ScanTables(ctx, store)
	if err != nil {
		return nil, ScanResult{}, err
	}
	return BuildSnapshot(res, generation, now), res, nil
}
