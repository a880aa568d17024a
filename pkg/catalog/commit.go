package catalog

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// ErrSideWrite: the mutation is stored (its registration written, updated,
// deleted or restored), but a write that goes with it failed: a version
// record (a gap the history skips), a tombstone's clean-up, its entry in
// the tenant's index of dropped tables (Dropped does not list it then, nor
// until PurgeExpired, local mode's sweep, adds it), a dropped table's
// Iceberg state (left in the store: refresh and discovery serve it for no
// other registration, and the next sync replaces it), the tenant's usage
// (which then differs from what the tenant holds until `lake quota
// recompute`) or the change counter (then the kind is ErrUnsignalled).
// The *Error lists each in SideWrites. The caller answers the mutation as
// stored: retrying it would write it again (an update, a drop) or find it
// done.
var ErrSideWrite = errors.New("stored, but a side write failed")

// Part says what a store write of a mutation is for.
type Part string

// The parts of a mutation.
const (
	// PartRegistration is the registration's own key (tbl/…): the primary
	// write of register, update, drop and undrop.
	PartRegistration Part = "registration"
	// PartVersion is a version record (ver/…): the one a mutation keeps,
	// or one it deletes as it falls out of the kept count.
	PartVersion Part = "version record"
	// PartTombstone is a dropped table's tombstone (dropped/…).
	PartTombstone Part = "tombstone"
	// PartUsage is the tenant's usage item (quota/…).
	PartUsage Part = "usage item"
	// PartChanges is the change counter (ChangesKey).
	PartChanges Part = "change counter"
)

// SideWrite is a write that went with a stored mutation and failed.
type SideWrite struct {
	Part Part
	// Key is the key it wrote (or read to plan the write).
	Key string
	// Err is the store's error.
	Err error
}

// String says what failed: "the version record ver/…: <the store's error>".
func (s SideWrite) String() string {
	if s.Part == PartChanges {
		return "the " + string(s.Part) + ": " + s.Err.Error()
	}
	return "the " + string(s.Part) + " " + s.Key + ": " + s.Err.Error()
}

// Stats counts what the catalog's mutations did since New.
type Stats struct {
	// Commits is how many mutations were stored (their primary write
	// succeeded).
	Commits uint64
	// SideWritesFailed is how many writes that went with a stored
	// mutation failed (each listed in the mutation's ErrSideWrite or
	// ErrUnsignalled error), and FailedByPart the same by part. A usage
	// correction that fails after a mutation that failed (giving back its
	// reservation) counts here too, as PartUsage, though the mutation
	// returns its own error.
	SideWritesFailed uint64
	FailedByPart     map[Part]uint64
}

// Stats returns the catalog's counts so far. It is safe for concurrent
// use.
func (c *Catalog) Stats() Stats {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	s := Stats{Commits: c.stats.commits.Load(), FailedByPart: make(map[Part]uint64, len(c.stats.failed))}
	for p, n := range c.stats.failed {
		s.FailedByPart[p] = n
		s.SideWritesFailed += n
	}
	return s
}

// commitStats is what Stats reads.
type commitStats struct {
	commits atomic.Uint64
	mu      sync.Mutex
	failed  map[Part]uint64
}

func (s *commitStats) fail(p Part) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		s.failed = map[Part]uint64{}
	}
	s.failed[p]++
}

// writeOp is what a write does to its key.
type writeOp uint8

const (
	opCreate writeOp = iota // Create (CreateExpiring)
	opPut                   // Put (PutExpiring)
	opSwap                  // CompareAndSwap (CompareAndSwapExpiring) from old
	opDelete                // CompareAndDelete of old
	opEdit                  // edit of what is read, written conditioned on it (applyEdit)
)

// usage is a change to a tenant's usage item.
type usage struct{ tables, bytes int64 }

func (u usage) add(o usage) usage   { return usage{u.tables + o.tables, u.bytes + o.bytes} }
func (u usage) minus(o usage) usage { return usage{u.tables - o.tables, u.bytes - o.bytes} }
func (u usage) adds() bool          { return u.tables > 0 || u.bytes > 0 }

