package catalog

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// Orphaned history. On a store whose entries expire by themselves
// (DynamoDB's TTL) a tombstone is deleted when its retention ends, without
// the version records it kept: they carry no expiry of the tombstone's
// (see VersionPrefix), so nothing reaches them any more and nothing would
// delete them. PurgeOrphanedHistory deletes one registration's (the
// refresh Lambda calls it for each tombstone key its stream batch names);
// SweepOrphanedHistories finds every one with a scan and deletes them
// within a budget (the refresh Lambda's reconciliation). Local mode's
// PurgeExpired deletes a tombstone with its history, leaving none.
//
// A history is purged only when neither its registration (tbl/… holding
// its creation id) nor a tombstone of it (dropped/…/<creation id>) exists:
// read before its records are, and again after they are deleted, with
// the version above the newest found, which a drop or an undrop writes
// (reachable). When that second look finds the history reached (an undrop
// that read its tombstone before it went landed meanwhile), the records
// are written back as they were. What no look can see is an undrop whose
// every write lands after the purge has finished although it read its
// tombstone before the TTL deleted it: its request must outlast the
// tombstone's expiry, the TTL's delay, the stream's delivery and the
// purge (the register Lambda's timeout is 60 s).

// maxHistoryProbes bounds the reads PurgeOrphanedHistory makes to find a
// history it does not know the versions of: one read every
// HistoryVersions versions, so it finds the records of registrations of up
// to maxHistoryProbes × HistoryVersions versions (6,400 by default).
// Beyond that the sweep finds them from its scan.
const maxHistoryProbes = 64

// HistoryPurge is what PurgeOrphanedHistory or SweepOrphanedHistories did.
type HistoryPurge struct {
	// Histories is how many registrations' histories had records
	// deleted, Versions how many records in all (net of any written
	// back because an undrop landed meanwhile).
	Histories, Versions int
	// Reads is how many version records were read to find them (the
	// probes of the ones absent included): the work the budget bounds.
	Reads int
	// Left is how many histories nothing reaches that the sweep left for
	// the next one (its budget spent, or its context done).
	Left int
	// ScanPages is how many pages the sweep's scan of the store read
	// (DynamoDB Scan calls, retries apart); 0 for a purge of one table.
	ScanPages int
	// Indexed is how many tombstones in retention the sweep added to
	// their tenant's index of dropped tables, which lacked them.
	Indexed int
}

// PurgeOrphanedHistory deletes the version records of ref's registration
// of creation id creationID when nothing reaches them any more: no
// registration of that creation id and no tombstone of it (DynamoDB's TTL
// deleted the tombstone). It reads the tombstone and the registration
// first (two reads when either is there: an undrop, a later drop), then
// finds the records by key (a DynamoDB table keyed by a partition key
// alone has no prefix read): one read every HistoryVersions versions
// until one is there (at most maxHistoryProbes), then each next to it
// until one is not. It deletes them in one commit (the usage item written
// once) and looks again (see reachable), writing them back if the history
// is reached now. It is idempotent: a second call finds nothing to delete.
// With HistoryVersions off it does nothing (the sweep deletes what was
// kept before).
func (c *Catalog) PurgeOrphanedHistory(ctx context.Context, ref TableRef, creationID string) (HistoryPurge, error) {
	var out HistoryPurge
	fail := func(err error) (HistoryPurge, error) { return out, during("purge the history of", ref.String(), err) }
	if err := ref.Validate(); err != nil {
		return out, err
	}
	if !validCreationID(creationID) {
		return fail(&Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("creation id %q: want 16 hex digits", creationID)})
	}
	if c.history < 1 {
		return out, nil
	}
	if kept, err := c.pointedTo(ctx, ref, creationID); err != nil || kept {
		return fail(err)
	}
	records, newest, err := c.probeHistory(ctx, ref, creationID, &out.Reads)
	if err != nil || len(records) == 0 {
		return fail(err)
	}
	err = c.purgeHistory(ctx, ref, creationID, records, newest, &out)
	return fail(err)
}

