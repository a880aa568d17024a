package catalog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// VersionPrefix is the metastore prefix of the version records: one per
// state a registration took (created, each update, undrop), at
// ver/<tenant>/<namespace>/<table>/<creation id>/<version, 20 digits>,
// holding the registration as that state was (its Op, UpdatedBy and
// UpdatedAt say which change made it, by whom and when).
//
// A registration's versions are numbered from 1 up to its current version,
// so its history is read by key (GetItem each), never by a scan: a
// DynamoDB table keyed by a partition key alone has no cheap prefix read.
//
// Retention. The history keeps the newest HistoryVersions records (each
// write deletes the one it moves out) and, with HistoryMaxAge, none older
// (each record carries that expiry from its write: DynamoDB's TTL; local
// mode's sweep). A record has no expiry of its own beyond that: it is
// reached through its registration, live or dropped, so it lives as long
// as that does. A dropped registration is reached through its tombstone
// alone, whose expiry is the history's: History answers ErrNotFound from
// the moment the tombstone's retention ends (or it is gone: DynamoDB's TTL,
// the purge), a drop and an undrop leave the records as they are (a fixed
// number of store calls however many are kept), and the records the purge
// finds unreachable are deleted then (PurgeExpired; on DynamoDB, whose TTL
// deletes the tombstone alone, PurgeOrphanedHistory and
// SweepOrphanedHistories, which the refresh Lambda runs: orphans.go) and
// not counted in the usage (RecomputeUsage).
const VersionPrefix = "ver/"

// DefaultHistoryVersions is how many versions of a registration the
// catalog keeps by default (its newest ones; the oldest beyond it is
// deleted as a newer one is written).
const DefaultHistoryVersions = 100

// versionKey is the key of a registration's version record.
func versionKey(ref TableRef, creationID string, version int64) string {
	return fmt.Sprintf("%s%s/%s/%020d", VersionPrefix, ref.String(), creationID, version)
}

// planVersion adds to p, the mutation that moves the registration ref to
// reg (val encoded), the side writes of its history: reg's version
// record, counted in the tenant's usage with the mutation, and the
// deletion of the record that falls out of the kept count (read now, so
// its bytes are given back with the mutation). Only the one write that
// moved the registration to reg's version gets here, so the record is that
// state. A record that cannot be written is a gap the history skips,
// reported with the mutation (ErrSideWrite), never a failed write. On a
// store whose entries expire by themselves the record carries the
// expiry of HistoryMaxAge, if any, and no other: a dropped table's
// records expire by reference to its tombstone (see History), never by a
// rewrite of each.
func (c *Catalog) planVersion(ctx context.Context, p *plan, ref TableRef, reg Registration, val []byte) {
	if c.history < 0 || reg.creationID == "" {
		return
	}
	key := versionKey(ref, reg.creationID, reg.version)
	w := write{part: PartVersion, op: opPut, key: key, val: val, usage: usage{0, registrationBytes(key, val)}}
	if c.historyAge > 0 {
		w.expires = reg.updatedAt.Add(c.historyAge)
	}
	p.sides = append(p.sides, w)
	if old := reg.version - int64(c.history); old >= 1 {
		c.planVersionDelete(ctx, p, ref, reg.creationID, old)
	}
}

// planVersionDelete adds to p the deletion of one version record, as it
// reads now (none when there is none), giving its bytes back.
func (c *Catalog) planVersionDelete(ctx context.Context, p *plan, ref TableRef, creationID string, v int64) {
	key := versionKey(ref, creationID, v)
	raw, err := c.store.Get(ctx, key)
	switch {
	case errors.Is(err, metastore.ErrNotFound):
	case err != nil:
		p.failed = append(p.failed, SideWrite{Part: PartVersion, Key: key, Err: err})
	default:
		p.sides = append(p.sides, write{part: PartVersion, op: opDelete, key: key, old: raw, usage: usage{0, -registrationBytes(key, raw)}, mayLose: true})
	}
}

