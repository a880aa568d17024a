package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// Per-tenant quotas.
//
// Each tenant's usage (tables, and the bytes its registrations take as
// stored: key and value, so schema IPC, description, properties, location
// and names alike, which is what the snapshot carries) lives in one item of
// the same store, at QuotaPrefix+tenant, outside the "tbl/" prefix that
// snapshots scan. Each mutation writes it once, with a compare-and-swap
// (Create when there is none), by the mutation's net change (commit.go):
// a write the quota may refuse (register, update, undrop) reserves it
// before it writes the registration, checked against the limits with what
// the write adds (its registration and version record, before what it
// frees), so concurrent writers can never together pass a limit: each
// reservation is checked against the value it replaces; a write that then
// fails gives its reservation back. A write never refused (a drop, an
// update that shrinks) counts it right after its registration is written.
// The bytes count what the tenant holds: every registration, the version
// record of each state kept (counted with the write that makes it, given
// back with the one that moves it out of the kept count), and each
// tombstone in retention (counted with the drop that writes it, given back
// by whoever removes it: the undrop, a later drop of the restored table
// that replaces it, the purge, or the drop itself when the registration
// changed before its delete). A side write that does not take effect
// (it failed, or another writer took its key first) is corrected after
// the mutation's writes: a second write of the item, on that path only.
// On DynamoDB the TTL deletes expired tombstones without telling the
// usage, which `lake quota recompute` counts again (leaving out the
// history the tombstone kept, which nothing reaches any more).
//
// A process that dies inside a mutation leaves the usage as the whole
// mutation would have, counted when the item was written: off by what the
// writes it did not reach would have changed (a registration it did not
// write stays reserved, failing closed; a version record it did not
// delete as it fell out of the count is not counted) until `lake quota
// recompute`.
//
// Counting before this format. Usage items written before whole
// registrations were counted hold the schema IPC bytes alone
// ("schema_bytes"), and registrations written before quotas existed are in
// no item. RecomputeUsage counts every tenant again from its registrations
// (one scan) and records UsageFormatKey when done; until then writes count
// whole registrations on top of what the old items hold. Local mode runs
// it at start when UsageFormatKey is missing; a deployment runs `lake quota
// recompute` once after upgrading (README, Security).

// QuotaPrefix is the key prefix of the per-tenant usage items.
const QuotaPrefix = "quota/"

// UsageFormatKey records that every usage item counts whole registrations
// (RecomputeUsage wrote it, value UsageFormat).
const UsageFormatKey = "meta/usage-format"

// UsageFormat is the value at UsageFormatKey.
const UsageFormat = "2"

// Default per-tenant limits.
const (
	DefaultMaxTables = 10_000
	DefaultMaxBytes  = 32 << 20
)

// ErrQuotaExceeded: the write would take the tenant past its table count or
// byte limit. Nothing was written.
var ErrQuotaExceeded = errors.New("tenant quota exceeded")

// Quota bounds what one tenant may register. A zero field takes its
// default; a negative one means no limit.
type Quota struct {
	// MaxTables is the most tables a tenant may have. Default
	// DefaultMaxTables.
	MaxTables int64
	// MaxBytes is the most bytes a tenant's registrations may take together
	// as stored (each its key and its value: schema, description,
	// properties, location, names). Default DefaultMaxBytes.
	MaxBytes int64
}

func (q Quota) withDefaults() Quota {
	if q.MaxTables == 0 {
		q.MaxTables = DefaultMaxTables
	}
	if q.MaxBytes == 0 {
		q.MaxBytes = DefaultMaxBytes
	}
	return q
}

// Usage is what a tenant's registrations hold, as the quota counts it.
type Usage struct {
	Tables int64 `json:"tables"`
	// Bytes is what the registrations take as stored (keys and values).
	Bytes int64 `json:"bytes"`
}

// usageItem is a usage item as stored: Bytes, or in an item written
// before whole registrations were counted, SchemaBytes.
type usageItem struct {
	Tables      int64 `json:"tables"`
	Bytes       int64 `json:"bytes"`
	SchemaBytes int64 `json:"schema_bytes,omitempty"`
}

func decodeUsage(raw []byte) (Usage, error) {
	var it usageItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return Usage{}, fmt.Errorf("the usage item: %w", err)
	}
	return Usage{Tables: it.Tables, Bytes: max(it.Bytes, it.SchemaBytes)}, nil
}

// registrationBytes is what one stored registration counts against the
// byte quota.
func registrationBytes(key string, val []byte) int64 { return int64(len(key) + len(val)) }

