package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// ApplyOptions qualify Apply.
type ApplyOptions struct {
	// Generation and CreatedAt go into the new blob's header; a tenant whose
	// segment changed gets them as its own generation and change time.
	// CreatedAt is also the time at which expired tombstones are left out
	// of the tenants written again.
	Generation uint64
	CreatedAt  time.Time
	// HistoryVersions is as BuildOptions.HistoryVersions: how many
	// versions of a registration the catalog keeps.
	HistoryVersions int
}

// Applied is what one Apply read and wrote.
type Applied struct {
	// Written is the new blob: its manifest and the segments written again
	// (Written.Blob is its one-file form when base held every segment).
	Written *snapshot.Written
	// Tenants is how many tenants' segments were written again; Reads how
	// many keys were read (each registration, tombstone and Iceberg state
	// key, each such tenant's settings item once, the state key of
	// each row new in the batch, and the version records read for rows'
	// earlier versions); Fetched how many segments base did not hold and
	// fetched.
	Tenants, Reads, Fetched int
	// Writes is how many writes of registrations the batch accounts for,
	// none of them in base: per table added, its version (its registration
	// and updates since); per table updated, the versions it moved by; per
	// table removed or replaced by another registration, one; per
	// settings key whose tenant's settings are valid and differ from the
	// ones its segment in base carries, one (catalog.UpdateTenantSettings
	// counts each write it makes; a tenant base does not hold counts none,
	// as the scan that left it out may have counted the write already, and
	// settings gone or refused none, as the catalog writes neither); per
	// Iceberg state key whose state its table's row gains or sees change,
	// one (catalog.PutIcebergState counts each write it makes; a state
	// taken away counts none: the drop that deleted it is counted by its
	// registration's key).
	// Tombstone keys account for none (the drop that wrote one is counted
	// by its registration's key).
	Writes int
	// Changes are the changes the batch brought into the snapshot, one
	// per table whose row it added, replaced or removed, and per new
	// tombstone (a drop), in key order: what refresh announces once the
	// blob is published. A settings change is none (not a table's).
	Changes []Change
}

// Change is one change Apply brought into the snapshot.
type Change struct {
	Ref catalog.TableRef
	// Op is create, update or undrop (the registration's Op; create or
	// update for one written before lake recorded it) or drop.
	Op         string
	Version    int64
	CreationID string
	By         string
	At         time.Time
}

