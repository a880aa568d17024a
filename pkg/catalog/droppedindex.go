package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// DroppedIndexPrefix is the metastore prefix of the per-tenant index of
// dropped tables, which Dropped reads with one Get per shard instead of a
// prefix read of the tenant's tombstones (on DynamoDB, whose table has a
// partition key only, a prefix read is a Scan of the whole table):
//
//	droppedidx/<tenant>/<shard>
//
// A tombstone's entry lives in shard fnv32a(<namespace>/<table>) mod
// DroppedIndexShards. An item is JSON, {"entries":[…]}, one entry per
// tombstone: its key under the tenant (<namespace>/<table>/<creation id>),
// version, drop time, who dropped it and expiry. The catalog keeps it in
// its one commit path: a drop adds the entry (a side write after the
// registration's delete), an undrop and the purge remove it, and every
// write of a shard leaves out the entries past retention (so those the
// store's TTL expired are pruned by the next write; reads skip them).
//
// Bound: a shard is never written over DroppedIndexShardBytes (a write that
// would pass it fails, reported as the drop's side write). An entry is at
// most about 700 bytes plus its dropped_by (names are at most MaxNameBytes,
// creation ids 64), typically about 250, so a tenant holds at least about
// 7,000 drops in retention in the index, typically about 20,000, each item
// well under DynamoDB's 400 KB.
const DroppedIndexPrefix = "droppedidx/"

// DroppedIndexShards is how many index items a tenant's drops spread over.
const DroppedIndexShards = 16

// DroppedIndexShardBytes is the most one index item holds.
const DroppedIndexShardBytes = 300 << 10

// PartDroppedIndex is an item of the index of dropped tables
// (DroppedIndexPrefix).
const PartDroppedIndex Part = "dropped-table index"