// Usage returns the tenant's counted usage (zero when it has none).
func (c *Catalog) Usage(ctx context.Context, tenant string) (Usage, error) {
	if err := ValidateName("tenant", tenant); err != nil {
		return Usage{}, err
	}
	raw, err := c.store.Get(ctx, QuotaPrefix+tenant)
	if errors.Is(err, metastore.ErrNotFound) {
		return Usage{}, nil
	}
	if err != nil {
		return Usage{}, &Error{Op: "usage", Ref: tenant, Kind: err}
	}
	u, err := decodeUsage(raw)
	if err != nil {
		return Usage{}, &Error{Op: "usage", Ref: tenant, Kind: err}
	}
	return u, nil
}

// UsageCounted reports whether RecomputeUsage has counted every tenant in
// whole registrations (UsageFormatKey holds UsageFormat).
func UsageCounted(ctx context.Context, store metastore.Store) (bool, error) {
	raw, err := store.Get(ctx, UsageFormatKey)
	if errors.Is(err, metastore.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, &Error{Op: "read", Ref: UsageFormatKey, Kind: err}
	}
	return string(raw) == UsageFormat, nil
}

// Recomputed is what RecomputeUsage did.
type Recomputed struct {
	// Tenants is how many usage items were written; Changed how many of
	// them held another value before.
	Tenants, Changed int
}

// RecomputeUsage sets every tenant's usage item to what its registrations,
// tombstones and version records take now (one ScanPrefix of each prefix;
// tenants with none left get zero), then records UsageFormatKey. A
// version record counts while its registration is registered or kept by
// a tombstone; one nothing reaches any more (DynamoDB's TTL took its
// tombstone) is not held, and PurgeExpired deletes it. Each item is replaced with a
// compare-and-swap on the value read before the scan; a tenant written to
// meanwhile is counted again from a scan of its own prefix. A write
// reserved before that read and stored after the scan is missed (the
// usage is short by that write until the tenant drops it): run it while
// writes are few, or when nothing writes (local mode's start).
func (c *Catalog) RecomputeUsage(ctx context.Context) (Recomputed, error) {
	var out Recomputed
	before, err := c.store.ScanPrefix(ctx, QuotaPrefix)
	if err != nil {
		return out, &Error{Op: "recompute usage", Kind: err}
	}
	prior := make(map[string][]byte, len(before))
	for _, e := range before {
		prior[e.Key] = e.Value
	}
	counted, err := c.countHeld(ctx, "")
	if err != nil {
		return out, &Error{Op: "recompute usage", Kind: err}
	}
	for tenant := range prior {
		if _, ok := counted[tenant]; !ok {
			counted[tenant] = Usage{}
		}
	}
	for _, tenant := range slices.Sorted(maps.Keys(counted)) {
		changed, err := c.recomputeTenant(ctx, tenant, prior[tenant], counted[tenant])
		if err != nil {
			return out, during("recompute usage", tenant, err)
		}
		out.Tenants++
		if changed {
			out.Changed++
		}
	}
	if err := c.store.Put(ctx, UsageFormatKey, []byte(UsageFormat)); err != nil {
		return out, &Error{Op: "recompute usage", Ref: UsageFormatKey, Kind: err}
	}
	return out, nil
}

// recomputeTenant replaces the tenant's usage item, read as prev before the
// scan that counted u; when it moved since, it counts the tenant's own
// prefix again and retries.
func (c *Catalog) recomputeTenant(ctx context.Context, tenant string, prev []byte, u Usage) (bool, error) {
	key := QuotaPrefix + tenant
	for range casAttempts {
		val, err := json.Marshal(u)
		if err != nil {
			return false, err
		}
		if prev == nil {
			err = c.store.Create(ctx, key, val)
		} else {
			err = c.store.CompareAndSwap(ctx, key, prev, val)
		}
		switch {
		case err == nil:
			return !bytes.Equal(prev, val), nil
		case errors.Is(err, metastore.ErrExists), errors.Is(err, metastore.ErrConflict), errors.Is(err, metastore.ErrNotFound):
		default:
			return false, err
		}
		// A write moved the item: read it, then count the tenant again.
		if prev, err = c.store.Get(ctx, key); errors.Is(err, metastore.ErrNotFound) {
			prev = nil
		} else if err != nil {
			return false, err
		}
		counted, err := c.countHeld(ctx, tenant+"/")
		if err != nil {
			return false, err
		}
		u = counted[tenant]
	}
	return false, &Error{Kind: ErrConflict, Detail: fmt.Sprintf("%s still changing after %d attempts", key, casAttempts)}
}