// write is one store write of a plan.
type write struct {
	part Part
	op   writeOp
	key  string
	// old is what opSwap and opDelete expect at key; val what opCreate,
	// opPut and opSwap store.
	old, val []byte
	// expires, when not zero, is when a store whose entries expire by
	// themselves may purge the entry (a tombstone's retention, a version
	// record's HistoryMaxAge).
	expires time.Time
	// usage is what the write changes in the tenant's usage when it takes
	// effect (negative: what it frees).
	usage usage
	// mayLose marks a side write that may find its key moved by another
	// writer (a version record or tombstone already deleted, or replaced
	// by a later drop), who then owns it: not a failure, and it changes
	// nothing.
	mayLose bool
	// edit, for opEdit, returns what to store given what key holds (nil:
	// nothing), nil to delete it.
	edit func(old []byte) ([]byte, error)
}

// plan is one mutation: the writes it makes, in the order commit runs them.
type plan struct {
	tenant string
	// refusable: the quota may refuse the mutation (register, update,
	// undrop), so what it adds is reserved before its primary write.
	refusable bool
	// before are writes that must take effect before the primary (a
	// drop's tombstone, so a stored drop can always be undone): the
	// first that fails stops the mutation.
	before []write
	// primary is the conditional write that decides the outcome: when it
	// fails, nothing is stored but what undo leaves of before.
	primary write
	// undo runs when the primary fails with undoOn (a drop whose
	// registration changed takes back the tombstone it wrote).
	undo   []write
	undoOn error
	// sides follow the primary once it has succeeded, in order; each that
	// fails is reported, none stops the others.
	sides []write
	// failed lists side writes that could not be planned (a version
	// record that falls out of the kept count could not be read):
	// reported with the mutation when it is stored.
	failed []SideWrite
	// signal bumps the change counter after the writes.
	signal bool
	// done counts the side writes of version records that took effect
	// (commit sets it).
	done int
}

// beforeError is commit's error when a write before the primary failed:
// nothing of the mutation is stored.
type beforeError struct {
	w   write
	err error
}

func (e *beforeError) Error() string { return e.err.Error() }
func (e *beforeError) Unwrap() error { return e.err }

// lostRace reports whether a conditional write failed because another
// writer moved its key first.
func lostRace(err error) bool {
	return errors.Is(err, metastore.ErrExists) || errors.Is(err, metastore.ErrConflict) || errors.Is(err, metastore.ErrNotFound)
}

// sideWriteTimeout bounds what a stored mutation still writes after its
// primary, whatever its caller's context says.
const sideWriteTimeout = 10 * time.Second