// droppedEntry is one tombstone in the index.
type droppedEntry struct {
	// Key is the tombstone's key under TombstonePrefix+tenant+"/":
	// <namespace>/<table>/<creation id>.
	Key        string    `json:"key"`
	Version    int64     `json:"version"`
	CreationID string    `json:"creation_id"`
	DroppedAt  time.Time `json:"dropped_at"`
	DroppedBy  string    `json:"dropped_by,omitempty"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
}

func (e droppedEntry) expired(now time.Time) bool {
	return !e.ExpiresAt.IsZero() && !now.Before(e.ExpiresAt)
}

// newDroppedEntry is the entry of tombstone d, stored at
// TombstonePrefix+tenant+"/"+sub.
func newDroppedEntry(d Tombstone, sub string) droppedEntry {
	return droppedEntry{Key: sub, Version: d.Registration.version, CreationID: d.Registration.creationID,
		DroppedAt: d.DroppedAt.UTC(), DroppedBy: d.DroppedBy, ExpiresAt: d.ExpiresAt.UTC()}
}

// droppedShard is the stored shape of an index item.
type droppedShard struct {
	Entries []droppedEntry `json:"entries"`
}

// droppedIndexKey is the key of the index item that holds ref's drops.
func droppedIndexKey(ref TableRef) string {
	h := fnv.New32a()
	h.Write([]byte(ref.Namespace + "/" + ref.Name))
	return DroppedIndexPrefix + ref.Tenant + "/" + strconv.Itoa(int(h.Sum32()%DroppedIndexShards))
}

func decodeDroppedShard(key string, raw []byte) (droppedShard, error) {
	var s droppedShard
	if raw == nil {
		return s, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, &Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("index item %s: %v", key, err)}
	}
	return s, nil
}

// indexAdd is the side write that adds d (stored at tombstone key tombKey)
// to its tenant's index, replacing an entry of the same key.
func (c *Catalog) indexAdd(d Tombstone, tombKey string) write {
	sub := tombKey[len(TombstonePrefix)+len(d.Ref.Tenant)+1:]
	e := newDroppedEntry(d, sub)
	return c.indexEdit(droppedIndexKey(d.Ref), func(es []droppedEntry) []droppedEntry {
		es = slices.DeleteFunc(es, func(x droppedEntry) bool { return x.Key == sub })
		return append(es, e)
	})
}

// indexRemove is the side write that removes the tombstone ref/creationID
// of the given version from its tenant's index (nothing when it is not
// there). An entry of a later version is another drop's: a drop of the
// table restored by an undrop writes its tombstone at the same key, and
// its entry, possibly before the undrop's own side writes run; removing it
// would hide that drop from Dropped until the sweep repaired the index.
func (c *Catalog) indexRemove(ref TableRef, creationID string, version int64) write {
	sub := ref.Namespace + "/" + ref.Name + "/" + creationID
	return c.indexEdit(droppedIndexKey(ref), func(es []droppedEntry) []droppedEntry {
		return slices.DeleteFunc(es, func(x droppedEntry) bool { return x.Key == sub && x.Version <= version })
	})
}

// indexEdit is a side write of the index item at key: a read, fn on its
// entries without those past retention, and a conditional write of the
// result (a delete when none are left), again from the read while another
// writer moves the item.
func (c *Catalog) indexEdit(key string, fn func([]droppedEntry) []droppedEntry) write {
	return write{part: PartDroppedIndex, op: opEdit, key: key, edit: func(raw []byte) ([]byte, error) {
		s, err := decodeDroppedShard(key, raw)
		if err != nil {
			return nil, err
		}
		now := c.now()
		s.Entries = fn(slices.DeleteFunc(s.Entries, func(e droppedEntry) bool { return e.expired(now) }))
		if len(s.Entries) == 0 {
			return nil, nil
		}
		val, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		if len(val) > DroppedIndexShardBytes {
			return nil, &Error{Kind: ErrQuotaExceeded, Detail: fmt.Sprintf("index item %s would hold %d bytes, limit %d", key, len(val), DroppedIndexShardBytes)}
		}
		return val, nil
	}}
}

// indexAllMissing adds to each index item the tombstones of live (by
// index item) it lacks, in key order: the sweeps' repair of the index
// (drops made before it, or whose index write failed). It returns how
// many it added and the failures, each counted under PartDroppedIndex.
func (c *Catalog) indexAllMissing(ctx context.Context, live map[string][]Tombstone) (int, []error) {
	var added int
	var failed []error
	for _, key := range slices.Sorted(maps.Keys(live)) {
		n, err := c.indexMissing(ctx, key, live[key])
		added += n
		if err != nil {
			c.stats.fail(PartDroppedIndex)
			failed = append(failed, during("index the dropped tables of", live[key][0].Ref.Tenant, err))
		}
	}
	return added, failed
}

// indexMissing adds to the index item at key the tombstones of ts (all of
// that item, in retention) it lacks, or holds at another version, and
// returns how many. A tombstone undropped meanwhile may be added back: its
// entry is harmless, as Dropped reads each listed tombstone and leaves out
// one that is gone, and the next write of the item after its retention
// prunes it.
func (c *Catalog) indexMissing(ctx context.Context, key string, ts []Tombstone) (int, error) {
	added := 0
	w := c.indexEdit(key, func(es []droppedEntry) []droppedEntry {
		added = 0
		for _, d := range ts {
			sub := d.Ref.Namespace + "/" + d.Ref.Name + "/" + d.Registration.creationID
			if slices.ContainsFunc(es, func(e droppedEntry) bool { return e.Key == sub && e.Version == d.Registration.version }) {
				continue
			}
			es = slices.DeleteFunc(es, func(e droppedEntry) bool { return e.Key == sub })
			es = append(es, newDroppedEntry(d, sub))
			added++
		}
		return es
	})
	if err := c.apply(ctx, w); err != nil {
		return 0, err
	}
	return added, nil
}

// applyEdit runs an opEdit write: read, edit, and create, swap or delete
// conditioned on the read, again while another writer moves the item.
func (c *Catalog) applyEdit(ctx context.Context, w write) error {
	for range casAttempts {
		raw, err := c.store.Get(ctx, w.key)
		if errors.Is(err, metastore.ErrNotFound) {
			raw, err = nil, nil
		}
		if err != nil {
			return err
		}
		val, err := w.edit(raw)
		if err != nil {
			return err
		}
		switch {
		case val == nil && raw == nil, bytes.Equal(val, raw):
			return nil
		case val == nil:
			err = c.store.CompareAndDelete(ctx, w.key, raw)
		case raw == nil:
			err = c.store.Create(ctx, w.key, val)
		default:
			err = c.store.CompareAndSwap(ctx, w.key, raw, val)
		}
		if !lostRace(err) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return &Error{Kind: ErrConflict, Detail: fmt.Sprintf("%s still changing after %d attempts", w.key, casAttempts)}
}

// Dropped lists the tenant's tombstones in retention (dropped tables that
// Undrop can restore), newest drop first. It reads the tenant's index of
// dropped tables (DroppedIndexPrefix) with one Get per shard, then each
// listed tombstone with a Get: never a prefix read, which on DynamoDB is a
// Scan of the whole table. An entry past retention, or whose tombstone is
// gone (purged by the store's TTL, or undropped by a writer whose index
// write failed), is left out. The Get per entry is
// what makes the answer the tombstones' and not the index's: an undrop
// finds what Dropped lists, and a drop's tombstone is written before its
// entry, so the index never lists a drop Undrop cannot find.
//
// A drop whose index write failed (reported as its side write, counted in
// Stats under PartDroppedIndex), or made before the index existed, is not
// listed; Undrop restores it by name and creation id all the same.
// The returned slice belongs to the caller.
func (c *Catalog) Dropped(ctx context.Context, tenant string) ([]Tombstone, error) {
	if err := ValidateName("tenant", tenant); err != nil {
		return nil, err
	}
	now := c.now()
	var out []Tombstone
	for i := range DroppedIndexShards {
		key := DroppedIndexPrefix + tenant + "/" + strconv.Itoa(i)
		raw, err := c.store.Get(ctx, key)
		if errors.Is(err, metastore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, during("list dropped tables of", tenant, err)
		}
		s, err := decodeDroppedShard(key, raw)
		if err != nil {
			return nil, during("list dropped tables of", tenant, err)
		}
		for _, e := range s.Entries {
			if e.expired(now) {
				continue
			}
			stripped := tenant + "/" + e.Key
			val, err := c.store.Get(ctx, TombstonePrefix+stripped)
			if errors.Is(err, metastore.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, during("list dropped tables of", tenant, err)
			}
			d, err := DecodeTombstone(stripped, val)
			if err != nil || d.Expired(now) {
				continue
			}
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b Tombstone) int { return b.DroppedAt.Compare(a.DroppedAt) })
	return out, nil
}