// adjustUsage adds d to the tenant's usage with a compare-and-swap on the
// usage item (usage never goes below zero). With check it refuses with
// ErrQuotaExceeded, writing nothing, when the usage plus ask (what the
// mutation adds, before what it frees) would pass a limit.
func (c *Catalog) adjustUsage(ctx context.Context, tenant string, d, ask usage, check bool) error {
	if d == (usage{}) && !check {
		return nil
	}
	return casLoop(ctx, c.store, QuotaPrefix+tenant, func(raw []byte) ([]byte, error) {
		var cur Usage
		if raw != nil {
			var err error
			if cur, err = decodeUsage(raw); err != nil {
				return nil, err
			}
		}
		if check && ask.tables > 0 && c.quota.MaxTables >= 0 && cur.Tables+ask.tables > c.quota.MaxTables {
			return nil, &Error{Kind: ErrQuotaExceeded, Detail: fmt.Sprintf("%d tables, limit %d", cur.Tables, c.quota.MaxTables)}
		}
		if check && ask.bytes > 0 && c.quota.MaxBytes >= 0 && cur.Bytes+ask.bytes > c.quota.MaxBytes {
			return nil, &Error{Kind: ErrQuotaExceeded, Detail: fmt.Sprintf("%d bytes held (registrations, kept versions, tombstones) and %d more asked for, limit %d", cur.Bytes, ask.bytes, c.quota.MaxBytes)}
		}
		return json.Marshal(Usage{Tables: max(cur.Tables+d.tables, 0), Bytes: max(cur.Bytes+d.bytes, 0)})
	})
}

// casAttempts bounds the compare-and-swap retries of one casLoop.
const casAttempts = 50

// casLoop replaces the value at key with fn(current) (current is nil when
// there is none): Create when absent, else CompareAndSwap on the bytes
// read, so a concurrent writer's change is never overwritten; when another
// writer moved it first it reads again, after a short jittered pause that
// grows with the attempts. fn's error stops it.
func casLoop(ctx context.Context, store metastore.Store, key string, fn func(raw []byte) ([]byte, error)) error {
	for attempt := range casAttempts {
		raw, err := store.Get(ctx, key)
		if errors.Is(err, metastore.ErrNotFound) {
			raw, err = nil, nil
		}
		if err != nil {
			return err
		}
		val, err := fn(raw)
		if err != nil {
			return err
		}
		if raw == nil {
			err = store.Create(ctx, key, val)
		} else {
			err = store.CompareAndSwap(ctx, key, raw, val)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, metastore.ErrExists), errors.Is(err, metastore.ErrConflict), errors.Is(err, metastore.ErrNotFound):
			pause := time.Duration(rand.Int64N(int64(time.Millisecond) * int64(1+attempt)))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
		default:
			return err
		}
	}
	return &Error{Kind: ErrConflict, Detail: fmt.Sprintf("%s still changing after %d attempts", key, casAttempts)}
}

// countHeld counts what each tenant holds under sub ("" for every
// tenant, "<tenant>/" for one): one ScanPrefix each of its registrations,
// tombstones and version records, in that order. Every registration and
// tombstone counts; a version record counts when its registration is one
// of those scanned or kept by one of those tombstones.
func (c *Catalog) countHeld(ctx context.Context, sub string) (map[string]Usage, error) {
	counted := map[string]Usage{}
	reached := map[string]bool{} // <tenant>/<namespace>/<table>/<creation id>
	add := func(prefix string, e metastore.Entry, tables int64) (string, bool) {
		k := sub + e.Key
		tenant, _, ok := strings.Cut(k, "/")
		if !ok {
			return "", false
		}
		u := counted[tenant]
		u.Tables += tables
		u.Bytes += registrationBytes(prefix+k, e.Value)
		counted[tenant] = u
		return k, true
	}
	for _, prefix := range []string{KeyPrefix, TombstonePrefix, VersionPrefix} {
		entries, err := c.store.ScanPrefix(ctx, prefix+sub)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			switch prefix {
			case KeyPrefix:
				if k, ok := add(prefix, e, 1); ok {
					if id := creationIDOf(e.Value); id != "" {
						reached[k+"/"+id] = true
					}
				}
			case TombstonePrefix:
				if k, ok := add(prefix, e, 0); ok {
					reached[k] = true
				}
			default:
				if history, _, ok := cutLast(sub + e.Key); ok && reached[history] {
					add(prefix, e, 0)
				}
			}
		}
	}
	return counted, nil
}

// creationIDOf reads the creation id of stored registration JSON ("" when
// it has none or is not JSON).
func creationIDOf(raw []byte) string {
	var r struct {
		CreationID string `json:"creation_id"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	return r.CreationID
}