// commit runs p, the one place every mutation is written:
//
//  1. The usage: when p is refusable and adds tables or bytes, the
//     reservation, one compare-and-swap of the tenant's usage item by
//     p's net change (every write of p taking effect), refused with
//     ErrQuotaExceeded when what p adds (its primary and the side writes
//     that add) would pass a limit; nothing is written then.
//  2. The writes before the primary; the first that fails stops p
//     (a *beforeError), after giving back what was counted.
//  3. The primary. When it fails, undo (on undoOn), give back what was
//     counted but did not happen, and return the primary's error: the
//     caller tells the outcomes apart (exists, changed, gone).
//  4. Stored. The rest runs even when ctx is done: the usage update by p's
//     net change when it was not reserved (a drop, an update that frees),
//     the side writes in order, a correction of the usage for each side
//     write that did not take effect, the change counter.
//
// It returns nil, or an *Error of kind ErrSideWrite (ErrUnsignalled when
// the change counter failed) listing every step of 4 that failed; each is
// counted in Stats. On the path where everything succeeds the usage item
// is written once.
func (c *Catalog) commit(ctx context.Context, p *plan) error {
	var planned, ask usage
	for _, w := range p.before {
		planned = planned.add(w.usage)
		if w.usage.adds() {
			ask = ask.add(w.usage)
		}
	}
	planned, ask = planned.add(p.primary.usage), ask.add(p.primary.usage)
	for _, w := range p.sides {
		planned = planned.add(w.usage)
		if w.usage.adds() {
			ask = ask.add(w.usage)
		}
	}
	var counted, took usage
	reserved := p.refusable && ask.adds()
	if reserved {
		if err := c.adjustUsage(ctx, p.tenant, planned, ask, true); err != nil {
			return err
		}
		counted = planned
	}
	for _, w := range p.before {
		if err := c.apply(ctx, w); err != nil {
			c.settle(ctx, p.tenant, took.minus(counted))
			return &beforeError{w: w, err: err}
		}
		took = took.add(w.usage)
	}
	if err := c.apply(ctx, p.primary); err != nil {
		if p.undoOn != nil && errors.Is(err, p.undoOn) {
			for _, w := range p.undo {
				if c.apply(ctx, w) == nil {
					took = took.add(w.usage)
				}
			}
		}
		c.settle(ctx, p.tenant, took.minus(counted))
		return err
	}
	took = took.add(p.primary.usage)
	c.stats.commits.Add(1)

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideWriteTimeout)
	defer cancel()
	failed := p.failed
	usageKnown := true
	if !reserved && planned != (usage{}) {
		if err := c.adjustUsage(ctx, p.tenant, planned, usage{}, false); err != nil {
			failed = append(failed, SideWrite{Part: PartUsage, Key: QuotaPrefix + p.tenant, Err: err})
			usageKnown = false
		} else {
			counted = planned
		}
	}
	for _, w := range p.sides {
		err := c.apply(ctx, w)
		switch {
		case err == nil:
			took = took.add(w.usage)
			if w.part == PartVersion {
				p.done++
			}
		case w.mayLose && lostRace(err):
		default:
			failed = append(failed, SideWrite{Part: w.part, Key: w.key, Err: err})
		}
	}
	if d := took.minus(counted); usageKnown && d != (usage{}) {
		if err := c.adjustUsage(ctx, p.tenant, d, usage{}, false); err != nil {
			failed = append(failed, SideWrite{Part: PartUsage, Key: QuotaPrefix + p.tenant, Err: err})
		}
	}
	if p.signal {
		if _, err := c.store.AddCounter(ctx, ChangesKey, 1); err != nil {
			failed = append(failed, SideWrite{Part: PartChanges, Key: ChangesKey, Err: err})
		}
	}
	return c.sideWriteError(failed)
}

// settle corrects the tenant's usage by d after a mutation that failed
// (what it reserved and did not write, what it wrote before its primary
// and left). It runs even when ctx is done; its failure is counted in
// Stats (the mutation returns its own error), and the usage then stays
// high (failing closed) until `lake quota recompute`.
func (c *Catalog) settle(ctx context.Context, tenant string, d usage) {
	if d == (usage{}) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideWriteTimeout)
	defer cancel()
	if err := c.adjustUsage(ctx, tenant, d, usage{}, false); err != nil {
		c.stats.fail(PartUsage)
	}
}

// sideWriteError is the error of a stored mutation whose side writes
// failed (nil when none did), counting each in Stats.
func (c *Catalog) sideWriteError(failed []SideWrite) error {
	if len(failed) == 0 {
		return nil
	}
	kind := ErrSideWrite
	parts := make([]string, len(failed))
	for i, f := range failed {
		c.stats.fail(f.Part)
		if f.Part == PartChanges {
			kind = ErrUnsignalled
		}
		parts[i] = f.String()
	}
	return &Error{Kind: kind, Detail: strings.Join(parts, "; "), SideWrites: failed}
}

// apply makes one write, with its expiry on a store whose entries expire
// by themselves.
func (c *Catalog) apply(ctx context.Context, w write) error {
	ep, expiring := c.store.(metastore.ExpiringPutter)
	expiring = expiring && !w.expires.IsZero()
	switch w.op {
	case opCreate:
		if expiring {
			return ep.CreateExpiring(ctx, w.key, w.val, w.expires)
		}
		return c.store.Create(ctx, w.key, w.val)
	case opPut:
		if expiring {
			return ep.PutExpiring(ctx, w.key, w.val, w.expires)
		}
		return c.store.Put(ctx, w.key, w.val)
	case opEdit:
		return c.applyEdit(ctx, w)
	case opSwap:
		if expiring {
			return ep.CompareAndSwapExpiring(ctx, w.key, w.old, w.val, w.expires)
		}
		return c.store.CompareAndSwap(ctx, w.key, w.old, w.val)
	default:
		return c.store.CompareAndDelete(ctx, w.key, w.old)
	}
}

// committed reports whether err, a mutation's, says it was stored: nil,
// or ErrSideWrite (ErrUnsignalled included).
func committed(err error) bool { return err == nil || errors.Is(err, ErrSideWrite) }
