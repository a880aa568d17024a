package scan

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// BuildOptions qualify Build.
type BuildOptions struct {
	// Generation and CreatedAt go into the blob's header; a changed tenant
	// gets them as its own generation and change time. CreatedAt is also
	// the time at which expired tombstones are left out.
	Generation uint64
	CreatedAt  time.Time
	// Previous is the index of the blob this one replaces: a tenant whose
	// segment is unchanged keeps its Generation and ChangedAt. Default
	// Base's.
	Previous []snapshot.Entry
	// Base is the blob this one replaces. A row the scan finds as Base
	// holds it keeps the generation Base says it was published in
	// (Table.Published, Tombstone.Published), so a full scan renumbers no
	// unchanged row of the change feed; every other row is published at
	// Generation. A tenant's segment is read with Base.Tenant (fetched
	// with Base's Fetch when Base is a manifest alone), one tenant at a
	// time. Without Base, or for a tenant whose segment is missing (a
	// fetch error wrapping ErrSegmentMissing), not held or failing its
	// checks, the rows are all published at Generation: a change feed
	// follower is given them again, never fewer.
	Base *snapshot.Reader
	// Marker is the change marker the blob records.
	Marker snapshot.Marker
	// HistoryVersions is how many versions of a registration the catalog
	// keeps (catalog.Options.HistoryVersions): each row carries the kept
	// versions below its own, at most HistoryVersions-1 of them. Zero is
	// catalog.DefaultHistoryVersions; negative keeps none (the version
	// records are passed over).
	HistoryVersions int
}

// ErrSegmentMissing is what Base's Fetch wraps when the store holds no
// segment at the entry's address.
var ErrSegmentMissing = errors.New("scan: segment missing")

// Built is what one Build read and wrote.
type Built struct {
	// Written is the blob: its manifest and every segment (Written.Blob is
	// its one-file form).
	Written *snapshot.Written
	// Counts are the blob's; Tombstones how many tombstones it holds.
	Counts     catalog.Counts
	Tombstones int
	// Stats is what the metastore reported of its one pass over the
	// store (every item, the ones Build does not read among them).
	Stats metastore.ScanStats
	// SkippedKeys holds some of the malformed entries' keys (up to 16,
	// sorted), for the log.
	SkippedKeys []string
	// DistinctSchemas is how many distinct schema byte strings the tables
	// hold (each is checked once and kept once).
	DistinctSchemas int
}

// maxSkippedKeys bounds Built.SkippedKeys.
const maxSkippedKeys = 16

