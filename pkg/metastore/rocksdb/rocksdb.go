// Package rocksdb is the metastore.Store backend for local mode: one RocksDB
// database in a directory, through grocksdb (pinned at v1.7.14, the release
// that builds against Debian 12's librocksdb-dev 7.8.3).
//
// One process owns the directory (RocksDB's LOCK file enforces it), so the
// conditional writes (Create, CompareAndSwap, Delete) are made atomic by a
// mutex around their read-check-write.
package rocksdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/linxGnu/grocksdb"

	"github.com/lake-catalog/lake/pkg/metastore"
)

var errClosed = errors.New("rocksdb: store is closed")

// Options configures Open. The zero value gives the documented defaults.
type Options struct {
	// BlockCacheBytes sizes the LRU block cache. Default 64 MiB.
	BlockCacheBytes uint64
	// NoSync skips the fsync of the write-ahead log on every write. Default
	// false: a write that returned is on disk.
	NoSync bool
	// CancelCheckEvery is how many entries a scan reads between checks of its
	// context. Default 1024.
	CancelCheckEvery int
}

func (o Options) withDefaults() Options {
	if o.BlockCacheBytes == 0 {
		o.BlockCacheBytes = 64 << 20
	}
	if o.CancelCheckEvery <= 0 {
		o.CancelCheckEvery = 1024
	}
	return o
}

// Store is a metastore.Store on one RocksDB database.
type Store struct {
	opts  Options
	db    *grocksdb.DB
	dbo   *grocksdb.Options
	bbto  *grocksdb.BlockBasedTableOptions
	cache *grocksdb.Cache
	ro    *grocksdb.ReadOptions
	wo    *grocksdb.WriteOptions

	mu     sync.RWMutex // held shared by every call, exclusively by Close
	closed bool
	wmu    sync.Mutex // serializes writes so conditional writes are atomic
}

var (
	_ metastore.Store        = (*Store)(nil)
	_ metastore.StatsScanner = (*Store)(nil)
	_ metastore.Visitor      = (*Store)(nil)
)

// Open opens (creating if missing) the database in dir.
func Open(dir string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	s := &Store{opts: opts}
	s.cache = grocksdb.NewLRUCache(opts.BlockCacheBytes)
	s.bbto = grocksdb.NewDefaultBlockBasedTableOptions()
	s.bbto.SetBlockCache(s.cache)
	s.dbo = grocksdb.NewDefaultOptions()
	s.dbo.SetCreateIfMissing(true)
	s.dbo.SetBlockBasedTableFactory(s.bbto)
	s.dbo.SetCompression(grocksdb.LZ4Compression)
	db, err := grocksdb.OpenDb(s.dbo, dir)
	if err != nil {
		s.dbo.Destroy()
		s.bbto.Destroy()
		s.cache.Destroy()
		return nil, fmt.Errorf("rocksdb: open %s: %w", dir, err)
	}
	s.db = db
	s.ro = grocksdb.NewDefaultReadOptions()
	s.wo = grocksdb.NewDefaultWriteOptions()
	s.wo.SetSync(!opts.NoSync)
	return s, nil
}

// begin checks the context, takes the shared lock and checks the store is
// open. On success the caller must call s.mu.RUnlock.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rocksdb: %w", err)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errClosed
	}
	return nil
}

func (s *Store) get(key string) ([]byte, bool, error) {
	sl, err := s.db.Get(s.ro, []byte(key))
	if err != nil {
		return nil, false, fmt.Errorf("rocksdb: get %q: %w", key, err)
	}
	defer sl.Free()
	if !sl.Exists() {
		return nil, false, nil
	}
	return append([]byte{}, sl.Data()...), true, nil
}

// Get implements metastore.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := metastore.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	v, ok, err := s.get(key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("rocksdb: get %q: %w", key, metastore.ErrNotFound)
	}
	return v, nil
}

// Put implements metastore.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	return s.write(ctx, key, func() error { return s.put(key, value) })
}

// Create implements metastore.Store.
func (s *Store) Create(ctx context.Context, key string, value []byte) error {
	return s.write(ctx, key, func() error {
		_, ok, err := s.get(key)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("rocksdb: create %q: %w", key, metastore.ErrExists)
		}
		return s.put(key, value)
	})
}

// CompareAndSwap implements metastore.Store.
func (s *Store) CompareAndSwap(ctx context.Context, key string, old, value []byte) error {
	return s.write(ctx, key, func() error {
		if err := s.holds(key, old, "swap"); err != nil {
			return err
		}
		return s.put(key, value)
	})
}

// CompareAndDelete implements metastore.Store.
func (s *Store) CompareAndDelete(ctx context.Context, key string, old []byte) error {
	return s.write(ctx, key, func() error {
		if err := s.holds(key, old, "delete"); err != nil {
			return err
		}
		if err := s.db.Delete(s.wo, []byte(key)); err != nil {
			return fmt.Errorf("rocksdb: delete %q: %w", key, err)
		}
		return nil
	})
}