// SweepOrphanedHistories finds, in one scan of the whole store
// (metastore.Visit of "": on DynamoDB one Scan, as a snapshot build's),
// the registrations whose version records nothing reaches (no registration
// of their creation id, no tombstone of it) and deletes their records as
// PurgeOrphanedHistory does, in key order, until it has read budget
// version records (0: no bound); the histories past it are counted in
// Left, for the next sweep, as are those left when ctx ends. The scan
// keeps what it needs of each entry and no value: a hash of each
// registration's and tombstone's history and, for each history not (yet)
// seen reached, its id and the range of its versions (about 100 bytes a
// registration while the scan runs). The records of a history are read
// by key from the oldest the scan saw, so a sweep that stops inside one
// has deleted its oldest, and the next carries on. Errors of one history
// do not stop the others; they are returned joined.
func (c *Catalog) SweepOrphanedHistories(ctx context.Context, budget int) (HistoryPurge, error) {
	var out HistoryPurge
	type span struct {
		lo, hi int64
		n      int
	}
	seed := maphash.MakeSeed()
	reached := map[uint64]bool{} // hashes of <tenant>/<namespace>/<table>/<creation id>
	seen := map[string]*span{}
	reach := func(id string) {
		reached[maphash.String(seed, id)] = true
		delete(seen, id)
	}
	now := c.now()
	live := map[string][]Tombstone{} // tombstones in retention, by index item
	stats, err := metastore.Visit(ctx, c.store, "", func(e metastore.Entry) error {
		switch {
		case strings.HasPrefix(e.Key, KeyPrefix):
			if id := creationIDOf(e.Value); id != "" {
				reach(e.Key[len(KeyPrefix):] + "/" + id)
			}
		case strings.HasPrefix(e.Key, TombstonePrefix):
			reach(e.Key[len(TombstonePrefix):])
			if d, err := DecodeTombstone(e.Key[len(TombstonePrefix):], e.Value); err == nil && !d.Expired(now) {
				live[droppedIndexKey(d.Ref)] = append(live[droppedIndexKey(d.Ref)], d)
			}
		case strings.HasPrefix(e.Key, VersionPrefix):
			id, v, ok := cutLast(e.Key[len(VersionPrefix):])
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil || n < 1 || reached[maphash.String(seed, id)] {
				return nil
			}
			if s := seen[id]; s != nil {
				s.lo, s.hi, s.n = min(s.lo, n), max(s.hi, n), s.n+1
			} else {
				seen[id] = &span{lo: n, hi: n, n: 1}
			}
		}
		return nil
	})
	out.ScanPages = stats.Pages
	if err != nil {
		return out, &Error{Op: "sweep orphaned history", Kind: err}
	}
	var failed []error
	// The tombstones in retention that their tenant's index of dropped
	// tables lacks (drops made before the index, or whose index write
	// failed) are added to it, as local mode's PurgeExpired does.
	out.Indexed, failed = c.indexAllMissing(ctx, live)
	ids := slices.Sorted(maps.Keys(seen))
	for i, id := range ids {
		if ctx.Err() != nil || budget > 0 && out.Reads >= budget {
			out.Left += len(ids) - i
			break
		}
		refPart, creationID, _ := cutLast(id)
		ref, err := ParseKey(refPart)
		if err != nil || !validCreationID(creationID) {
			continue // never a version record's key
		}
		s := seen[id]
		if kept, err := c.pointedTo(ctx, ref, creationID); err != nil || kept {
			if err != nil {
				failed = append(failed, during("purge the history of", ref.String(), err))
			}
			continue
		}
		var records []metastore.Entry
		for v := s.lo; v <= s.hi && len(records) < s.n; v++ {
			if budget > 0 && out.Reads >= budget {
				out.Left++
				break
			}
			e, ok, err := c.readVersion(ctx, ref, creationID, v, &out.Reads)
			if err != nil {
				failed = append(failed, during("purge the history of", ref.String(), err))
				break
			}
			if ok {
				records = append(records, e)
			}
		}
		if len(records) == 0 {
			continue
		}
		// The look after the deletes reads the version above the newest
		// the scan saw (also when the budget stopped the reads below it).
		if err := c.purgeHistory(ctx, ref, creationID, records, s.hi, &out); err != nil {
			failed = append(failed, during("purge the history of", ref.String(), err))
		}
	}
	return out, errors.Join(failed...)
}

// pointedTo reports whether a tombstone of ref's registration creationID,
// or the registration itself, is stored: read in that order, so an undrop
// (which writes the registration before it deletes the tombstone) is
// never missed between the two reads.
func (c *Catalog) pointedTo(ctx context.Context, ref TableRef, creationID string) (bool, error) {
	_, err := c.store.Get(ctx, TombstonePrefix+ref.String()+"/"+creationID)
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, metastore.ErrNotFound):
		return false, err
	}
	raw, err := c.store.Get(ctx, KeyPrefix+ref.String())
	switch {
	case err == nil:
		return creationIDOf(raw) == creationID, nil
	case errors.Is(err, metastore.ErrNotFound):
		return false, nil
	}
	return false, err
}