// Build reads the registrations (catalog.KeyPrefix), the tombstones
// (catalog.TombstonePrefix), the tenant settings (catalog.TenantPrefix),
// the tables' Iceberg states (catalog.IcebergPrefix) and the version
// records (catalog.VersionPrefix) in one pass over the store (one
// metastore.Visit of every key: on DynamoDB one paginated Scan, which
// reads the whole table whatever the prefix) and writes a blob of them;
// items under other prefixes are passed over. Each entry is decoded into its row
// as the scan hands it over and then dropped; identical schema bytes are
// checked and kept once. A malformed key or value is skipped and counted
// (Counts.Skipped), never fatal; a table whose schema bytes are missing or
// do not decode is kept, marked schema-unavailable; an expired tombstone
// is left out. A tenant's settings item goes into its segment as stored
// (snapshot.Writer.AddTenantWithSettings); one catalog.DecodeTenantSettings
// refuses is skipped and counted as well, and its tenant's segment carries
// none (fail closed: nothing may be vended for it). A tenant with settings
// but neither tables nor tombstones gets no segment: there is nothing of
// it to serve or to vend for. Each table's Iceberg state item
// (catalog.IcebergPrefix) goes into its row as stored
// (snapshot.Table.IcebergState); one catalog.DecodeIcebergState refuses is
// skipped and counted, and one whose table has no row, or a row of
// another creation id (a stale state of a table dropped or registered
// again), is left out, uncounted.
//
// The version records are grouped by registration: each row carries its registration's kept
// versions below its own that have a schema (snapshot.Table.Earlier),
// oldest first, at most HistoryVersions-1 of them, each schema checked
// and kept once with the others (with HistoryVersions negative, or 1,
// none). A record that is malformed, of another registration of the name
// or without a schema is left out, uncounted; one past the catalog's
// HistoryMaxAge but not yet deleted is carried (Catalog.History would
// skip it).
func Build(ctx context.Context, store metastore.Store, opts BuildOptions) (Built, error) {
	var out Built
	tenants := map[string]*tenantRows{}
	rowsOf := func(tenant string) *tenantRows {
		r, ok := tenants[tenant]
		if !ok {
			r = &tenantRows{}
			tenants[tenant] = r
		}
		return r
	}
	skip := func(key string) {
		out.Counts.Skipped++
		if len(out.SkippedKeys) < maxSkippedKeys {
			out.SkippedKeys = append(out.SkippedKeys, key)
		}
	}
	rc := newRowCache()
	settings := map[string][]byte{}
	states := map[catalog.TableRef]icebergState{}
	keep := keptVersions(opts.HistoryVersions)
	versions := map[registration][]snapshot.Earlier{}
	registrations := func(e metastore.Entry) {
		ref, err := catalog.ParseKey(e.Key)
		if err != nil {
			skip(catalog.KeyPrefix + e.Key)
			return
		}
		reg, err := catalog.DecodeRegistration(e.Value)
		if err != nil {
			skip(catalog.KeyPrefix + e.Key)
			return
		}
		r := rowsOf(ref.Tenant)
		r.tables = append(r.tables, rc.table(ref, reg))
	}
	tombstones := func(e metastore.Entry) {
		d, err := catalog.DecodeTombstone(e.Key, e.Value)
		if err != nil {
			skip(catalog.TombstonePrefix + e.Key)
			return
		}
		if d.Expired(opts.CreatedAt) {
			return
		}
		r := rowsOf(d.Ref.Tenant)
		r.tombstones = append(r.tombstones, rc.tombstone(d))
	}
	tenantItems := func(e metastore.Entry) {
		raw, err := tenantSettings(e.Key, e.Value)
		if err != nil {
			skip(catalog.TenantPrefix + e.Key)
			return
		}
		settings[e.Key] = raw
	}
	icebergStates := func(e metastore.Entry) {
		ref, st, err := readIcebergState(e.Key, e.Value)
		if err != nil {
			skip(catalog.IcebergPrefix + e.Key)
			return
		}
		states[ref] = st
	}
	versionRecords := func(e metastore.Entry) {
		if keep < 2 {
			return
		}
		ref, creationID, v, ok := catalog.ParseVersionKey(e.Key)
		if !ok {
			return
		}
		reg, err := catalog.DecodeRegistration(e.Value)
		if err != nil {
			return
		}
		if ev, ok := rc.earlier(v, reg); ok {
			k := registration{ref, creationID}
			versions[k] = append(versions[k], ev)
		}
	}
	// One pass over the store: on DynamoDB a Scan reads the whole table
	// whatever the prefix, so a pass per prefix would read it once each.
	parts := []struct {
		prefix string
		visit  func(metastore.Entry)
	}{{catalog.KeyPrefix, registrations}, {catalog.TombstonePrefix, tombstones}, {catalog.TenantPrefix, tenantItems},
		{catalog.IcebergPrefix, icebergStates}, {catalog.VersionPrefix, versionRecords}}
	stats, err := metastore.Visit(ctx, store, "", func(e metastore.Entry) error {
		for _, p := range parts {
			if rest, ok := strings.CutPrefix(e.Key, p.prefix); ok {
				p.visit(metastore.Entry{Key: rest, Value: e.Value})
				return nil
			}
		}
		return nil
	})
	addStats(&out.Stats, stats)
	if err != nil {
		return out, fmt.Errorf("scan: the catalog: %w", err)
	}
	slices.Sort(out.SkippedKeys)
	out.DistinctSchemas = len(rc.schemas)
	rc = nil
	prev := opts.Previous
	if prev == nil && opts.Base != nil {
		prev = opts.Base.Entries()
	}
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: opts.Generation, CreatedAt: opts.CreatedAt, Marker: opts.Marker,
		Skipped: out.Counts.Skipped, Previous: prev})
	if err != nil {
		return out, err
	}
	for _, name := range slices.Sorted(mapKeys(tenants)) {
		r := tenants[name]
		if len(states) > 0 {
			for i := range r.tables {
				t := &r.tables[i]
				ref := catalog.TableRef{Tenant: name, Namespace: t.Namespace, Name: t.Name}
				t.IcebergState = states[ref].of(t.CreationID)
				delete(states, ref)
			}
		}
		if len(versions) > 0 {
			for i := range r.tables {
				t := &r.tables[i]
				if t.CreationID == "" {
					continue
				}
				k := registration{catalog.TableRef{Tenant: name, Namespace: t.Namespace, Name: t.Name}, t.CreationID}
				es := versions[k]
				slices.SortFunc(es, func(a, b snapshot.Earlier) int { return cmp.Compare(a.Version, b.Version) })
				t.Earlier = keptBelow(es, t.Version, keep)
				delete(versions, k)
			}
		}
		if opts.Base != nil {
			if err := carry(ctx, opts.Base, name, r.tables, r.tombstones); err != nil {
				return out, err
			}
		}
		if err := w.AddTenantWithSettings(name, r.tables, r.tombstones, settings[name]); err != nil {
			return out, err
		}
		out.Tombstones += len(r.tombstones)
		delete(tenants, name) // its rows can go once its segment is written
	}
	out.Written, err = w.Finish()
	if err != nil {
		return out, err
	}
	out.Counts = out.Written.Header.Counts
	return out, nil
}

