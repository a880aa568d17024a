package catalog

import (
	"context"
	"errors"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// The change counter: how refresh knows, with one strongly consistent read,
// whether anything was written since the blob it published.
//
// Protocol. Every successful write of a registration (a register that
// creates, an update that changes, a drop) is followed by a bump: the
// counter at ChangesKey goes up by one (one atomic add,
// metastore.Store.AddCounter: DynamoDB UpdateItem ADD, no retry loop on the
// item every tenant shares). A blob
// records a change marker m, the number of writes it accounts for:
//
//   - A full scan reads the counter c before it scans and records m = c.
//   - An incremental apply of a change feed's batch (refresh's scan.Apply)
//     records the marker of the blob it applies to plus the writes the
//     batch accounts for (Applied.Writes), never the live counter.
//
// A later refresh reads the counter c' first: when c' equals the recorded
// m, every write is in the blob, and it stops there, without a scan.
//
// Why no change is lost. Say a blob accounts for a set A of m distinct
// writes, each of them in the blob (its table's row there is that write's
// result or a later one's).
//
//   - A full scan: the c writes bumped before its read of the counter
//     happened before the scan (each write precedes its bump), and the scan
//     (strongly consistent) sees them; A is those c writes.
//   - An apply: for each table whose row the batch changes, the writes
//     between the blob's row and the registration read now are in no set
//     the base accounted for (the base holds the row, an earlier state).
//     A registration the base has no row of: all its writes (its creation
//     and each update, one version each), since a write of it in A would
//     have left its row in the base (it is the current registration, so no
//     drop of it came after). A registration the base holds an older
//     version of (the same creation time, to the microsecond the blob
//     keeps): the versions it moved by. Anything else (a drop, a
//     registration replaced by another): one. A grows by that many. A
//     table the batch leaves as it was (a batch repeated, or one whose
//     writes the blob already has) adds nothing.
//
// Every write of A has bumped the counter (a write's bump follows it by a
// round trip, long before the next scheduled run) unless its bump was lost.
// So when a run reads c' = m = |A|, the c' writes bumped so far are exactly
// A, all in the blob. A write whose stream batch failed is not in A but has
// bumped, so c' > m and the run scans: a failed batch waits for the next
// scheduled run, not the reconciliation. (Recording the live counter in an
// apply, as before, was wrong: the counter could already count a write
// whose own batch failed, and the scheduled runs said unchanged.)
//
// What the protocol cannot see is a lost bump (the writer died between its
// write and its bump) together with a failed batch: a write of A whose bump
// never happened leaves c' short of m, and only when another write's failed
// batch makes up the difference do the two agree. A lost bump alone makes
// c' ≠ m, so the next run scans (and records the counter again). A bump
// that fails (the store refuses the add or is unreachable) is
// reported to the writer as ErrUnsignalled, never dropped in silence. The
// reconciliation, a full scan at a fixed interval whatever the counter
// says, heals the rest within the interval.

// ChangesKey is the metastore key of the catalog's change counter, outside
// the "tbl/" prefix that snapshots scan.
const ChangesKey = "meta/changes"

// ReadChanges returns the change counter (0 before the first write) with
// one strongly consistent read.
func ReadChanges(ctx context.Context, store metastore.Store) (uint64, error) {
	n, err := store.Counter(ctx, ChangesKey)
	if err != nil {
		return 0, &Error{Op: "read", Ref: ChangesKey, Kind: err}
	}
	return n, nil
}

// ErrUnsignalled: the registration was written (or dropped), but the change
// counter could not be bumped after it (the store failed), so a scheduled
// refresh may not notice the write until a stream batch applies it or the
// reconciliation scans. The operation returns what it wrote with this
// error (an *Error listing the change counter among its SideWrites, so
// errors.Is(err, ErrSideWrite) holds too); retrying it is safe. The bump
// is one atomic add (metastore.Store.AddCounter), the last write of a
// mutation's commit, never retried on contention however many writers
// share the counter.
var ErrUnsignalled = errors.New("written, but the change was not signalled to refresh")
