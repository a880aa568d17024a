package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// ApplyOptions qualifies ApplyChanges.
type ApplyOptions struct {
	// Generation and CreatedAt go into the new blob's header; a tenant whose
	// tables changed gets them as its own generation and change time.
	Generation uint64
	CreatedAt  time.Time
}

// Applied is what one ApplyChanges read and wrote.
type Applied struct {
	// Blob is the new version 3 blob and Header its header.
	Blob   []byte
	Header BlobHeader
	// Tenants is how many tenants' segments were encoded again; Reads how
	// many registrations were read.
	Tenants, Reads int
	// Writes is how many writes the batch's changes account for, none of
	// them in base: per table added, its version (its registration and
	// updates since); per table updated, the versions it moved by; per
	// table removed or replaced by another registration, one.
	Writes int
}

// ApplyChanges returns base with the registrations at keys read again from
// store (one strongly consistent Get each, never trusting what a change
// feed said of them): a key that holds a registration now replaces or adds
// that table, a key that holds none (dropped) or no valid registration
// removes it. Keys outside KeyPrefix are ignored. Only the tenants the keys
// name are decoded and encoded again; every other tenant's compressed
// segment and index entry are carried over byte for byte. Counts of
// malformed registrations (Counts.Skipped) are carried from base: they are
// known only to a full scan.
//
// The new blob's change marker keeps base's full-scan time and adds to
// base's count of accounted writes those of the batch (Applied.Writes),
// never the live counter: changes.go says why that loses no write whose
// batch failed.
func ApplyChanges(ctx context.Context, store metastore.Store, base *Blob, keys []string, opts ApplyOptions) (Applied, error) {
	var out Applied
	changed := map[string]map[TableRef]*Table{}
	for _, key := range slices.Compact(slices.Sorted(slices.Values(keys))) {
		if !strings.HasPrefix(key, KeyPrefix) {
			continue
		}
		ref, err := ParseKey(strings.TrimPrefix(key, KeyPrefix))
		if err != nil {
			continue // never a registration's key: nothing to apply
		}
		rows, ok := changed[ref.Tenant]
		if !ok {
			rows = map[TableRef]*Table{}
			if _, in := base.Tenant(ref.Tenant); in {
				tables, err := base.TenantTables(ref.Tenant)
				if err != nil {
					return out, err
				}
				for i := range tables {
					rows[tables[i].Ref] = &tables[i]
				}
			}
			changed[ref.Tenant] = rows
		}
		out.Reads++
		before, had := rows[ref]
		raw, err := store.Get(ctx, key)
		if err != nil && !errors.Is(err, metastore.ErrNotFound) {
			return out, during("read", key, err)
		}
		var reg Registration
		if err == nil {
			reg, err = DecodeRegistration(raw)
		}
		if err != nil { // dropped, or no valid registration
			if had {
				out.Writes++
			}
			delete(rows, ref)
			continue
		}
		t := tableOf(ref, reg, nil)
		out.Writes += writesSince(before, had, t)
		rows[ref] = &t
	}
	groups := make(map[string][]Table, len(changed))
	for tenant, rows := range changed {
		tables := make([]Table, 0, len(rows))
		for _, t := range rows {
			tables = append(tables, *t)
		}
		slices.SortFunc(tables, func(a, b Table) int { return a.Ref.Compare(b.Ref) })
		groups[tenant] = tables
	}
	out.Tenants = len(groups)
	marker := ChangeMarker{Changes: base.header.Changes + uint64(out.Writes), FullScanAt: base.header.FullScanAt}
	var err error
	out.Blob, out.Header, err = reencode(base, groups, opts, marker)
	return out, err
}

// writesSince is how many writes took a table from its row in a blob
// (before; had false when the blob has none) to its registration now (t),
// counting only writes whose results the blob cannot hold: every write of
// a registration (created, then updated, each raising the version by one)
// the blob has no row of; the versions moved by a registration the blob
// holds an older version of (same creation time: the same registration);
// one for any other change. It is 0 when the row is unchanged.
func writesSince(before *Table, had bool, t Table) int {
	switch {
	case !had:
		return int(max(t.Version, 1))
	case sameRow(*before, t):
		return 0
	case before.CreatedAt.UnixMicro() == t.CreatedAt.UnixMicro() && t.Version > before.Version:
		return int(t.Version - before.Version)
	}
	return 1
}