// holds checks, under the write lock, that key holds exactly old:
// ErrNotFound when it holds nothing, ErrConflict when something else.
func (s *Store) holds(key string, old []byte, op string) error {
	cur, ok, err := s.get(key)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("rocksdb: %s %q: %w", op, key, metastore.ErrNotFound)
	case !bytes.Equal(cur, old):
		return fmt.Errorf("rocksdb: %s %q: %w", op, key, metastore.ErrConflict)
	}
	return nil
}

// Delete implements metastore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.write(ctx, key, func() error {
		_, ok, err := s.get(key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("rocksdb: delete %q: %w", key, metastore.ErrNotFound)
		}
		if err := s.db.Delete(s.wo, []byte(key)); err != nil {
			return fmt.Errorf("rocksdb: delete %q: %w", key, err)
		}
		return nil
	})
}

// AddCounter implements metastore.Store: a read and a write under the
// store's write lock, which every write of this process takes.
func (s *Store) AddCounter(ctx context.Context, key string, delta uint64) (uint64, error) {
	var n uint64
	err := s.write(ctx, key, func() error {
		cur, err := s.counter(key)
		if err != nil {
			return err
		}
		n = cur + delta
		return s.put(key, metastore.FormatCounter(n))
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Counter implements metastore.Store.
func (s *Store) Counter(ctx context.Context, key string) (uint64, error) {
	if err := metastore.ValidateKey(key); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	return s.counter(key)
}

func (s *Store) counter(key string) (uint64, error) {
	raw, ok, err := s.get(key)
	if err != nil || !ok {
		return 0, err
	}
	return metastore.ParseCounter(key, raw)
}

func (s *Store) write(ctx context.Context, key string, fn func() error) error {
	if err := metastore.ValidateKey(key); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rocksdb: %w", err)
	}
	return fn()
}

func (s *Store) put(key string, value []byte) error {
	if err := s.db.Put(s.wo, []byte(key), value); err != nil {
		return fmt.Errorf("rocksdb: put %q: %w", key, err)
	}
	return nil
}

// ScanPrefix implements metastore.Store.
func (s *Store) ScanPrefix(ctx context.Context, prefix string) ([]metastore.Entry, error) {
	entries, _, err := s.ScanPrefixStats(ctx, prefix)
	return entries, err
}

// ScanPrefixStats implements metastore.StatsScanner: VisitPrefix, keeping
// every entry.
func (s *Store) ScanPrefixStats(ctx context.Context, prefix string) ([]metastore.Entry, metastore.ScanStats, error) {
	entries := make([]metastore.Entry, 0)
	stats, err := s.VisitPrefix(ctx, prefix, func(e metastore.Entry) error {
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, stats, err
	}
	return entries, stats, nil
}

// VisitPrefix implements metastore.Visitor. It consumes one iterator, once,
// over RocksDB's implicit snapshot taken when it was created, hands each
// entry (a copy, the caller's to keep) to fn in key order as it is read,
// so a caller that keeps less than the entries never holds the whole scan,
// and checks the context every Options.CancelCheckEvery entries. fn must
// not Close the store.
func (s *Store) VisitPrefix(ctx context.Context, prefix string, fn func(metastore.Entry) error) (metastore.ScanStats, error) {
	var stats metastore.ScanStats
	if err := s.begin(ctx); err != nil {
		return stats, err
	}
	defer s.mu.RUnlock()

	ro := grocksdb.NewDefaultReadOptions()
	defer ro.Destroy()
	ro.SetFillCache(false)
	if upper, ok := prefixUpperBound(prefix); ok {
		ro.SetIterateUpperBound(upper)
	}
	it := s.db.NewIterator(ro)
	defer it.Close()
	stats.Pages = 1

	p := []byte(prefix)
	for it.Seek(p); it.ValidForPrefix(p); it.Next() {
		if stats.Scanned%s.opts.CancelCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return stats, fmt.Errorf("rocksdb: scan %q: %w", prefix, err)
			}
		}
		stats.Scanned++
		k, v := it.Key(), it.Value()
		key, _ := strings.CutPrefix(string(k.Data()), prefix)
		e := metastore.Entry{Key: key, Value: append([]byte{}, v.Data()...)}
		k.Free()
		v.Free()
		stats.Kept++
		if err := fn(e); err != nil {
			return stats, err
		}
	}
	if err := it.Err(); err != nil {
		return stats, fmt.Errorf("rocksdb: scan %q: %w", prefix, err)
	}
	return stats, nil
}

// prefixUpperBound returns the smallest key greater than every key with the
// prefix, or false when no such bound exists (empty or all-0xff prefix).
func prefixUpperBound(prefix string) ([]byte, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return b[:i+1], true
		}
	}
	return nil, false
}

// Close implements metastore.Store. It waits for calls in flight.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.db.Close()
	s.ro.Destroy()
	s.wo.Destroy()
	s.dbo.Destroy()
	s.bbto.Destroy()
	s.cache.Destroy()
	return nil
}
