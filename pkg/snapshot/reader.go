package snapshot

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"
)

// Reader is an opened blob: its verified manifest, and the stored segments
// it holds, decoded one tenant at a time on demand. It is safe for
// concurrent use once opened (Attach is not: attach every segment before
// sharing the reader).
type Reader struct {
	header  Header
	entries []Entry
	segs    [][]byte // stored bytes in index order; nil until attached
	mem     memory.Allocator
}

// ReaderOptions qualify Open and OpenManifest.
type ReaderOptions struct {
	Options
	// Allocator holds the decoded segments' arrays. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Open verifies a blob in its one-file form (the manifest, its checksum
// and content hash, and every segment against its address) and returns it
// without decompressing any segment. It reads versions 4 to 6. Every
// failure wraps ErrCorrupt or ErrVersion; no input panics.
func Open(b []byte, opts ReaderOptions) (*Reader, error) {
	h, err := ReadHeader(b)
	if err != nil {
		return nil, err
	}
	if uint64(len(b)-HeaderSize) != h.BodyBytes {
		return nil, corrupt("header says %d body bytes, blob has %d", h.BodyBytes, len(b)-HeaderSize)
	}
	r, err := OpenManifest(b, opts)
	if err != nil {
		return nil, err
	}
	pos := HeaderSize + int(r.header.ManifestBytes)
	for _, e := range r.entries {
		if err := r.Attach(e.Tenant, b[pos:pos+e.StoredBytes:pos+e.StoredBytes]); err != nil {
			return nil, err
		}
		pos += e.StoredBytes
	}
	return r, nil
}

// OpenManifest verifies a manifest (the first HeaderSize+Header.ManifestBytes
// bytes of a blob; more are ignored) without any segment: segments are then
// attached with Attach. Every failure wraps ErrCorrupt or ErrVersion.
func OpenManifest(b []byte, opts ReaderOptions) (*Reader, error) {
	h, entries, err := parseManifest(b, opts.Options)
	if err != nil {
		return nil, err
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	return &Reader{header: h, entries: entries, segs: make([][]byte, len(entries)), mem: opts.Allocator}, nil
}

// Attach gives a manifest the stored bytes of a tenant's segment after
// checking them against the tenant's address and size (ErrCorrupt when
// they differ, ErrNoTenant for a tenant the manifest does not name). The
// reader keeps stored; do not modify it.
func (r *Reader) Attach(tenant string, stored []byte) error {
	i, ok := r.find(tenant)
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoTenant, tenant)
	}
	e := &r.entries[i]
	if len(stored) != e.StoredBytes || sha256Sum(stored) != e.Address {
		return corrupt("tenant %q: segment does not match its address", tenant)
	}
	r.segs[i] = stored
	return nil
}

// Header returns the blob's header.
func (r *Reader) Header() Header { return r.header }

// Entries returns the index, sorted by tenant. The slice is shared: do not
// modify it.
func (r *Reader) Entries() []Entry { return r.entries }

// Entry returns a tenant's index entry; false when the blob does not hold
// the tenant.
func (r *Reader) Entry(tenant string) (Entry, bool) {
	i, ok := r.find(tenant)
	if !ok {
		return Entry{}, false
	}
	return r.entries[i], true
}

func (r *Reader) find(tenant string) (int, bool) {
	i := sort.Search(len(r.entries), func(i int) bool { return r.entries[i].Tenant >= tenant })
	return i, i < len(r.entries) && r.entries[i].Tenant == tenant
}

// Stored returns a tenant's stored segment bytes, verified against its
// address (shared: do not modify).
func (r *Reader) Stored(tenant string) ([]byte, error) {
	i, ok := r.find(tenant)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %q", ErrNoTenant, tenant)
	case r.segs[i] == nil:
		return nil, fmt.Errorf("%w: %q", ErrDetached, tenant)
	}
	return r.segs[i], nil
}