// carry gives each of a tenant's rows that base holds unchanged the
// generation base published it in, reading the tenant's segment with
// base.Tenant (held or fetched; decoded, checked and released: one segment
// in memory at a time). A segment that is missing, not held or fails its
// checks carries nothing. It sorts tables and tombstones in place.
func carry(ctx context.Context, base *snapshot.Reader, tenant string, tables []snapshot.Table, tombstones []snapshot.Tombstone) error {
	if _, ok := base.Entry(tenant); !ok {
		return nil
	}
	seg, err := base.Tenant(ctx, tenant)
	switch {
	case errors.Is(err, ErrSegmentMissing) || errors.Is(err, snapshot.ErrCorrupt) || errors.Is(err, snapshot.ErrDetached):
		return nil
	case err != nil:
		return err
	}
	defer seg.Release()
	slices.SortFunc(tables, func(a, b snapshot.Table) int { return compareTables(&a, &b) })
	slices.SortFunc(tombstones, func(a, b snapshot.Tombstone) int { return compareTombstones(&a, &b) })
	c, j := seg.Tables, 0
	for i := range tables {
		t := &tables[i]
		for j < c.Name.Len() && cmp.Or(strings.Compare(c.Namespace.Value(j), t.Namespace), strings.Compare(c.Name.Value(j), t.Name)) < 0 {
			j++
		}
		if j < c.Name.Len() && c.Namespace.Value(j) == t.Namespace && c.Name.Value(j) == t.Name && holdsTable(seg, j, t) {
			t.Published = c.Published.Value(j)
		}
	}
	d, j := seg.Tombstones, 0
	for i := range tombstones {
		t := &tombstones[i]
		for j < d.Name.Len() && cmp.Or(strings.Compare(d.Namespace.Value(j), t.Namespace), strings.Compare(d.Name.Value(j), t.Name),
			strings.Compare(d.CreationID.Value(j), t.CreationID)) < 0 {
			j++
		}
		if j < d.Name.Len() && d.Namespace.Value(j) == t.Namespace && d.Name.Value(j) == t.Name && d.CreationID.Value(j) == t.CreationID &&
			holdsTombstone(seg, j, t) {
			t.Published = d.Published.Value(j)
		}
	}
	return nil
}

// holdsTable reports whether row i of seg holds t as a blob encodes it
// (times at the blob's microseconds; its name and publication aside):
// sameRow against a segment's row, read in place. A row of a segment
// before version 8 has no creation id or field ids, so it holds no table
// that has them.
func holdsTable(seg *snapshot.Segment, i int, t *snapshot.Table) bool {
	c := seg.Tables
	if c.TableType.Value(i) != t.TableType || c.Location.Value(i) != t.Location || c.Version.Value(i) != t.Version ||
		int64(c.CreatedAt.Value(i)) != t.CreatedAt.UnixMicro() || int64(c.UpdatedAt.Value(i)) != t.UpdatedAt.UnixMicro() ||
		c.Description.Value(i) != t.Description || c.UpdatedBy.Value(i) != t.UpdatedBy || c.Op.Value(i) != t.Op ||
		c.SchemaRef.IsNull(i) != (t.SchemaIPC == nil) || !bytes.Equal(seg.Schema(i), t.SchemaIPC) ||
		c.CreationID.Value(i) != t.CreationID {
		return false
	}
	if ids, last := c.FieldIDsOf(i); !slices.Equal(ids, t.FieldIDs) || last != t.LastColumnID {
		return false
	}
	m := c.Properties
	if m.IsNull(i) {
		return len(t.Properties) == 0
	}
	lo, hi := m.ValueOffsets(i)
	if int(hi-lo) != len(t.Properties) {
		return false
	}
	keys, items := m.Keys().(*array.String), m.Items().(*array.String)
	for j := lo; j < hi; j++ {
		if v, ok := t.Properties[keys.Value(int(j))]; !ok || v != items.Value(int(j)) {
			return false
		}
	}
	return true
}

