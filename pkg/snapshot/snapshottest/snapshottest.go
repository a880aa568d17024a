// Package snapshottest holds the helpers the tests of the snapshot format
// and of the scan that writes it share: opening a blob, reading a
// tenant's segment, listing its tables, and a segment store in memory.
package snapshottest

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"testing"

	"github.com/lake-catalog/lake/pkg/snapshot"
)

// Open opens b (either form) or fails the test.
func Open(tb testing.TB, b []byte) *snapshot.Reader {
	tb.Helper()
	r, err := snapshot.Open(b, snapshot.ReaderOptions{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return r
}

// Tenant reads name's segment from r or fails the test; the segment is
// released when the test ends.
func Tenant(tb testing.TB, r *snapshot.Reader, name string) *snapshot.Segment {
	tb.Helper()
	seg, err := r.Tenant(context.Background(), name)
	if err != nil {
		tb.Fatalf("Tenant(%s): %v", name, err)
	}
	tb.Cleanup(seg.Release)
	return seg
}

// Names lists s's tables as "namespace.table", in the segment's order.
func Names(s *snapshot.Segment) []string {
	var out []string
	for i := range s.NumTables() {
		out = append(out, s.Tables.Namespace.Value(i)+"."+s.Tables.Name.Value(i))
	}
	return out
}

// SegmentStore holds segments by address, as a store of a blob's segments
// does, and records the tenants fetched. It is safe for concurrent use.
type SegmentStore struct {
	mu sync.Mutex
	// Segs are the segments by address (tests remove or damage them).
	Segs map[[32]byte][]byte
	// Fetched lists the tenants whose segments Fetch was asked for.
	Fetched []string
}

// StoreSegments is a SegmentStore of w's segments.
func StoreSegments(w *snapshot.Written) *SegmentStore {
	s := &SegmentStore{Segs: map[[32]byte][]byte{}}
	for i, seg := range w.Segments {
		s.Segs[w.Entries[i].Address] = seg
	}
	return s
}

// Fetch is a snapshot.Fetch: the segment at e's address, or an error
// naming the address when the store has none.
func (s *SegmentStore) Fetch(_ context.Context, e snapshot.Entry) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Fetched = append(s.Fetched, e.Tenant)
	b, ok := s.Segs[e.Address]
	if !ok {
		return nil, errors.New("no segment " + hex.EncodeToString(e.Address[:]))
	}
	return b, nil
}