// Tenant decompresses, decodes and checks one tenant's segment. A tenant
// the blob does not hold is ErrNoTenant, a segment not attached
// ErrDetached; every check failure wraps ErrCorrupt. The caller releases
// the segment.
func (r *Reader) Tenant(tenant string) (*Segment, error) {
	i, ok := r.find(tenant)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoTenant, tenant)
	}
	if r.segs[i] == nil {
		return nil, fmt.Errorf("%w: %q", ErrDetached, tenant)
	}
	return decodeSegment(r.entries[i], r.segs[i], r.mem)
}

// Fetch returns the stored bytes of the segment an index entry names, from
// wherever a store keeps segments apart from their manifest.
type Fetch func(ctx context.Context, e Entry) ([]byte, error)

// LoadOptions qualify Load.
type LoadOptions struct {
	ReaderOptions
	// Concurrency bounds the fetches in flight; default 16.
	Concurrency int
}

// Load opens a stored blob object whichever its form: a one-file blob
// (HeaderSize+BodyBytes long) as Open does, or a manifest alone
// (HeaderSize+ManifestBytes long) with every segment from fetch, called
// concurrently, each checked against its address and attached. Bytes of
// another length are ErrCorrupt, as is a fetched segment that does not
// match its address; a fetch's own error is returned wrapped, wrapping
// neither sentinel, so a caller can tell a store that failed (try again)
// from a blob that is bad (reject it).
func Load(ctx context.Context, b []byte, fetch Fetch, opts LoadOptions) (*Reader, error) {
	h, err := ReadHeader(b)
	if err != nil {
		return nil, err
	}
	if uint64(len(b)-HeaderSize) == h.BodyBytes {
		return Open(b, opts.ReaderOptions)
	}
	if uint64(len(b)-HeaderSize) != h.ManifestBytes {
		return nil, corrupt("%d bytes are neither the one-file blob (%d) nor its manifest alone (%d)",
			len(b), HeaderSize+h.BodyBytes, HeaderSize+h.ManifestBytes)
	}
	r, err := OpenManifest(b, opts.ReaderOptions)
	if err != nil {
		return nil, err
	}
	n := opts.Concurrency
	if n <= 0 {
		n = 16
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for i, e := range r.entries {
		g.Go(func() error {
			stored, err := fetch(ctx, e)
			if err != nil {
				return fmt.Errorf("snapshot: fetch the segment of %q: %w", e.Tenant, err)
			}
			if len(stored) != e.StoredBytes || sha256Sum(stored) != e.Address {
				return corrupt("tenant %q: segment does not match its address", e.Tenant)
			}
			r.segs[i] = stored // each call writes its own index
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return r, nil
}

// LoadTenant opens a stored blob object whichever its form, as Load does,
// but fetches and checks the segment of one tenant only, and returns it
// decoded (the caller releases it): what a reader of one tenant's tables
// needs, not a whole catalog's. A tenant the blob does not hold is
// ErrNoTenant; bytes of neither form, and a fetched segment that does not
// match its address, are ErrCorrupt; a fetch's own error is returned
// wrapped, wrapping neither.
func LoadTenant(ctx context.Context, b []byte, tenant string, fetch Fetch, opts ReaderOptions) (*Segment, error) {
	h, err := ReadHeader(b)
	if err != nil {
		return nil, err
	}
	if uint64(len(b)-HeaderSize) == h.BodyBytes {
		r, err := Open(b, opts)
		if err != nil {
			return nil, err
		}
		return r.Tenant(tenant)
	}
	if uint64(len(b)-HeaderSize) != h.ManifestBytes {
		return nil, corrupt("%d bytes are neither the one-file blob (%d) nor its manifest alone (%d)",
			len(b), HeaderSize+h.BodyBytes, HeaderSize+h.ManifestBytes)
	}
	r, err := OpenManifest(b, opts)
	if err != nil {
		return nil, err
	}
	e, ok := r.Entry(tenant)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoTenant, tenant)
	}
	stored, err := fetch(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("snapshot: fetch the segment of %q: %w", tenant, err)
	}
	if err := r.Attach(tenant, stored); err != nil {
		return nil, err
	}
	return r.Tenant(tenant)
}
