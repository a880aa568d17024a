// Package metastore defines the key-value contract that lake's table
// registrations live in, the errors every backend maps to, and the scan
// statistics a backend may report.
//
// Backends live in sub-packages (memstore, rocksdb, dynamo) and all pass the
// conformance suite in metastoretest.
package metastore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Errors every backend maps to. Callers tell cases apart with errors.Is.
var (
	// ErrNotFound: the key holds no value.
	ErrNotFound = errors.New("metastore: not found")
	// ErrExists: a create-only put found the key already holding a value.
	ErrExists = errors.New("metastore: key exists")
	// ErrConflict: a compare-and-swap found a value other than the expected one.
	ErrConflict = errors.New("metastore: value changed concurrently")
	// ErrInvalidKey: the key is empty, not UTF-8, or longer than MaxKeyBytes.
	ErrInvalidKey = errors.New("metastore: invalid key")
	// ErrValueTooLarge: the value exceeds what the backend can hold in one item.
	ErrValueTooLarge = errors.New("metastore: value too large")
	// ErrNotCounter: a counter call found a key holding a value that is not
	// a counter.
	ErrNotCounter = errors.New("metastore: not a counter")
)

// ExpiringPutter is a Store that can purge an entry by itself after a
// time (DynamoDB's TTL): PutExpiring is Put, CreateExpiring Create and
// CompareAndSwapExpiring CompareAndSwap (with their errors), and the store
// may delete the entry any time after expiresAt (DynamoDB does within a
// few days; until then it reads as any other). A plain write of the key
// afterwards removes the expiry. A store without it keeps entries until
// they are deleted (local mode sweeps them).
type ExpiringPutter interface {
	PutExpiring(ctx context.Context, key string, value []byte, expiresAt time.Time) error
	CreateExpiring(ctx context.Context, key string, value []byte, expiresAt time.Time) error
	CompareAndSwapExpiring(ctx context.Context, key string, old, value []byte, expiresAt time.Time) error
}

// MaxKeyBytes is the longest key any backend accepts: DynamoDB's limit for a
// partition key.
const MaxKeyBytes = 2048

// Entry is one key-value pair returned by a prefix scan. Key has the scanned
// prefix stripped; Value holds the exact bytes stored. The caller owns both.
type Entry struct {
	Key   string
	Value []byte
}

// Store is a string-keyed store of byte values.
//
// All methods are safe for concurrent use by multiple goroutines. Each honours
// its context: a cancelled or expired context makes the call return an error
// that errors.Is reports as the context's error, and nothing is written.
// Byte slices passed in are not retained; slices returned belong to the
// caller. A zero-length value is a value, distinct from a missing key.
type Store interface {
	// Get returns the value stored at key, or ErrNotFound. Reads are strongly
	// consistent: a Get after a successful write sees that write.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores value at key, replacing any value there.
	Put(ctx context.Context, key string, value []byte) error
	// Create stores value at key only if the key holds no value; otherwise it
	// returns ErrExists and leaves the stored value unchanged.
	Create(ctx context.Context, key string, value []byte) error
	// CompareAndSwap replaces the value at key with value only if the stored
	// value equals old byte for byte. It returns ErrNotFound when the key holds
	// no value and ErrConflict when it holds another value.
	CompareAndSwap(ctx context.Context, key string, old, value []byte) error
	// Delete removes key. It returns ErrNotFound when the key holds no value.
	Delete(ctx context.Context, key string) error
	// CompareAndDelete removes key only if the stored value equals old byte
	// for byte. It returns ErrNotFound when the key holds no value and
	// ErrConflict when it holds another value (which stays).
	CompareAndDelete(ctx context.Context, key string, old []byte) error
	// ScanPrefix returns every entry whose key starts with prefix, with the
	// prefix stripped, sorted by stripped key (bytewise). The empty prefix
	// scans everything. A scan reads one consistent view where the backend
	// offers one (RocksDB: an implicit snapshot; DynamoDB: a strongly
	// consistent Scan, consistent per item).
	ScanPrefix(ctx context.Context, prefix string) ([]Entry, error)
	// AddCounter adds delta to the counter at key in one atomic write and
	// returns the counter's new value; a key that holds nothing starts at 0.
	// It is never a read-modify-write retried on contention (DynamoDB:
	// UpdateItem ADD; RocksDB and memory: under the store's write lock), so
	// concurrent adds all count, however many writers share the key. A key
	// holding a value that is not a counter gives ErrNotCounter (on
	// DynamoDB the add may then have happened: keep counters at keys of
	// their own). Counter keys are read with Counter, not Get.
	AddCounter(ctx context.Context, key string, delta uint64) (uint64, error)
	// Counter returns the counter at key with one strongly consistent read:
	// 0 when the key holds nothing, ErrNotCounter when it holds a value
	// that is not a counter. A counter written as a decimal value with Put
	// (what lake stored before counters) reads as that number, and
	// AddCounter adds to it.
	Counter(ctx context.Context, key string) (uint64, error)
	// Close releases the store's resources. Calls after Close fail.
	Close() error
}