// planLegacyExpiry adds to p, the undrop of a tombstone written before the
// one commit path, a rewrite of each kept version record of ref's
// registration creationID (newest and below) without the tombstone's
// expiry its drop gave it (with HistoryMaxAge's, if any), on a store whose
// entries expire by themselves: one read and one write a record, for the
// tombstones of drops made before the upgrade alone (none is left once
// their retention has passed).
func (c *Catalog) planLegacyExpiry(ctx context.Context, p *plan, ref TableRef, creationID string, newest int64) {
	if _, ok := c.store.(metastore.ExpiringPutter); !ok {
		return
	}
	for v := range c.keptVersions(newest) {
		key := versionKey(ref, creationID, v)
		raw, err := c.store.Get(ctx, key)
		switch {
		case errors.Is(err, metastore.ErrNotFound):
			continue
		case err != nil:
			p.failed = append(p.failed, SideWrite{Part: PartVersion, Key: key, Err: err})
			continue
		}
		w := write{part: PartVersion, op: opSwap, key: key, old: raw, val: raw, mayLose: true}
		if reg, err := DecodeRegistration(raw); err == nil && c.historyAge > 0 {
			w.expires = reg.updatedAt.Add(c.historyAge)
		}
		p.sides = append(p.sides, w)
	}
}

// planHistoryDelete adds to p the deletion of every record the history
// may hold of ref's registration creationID at version newest (a drop with
// retention off, the purge of a tombstone): one read and one delete each.
func (c *Catalog) planHistoryDelete(ctx context.Context, p *plan, ref TableRef, creationID string, newest int64) {
	for v := range c.keptVersions(newest) {
		c.planVersionDelete(ctx, p, ref, creationID, v)
	}
}

// Version is one kept state of a registration: Registration as it was at
// Version (its Op, UpdatedBy and UpdatedAt tell the change).
type Version struct {
	Version      int64
	Registration Registration
}

// MaxHistoryPage is the most versions one History call returns.
const MaxHistoryPage = 100

// History returns up to limit (1 to MaxHistoryPage) kept versions of the
// table ref's registration of creation id creationID (empty: the one
// registered now), newest first, starting below version before (0: from
// the newest), and the version to pass as before for the next page (0
// when there is none). A table dropped in retention is named by the
// creation id its tombstone keeps. ErrNotFound when no such registration
// is known.
func (c *Catalog) History(ctx context.Context, ref TableRef, creationID string, before int64, limit int) ([]Version, int64, error) {
	fail := func(err error) ([]Version, int64, error) { return nil, 0, during("history of", ref.String(), err) }
	key, err := ref.Key()
	if err != nil {
		return fail(err)
	}
	if limit < 1 || limit > MaxHistoryPage || before < 0 {
		return fail(&Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("limit must be 1 to %d and before ≥ 0", MaxHistoryPage)})
	}
	if creationID != "" && !validCreationID(creationID) {
		return fail(&Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("creation id %q: want 16 hex digits", creationID)})
	}
	// The newest version: the registration's, or its tombstone's.
	var newest int64
	cur, _, err := c.get(ctx, key)
	switch {
	case err == nil && (creationID == "" || cur.creationID == creationID):
		creationID, newest = cur.creationID, cur.version
	case err != nil && !errors.Is(err, ErrNotFound):
		return fail(err)
	case creationID != "":
		raw, terr := c.store.Get(ctx, TombstonePrefix+ref.String()+"/"+creationID)
		if terr != nil {
			return fail(&Error{Kind: ErrNotFound, Detail: "no registration or drop in retention of that creation id"})
		}
		d, derr := DecodeTombstone(ref.String()+"/"+creationID, raw)
		if derr != nil {
			return fail(derr)
		}
		if d.Expired(c.now()) {
			// The tombstone's expiry is its history's.
			return fail(&Error{Kind: ErrNotFound, Detail: "its retention ended at " + d.ExpiresAt.Format(time.RFC3339)})
		}
		newest = d.Registration.version
	default:
		return fail(ErrNotFound)
	}
	if creationID == "" {
		return nil, 0, nil // written before creation ids: no history kept
	}
	v := newest
	if before > 0 && before <= newest {
		v = before - 1
	}
	// Versions older than the kept count are gone; a record that could
	// not be written is a gap, skipped.
	oldest := max(1, newest-int64(max(c.history, 1))+1)
	var out []Version
	for ; v >= oldest && len(out) < limit; v-- {
		raw, err := c.store.Get(ctx, versionKey(ref, creationID, v))
		if errors.Is(err, metastore.ErrNotFound) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		reg, err := DecodeRegistration(raw)
		if err != nil {
			return fail(err)
		}
		if c.historyAge > 0 && c.now().Sub(reg.updatedAt) > c.historyAge {
			continue // past the age bound, not yet purged
		}
		out = append(out, Version{Version: v, Registration: reg})
	}
	next := int64(0)
	if v >= oldest {
		next = v + 1
	}
	return out, next, nil
}

