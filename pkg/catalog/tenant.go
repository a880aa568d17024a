package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// Tenant settings: what an operator decides for a tenant, not its
// writers. Today that is the prefixes under which lake may vend
// credentials for the tenant's tables (issue 40's confused-deputy guard:
// a table registered at a location outside them is listed and described
// as always, but reading it through lake is refused).
//
// A tenant's settings are one item at TenantPrefix+tenant, outside the
// "tbl/" prefix, written with a compare-and-swap and followed by the change
// counter's add, so refresh carries them into the tenant's snapshot
// segment (verbatim, as DecodeTenantSettings reads them) and discovery
// answers from there without reading the store. The registration API's
// admin route and `lake tenant` set them; a tenant's own tokens cannot.

// TenantPrefix is the key prefix of tenant settings: TenantPrefix+tenant.
const TenantPrefix = "tenant/"

// Bounds of a tenant's settings.
const (
	// MaxAllowedPrefixes is the most prefixes one tenant may be allowed.
	MaxAllowedPrefixes = 32
	// MaxAllowedPrefixBytes is the longest allowed prefix (the longest
	// location lake vends for is 256 characters).
	MaxAllowedPrefixBytes = 256
	// MaxTenantSettingsBytes bounds the stored item, and what a reader
	// of a snapshot segment accepts as one.
	MaxTenantSettingsBytes = 16 << 10
)