// Apply returns base with the entries at keys read again from store (one
// strongly consistent Get each, never trusting what a change feed said of
// them). A registration key (catalog.KeyPrefix) that holds a registration
// now replaces or adds that table, one that holds none (dropped) or no
// valid registration removes it; a tombstone key (catalog.TombstonePrefix)
// adds, replaces or removes that tombstone the same way (an expired one is
// removed); a table's Iceberg state key (catalog.IcebergPrefix) gives its
// table's row that state, or takes it away (none there, refused by
// catalog.DecodeIcebergState, or synced against another registration: of
// another creation id), and is ignored when the table has no row; a
// tenant settings key (catalog.TenantPrefix) marks its tenant changed and
// is read with the tenant's other keys. Other keys are ignored.
//
// A row written again from its registration key keeps the Iceberg state
// its row had when the registration is the same one (same creation id):
// every change of the state writes the state key, which reaches refresh
// on its own, and discovery serves a state only while the row's version
// is the one it was synced against, so an update needs no read of it. A
// new row (or one of another registration of the name) reads its state
// key, once, unless the batch holds that key: the stream does not order
// one item's change after another's, so a state synced right after a
// register may reach refresh before the registration does. The state keys
// are applied after every registration key of the batch. A state change
// alone is no table change (no Changes entry, the row keeps its
// Published) but rewrites its tenant's segment. Only the tenants the keys name are decoded and written again,
// their segments read with base.Tenant (a manifest alone fetches only
// theirs, with its Fetch); every other tenant is carried over with
// Writer.CopyTenant (by reference when base does not hold its bytes).
// Each tenant written again has its settings item
// (catalog.TenantKey(tenant)) read once, with a Get as the other keys, and
// carries it as stored (none when there is none, or
// catalog.DecodeTenantSettings refuses it: fail closed), so a batch of a
// tenant's table keys refreshes its settings too, and a settings change
// alone rewrites its tenant's segment and no other (no Changes).
// Counts.Skipped is carried from base: it is known only to a full scan.
//
// A row written again from its registration key carries its
// registration's kept versions below its own that have a schema
// (snapshot.Table.Earlier, as Build gives them): the row's list in base,
// and its row in base, when base holds an older version of the same
// registration (with a Get of each version record between the two: none
// for one update), the list as it was when base holds the same version,
// else a Get of each kept version record (a new row at version 1 reads
// none). A version record the catalog deleted since base's list was made
// (its HistoryMaxAge) stays in the list until the next full scan.
//
// The new blob's change marker keeps base's full-scan time and adds the
// batch's Applied.Writes to base's count, never the live counter (see
// catalog.ReadChanges).
func Apply(ctx context.Context, store metastore.Store, base *snapshot.Reader, keys []string, opts ApplyOptions) (Applied, error) {
	var out Applied
	type rows struct {
		tables     map[[2]string]*snapshot.Table
		tombstones map[[3]string]*snapshot.Tombstone
		// settings are base's (nil when none) until the tenant's item is
		// read, then the item's; inBase says base holds the tenant.
		settings []byte
		inBase   bool
	}
	changed := map[string]*rows{}
	settingsKeys := map[string]bool{} // the tenants whose settings key the batch holds
	var icebergKeys []string          // read after the registrations, which they attach to
	inBatch := map[string]bool{}
	var dropped []Change // rows removed: a drop, also without its tombstone in the batch
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	for _, key := range keys {
		inBatch[key] = true
	}
	for _, key := range keys {
		tenant, ok := tenantOfKey(key)
		if !ok {
			continue
		}
		r, ok := changed[tenant]
		if !ok {
			r = &rows{tables: map[[2]string]*snapshot.Table{}, tombstones: map[[3]string]*snapshot.Tombstone{}}
			if _, r.inBase = base.Entry(tenant); r.inBase {
				_, held := base.Stored(tenant)
				seg, err := base.Tenant(ctx, tenant)
				if err != nil {
					return out, err
				}
				if held != nil {
					out.Fetched++
				}
				for i := range seg.NumTables() {
					t := seg.Table(i)
					r.tables[[2]string{t.Namespace, t.Name}] = &t
				}
				for i := range seg.Tombstones.Name.Len() {
					d := seg.Tombstone(i)
					r.tombstones[[3]string{d.Namespace, d.Name, d.CreationID}] = &d
				}
				r.settings = seg.Settings() // not the arrays': kept past Release
				seg.Release()
			}
			changed[tenant] = r
		}
		if strings.HasPrefix(key, catalog.TenantPrefix) {
			settingsKeys[tenant] = true // read below, once per tenant
			continue
		}
		if strings.HasPrefix(key, catalog.IcebergPrefix) {
			icebergKeys = append(icebergKeys, key) // read below, once its row is known
			continue
		}
		raw, err := store.Get(ctx, key)
		if err != nil && !errors.Is(err, metastore.ErrNotFound) {
			return out, fmt.Errorf("scan: read %s: %w", key, err)
		}
		out.Reads++
		if stripped, ok := strings.CutPrefix(key, catalog.TombstonePrefix); ok {
			var d catalog.Tombstone
			if err == nil {
				d, err = catalog.DecodeTombstone(stripped, raw)
			}
			i := strings.LastIndexByte(stripped, '/')
			ref, perr := catalog.ParseKey(stripped[:max(i, 0)])
			if perr != nil {
				continue // never a tombstone's key
			}
			k := [3]string{ref.Namespace, ref.Name, stripped[i+1:]}
			if err != nil || d.Expired(opts.CreatedAt) {
				delete(r.tombstones, k)
				continue
			}
			if _, had := r.tombstones[k]; !had {
				out.Changes = append(out.Changes, Change{Ref: ref, Op: catalog.OpDrop, Version: d.Registration.Version(),
					CreationID: d.Registration.CreationID(), By: d.DroppedBy, At: d.DroppedAt})
			}
			row := (*rowCache)(nil).tombstone(d)
			if before, had := r.tombstones[k]; had && sameTombstone(before, &row) {
				row.Published = before.Published
			}
			r.tombstones[k] = &row
			continue
		}
		ref, perr := catalog.ParseKey(strings.TrimPrefix(key, catalog.KeyPrefix))
		if perr != nil {
			continue // never a registration's key
		}
		k := [2]string{ref.Namespace, ref.Name}
		before, had := r.tables[k]
		var reg catalog.Registration
		if err == nil {
			reg, err = catalog.DecodeRegistration(raw)
		}
		if err != nil { // dropped, or no valid registration
			if had {
				out.Writes++
				dropped = append(dropped, Change{Ref: ref, Op: catalog.OpDrop, Version: before.Version, At: opts.CreatedAt})
			}
			delete(r.tables, k)
			continue
		}
		t := (*rowCache)(nil).table(ref, reg)
		switch stateKey := catalog.IcebergPrefix + ref.String(); {
		case had && before.CreationID == t.CreationID:
			t.IcebergState = before.IcebergState // the same registration's: any change to it has a key of its own
		case inBatch[stateKey] || t.CreationID == "":
			// Read below; or a registration no state can be of.
		default:
			// A new row, or another registration of the name: its state
			// may have been written before this key's batch.
			st, err := readStateKey(ctx, store, stateKey)
			if err != nil {
				return out, err
			}
			out.Reads++
			t.IcebergState = st.of(t.CreationID)
		}
		if t.Earlier, err = earlierAfter(ctx, store, ref, &t, before, had, keptVersions(opts.HistoryVersions), &out.Reads); err != nil {
			return out, err
		}
		if n := writesSince(before, had, &t); n > 0 {
			out.Writes += n
			op := reg.Op()
			if op == "" {
				op = catalog.OpUpdate
				if !had {
					op = catalog.OpCreate
				}
			}
			out.Changes = append(out.Changes, Change{Ref: ref, Op: op, Version: reg.Version(), CreationID: reg.CreationID(), By: reg.UpdatedBy(), At: reg.UpdatedAt()})
		} else {
			t.Published = before.Published // unchanged: not a change again
		}
		r.tables[k] = &t
	}
	// The Iceberg states, once every registration of the batch is in its
	// row: a state attaches to its table's row when it was synced against
	// that registration (its creation id), and a row whose state is gone,
	// refused or of another registration carries none. A state whose table
	// has no row is left out.
	for _, key := range icebergKeys {
		tenant, _ := tenantOfKey(key)
		r := changed[tenant]
		ref, perr := catalog.ParseKey(strings.TrimPrefix(key, catalog.IcebergPrefix))
		if perr != nil {
			continue // never a state's key
		}
		st, err := readStateKey(ctx, store, key)
		if err != nil {
			return out, err
		}
		out.Reads++
		t, ok := r.tables[[2]string{ref.Namespace, ref.Name}]
		if !ok {
			continue
		}
		now := st.of(t.CreationID)
		if now != nil && !bytes.Equal(now, t.IcebergState) {
			out.Writes++
		}
		t.IcebergState = now
	}
	// A removed row whose tombstone the batch did not carry (retention
	// off, or the tombstone in another batch) is a drop all the same.
	for _, d := range dropped {
		if !slices.ContainsFunc(out.Changes, func(c Change) bool { return c.Op == catalog.OpDrop && c.Ref == d.Ref }) {
			out.Changes = append(out.Changes, d)
		}
	}
	// Each tenant written again carries its settings as they are now.
	for _, tenant := range slices.Sorted(mapKeys(changed)) {
		r := changed[tenant]
		raw, err := store.Get(ctx, catalog.TenantKey(tenant))
		if err != nil && !errors.Is(err, metastore.ErrNotFound) {
			return out, fmt.Errorf("scan: read %s: %w", catalog.TenantKey(tenant), err)
		}
		out.Reads++
		var now []byte
		if err == nil {
			if now, err = tenantSettings(tenant, raw); err != nil || len(now) == 0 {
				now = nil // refused, or empty: none
			}
		}
		if settingsKeys[tenant] && r.inBase && now != nil && !bytes.Equal(now, r.settings) {
			out.Writes++
		}
		r.settings = now
	}
	h := base.Header()
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: opts.Generation, CreatedAt: opts.CreatedAt, Skipped: h.Counts.Skipped,
		Marker: snapshot.Marker{Changes: h.Marker.Changes + uint64(out.Writes), FullScanAt: h.Marker.FullScanAt}, Previous: base.Entries()})
	if err != nil {
		return out, err
	}
	names := slices.Collect(mapKeys(changed))
	for _, e := range base.Entries() {
		names = append(names, e.Tenant)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		r, ok := changed[name]
		if !ok {
			if err := w.CopyTenant(base, name); err != nil {
				return out, err
			}
			continue
		}
		out.Tenants++
		tables := make([]snapshot.Table, 0, len(r.tables))
		for _, t := range r.tables {
			tables = append(tables, *t)
		}
		tombstones := make([]snapshot.Tombstone, 0, len(r.tombstones))
		for _, d := range r.tombstones {
			tombstones = append(tombstones, *d)
		}
		if err := w.AddTenantWithSettings(name, tables, tombstones, r.settings); err != nil {
			return out, err
		}
	}
	out.Written, err = w.Finish()
	return out, err
}

