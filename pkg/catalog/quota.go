package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// Per-tenant quotas.
//
// Each tenant's usage (tables and schema IPC bytes) lives in one item of
// the same store, at QuotaPrefix+tenant, outside the "tbl/" prefix that
// snapshots scan. A write reserves what it adds before it writes the
// registration, with a compare-and-swap on the usage item (Create when
// there is none), so concurrent writers can never together pass a limit:
// each reservation is checked against the value it replaces. A write that
// then fails gives its reservation back; a drop gives back what the
// dropped registration held.
//
// The usage can only drift upwards: a process that dies between its
// reservation and its write leaves the reservation counted (failing closed,
// never open). Usage is counted from the first write after quotas were
// introduced; registrations written before are not in it.

// QuotaPrefix is the key prefix of the per-tenant usage items.
const QuotaPrefix = "quota/"

// Default per-tenant limits.
const (
	DefaultMaxTables      = 10_000
	DefaultMaxSchemaBytes = 32 << 20
)

// ErrQuotaExceeded: the write would take the tenant past its table count or
// schema bytes limit. Nothing was written.
var ErrQuotaExceeded = errors.New("tenant quota exceeded")

// Quota bounds what one tenant may register. A zero field takes its
// default; a negative one means no limit.
type Quota struct {
	// MaxTables is the most tables a tenant may have. Default
	// DefaultMaxTables.
	MaxTables int64
	// MaxSchemaBytes is the most schema IPC bytes a tenant's tables may hold
	// together. Default DefaultMaxSchemaBytes.
	MaxSchemaBytes int64
}

func (q Quota) withDefaults() Quota {
	if q.MaxTables == 0 {
		q.MaxTables = DefaultMaxTables
	}
	if q.MaxSchemaBytes == 0 {
		q.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	return q
}

// Usage is what a tenant's registrations hold, as the quota counts it.
type Usage struct {
	Tables      int64 `json:"tables"`
	SchemaBytes int64 `json:"schema_bytes"`
}

// Usage returns the tenant's counted usage (zero when it has none).
func (c *Catalog) Usage(ctx context.Context, tenant string) (Usage, error) {
	if err := ValidateName("tenant", tenant); err != nil {
		return Usage{}, err
	}
	u, _, err := c.readUsage(ctx, tenant)
	return u, err
}

func (c *Catalog) readUsage(ctx context.Context, tenant string) (Usage, []byte, error) {
	raw, err := c.store.Get(ctx, QuotaPrefix+tenant)
	if errors.Is(err, metastore.ErrNotFound) {
		return Usage{}, nil, nil
	}
	if err != nil {
		return Usage{}, nil, err
	}
	var u Usage
	if err := json.Unmarshal(raw, &u); err != nil {
		return Usage{}, nil, fmt.Errorf("usage of tenant %q: %w", tenant, err)
	}
	return u, raw, nil
}

// adjustUsage adds tables and bytes to the tenant's usage with a
// compare-and-swap on the usage item, refusing with ErrQuotaExceeded an
// increase that would pass a limit (a decrease is never refused, and
// usage never goes below zero).
func (c *Catalog) adjustUsage(ctx context.Context, tenant string, tables, bytes int64) error {
	if tables == 0 && bytes == 0 {
		return nil
	}
	return casLoop(ctx, c.store, QuotaPrefix+tenant, func(raw []byte) ([]byte, error) {
		var cur Usage
		if raw != nil {
			if err := json.Unmarshal(raw, &cur); err != nil {
				return nil, fmt.Errorf("usage of tenant %q: %w", tenant, err)
			}
		}
		next := Usage{Tables: max(cur.Tables+tables, 0), SchemaBytes: max(cur.SchemaBytes+bytes, 0)}
		if tables > 0 && c.quota.MaxTables >= 0 && next.Tables > c.quota.MaxTables {
			return nil, kindErrorf(ErrQuotaExceeded, "%d tables, limit %d", cur.Tables, c.quota.MaxTables)
		}
		if bytes > 0 && c.quota.MaxSchemaBytes >= 0 && next.SchemaBytes > c.quota.MaxSchemaBytes {
			return nil, kindErrorf(ErrQuotaExceeded, "%d schema bytes held and %d more asked for, limit %d", cur.SchemaBytes, bytes, c.quota.MaxSchemaBytes)
		}
		return json.Marshal(next)
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
	return kindErrorf(ErrConflict, "%s still changing after %d attempts", key, casAttempts)
}

// release gives back a reservation after a failed write. It runs even when
// ctx is done (the reservation must not stay counted because the caller
// gave up); its error is dropped: usage drifts upwards at worst.
func (c *Catalog) release(ctx context.Context, tenant string, tables, bytes int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = c.adjustUsage(ctx, tenant, -tables, -bytes)
}