// TenantSettings are an operator's settings for one tenant.
type TenantSettings struct {
	// AllowedPrefixes are the locations ("s3://bucket/prefix/") under
	// which credentials may be vended for the tenant's tables, sorted,
	// without duplicates. Empty: none may be.
	AllowedPrefixes []string `json:"allowed_prefixes"`
	// UpdatedBy and UpdatedAt record the last change.
	UpdatedBy string    `json:"updated_by,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// TenantKey is the store key of tenant's settings.
func TenantKey(tenant string) string { return TenantPrefix + tenant }

// ErrInvalidSettings is the Kind of an *Error for settings out of bounds.
var ErrInvalidSettings = errors.New("invalid tenant settings")

// validate checks the bounds every stored settings item keeps; what a
// prefix means (a valid S3 location) is the vending package's to check
// before it calls SetTenantSettings.
func (s TenantSettings) validate() error {
	if len(s.AllowedPrefixes) > MaxAllowedPrefixes {
		return fmt.Errorf("%d allowed prefixes, limit %d", len(s.AllowedPrefixes), MaxAllowedPrefixes)
	}
	for _, p := range s.AllowedPrefixes {
		switch {
		case p == "":
			return errors.New("an allowed prefix is empty")
		case len(p) > MaxAllowedPrefixBytes:
			return fmt.Errorf("allowed prefix of %d bytes, limit %d", len(p), MaxAllowedPrefixBytes)
		case !utf8.ValidString(p) || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return fmt.Errorf("allowed prefix %q has control characters or invalid UTF-8", p)
		}
	}
	if len(s.UpdatedBy) > MaxNameBytes*4 {
		return fmt.Errorf("updated_by of %d bytes", len(s.UpdatedBy))
	}
	return nil
}

// EncodeTenantSettings returns the stored form of s (JSON), with its
// prefixes sorted and deduplicated, or an error wrapping
// ErrInvalidSettings.
func EncodeTenantSettings(s TenantSettings) ([]byte, error) {
	s.AllowedPrefixes = slices.Compact(slices.Sorted(slices.Values(s.AllowedPrefixes)))
	if s.AllowedPrefixes == nil {
		s.AllowedPrefixes = []string{}
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSettings, err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSettings, err)
	}
	if len(b) > MaxTenantSettingsBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidSettings, len(b), MaxTenantSettingsBytes)
	}
	return b, nil
}

// DecodeTenantSettings reads a stored settings item (from the store or a
// snapshot segment), checking the same bounds as EncodeTenantSettings.
// Unknown members are ignored.
func DecodeTenantSettings(raw []byte) (TenantSettings, error) {
	var s TenantSettings
	if len(raw) > MaxTenantSettingsBytes {
		return s, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidSettings, len(raw), MaxTenantSettingsBytes)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return TenantSettings{}, fmt.Errorf("%w: %v", ErrInvalidSettings, err)
	}
	if err := s.validate(); err != nil {
		return TenantSettings{}, fmt.Errorf("%w: %v", ErrInvalidSettings, err)
	}
	s.AllowedPrefixes = slices.Compact(slices.Sorted(slices.Values(s.AllowedPrefixes)))
	return s, nil
}

// TenantSettings returns tenant's settings (zero settings when none were
// ever set).
func (c *Catalog) TenantSettings(ctx context.Context, tenant string) (TenantSettings, error) {
	if err := ValidateName("tenant", tenant); err != nil {
		return TenantSettings{}, err
	}
	raw, err := c.store.Get(ctx, TenantKey(tenant))
	if errors.Is(err, metastore.ErrNotFound) {
		return TenantSettings{AllowedPrefixes: []string{}}, nil
	}
	if err != nil {
		return TenantSettings{}, &Error{Op: "read", Ref: TenantKey(tenant), Kind: err}
	}
	s, err := DecodeTenantSettings(raw)
	if err != nil {
		return TenantSettings{}, &Error{Op: "read", Ref: TenantKey(tenant), Kind: ErrInvalidSettings, Detail: err.Error()}
	}
	return s, nil
}

// UpdateTenantSettings changes tenant's settings with fn, which gets the
// current ones (zero when none) and edits them in place; by is recorded
// as who changed them. The write is a compare-and-swap, retried when
// another writer got there first (fn runs again on what it wrote), and is
// followed by the change counter's add so a refresh carries the settings
// into the snapshot. A change that leaves the prefixes as they were writes
// nothing. It returns the settings as stored.
func (c *Catalog) UpdateTenantSettings(ctx context.Context, tenant, by string, fn func(*TenantSettings) error) (TenantSettings, error) {
	if err := ValidateName("tenant", tenant); err != nil {
		return TenantSettings{}, err
	}
	key := TenantKey(tenant)
	var out TenantSettings
	changed := false
	err := casLoop(ctx, c.store, key, func(raw []byte) ([]byte, error) {
		cur := TenantSettings{AllowedPrefixes: []string{}}
		if raw != nil {
			var err error
			if cur, err = DecodeTenantSettings(raw); err != nil {
				// A damaged item is replaced by what fn makes of none.
				cur = TenantSettings{AllowedPrefixes: []string{}}
			}
		}
		next := cur
		next.AllowedPrefixes = slices.Clone(cur.AllowedPrefixes)
		if err := fn(&next); err != nil {
			return nil, err
		}
		next.UpdatedBy, next.UpdatedAt = by, c.now().UTC()
		b, err := EncodeTenantSettings(next)
		if err != nil {
			return nil, err
		}
		out, _ = DecodeTenantSettings(b)
		if raw != nil && slices.Equal(out.AllowedPrefixes, cur.AllowedPrefixes) {
			out, changed = cur, false
			return nil, errUnchanged
		}
		changed = true
		return b, nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		return out, nil
	case err != nil:
		var ce *Error
		if errors.As(err, &ce) || errors.Is(err, ErrInvalidSettings) {
			return TenantSettings{}, err
		}
		return TenantSettings{}, &Error{Op: "write", Ref: key, Kind: err}
	}
	if changed {
		c.stats.commits.Add(1)
		if _, err := c.store.AddCounter(ctx, ChangesKey, 1); err != nil {
			return out, c.sideWriteError([]SideWrite{{Part: PartChanges, Key: ChangesKey, Err: err}})
		}
	}
	return out, nil
}

// errUnchanged stops UpdateTenantSettings' compare-and-swap when there is
// nothing to write.
var errUnchanged = errors.New("unchanged")
