package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// Errors a caller tells apart with errors.Is (see also ErrInvalidName,
// ErrInvalidSchema, ErrInvalidRegistration and ErrTooLarge).
var (
	// ErrNotFound: no table is registered under the reference.
	ErrNotFound = errors.New("catalog: table not found")
	// ErrExists: the table is registered with a different location, type or
	// schema; change it with Update.
	ErrExists = errors.New("catalog: table already registered differently")
	// ErrConflict: the registration changed between read and write, or does
	// not have the version the caller expected.
	ErrConflict = errors.New("catalog: registration changed concurrently")
)

// MaxRegistrationBytes bounds a stored registration: DynamoDB's 400 KB item
// less the key and attribute names.
const MaxRegistrationBytes = 390 * 1000

// Catalog registers, updates, reads and drops tables in a metastore.Store.
// It is safe for concurrent use.
type Catalog struct {
	store metastore.Store
	now   func() time.Time
}

// Options configures New.
type Options struct {
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// New returns a Catalog over store.
func New(store metastore.Store, opts Options) *Catalog {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Catalog{store: store, now: opts.Now}
}

// Store returns the metastore the catalog writes to.
func (c *Catalog) Store() metastore.Store { return c.store }

func encodeRegistration(ref TableRef, r Registration) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("catalog: encode %s: %w", ref, err)
	}
	if len(b) > MaxRegistrationBytes {
		return nil, fmt.Errorf("catalog: %s: %w: registration of %d bytes, limit %d", ref, ErrTooLarge, len(b), MaxRegistrationBytes)
	}
	return b, nil
}

// Register creates the table ref with spec. It validates the names and the
// spec and encodes the schema (checked by decoding back) before anything is
// stored. A retry of an identical registration returns the stored one with
// created false; a different one already stored is ErrExists.
func (c *Catalog) Register(ctx context.Context, ref TableRef, spec TableSpec) (reg Registration, created bool, err error) {
	key, err := ref.Key()
	if err != nil {
		return Registration{}, false, err
	}
	reg, err = NewRegistration(spec, c.now())
	if err != nil {
		return Registration{}, false, fmt.Errorf("catalog: register %s: %w", ref, err)
	}
	val, err := encodeRegistration(ref, reg)
	if err != nil {
		return Registration{}, false, err
	}
	err = c.store.Create(ctx, key, val)
	if err == nil {
		return reg, true, nil
	}
	if !errors.Is(err, metastore.ErrExists) {
		return Registration{}, false, fmt.Errorf("catalog: register %s: %w", ref, err)
	}
	cur, _, gerr := c.get(ctx, ref, key)
	if gerr != nil {
		return Registration{}, false, gerr
	}
	if cur.sameContent(reg) {
		return cur, false, nil
	}
	return Registration{}, false, fmt.Errorf("catalog: register %s: %w (version %d)", ref, ErrExists, cur.version)
}

// UpdateOptions qualify Update.
type UpdateOptions struct {
	// IfVersion, when non-zero, makes the update apply only to a registration
	// at that version; any other version is ErrConflict.
	IfVersion int64
	// IfNoSchema makes the update apply only to a registration that carries
	// no schema (a backfill); one that has a schema is ErrConflict.
	IfNoSchema bool
}

// Update replaces the table's schema (and its location and type where spec
// gives them; empty keeps the current ones), bumping the version. An update
// that changes nothing returns the stored registration unchanged. The write
// is a compare-and-swap on the bytes read, so a registration that changed
// meanwhile is never overwritten: without IfVersion the update is re-applied
// to the newer registration (up to a few times), with it ErrConflict.
func (c *Catalog) Update(ctx context.Context, ref TableRef, spec TableSpec, opts UpdateOptions) (Registration, error) {
	key, err := ref.Key()
	if err != nil {
		return Registration{}, err
	}
	const attempts = 5
	for range attempts {
		cur, raw, err := c.get(ctx, ref, key)
		if err != nil {
			return Registration{}, err
		}
		if opts.IfVersion != 0 && cur.version != opts.IfVersion {
			return Registration{}, fmt.Errorf("catalog: update %s: %w: at version %d, expected %d", ref, ErrConflict, cur.version, opts.IfVersion)
		}
		if opts.IfNoSchema && cur.HasSchema() {
			return Registration{}, fmt.Errorf("catalog: update %s: %w: it has a schema now", ref, ErrConflict)
		}
		want := spec
		if want.Location == "" {
			want.Location = cur.location
		}
		if want.TableType == "" {
			want.TableType = cur.tableType
		}
		next, err := NewRegistration(want, c.now())
		if err != nil {
			return Registration{}, fmt.Errorf("catalog: update %s: %w", ref, err)
		}
		if next.sameContent(cur) {
			return cur, nil
		}
		next.createdAt = cur.createdAt
		next.version = cur.version + 1
		val, err := encodeRegistration(ref, next)
		if err != nil {
			return Registration{}, err
		}
		err = c.store.CompareAndSwap(ctx, key, raw, val)
		switch {
		case err == nil:
			return next, nil
		case errors.Is(err, metastore.ErrNotFound):
			return Registration{}, fmt.Errorf("catalog: update %s: %w", ref, ErrNotFound)
		case errors.Is(err, metastore.ErrConflict):
			if opts.IfVersion != 0 {
				return Registration{}, fmt.Errorf("catalog: update %s: %w", ref, ErrConflict)
			}
			continue
		default:
			return Registration{}, fmt.Errorf("catalog: update %s: %w", ref, err)
		}
	}
	return Registration{}, fmt.Errorf("catalog: update %s: %w after %d attempts", ref, ErrConflict, attempts)
}

// Get returns the table's registration with a strongly consistent read.
func (c *Catalog) Get(ctx context.Context, ref TableRef) (Registration, error) {
	key, err := ref.Key()
	if err != nil {
		return Registration{}, err
	}
	r, _, err := c.get(ctx, ref, key)
	return r, err
}

func (c *Catalog) get(ctx context.Context, ref TableRef, key string) (Registration, []byte, error) {
	raw, err := c.store.Get(ctx, key)
	if errors.Is(err, metastore.ErrNotFound) {
		return Registration{}, nil, fmt.Errorf("catalog: %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Registration{}, nil, fmt.Errorf("catalog: get %s: %w", ref, err)
	}
	r, err := DecodeRegistration(raw)
	if err != nil {
		return Registration{}, nil, fmt.Errorf("catalog: get %s: %w", ref, err)
	}
	return r, raw, nil
}

// Drop removes the table's registration; ErrNotFound when there is none.
func (c *Catalog) Drop(ctx context.Context, ref TableRef) error {
	key, err := ref.Key()
	if err != nil {
		return err
	}
	err = c.store.Delete(ctx, key)
	if errors.Is(err, metastore.ErrNotFound) {
		return fmt.Errorf("catalog: drop %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("catalog: drop %s: %w", ref, err)
	}
	return nil
}