// validCreationID reports whether id looks like a creation id (hex).
func validCreationID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := range len(id) {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// purgeVersions deletes, from one scan of VersionPrefix, the version
// records past HistoryMaxAge and, with unreachable, those nothing reaches
// any more, giving their bytes back, and returns how many. A record is
// unreachable when its registration is neither registered nor kept by a
// tombstone: on a store whose entries expire by themselves (DynamoDB),
// whose TTL deletes an expired tombstone without its history; elsewhere
// the purge deletes a tombstone with its history, and nothing else leaves
// one unreachable. Before deleting a registration's records it reads, after
// the registration and the tombstone, the version above the newest it
// scanned: one there means the registration moved since the scan (an
// undrop), and its records stay.
func (c *Catalog) purgeVersions(ctx context.Context, now time.Time, unreachable bool) (int, error) {
	entries, err := c.store.ScanPrefix(ctx, VersionPrefix)
	if err != nil {
		return 0, fmt.Errorf("catalog: purge unreachable versions: %w", err)
	}
	type history struct {
		ref        TableRef
		creationID string
		newest     int64
		records    []metastore.Entry
	}
	histories := map[string]*history{}
	var order []string
	for _, e := range entries {
		ref, creationID, v, ok := parseVersionKey(e.Key)
		if !ok {
			continue
		}
		id := ref.String() + "/" + creationID
		h := histories[id]
		if h == nil {
			h = &history{ref: ref, creationID: creationID}
			histories[id] = h
			order = append(order, id)
		}
		h.newest = max(h.newest, v)
		h.records = append(h.records, e)
	}
	var (
		n      int
		failed []error
	)
	purge := func(ref TableRef, records []metastore.Entry) {
		for _, e := range records {
			key := VersionPrefix + e.Key
			p := &plan{tenant: ref.Tenant, primary: write{part: PartVersion, op: opDelete, key: key, old: e.Value, usage: usage{0, -registrationBytes(key, e.Value)}}}
			err := c.commit(ctx, p)
			if committed(err) {
				n++
			}
			if err != nil && committed(err) {
				failed = append(failed, during("purge", ref.String(), err))
			}
		}
	}
	for _, id := range order {
		h := histories[id]
		if unreachable && !c.reachable(ctx, h.ref, h.creationID, h.newest) {
			purge(h.ref, h.records)
			continue
		}
		if c.historyAge <= 0 {
			continue
		}
		var old []metastore.Entry
		for _, e := range h.records {
			if reg, err := DecodeRegistration(e.Value); err == nil && now.Sub(reg.updatedAt) > c.historyAge {
				old = append(old, e)
			}
		}
		purge(h.ref, old)
	}
	return n, errors.Join(failed...)
}

// reachable reports whether ref's registration creationID, whose newest
// scanned version record is newest, is registered, kept by a tombstone,
// or has moved since the scan; a read that fails says reachable.
func (c *Catalog) reachable(ctx context.Context, ref TableRef, creationID string, newest int64) bool {
	cur, _, err := c.get(ctx, KeyPrefix+ref.String())
	if err == nil && cur.creationID == creationID || err != nil && !errors.Is(err, ErrNotFound) {
		return true
	}
	if _, err := c.store.Get(ctx, TombstonePrefix+ref.String()+"/"+creationID); !errors.Is(err, metastore.ErrNotFound) {
		return true
	}
	_, err = c.store.Get(ctx, versionKey(ref, creationID, newest+1))
	return !errors.Is(err, metastore.ErrNotFound)
}

// parseVersionKey reads a version record's key, VersionPrefix stripped.
func parseVersionKey(stripped string) (ref TableRef, creationID string, version int64, ok bool) {
	rest, v, ok := cutLast(stripped)
	if !ok {
		return TableRef{}, "", 0, false
	}
	refPart, creationID, ok := cutLast(rest)
	if !ok || !validCreationID(creationID) {
		return TableRef{}, "", 0, false
	}
	ref, err := ParseKey(refPart)
	if err != nil {
		return TableRef{}, "", 0, false
	}
	version, err = strconv.ParseInt(v, 10, 64)
	if err != nil || version < 1 {
		return TableRef{}, "", 0, false
	}
	return ref, creationID, version, true
}

// cutLast cuts s around its last '/'.
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// keptVersions yields the versions whose records the history may hold of a
// registration at version newest (its last HistoryVersions), newest
// first; none with history off.
func (c *Catalog) keptVersions(newest int64) iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for v := newest; v >= 1 && v > newest-int64(max(c.history, 0)); v-- {
			if !yield(v) {
				return
			}
		}
	}
}