// ScanStats describes what one prefix scan read.
type ScanStats struct {
	// Pages is how many pages (DynamoDB) or iterators (RocksDB, memory) the
	// scan consumed.
	Pages int
	// Scanned is how many items the backend returned before filtering.
	Scanned int
	// Kept is how many entries the scan returned.
	Kept int
	// OutsidePrefix is how many well-formed items lay outside the prefix.
	OutsidePrefix int
	// Malformed is how many items were dropped for a wrong shape (a key that
	// is not a string, a value that is missing or not binary).
	Malformed int
}

// StatsScanner is implemented by backends that report what a scan read.
type StatsScanner interface {
	ScanPrefixStats(ctx context.Context, prefix string) ([]Entry, ScanStats, error)
}

// ParseCounter reads a counter stored as a decimal value (the form Put
// wrote before AddCounter existed, and the form memory and RocksDB keep):
// ErrNotCounter when raw is not one.
func ParseCounter(key string, raw []byte) (uint64, error) {
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q holds %q", ErrNotCounter, key, truncate(raw, 32))
	}
	return n, nil
}

// FormatCounter is the decimal value of a counter, as ParseCounter reads it.
func FormatCounter(n uint64) []byte { return strconv.AppendUint(nil, n, 10) }

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// ValidateKey reports whether key is acceptable to every backend.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidKey, len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidKey)
	}
	return nil
}

// Visitor is implemented by backends that can hand a prefix scan's entries
// to a function one at a time instead of returning them all, so a caller
// that keeps less than the entries never holds the whole scan.
type Visitor interface {
	// VisitPrefix calls fn for every entry whose key starts with prefix
	// (stripped), in no particular order and never concurrently, and
	// returns what the scan read. fn must not modify the entry's Value; it
	// may keep it. An error from fn stops the scan and is returned as is.
	VisitPrefix(ctx context.Context, prefix string, fn func(Entry) error) (ScanStats, error)
}

// Visit calls fn for every entry of store under prefix, through VisitPrefix
// where the backend has it, otherwise over one ScanPrefixStats (or
// ScanPrefix) whose entries are released as they are visited. The order is
// unspecified. An error from fn stops the scan and is returned as is.
func Visit(ctx context.Context, store Store, prefix string, fn func(Entry) error) (ScanStats, error) {
	if v, ok := store.(Visitor); ok {
		return v.VisitPrefix(ctx, prefix, fn)
	}
	var (
		entries []Entry
		stats   ScanStats
		err     error
	)
	if ss, ok := store.(StatsScanner); ok {
		entries, stats, err = ss.ScanPrefixStats(ctx, prefix)
	} else {
		entries, err = store.ScanPrefix(ctx, prefix)
		stats = ScanStats{Pages: 1, Scanned: len(entries), Kept: len(entries)}
	}
	if err != nil {
		return stats, err
	}
	for i := range entries {
		e := entries[i]
		entries[i] = Entry{}
		if err := fn(e); err != nil {
			return stats, err
		}
	}
	return stats, nil
}
