package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// The change counter: how refresh knows, with one strongly consistent read,
// whether anything was written since the blob it published.
//
// Protocol. Every successful write of a registration (a register that
// creates, an update that changes, a drop) is followed by a bump: the
// counter at ChangesKey goes up by one (a compare-and-swap loop). Refresh
// reads the counter c before it scans, builds the blob from the scan and
// records c in the blob (its change marker). A later refresh reads the
// counter c' first: when c' equals the recorded c, nothing was written
// since, and it stops there, without a scan.
//
// Why no change is lost: a write W happens before its bump B. If refresh R
// read c before B, R recorded c < c' (the value after B), so the next
// refresh sees c' ≠ c and scans, and that scan, starting after B and so
// after W, sees W. If R read c after B, then W happened before R's read and
// so before R's scan, which sees W (the scan is strongly consistent). A
// write that lands during R's scan is either in it or bumped the counter
// past what R recorded. What the protocol cannot see is a write whose bump
// never happened (the writer died between the two, or the bump failed: a
// bump failure does not fail the write, which already happened): the
// reconciliation, a full scan at a fixed interval whatever the counter
// says, heals that within the interval.

// ChangesKey is the metastore key of the catalog's change counter, outside
// the "tbl/" prefix that snapshots scan.
const ChangesKey = "meta/changes"

// ReadChanges returns the change counter (0 before the first write) with
// one strongly consistent read.
func ReadChanges(ctx context.Context, store metastore.Store) (uint64, error) {
	raw, err := store.Get(ctx, ChangesKey)
	if errors.Is(err, metastore.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("catalog: read the change counter: %w", err)
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("catalog: the change counter holds %q: %w", raw, err)
	}
	return n, nil
}

// bumpChanges adds one to the change counter after a write. Its failure is
// dropped: the write has happened, and the reconciliation scan sees it.
func (c *Catalog) bumpChanges(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = casLoop(ctx, c.store, ChangesKey, func(raw []byte) ([]byte, error) {
		// An unreadable counter starts again from 0 (refresh then reads
		// values it may have recorded before; the reconciliation heals).
		n, _ := strconv.ParseUint(string(raw), 10, 64)
		return []byte(strconv.FormatUint(n+1, 10)), nil
	})
}