// holdsTombstone reports whether tombstone row i of seg holds d as a blob
// encodes it (its name, creation id and publication aside).
func holdsTombstone(seg *snapshot.Segment, i int, d *snapshot.Tombstone) bool {
	c := seg.Tombstones
	return c.Version.Value(i) == d.Version && int64(c.DroppedAt.Value(i)) == d.DroppedAt.UnixMicro() &&
		c.DroppedBy.Value(i) == d.DroppedBy && c.ExpiresAt.IsNull(i) == d.ExpiresAt.IsZero() &&
		(d.ExpiresAt.IsZero() || int64(c.ExpiresAt.Value(i)) == d.ExpiresAt.UnixMicro())
}

// compareTables orders tables by (namespace, name), as a segment holds
// them.
func compareTables(a, b *snapshot.Table) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// compareTombstones orders tombstones by (namespace, name, creation id),
// as a segment holds them.
func compareTombstones(a, b *snapshot.Tombstone) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.CreationID, b.CreationID))
}

func addStats(to *metastore.ScanStats, s metastore.ScanStats) {
	to.Pages += s.Pages
	to.Scanned += s.Scanned
	to.Kept += s.Kept
	to.OutsidePrefix += s.OutsidePrefix
	to.Malformed += s.Malformed
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// tenantRows are one tenant's rows while a blob is built.
type tenantRows struct {
	tables     []snapshot.Table
	tombstones []snapshot.Tombstone
}

// rowCache makes rows of registrations, keeping each distinct string,
// schema and list of field ids once and checking each distinct schema
// once.
type rowCache struct {
	strs    map[string]string
	schemas map[string][]byte // nil value: does not decode
	ids     map[string][]int32
	key     []byte // fieldIDs' scratch
}

func newRowCache() *rowCache {
	return &rowCache{strs: map[string]string{}, schemas: map[string][]byte{}, ids: map[string][]int32{}}
}

func (c *rowCache) intern(s string) string {
	if c == nil {
		return s
	}
	if v, ok := c.strs[s]; ok {
		return v
	}
	c.strs[s] = s
	return s
}

// table is a registration's row. Its schema bytes are kept when they
// decode (checked once per distinct bytes), else the schema is unavailable.
// It carries the registration's creation id and, with a schema kept, its
// Iceberg field ids (catalog.Registration.FieldIDs: those recorded, or the
// fresh ones of a registration made before ids were recorded); a table
// whose schema is unavailable has none.
func (c *rowCache) table(ref catalog.TableRef, reg catalog.Registration) snapshot.Table {
	t := snapshot.Table{Namespace: c.intern(ref.Namespace), Name: ref.Name, TableType: c.intern(reg.TableType()),
		Location: reg.Location(), Version: reg.Version(), CreatedAt: reg.CreatedAt(), UpdatedAt: reg.UpdatedAt(),
		Description: reg.Description(), Properties: reg.Properties(), UpdatedBy: c.intern(reg.UpdatedBy()), Op: c.intern(reg.Op()),
		CreationID: reg.CreationID()}
	if !reg.HasSchema() {
		return t
	}
	t.SchemaIPC = c.schema(reg.SchemaIPC())
	if t.SchemaIPC != nil {
		if ids, ok := reg.FieldIDs(); ok {
			t.FieldIDs, t.LastColumnID = c.fieldIDs(ids.IDs), ids.LastColumnID
		}
	}
	return t
}

// schema returns raw when it decodes (checked once per distinct bytes),
// the bytes kept first when it was checked before; nil when it does not.
func (c *rowCache) schema(raw []byte) []byte {
	if c == nil {
		if _, err := catalog.DecodeSchema(raw); err != nil {
			return nil
		}
		return raw
	}
	kept, ok := c.schemas[string(raw)]
	if !ok {
		if _, err := catalog.DecodeSchema(raw); err == nil {
			kept = raw
		}
		c.schemas[string(raw)] = kept
	}
	return kept
}

// earlier is reg, the registration of a version record at version, as an
// earlier version of a row: its schema (checked as a row's) and field ids
// (catalog.Registration.FieldIDs); false when it has no schema that
// decodes.
func (c *rowCache) earlier(version int64, reg catalog.Registration) (snapshot.Earlier, bool) {
	if !reg.HasSchema() {
		return snapshot.Earlier{}, false
	}
	raw := c.schema(reg.SchemaIPC())
	if raw == nil {
		return snapshot.Earlier{}, false
	}
	ids, ok := reg.FieldIDs()
	if !ok {
		return snapshot.Earlier{}, false
	}
	return snapshot.Earlier{Version: version, SchemaIPC: raw, FieldIDs: c.fieldIDs(ids.IDs), LastColumnID: ids.LastColumnID}, true
}

// fieldIDs returns ids, or an equal list it returned before (most tables
// of a tenant have ids 1 to N of a few N).
func (c *rowCache) fieldIDs(ids []int32) []int32 {
	if c == nil || len(ids) == 0 {
		return ids
	}
	c.key = c.key[:0]
	for _, id := range ids {
		c.key = binary.LittleEndian.AppendUint32(c.key, uint32(id))
	}
	if kept, ok := c.ids[string(c.key)]; ok {
		return kept
	}
	c.ids[string(c.key)] = ids
	return ids
}

// tombstone is a tombstone's row.
func (c *rowCache) tombstone(d catalog.Tombstone) snapshot.Tombstone {
	return snapshot.Tombstone{Namespace: c.intern(d.Ref.Namespace), Name: d.Ref.Name, Version: d.Registration.Version(),
		CreationID: d.Registration.CreationID(), DroppedAt: d.DroppedAt, DroppedBy: c.intern(d.DroppedBy), ExpiresAt: d.ExpiresAt}
}

// tenantSettings checks a settings item (tenant: its key after
// catalog.TenantPrefix) and returns the bytes a segment carries: the item
// as stored. An invalid tenant name or an item catalog.DecodeTenantSettings
// refuses is an error: its tenant carries none.
func tenantSettings(tenant string, raw []byte) ([]byte, error) {
	if err := catalog.ValidateName("tenant", tenant); err != nil {
		return nil, err
	}
	if _, err := catalog.DecodeTenantSettings(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// icebergState is a table's Iceberg state item as a row carries it, and
// the creation id of the registration it was synced against.
type icebergState struct {
	raw        []byte
	creationID string
}

// of is the state a row of creation id creationID carries: the item's
// bytes when it was synced against that registration, else none.
func (s icebergState) of(creationID string) []byte {
	if s.raw == nil || creationID == "" || s.creationID != creationID {
		return nil
	}
	return s.raw
}

// readIcebergState checks an Iceberg state item (stripped: its key after
// catalog.IcebergPrefix) and returns its table and what a row carries of
// it: the item as stored. A key that names no table, or an item
// catalog.DecodeIcebergState refuses, is an error.
func readIcebergState(stripped string, raw []byte) (catalog.TableRef, icebergState, error) {
	ref, err := catalog.ParseKey(stripped)
	if err != nil {
		return ref, icebergState{}, err
	}
	st, err := catalog.DecodeIcebergState(raw)
	if err != nil {
		return ref, icebergState{}, err
	}
	return ref, icebergState{raw: raw, creationID: st.CreationID}, nil
}

// tenantOfKey returns the tenant a changed key belongs to: a registration's
// (catalog.KeyPrefix), a tombstone's (catalog.TombstonePrefix), a table's
// Iceberg state's (catalog.IcebergPrefix) or a tenant's settings'
// (catalog.TenantPrefix); false for any other key.
func tenantOfKey(key string) (string, bool) {
	if tenant, ok := strings.CutPrefix(key, catalog.TenantPrefix); ok {
		return tenant, catalog.ValidateName("tenant", tenant) == nil
	}
	for _, p := range []string{catalog.KeyPrefix, catalog.TombstonePrefix, catalog.IcebergPrefix} {
		if rest, ok := strings.CutPrefix(key, p); ok {
			tenant, _, ok := strings.Cut(rest, "/")
			return tenant, ok && catalog.ValidateName("tenant", tenant) == nil
		}
	}
	return "", false
}

// Registered is one registration and the table it is registered as.
type Registered struct {
	Ref          catalog.TableRef
	Registration catalog.Registration
}

// WriteRegistrations writes a blob of registrations already in hand (in
// any order; a tool or a test that has them without a metastore), through
// a Writer as Build does, without their earlier versions (no history is
// at hand).
func WriteRegistrations(regs []Registered, opts snapshot.WriterOptions) (*snapshot.Written, error) {
	byTenant := map[string][]snapshot.Table{}
	rc := newRowCache()
	for _, r := range regs {
		byTenant[r.Ref.Tenant] = append(byTenant[r.Ref.Tenant], rc.table(r.Ref, r.Registration))
	}
	w, err := snapshot.NewWriter(opts)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(mapKeys(byTenant)) {
		if err := w.AddTenant(name, byTenant[name], nil); err != nil {
			return nil, err
		}
		delete(byTenant, name)
	}
	return w.Finish()
}
