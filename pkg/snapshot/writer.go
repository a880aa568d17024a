package snapshot

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// WriterOptions qualify a Writer.
type WriterOptions struct {
	// Generation and CreatedAt go into the header; a tenant added with
	// AddTenant gets them as its own generation and change time unless
	// Previous holds its segment unchanged, and each of its rows not yet
	// published (Published zero) gets Generation.
	Generation uint64
	CreatedAt  time.Time
	// Marker is the change marker the blob records.
	Marker Marker
	// Skipped is how many registrations the last full scan skipped as
	// malformed (Header.Counts.Skipped).
	Skipped int
	// Previous is the index of the blob this one replaces: a tenant whose
	// segment address is unchanged keeps its Generation and ChangedAt.
	Previous []Entry
	// Allocator is used for the Arrow arrays the writer builds. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Writer writes a version 10 blob, one tenant at a time in strictly
// ascending name order: every blob, whether built from a full scan or from
// a previous blob and a batch of changes, is written by it. Its first error
// sticks, as pebble's sstable.Writer's does: every later AddTenant,
// CopyTenant and AddEntry returns it and Finish reports it, so a caller
// that ignores a refused tenant cannot finish a blob without it. A Writer
// is not safe for concurrent use.
type Writer struct {
	opts    WriterOptions
	prev    map[string]Entry
	enc     *zstd.Encoder
	entries []Entry
	segs    [][]byte
	// err is the first error, returned by every call after it; after
	// Finish, that the writer is finished.
	err error
}

// NewWriter returns a writer of one blob.
func NewWriter(opts WriterOptions) (*Writer, error) {
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("snapshot: make a segment encoder: %w", err)
	}
	w := &Writer{opts: opts, enc: enc, prev: make(map[string]Entry, len(opts.Previous))}
	for _, e := range opts.Previous {
		w.prev[e.Tenant] = e
	}
	return w, nil
}

// fail records err as the writer's error, unless it has one, and returns
// the writer's error.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// next checks that tenant comes after the tenants written so far, and that
// the writer has not failed.
func (w *Writer) next(tenant string) error {
	if w.err != nil {
		return w.err
	}
	if err := catalog.ValidateName("tenant", tenant); err != nil {
		return w.fail(fmt.Errorf("snapshot: write tenant: %w", err))
	}
	if n := len(w.entries); n > 0 && w.entries[n-1].Tenant >= tenant {
		return w.fail(fmt.Errorf("snapshot: write tenant %q after %q: tenants go in ascending order", tenant, w.entries[n-1].Tenant))
	}
	return nil
}

// AddTenant is AddTenantWithSettings without settings.
func (w *Writer) AddTenant(tenant string, tables []Table, tombstones []Tombstone) error {
	return w.AddTenantWithSettings(tenant, tables, tombstones, nil)
}