// writesSince is how many writes took a table from its row in a blob
// (before; had false when the blob has none) to its registration now (t),
// counting only writes whose results the blob cannot hold: every write of
// a registration (created, then updated, each raising the version by one)
// the blob has no row of; the versions moved by a registration the blob
// holds an older version of (same creation time: the same registration);
// one for any other change. It is 0 when the row is unchanged.
func writesSince(before *snapshot.Table, had bool, t *snapshot.Table) int {
	switch {
	case !had:
		return int(max(t.Version, 1))
	case sameRow(before, t):
		return 0
	case before.CreatedAt.UnixMicro() == t.CreatedAt.UnixMicro() && t.Version > before.Version:
		return int(t.Version - before.Version)
	}
	return 1
}

// readStateKey reads a table's Iceberg state item at key: none (no error)
// when there is none or catalog.DecodeIcebergState refuses it.
func readStateKey(ctx context.Context, store metastore.Store, key string) (icebergState, error) {
	raw, err := store.Get(ctx, key)
	switch {
	case errors.Is(err, metastore.ErrNotFound):
		return icebergState{}, nil
	case err != nil:
		return icebergState{}, fmt.Errorf("scan: read %s: %w", key, err)
	}
	_, st, err := readIcebergState(strings.TrimPrefix(key, catalog.IcebergPrefix), raw)
	if err != nil {
		return icebergState{}, nil
	}
	return st, nil
}

