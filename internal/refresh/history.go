package refresh

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
)

// Orphaned history on AWS. A dropped table's version records carry no
// expiry of their tombstone's: they are reached through the tombstone, and
// when DynamoDB's TTL deletes it at the end of its retention nothing
// reaches them any more. Refresh deletes them, as local mode's sweep
// (catalog.PurgeExpired) does with the tombstone:
//
//   - the stream: the TTL's delete is a REMOVE of the tombstone's key,
//     which Apply reads again; for each tombstone key of a batch that
//     succeeded, History.PurgeOrphanedHistory deletes that table's
//     records when neither the tombstone nor the registration of that
//     creation id is there (an undrop's REMOVE finds the registration and
//     deletes nothing): a few reads by key, never a scan;
//   - the sweep: a run that scanned (the reconciliation, at least daily)
//     also sweeps the whole store for histories nothing reaches (one more
//     scan of the table; catalog.SweepOrphanedHistories), at most once a
//     Reconcile interval (HistorySweepKey records when the last sweep
//     finished), for what no batch purged: a batch given up to the
//     failure queue, a history over the budget, those orphaned before
//     this release.
//
// Each invocation reads at most HistoryBudget version records for it and
// stops HistoryMargin before its deadline; what is left is counted
// (HistoriesLeft) and a sweep that left some runs again at the next run
// that scans. Both are idempotent.

// DefaultHistoryBudget is Publisher.HistoryBudget's default: the version
// records one invocation reads to purge orphaned history (and at most as
// many it deletes), about 10,000 DynamoDB calls, some 30 s.
const DefaultHistoryBudget = 5000

// HistorySweepKey is the metastore key where refresh records when it last
// swept the store for orphaned history (RFC 3339), outside "tbl/".
const HistorySweepKey = "meta/history-sweep"

// HistoryMargin is the time a purge of orphaned history leaves before the
// invocation's deadline: it stops there, so the run it follows is never
// failed by it.
const HistoryMargin = 30 * time.Second

// HistoryPurger deletes version records nothing reaches any more:
// *catalog.Catalog (PurgeOrphanedHistory, SweepOrphanedHistories), whose
// HistoryVersions must be the register function's. Both are safe for
// concurrent use and idempotent.
type HistoryPurger interface {
	PurgeOrphanedHistory(ctx context.Context, ref catalog.TableRef, creationID string) (catalog.HistoryPurge, error)
	SweepOrphanedHistories(ctx context.Context, budget int) (catalog.HistoryPurge, error)
}

var _ HistoryPurger = (*catalog.Catalog)(nil)

// historyContext is ctx ending HistoryMargin before its deadline, and
// whether any time is left.
func historyContext(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, true
	}
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(-HistoryMargin))
	return ctx, cancel, ctx.Err() == nil
}

func (p *Publisher) historyBudget() int {
	if p.HistoryBudget > 0 {
		return p.HistoryBudget
	}
	return DefaultHistoryBudget
}

// counted adds h to res.
func (res *Result) counted(h catalog.HistoryPurge) {
	res.HistoriesPurged += h.Histories
	res.VersionsPurged += h.Versions
	res.HistoriesLeft += h.Left
	res.HistorySweepPages += h.ScanPages
	res.DroppedIndexed += h.Indexed
}

// purgeDropped purges the orphaned history of each tombstone key in keys
// (a batch Apply published), in key order, until the budget is read; the
// keys past it are counted in HistoriesLeft (the sweep finds them). It
// does nothing after a sweep (the batch fell back to a full scan that
// swept): the sweep's scan found those histories too, within the same
// budget.
func (p *Publisher) purgeDropped(ctx context.Context, res *Result, keys []string) {
	if p.History == nil || res.HistorySwept {
		return // a sweep after the batch's fallback scan saw these tombstones gone too
	}
	ctx, cancel, ok := historyContext(ctx)
	defer cancel()
	budget := p.historyBudget()
	var (
		reads  int
		failed []error
	)
	for _, key := range slices.Compact(slices.Sorted(slices.Values(keys))) {
		stripped, isTomb := strings.CutPrefix(key, catalog.TombstonePrefix)
		i := strings.LastIndexByte(stripped, '/')
		if !isTomb || i < 0 {
			continue
		}
		ref, err := catalog.ParseKey(stripped[:i])
		if err != nil {
			continue // never a tombstone's key
		}
		if !ok || ctx.Err() != nil || reads >= budget {
			res.HistoriesLeft++
			continue
		}
		h, err := p.History.PurgeOrphanedHistory(ctx, ref, stripped[i+1:])
		reads += h.Reads
		res.counted(h)
		if err != nil {
			failed = append(failed, err)
		}
	}
	if err := errors.Join(failed...); err != nil {
		res.historyFailed(err.Error())
	}
}

// historyFailed adds why a purge failed to HistoryError.
func (res *Result) historyFailed(why string) {
	if res.HistoryError != "" {
		why = res.HistoryError + "; " + why
	}
	res.HistoryError = why
}

// sweepHistory sweeps the store for orphaned history when the last sweep
// finished a Reconcile interval ago or more (or never did), and records
// the time when it leaves nothing.
func (p *Publisher) sweepHistory(ctx context.Context, res *Result) {
	if p.History == nil {
		return
	}
	at, reconcile := p.clock()(), p.reconcileInterval()
	raw, err := p.Store.Get(ctx, HistorySweepKey)
	switch {
	case errors.Is(err, metastore.ErrNotFound):
	case err != nil:
		res.historyFailed("read the last sweep: " + err.Error())
		return
	default:
		if last, perr := time.Parse(time.RFC3339, string(raw)); perr == nil && at.Sub(last) < reconcile {
			return
		}
	}
	ctx, cancel, ok := historyContext(ctx)
	defer cancel()
	if !ok {
		return
	}
	h, err := p.History.SweepOrphanedHistories(ctx, p.historyBudget())
	res.HistorySwept = true
	res.counted(h)
	switch {
	case err != nil:
		res.historyFailed(err.Error())
	case h.Left == 0:
		if err := p.Store.Put(ctx, HistorySweepKey, []byte(at.UTC().Format(time.RFC3339))); err != nil {
			res.historyFailed("record the sweep: " + err.Error())
		}
	}
}
