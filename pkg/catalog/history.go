package catalog

import (
	"context"
	"errors"
	"fmt"
	"iter"
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
const VersionPrefix = "ver/"

// DefaultHistoryVersions is how many versions of a registration the
// catalog keeps by default (its newest ones; the oldest beyond it is
// deleted as a newer one is written).
const DefaultHistoryVersions = 100

// versionKey is the key of a registration's version record.
func versionKey(ref TableRef, creationID string, version int64) string {
	return fmt.Sprintf("%s%s/%s/%020d", VersionPrefix, ref.String(), creationID, version)
}

// versionBytes is what reg's version record will take (val is reg
// encoded; 0 when history is off or reg has no creation id): counted in
// the tenant's usage with the write that makes it.
func (c *Catalog) versionBytes(key string, reg Registration, val []byte) int64 {
	if c.history < 0 || reg.creationID == "" {
		return 0
	}
	ref, err := ParseKey(strings.TrimPrefix(key, KeyPrefix))
	if err != nil {
		return 0
	}
	return registrationBytes(versionKey(ref, reg.creationID, reg.version), val)
}

// keepVersion stores reg (val encoded), just written at key, as its
// version record, and deletes the record that falls out of the kept count,
// giving its bytes back. Only the one write that moved the registration to
// reg's version gets here, so the record is that state. It is best effort:
// a record that cannot be written leaves a gap in the history (History
// skips it) and gives back the bytes reserved for it, never a failed
// write.
func (c *Catalog) keepVersion(ctx context.Context, key string, reg Registration, val []byte) {
	n := c.versionBytes(key, reg, val)
	if n == 0 {
		return
	}
	ref, _ := ParseKey(strings.TrimPrefix(key, KeyPrefix))
	vkey := versionKey(ref, reg.creationID, reg.version)
	var err error
	if ep, ok := c.store.(metastore.ExpiringPutter); ok && c.historyAge > 0 {
		err = ep.PutExpiring(ctx, vkey, val, reg.updatedAt.Add(c.historyAge))
	} else {
		err = c.store.Put(ctx, vkey, val)
	}
	if err != nil {
		c.release(ctx, ref.Tenant, 0, n)
		return
	}
	if old := reg.version - int64(c.history); old >= 1 {
		c.deleteVersion(ctx, ref, reg.creationID, old)
	}
}

// deleteVersion deletes one version record and gives its bytes back to
// the tenant's usage; it returns them (0 when there was none).
func (c *Catalog) deleteVersion(ctx context.Context, ref TableRef, creationID string, v int64) int64 {
	key := versionKey(ref, creationID, v)
	raw, err := c.store.Get(ctx, key)
	if err != nil {
		return 0
	}
	if c.store.CompareAndDelete(ctx, key, raw) != nil {
		return 0
	}
	n := registrationBytes(key, raw)
	c.release(ctx, ref.Tenant, 0, n)
	return n
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

// purgeOldVersions deletes the version records made longer than
// HistoryMaxAge before now (local mode's sweep; one scan of VersionPrefix)
// and gives their bytes back; it returns how many.
func (c *Catalog) purgeOldVersions(ctx context.Context, now time.Time) (int, error) {
	entries, err := c.store.ScanPrefix(ctx, VersionPrefix)
	if err != nil {
		return 0, fmt.Errorf("catalog: purge old versions: %w", err)
	}
	n := 0
	for _, e := range entries {
		reg, err := DecodeRegistration(e.Value)
		if err != nil || now.Sub(reg.updatedAt) <= c.historyAge {
			continue
		}
		key := VersionPrefix + e.Key
		if c.store.CompareAndDelete(ctx, key, e.Value) != nil {
			continue
		}
		if tenant, _, ok := strings.Cut(e.Key, "/"); ok {
			c.release(ctx, tenant, 0, registrationBytes(key, e.Value))
		}
		n++
	}
	return n, nil
}

// keepDropVersion records dropped, the drop state of the registration just
// deleted from key, as its version record, charging its bytes whatever the
// limit (a drop is never refused for them). A drop that kept no tombstone
// (retention off) leaves nothing that can reach the registration's
// history, so its records are deleted instead. On a store whose entries
// expire by themselves (DynamoDB's TTL), every kept record is given the
// tombstone's expiry, so the TTL that purges the tombstone purges the
// history it kept (Undrop takes the expiry back); local mode's sweep
// deletes them with the tombstone.
func (c *Catalog) keepDropVersion(ctx context.Context, ref TableRef, key string, dropped Registration, tombstoned bool) {
	if dropped.creationID == "" || c.history < 0 {
		return
	}
	if !tombstoned {
		for v := range c.keptVersions(dropped.version - 1) {
			c.deleteVersion(ctx, ref, dropped.creationID, v)
		}
		return
	}
	val, err := encodeRegistration(dropped)
	if err != nil {
		return
	}
	c.charge(ctx, ref.Tenant, c.versionBytes(key, dropped, val))
	c.keepVersion(ctx, key, dropped, val)
	c.expireVersions(ctx, ref, dropped.creationID, dropped.version, dropped.updatedAt.Add(c.retention))
}

// expireVersions rewrites the kept version records of ref's registration
// creationID (versions newest and below) to expire at until, or, when
// until is zero, at no time but HistoryMaxAge's, on a store whose entries
// expire by themselves; on any other store it does nothing. Best effort,
// as keepVersion: a record it cannot rewrite keeps the expiry it had.
func (c *Catalog) expireVersions(ctx context.Context, ref TableRef, creationID string, newest int64, until time.Time) {
	ep, ok := c.store.(metastore.ExpiringPutter)
	if !ok || c.history < 0 {
		return
	}
	for v := range c.keptVersions(newest) {
		key := versionKey(ref, creationID, v)
		raw, err := c.store.Get(ctx, key)
		if err != nil {
			continue
		}
		at := until
		if c.historyAge > 0 {
			if reg, err := DecodeRegistration(raw); err == nil {
				if aged := reg.updatedAt.Add(c.historyAge); at.IsZero() || aged.Before(at) {
					at = aged
				}
			}
		}
		if at.IsZero() {
			_ = c.store.Put(ctx, key, raw)
		} else {
			_ = ep.PutExpiring(ctx, key, raw, at)
		}
	}
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