// readVersion reads one version record, counting the read.
func (c *Catalog) readVersion(ctx context.Context, ref TableRef, creationID string, v int64, reads *int) (metastore.Entry, bool, error) {
	key := versionKey(ref, creationID, v)
	*reads++
	raw, err := c.store.Get(ctx, key)
	switch {
	case errors.Is(err, metastore.ErrNotFound):
		return metastore.Entry{}, false, nil
	case err != nil:
		return metastore.Entry{}, false, err
	}
	return metastore.Entry{Key: key, Value: raw}, true, nil
}

// probeHistory finds the version records of ref's registration
// creationID by key: versions 1, 1+HistoryVersions, … until one is there
// (the kept records are the newest HistoryVersions: none is skipped), then
// each below it and each above it until one is not. It returns them
// (full keys), oldest first, and the newest version found.
func (c *Catalog) probeHistory(ctx context.Context, ref TableRef, creationID string, reads *int) ([]metastore.Entry, int64, error) {
	step := int64(c.history)
	hit := int64(0)
	var records []metastore.Entry
	for i, v := 0, int64(1); i < maxHistoryProbes; i, v = i+1, v+step {
		e, ok, err := c.readVersion(ctx, ref, creationID, v, reads)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			hit, records = v, append(records, e)
			break
		}
	}
	if hit == 0 {
		return nil, 0, nil
	}
	for v := hit - 1; v >= 1; v-- {
		e, ok, err := c.readVersion(ctx, ref, creationID, v, reads)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
		records = append(records, e)
	}
	slices.Reverse(records)
	newest := hit
	for v := hit + 1; ; v++ {
		e, ok, err := c.readVersion(ctx, ref, creationID, v, reads)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
		records, newest = append(records, e), v
	}
	return records, newest, nil
}

// purgeHistory deletes records (version records of ref's registration
// creationID as read, the newest at version newest) in one commit, then
// looks again: when the history is reached now (reachable: its
// registration or tombstone is back, or a version above newest was
// written) it writes back the records it deleted. It adds what it did to
// out.
func (c *Catalog) purgeHistory(ctx context.Context, ref TableRef, creationID string, records []metastore.Entry, newest int64, out *HistoryPurge) error {
	deletes := make([]write, len(records))
	for i, e := range records {
		deletes[i] = write{part: PartVersion, op: opDelete, key: e.Key, old: e.Value, usage: usage{0, -registrationBytes(e.Key, e.Value)}, mayLose: true}
	}
	n, err := c.commitEach(ctx, ref.Tenant, deletes)
	if n == 0 {
		return err
	}
	if !c.reachable(ctx, ref, creationID, newest) {
		out.Histories++
		out.Versions += n
		return err
	}
	// An undrop landed meanwhile: its history is written back as it was.
	creates := make([]write, len(records))
	for i, e := range records {
		creates[i] = write{part: PartVersion, op: opCreate, key: e.Key, val: e.Value, usage: usage{0, registrationBytes(e.Key, e.Value)}, mayLose: true}
	}
	back, berr := c.commitEach(ctx, ref.Tenant, creates)
	out.Versions += n - back
	if berr != nil || back < n {
		return errors.Join(err, &Error{Kind: ErrSideWrite, Detail: fmt.Sprintf("deleted %d version records of creation id %s, found the table reached again and wrote back %d: %v", n, creationID, back, berr)})
	}
	return err
}

// commitEach commits writes (deletions or creations of records of the
// tenant's, each of which another writer may have made first) as one
// plan: the first that takes effect is its primary, the rest its side
// writes, so the tenant's usage item is written once. It returns how many
// took effect, and the side writes' error, if any (stored: counted in
// Stats).
func (c *Catalog) commitEach(ctx context.Context, tenant string, writes []write) (int, error) {
	for i, w := range writes {
		p := &plan{tenant: tenant, primary: w, sides: writes[i+1:]}
		err := c.commit(ctx, p)
		switch {
		case committed(err):
			return 1 + p.done, err
		case !lostRace(err):
			return 0, err
		}
	}
	return 0, nil
}
