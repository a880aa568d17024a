package snapshot

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Reader is an opened blob: its verified manifest, and its segments read
// one tenant at a time, when they are asked for. It is the format's one
// reader, and Open its one way in, whichever form the blob is stored in
// (Header.FormOf): the one-file form holds every segment, each checked
// against its address at Open; a manifest alone holds none, and a tenant's
// segment is fetched when Tenant asks for it (ReaderOptions.Fetch), or
// given with Attach by a caller that fetches segments on its own terms
// (discovery, ahead of serving). A Reader is safe for concurrent use,
// except Attach: attach segments before sharing the reader.
type Reader struct {
	header  Header
	form    Form
	entries []Entry
	segs    [][]byte // stored bytes in index order; nil until held
	fetch   Fetch
	mem     memory.Allocator
}

// Fetch returns the stored bytes of the segment an index entry names, from
// wherever a store keeps segments apart from their manifest.
type Fetch func(ctx context.Context, e Entry) ([]byte, error)

// ReaderOptions qualify Open.
type ReaderOptions struct {
	Options
	// Allocator holds the decoded segments' arrays. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Fetch reads a segment the reader does not hold (a manifest alone, the
	// segment not attached) when Tenant asks for it. Tenant checks what it
	// returns against the tenant's address and keeps none of it, so a
	// reader of many tenants holds one at a time. Nil: such a segment is
	// ErrDetached, and the reader does no I/O.
	Fetch Fetch
}

// Open verifies a blob in either form, as Header.FormOf tells them apart:
// its manifest (checksum, index and content hash) and, in the one-file
// form, every segment against its address, without decompressing any
// segment. It reads versions 4 to 10. Every failure wraps ErrCorrupt or
// ErrVersion; no input panics. The reader keeps b; do not modify it.
func Open(b []byte, opts ReaderOptions) (*Reader, error) {
	h, err := ReadHeader(b)
	if err != nil {
		return nil, err
	}
	form, err := h.FormOf(int64(len(b)))
	if err != nil {
		return nil, err
	}
	h, entries, err := parseManifest(b, opts.Options)
	if err != nil {
		return nil, err
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	r := &Reader{header: h, form: form, entries: entries, segs: make([][]byte, len(entries)), fetch: opts.Fetch, mem: opts.Allocator}
	if form == OneFile {
		pos := HeaderSize + int(h.ManifestBytes)
		for _, e := range entries {
			if err := r.Attach(e.Tenant, b[pos:pos+e.StoredBytes:pos+e.StoredBytes]); err != nil {
				return nil, err
			}
			pos += e.StoredBytes
		}
	}
	return r, nil
}

// Attach gives the reader the stored bytes of a tenant's segment after
// checking them against the tenant's address and size (ErrCorrupt when
// they differ, ErrNoTenant for a tenant the manifest does not name): for a
// caller that fetches a manifest's segments itself. The reader keeps
// stored; do not modify it.
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

// Form returns the form the blob was opened in.
func (r *Reader) Form() Form { return r.form }

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

// Stored returns the stored segment bytes the reader holds of a tenant
// (the one-file form's, or attached), verified against its address
// (shared: do not modify); ErrDetached when it holds none. It never
// fetches.
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

// Tenant decompresses, decodes and checks one tenant's segment: the one
// the reader holds, else the one ReaderOptions.Fetch returns (checked
// against its address, not kept). A tenant the blob does not hold is
// ErrNoTenant; a segment neither held nor fetchable ErrDetached; a fetch's
// own error is returned wrapped, wrapping no sentinel, so a caller can
// tell a store that failed (try again) from a blob that is bad; every
// check failure wraps ErrCorrupt. The caller releases the segment. Without
// a Fetch, Tenant does no I/O and ctx is not used.
func (r *Reader) Tenant(ctx context.Context, tenant string) (*Segment, error) {
	i, ok := r.find(tenant)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoTenant, tenant)
	}
	stored := r.segs[i]
	if stored == nil {
		if r.fetch == nil {
			return nil, fmt.Errorf("%w: %q", ErrDetached, tenant)
		}
		b, err := r.fetch(ctx, r.entries[i])
		if err != nil {
			return nil, fmt.Errorf("snapshot: fetch the segment of %q: %w", tenant, err)
		}
		stored = b
	}
	return decodeSegment(r.entries[i], stored, r.mem)
}
