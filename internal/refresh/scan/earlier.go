package scan

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// registration names one registration of a table: its name and its
// creation id, as its version records are keyed.
type registration struct {
	ref        catalog.TableRef
	creationID string
}

// keptVersions is how many versions of a registration the catalog keeps,
// its current one included, for a HistoryVersions option: zero is
// catalog.DefaultHistoryVersions, negative none.
func keptVersions(n int) int {
	switch {
	case n == 0:
		return catalog.DefaultHistoryVersions
	case n < 0:
		return 0
	}
	return n
}

// keptBelow returns the versions of es (ascending) that a registration at
// version keeps below it: from version-keep+1 to version-1, as
// Catalog.History reads them; nil when none.
func keptBelow(es []snapshot.Earlier, version int64, keep int) []snapshot.Earlier {
	oldest := version - int64(keep) + 1
	lo := slices.IndexFunc(es, func(e snapshot.Earlier) bool { return e.Version >= oldest })
	if lo < 0 {
		return nil
	}
	hi := slices.IndexFunc(es, func(e snapshot.Earlier) bool { return e.Version >= version })
	if hi < 0 {
		hi = len(es)
	}
	if lo >= hi {
		return nil
	}
	return es[lo:hi:hi]
}

// earlierAfter returns the earlier versions of t, the row of ref's
// registration read now, given its row in the blob before (before; had
// false when there is none) and the count the catalog keeps: before's
// own list, before itself and the versions between them when before is
// an older version of the same registration (one Get each of the
// versions between, none for one update), before's list when it is the
// same version, else a Get of each kept version below t's. A version
// record not there (a gap, or deleted) is left out, as Catalog.History
// skips it; reads counts the Gets.
func earlierAfter(ctx context.Context, store metastore.Store, ref catalog.TableRef, t, before *snapshot.Table, had bool, keep int, reads *int) ([]snapshot.Earlier, error) {
	if keep < 2 || t.CreationID == "" || t.Version <= 1 {
		return nil, nil
	}
	var es []snapshot.Earlier
	from := max(1, t.Version-int64(keep)+1)
	if had && before.CreationID == t.CreationID && before.Version <= t.Version {
		if before.Version == t.Version {
			return before.Earlier, nil
		}
		es = slices.Clone(before.Earlier)
		if before.SchemaIPC != nil {
			es = append(es, snapshot.Earlier{Version: before.Version, SchemaIPC: before.SchemaIPC, FieldIDs: before.FieldIDs,
				LastColumnID: before.LastColumnID})
		}
		from = max(from, before.Version+1)
	}
	for v := from; v < t.Version; v++ {
		key := catalog.VersionKey(ref, t.CreationID, v)
		raw, err := store.Get(ctx, key)
		*reads++
		switch {
		case errors.Is(err, metastore.ErrNotFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("scan: read %s: %w", key, err)
		}
		reg, err := catalog.DecodeRegistration(raw)
		if err != nil {
			continue
		}
		if e, ok := (*rowCache)(nil).earlier(v, reg); ok {
			es = append(es, e)
		}
	}
	return keptBelow(es, t.Version, keep), nil
}