// sameRow reports whether two rows of one table encode the same in a
// blob (times at the blob's microseconds; Published aside), their creation
// ids and field ids included.
func sameRow(a, b *snapshot.Table) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.Location == b.Location && a.TableType == b.TableType &&
		a.Version == b.Version && a.CreatedAt.UnixMicro() == b.CreatedAt.UnixMicro() &&
		a.UpdatedAt.UnixMicro() == b.UpdatedAt.UnixMicro() && bytes.Equal(a.SchemaIPC, b.SchemaIPC) &&
		(a.SchemaIPC == nil) == (b.SchemaIPC == nil) && a.Description == b.Description &&
		maps.Equal(a.Properties, b.Properties) && a.UpdatedBy == b.UpdatedBy && a.Op == b.Op &&
		a.CreationID == b.CreationID && slices.Equal(a.FieldIDs, b.FieldIDs) && a.LastColumnID == b.LastColumnID
}

// sameTombstone reports whether two tombstones of one registration encode
// the same in a blob (Published aside).
func sameTombstone(a, b *snapshot.Tombstone) bool {
	return a.Version == b.Version && a.DroppedAt.UnixMicro() == b.DroppedAt.UnixMicro() && a.DroppedBy == b.DroppedBy &&
		a.ExpiresAt.IsZero() == b.ExpiresAt.IsZero() && (a.ExpiresAt.IsZero() || a.ExpiresAt.UnixMicro() == b.ExpiresAt.UnixMicro())
}
