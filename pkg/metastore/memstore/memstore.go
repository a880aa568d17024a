// Package memstore is an in-memory metastore.Store for tests and examples.
// It keeps nothing across processes.
package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lake-catalog/lake/pkg/metastore"
)

var errClosed = errors.New("memstore: store is closed")

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// MaxValueBytes bounds a value's size; 0 means no limit.
	MaxValueBytes int
}

// Store is an in-memory metastore.Store guarded by one RWMutex.
type Store struct {
	opts   Options
	mu     sync.RWMutex
	data   map[string][]byte
	closed bool
}

var (
	_ metastore.Store        = (*Store)(nil)
	_ metastore.StatsScanner = (*Store)(nil)
)

// New returns an empty Store.
func New(opts Options) *Store {
	return &Store{opts: opts, data: make(map[string][]byte)}
}

func (s *Store) check(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	if err := metastore.ValidateKey(key); err != nil {
		return err
	}
	if s.opts.MaxValueBytes > 0 && len(value) > s.opts.MaxValueBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", metastore.ErrValueTooLarge, len(value), s.opts.MaxValueBytes)
	}
	if s.closed {
		return errClosed
	}
	return nil
}

// Get implements metastore.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx, key, nil); err != nil {
		return nil, err
	}
	v, ok := s.data[key]
	if !ok {
		return nil, fmt.Errorf("memstore: get %q: %w", key, metastore.ErrNotFound)
	}
	return clone(v), nil
}

// Put implements metastore.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, key, value); err != nil {
		return err
	}
	s.data[key] = clone(value)
	return nil
}

// Create implements metastore.Store.
func (s *Store) Create(ctx context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, key, value); err != nil {
		return err
	}
	if _, ok := s.data[key]; ok {
		return fmt.Errorf("memstore: create %q: %w", key, metastore.ErrExists)
	}
	s.data[key] = clone(value)
	return nil
}

// AddCounter implements metastore.Store under the store's lock.
func (s *Store) AddCounter(ctx context.Context, key string, delta uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, key, nil); err != nil {
		return 0, err
	}
	n, err := s.counterLocked(key)
	if err != nil {
		return 0, err
	}
	s.data[key] = metastore.FormatCounter(n + delta)
	return n + delta, nil
}

// Counter implements metastore.Store.
func (s *Store) Counter(ctx context.Context, key string) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx, key, nil); err != nil {
		return 0, err
	}
	return s.counterLocked(key)
}

func (s *Store) counterLocked(key string) (uint64, error) {
	raw, ok := s.data[key]
	if !ok {
		return 0, nil
	}
	return metastore.ParseCounter(key, raw)
}

// CompareAndSwap implements metastore.Store.
func (s *Store) CompareAndSwap(ctx context.Context, key string, old, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, key, value); err != nil {
		return err
	}
	cur, ok := s.data[key]
	switch {
	case !ok:
		return fmt.Errorf("memstore: swap %q: %w", key, metastore.ErrNotFound)
	case !bytes.Equal(cur, old):
		return fmt.Errorf("memstore: swap %q: %w", key, metastore.ErrConflict)
	}
	s.data[key] = clone(value)
	return nil
}

// CompareAndDelete implements metastore.Store.
func (s *Store) CompareAndDelete(ctx context.Context, key string, old []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, key, nil); err != nil {
		return err
	}
	cur, ok := s.data[key]
	switch {
	case !ok:
		return fmt.Errorf("memstore: delete %q: %w", key, metastore.ErrNotFound)
	case !bytes.Equal(cur, old):
		return fmt.Errorf("memstore: delete %q: %w", key, metastore.ErrConflict)
	}
	delete(s.data, key)
	return nil
}

// Delete implements metastore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, key, nil); err != nil {
		return err
	}
	if _, ok := s.data[key]; !ok {
		return fmt.Errorf("memstore: delete %q: %w", key, metastore.ErrNotFound)
	}
	delete(s.data, key)
	return nil
}

// ScanPrefix implements metastore.Store.
func (s *Store) ScanPrefix(ctx context.Context, prefix string) ([]metastore.Entry, error) {
	entries, _, err := s.ScanPrefixStats(ctx, prefix)
	return entries, err
}

// ScanPrefixStats implements metastore.StatsScanner.
func (s *Store) ScanPrefixStats(ctx context.Context, prefix string) ([]metastore.Entry, metastore.ScanStats, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var stats metastore.ScanStats
	if err := ctx.Err(); err != nil {
		return nil, stats, fmt.Errorf("memstore: %w", err)
	}
	if s.closed {
		return nil, stats, errClosed
	}
	stats.Pages = 1
	entries := make([]metastore.Entry, 0)
	for k, v := range s.data {
		stats.Scanned++
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			stats.OutsidePrefix++
			continue
		}
		entries = append(entries, metastore.Entry{Key: rest, Value: clone(v)})
	}
	slices.SortFunc(entries, func(a, b metastore.Entry) int { return strings.Compare(a.Key, b.Key) })
	stats.Kept = len(entries)
	return entries, stats, nil
}

// VisitPrefix implements metastore.Visitor. It copies the matching keys
// and references to their values under the read lock, then calls fn with
// the lock released (stored values are never modified in place, so fn sees
// the values of one instant and may call the store).
func (s *Store) VisitPrefix(ctx context.Context, prefix string, fn func(metastore.Entry) error) (metastore.ScanStats, error) {
	var stats metastore.ScanStats
	if err := ctx.Err(); err != nil {
		return stats, fmt.Errorf("memstore: %w", err)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return stats, errClosed
	}
	stats.Pages = 1
	entries := make([]metastore.Entry, 0)
	for k, v := range s.data {
		stats.Scanned++
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			stats.OutsidePrefix++
			continue
		}
		entries = append(entries, metastore.Entry{Key: rest, Value: v})
	}
	s.mu.RUnlock()
	stats.Kept = len(entries)
	for i := range entries {
		e := entries[i]
		entries[i] = metastore.Entry{}
		if err := fn(e); err != nil {
			return stats, err
		}
	}
	return stats, nil
}

// Close implements metastore.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.data = nil
	return nil
}

// clone copies b, keeping a zero-length value non-nil so it stays a value.
func clone(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}