// AddTenantWithSettings encodes and compresses a tenant's segment from its
// tables, tombstones and settings. It sorts the tables and tombstones in
// place (by namespace and name, tombstones then by creation id). A row
// whose Published is zero is stamped with the writer's Generation (in
// place); one published after it is an error. Every name is validated;
// two tables of one name are an error. The tables' schema bytes must have
// been checked to decode; their creation ids and field ids are written as
// given (the writer does not check the ids against the schema), and so is
// each table's Iceberg state (opaque here; empty: none), at most
// MaxIcebergStateBytes (more is an error). Each table's earlier versions
// must ascend from 1 to below its Version and each have a schema (checked
// to decode, as the table's); their schemas join the segment's distinct
// schemas. The
// settings are the bytes of the tenant's
// settings item as stored, carried verbatim (the writer does not read
// them; nil or empty: none), at most MaxSettingsBytes (more is an error).
// A tenant with neither tables nor tombstones is left out, its settings
// with it: there is nothing of it to serve.
func (w *Writer) AddTenantWithSettings(tenant string, tables []Table, tombstones []Tombstone, settings []byte) error {
	if err := w.next(tenant); err != nil {
		return err
	}
	if len(settings) > MaxSettingsBytes {
		return w.fail(fmt.Errorf("snapshot: write tenant %q: settings of %d bytes, the limit is %d", tenant, len(settings), MaxSettingsBytes))
	}
	if len(tables) == 0 && len(tombstones) == 0 {
		return nil
	}
	slices.SortFunc(tables, func(a, b Table) int { return compareTables(&a, &b) })
	slices.SortFunc(tombstones, func(a, b Tombstone) int { return compareTombstones(&a, &b) })
	for i := range tables {
		t := &tables[i]
		if err := (catalog.TableRef{Tenant: tenant, Namespace: t.Namespace, Name: t.Name}).Validate(); err != nil {
			return w.fail(fmt.Errorf("snapshot: write tenant %q: %w", tenant, err))
		}
		if i > 0 && compareTables(&tables[i-1], t) == 0 {
			return w.fail(fmt.Errorf("snapshot: write tenant %q: two tables %s.%s", tenant, t.Namespace, t.Name))
		}
		if err := w.stamp(&t.Published); err != nil {
			return w.fail(fmt.Errorf("snapshot: write tenant %q: table %s.%s %w", tenant, t.Namespace, t.Name, err))
		}
		if len(t.IcebergState) > MaxIcebergStateBytes {
			return w.fail(fmt.Errorf("snapshot: write tenant %q: table %s.%s: iceberg state of %d bytes, the limit is %d", tenant, t.Namespace, t.Name,
				len(t.IcebergState), MaxIcebergStateBytes))
		}
		if err := checkEarlier(t); err != nil {
			return w.fail(fmt.Errorf("snapshot: write tenant %q: table %s.%s: %w", tenant, t.Namespace, t.Name, err))
		}
	}
	for i := range tombstones {
		d := &tombstones[i]
		if err := (catalog.TableRef{Tenant: tenant, Namespace: d.Namespace, Name: d.Name}).Validate(); err != nil {
			return w.fail(fmt.Errorf("snapshot: write tenant %q: tombstone: %w", tenant, err))
		}
		if i > 0 && compareTombstones(&tombstones[i-1], d) == 0 {
			return w.fail(fmt.Errorf("snapshot: write tenant %q: two tombstones of %s.%s %s", tenant, d.Namespace, d.Name, d.CreationID))
		}
		if err := w.stamp(&d.Published); err != nil {
			return w.fail(fmt.Errorf("snapshot: write tenant %q: tombstone of %s.%s %w", tenant, d.Namespace, d.Name, err))
		}
	}
	payload, unavailable, err := encodePayload(w.opts.Allocator, tables, tombstones, settings)
	if err != nil {
		return w.fail(fmt.Errorf("snapshot: encode the segment of %q: %w", tenant, err))
	}
	stored := w.enc.EncodeAll(payload, nil)
	e := Entry{Tenant: tenant, Tables: len(tables), SchemaUnavailable: unavailable, Tombstones: len(tombstones),
		Generation: w.opts.Generation, ChangedAt: w.opts.CreatedAt.UTC(), Address: sha256.Sum256(stored),
		StoredBytes: len(stored), PayloadBytes: len(payload)}
	if p, ok := w.prev[tenant]; ok && p.Address == e.Address {
		e.Generation, e.ChangedAt = p.Generation, p.ChangedAt
	}
	w.entries = append(w.entries, e)
	w.segs = append(w.segs, stored)
	return nil
}

// checkEarlier checks a table's earlier versions as the format holds
// them: ascending from 1 to below the table's version, each with a
// schema.
func checkEarlier(t *Table) error {
	prev := int64(0)
	for _, e := range t.Earlier {
		switch {
		case e.Version <= prev || e.Version >= t.Version:
			return fmt.Errorf("earlier version %d after %d: versions ascend from 1 to below the table's %d", e.Version, prev, t.Version)
		case e.SchemaIPC == nil:
			return fmt.Errorf("earlier version %d has no schema", e.Version)
		}
		prev = e.Version
	}
	return nil
}