// sameRow reports whether two rows of one table encode the same in a
// blob (times at the blob's microseconds).
func sameRow(a, b Table) bool {
	return a.Ref == b.Ref && a.Location == b.Location && a.TableType == b.TableType && a.Version == b.Version &&
		a.CreatedAt.UnixMicro() == b.CreatedAt.UnixMicro() && a.UpdatedAt.UnixMicro() == b.UpdatedAt.UnixMicro() &&
		bytes.Equal(a.SchemaIPC, b.SchemaIPC) && a.SchemaError == b.SchemaError && a.Description == b.Description &&
		maps.Equal(a.Properties, b.Properties)
}

// tableOf is a registration's row in a snapshot; schemas, when not nil,
// memoizes the decode check of identical schema bytes.
func tableOf(ref TableRef, reg Registration, schemas map[string]schemaCheck) Table {
	t := Table{Ref: ref, Location: reg.location, TableType: reg.tableType, Version: reg.version,
		CreatedAt: reg.createdAt, UpdatedAt: reg.updatedAt, Description: reg.description, Properties: cloneProperties(reg.properties)}
	if reg.schemaIPC == nil {
		t.SchemaError = SchemaMissing
		return t
	}
	c, ok := schemas[string(reg.schemaIPC)]
	if !ok {
		c = schemaCheck{ipc: reg.schemaIPC}
		if _, err := DecodeSchema(reg.schemaIPC); err != nil {
			c = schemaCheck{reason: SchemaUndecodable}
		}
		if schemas != nil {
			schemas[string(reg.schemaIPC)] = c
		}
	}
	t.SchemaIPC, t.SchemaError = c.ipc, c.reason
	return t
}

// reencode writes a version 3 blob holding base's tenants, with the
// tenants in groups replaced by their rows (a tenant with no rows left is
// dropped; a new one is added in order). A replaced tenant whose segment
// comes out identical keeps its generation.
func reencode(base *Blob, groups map[string][]Table, opts ApplyOptions, marker ChangeMarker) ([]byte, BlobHeader, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, BlobHeader{}, during("encode blob", "", err)
	}
	defer enc.Close()
	names := make([]string, 0, len(base.tenants)+len(groups))
	for _, t := range base.tenants {
		names = append(names, t.Name)
	}
	for name := range groups {
		names = append(names, name)
	}
	slices.Sort(names)
	names = slices.Compact(names)

	var segs bytes.Buffer
	tenants := make([]TenantInfo, 0, len(names))
	counts := Counts{Skipped: base.header.Counts.Skipped}
	for _, name := range names {
		prev, had := base.Tenant(name)
		rows, replaced := groups[name]
		var t TenantInfo
		switch {
		case !replaced:
			t = prev
			seg := base.data[prev.offset : prev.offset+prev.CompressedBytes]
			t.offset = segs.Len()
			segs.Write(seg)
		case len(rows) == 0:
			continue
		default:
			payload, err := encodePayload(rows)
			if err != nil {
				return nil, BlobHeader{}, during("encode the blob segment of", name, err)
			}
			t = TenantInfo{Name: name, Tables: len(rows), Hash: sha256.Sum256(payload), PayloadBytes: len(payload),
				Generation: opts.Generation, ChangedAt: opts.CreatedAt.UTC(), offset: segs.Len()}
			for i := range rows {
				if !rows[i].HasSchema() {
					t.SchemaUnavailable++
				}
			}
			if had && prev.Hash == t.Hash {
				t.Generation, t.ChangedAt = prev.Generation, prev.ChangedAt
			}
			compressed := enc.EncodeAll(payload, nil)
			t.CompressedBytes = len(compressed)
			segs.Write(compressed)
		}
		counts.Tables += t.Tables
		counts.SchemaUnavailable += t.SchemaUnavailable
		tenants = append(tenants, t)
	}
	idx := append(encodeMarker(marker), encodeIndex(tenants)...)
	out := make([]byte, BlobHeaderSize, BlobHeaderSize+len(idx)+segs.Len())
	out = append(out, idx...)
	out = append(out, segs.Bytes()...)
	return sealV3(out, len(idx), opts.Generation, opts.CreatedAt, counts, tenants)
}