// stamp gives a row new in this blob (published zero) the writer's
// generation, and refuses one published after it.
func (w *Writer) stamp(published *uint64) error {
	switch {
	case *published == 0:
		*published = w.opts.Generation
	case *published > w.opts.Generation:
		return fmt.Errorf("published at generation %d, after the blob's %d", *published, w.opts.Generation)
	}
	return nil
}

// CopyTenant carries a tenant of r over with its generation: its segment
// (its rows and its settings) byte for byte with its index entry when r holds the bytes, else (a
// manifest opened alone, the segment not attached) by reference, as
// AddEntry does.
func (w *Writer) CopyTenant(r *Reader, tenant string) error {
	if err := w.next(tenant); err != nil {
		return err
	}
	e, ok := r.Entry(tenant)
	if !ok {
		return w.fail(fmt.Errorf("%w: %q", ErrNoTenant, tenant))
	}
	stored, err := r.Stored(tenant)
	if errors.Is(err, ErrDetached) {
		stored, err = nil, nil
	}
	if err != nil {
		return w.fail(err)
	}
	w.entries = append(w.entries, e)
	w.segs = append(w.segs, stored)
	return nil
}

// AddEntry references a tenant's segment by its index entry alone (a
// entry, as Reader.Entry returns it), without its bytes: for a writer that
// stores segments apart and republishes an unchanged one. The blob it
// finishes has a manifest but no one-file form (Written.Blob).
func (w *Writer) AddEntry(e Entry) error {
	if err := w.next(e.Tenant); err != nil {
		return err
	}
	if e.StoredBytes <= 0 || e.Tables+e.Tombstones == 0 || e.SchemaUnavailable > e.Tables {
		return w.fail(fmt.Errorf("snapshot: reference tenant %q: entry of %d stored bytes, %d tables (%d without a schema), %d tombstones",
			e.Tenant, e.StoredBytes, e.Tables, e.SchemaUnavailable, e.Tombstones))
	}
	w.entries = append(w.entries, e)
	w.segs = append(w.segs, nil)
	return nil
}

// Written is a finished blob: its manifest, and each tenant's stored
// segment in index order (nil for a segment referenced by AddEntry or
// carried by reference by CopyTenant).
type Written struct {
	Header   Header
	Manifest []byte
	Entries  []Entry
	Segments [][]byte
}

// Finish writes the manifest, or reports the writer's first error and
// writes nothing. The writer is done after it: every later call is an
// error.
func (w *Writer) Finish() (*Written, error) {
	if w.err != nil {
		w.close()
		return nil, w.err
	}
	w.err = errFinished
	m, h := encodeManifest(Header{Generation: w.opts.Generation, CreatedAt: w.opts.CreatedAt.UTC(), Marker: w.opts.Marker,
		Counts: catalog.Counts{Skipped: w.opts.Skipped}}, w.entries, w.enc)
	w.close()
	return &Written{Header: h, Manifest: m, Entries: w.entries, Segments: w.segs}, nil
}

// close releases the encoder (once); the writer has an error by then, so
// nothing encodes after it.
func (w *Writer) close() {
	if w.enc != nil {
		w.enc.Close()
		w.enc = nil
	}
}

// errFinished is the error of a call to a finished Writer.
var errFinished = errors.New("snapshot: writer already finished")

// Blob returns the one-file form: the manifest and every segment after it.
// It fails when a segment was referenced without its bytes.
func (b *Written) Blob() ([]byte, error) {
	out := make([]byte, 0, HeaderSize+int(b.Header.BodyBytes))
	out = append(out, b.Manifest...)
	for i, s := range b.Segments {
		if s == nil {
			return nil, fmt.Errorf("snapshot: tenant %q: %w", b.Entries[i].Tenant, ErrDetached)
		}
		out = append(out, s...)
	}
	return out, nil
}
