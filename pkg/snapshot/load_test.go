package snapshot_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

func readAll(r *snapshot.Reader) error {
	for _, e := range r.Entries() {
		seg, err := r.Tenant(context.Background(), e.Tenant)
		if err != nil {
			return err
		}
		seg.Release()
	}
	return nil
}

func TestOpenEitherForm(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, fixtureRows(t))
	segs := snapshottest.StoreSegments(b.Written)
	r, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: segs.Fetch})
	if err != nil {
		t.Fatal(err)
	}
	if r.Form() != snapshot.ManifestAlone || len(segs.Fetched) != 0 {
		t.Fatalf("opened the manifest as %v, fetched %q; want the manifest alone, none fetched", r.Form(), segs.Fetched)
	}
	if err := readAll(r); err != nil {
		t.Fatal(err)
	}
	slices.Sort(segs.Fetched)
	if want := []string{"acme", "globex", "initech"}; !slices.Equal(segs.Fetched, want) {
		t.Fatalf("fetched %q, want %q", segs.Fetched, want)
	}
	if got := snapshottest.Names(snapshottest.Tenant(t, r, "acme")); !slices.Equal(got, snapshottest.Names(snapshottest.Tenant(t, snapshottest.Open(t, b.Blob), "acme"))) {
		t.Fatalf("acme from the manifest and its segments: %q", got)
	}
	segs.Fetched = nil
	whole, err := snapshot.Open(b.Blob, snapshot.ReaderOptions{Fetch: segs.Fetch})
	if err == nil {
		err = readAll(whole)
	}
	if err != nil || whole.Form() != snapshot.OneFile || len(segs.Fetched) != 0 {
		t.Fatalf("one-file form: %v, fetched %q", err, segs.Fetched)
	}
	if _, err := snapshot.Open(b.Blob[:len(b.Blob)-1], snapshot.ReaderOptions{Fetch: segs.Fetch}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a blob a byte short: %v, want ErrCorrupt", err)
	}

	// A segment the store lacks is the store's error, no sentinel: try
	// again. One that does not match its address is a corrupt blob.
	missing := snapshottest.StoreSegments(b.Written)
	delete(missing.Segs, b.Written.Entries[1].Address)
	if r, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: missing.Fetch}); err != nil {
		t.Fatal(err)
	} else if err := readAll(r); err == nil || errors.Is(err, snapshot.ErrCorrupt) || errors.Is(err, snapshot.ErrVersion) {
		t.Fatalf("a missing segment: %v, want the fetch's error alone", err)
	}
	bad := snapshottest.StoreSegments(b.Written)
	a := b.Written.Entries[0].Address
	bad.Segs[a] = append([]byte{}, bad.Segs[a]...)
	bad.Segs[a][0] ^= 1
	if r, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: bad.Fetch}); err != nil {
		t.Fatal(err)
	} else if err := readAll(r); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a segment that does not match its address: %v, want ErrCorrupt", err)
	}
}

func TestTenantFetchesItsSegmentAlone(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, fixtureRows(t))
	want := snapshottest.Names(snapshottest.Tenant(t, snapshottest.Open(t, b.Blob), "globex"))
	ctx := context.Background()
	for _, form := range []struct {
		name    string
		b       []byte
		fetched []string
	}{{"manifest", b.Written.Manifest, []string{"globex"}}, {"one file", b.Blob, nil}} {
		segs := snapshottest.StoreSegments(b.Written)
		r, err := snapshot.Open(form.b, snapshot.ReaderOptions{Fetch: segs.Fetch})
		if err != nil {
			t.Fatalf("%s: %v", form.name, err)
		}
		seg, err := r.Tenant(ctx, "globex")
		if err != nil {
			t.Fatalf("%s: %v", form.name, err)
		}
		got := snapshottest.Names(seg)
		seg.Release()
		if !slices.Equal(got, want) || !slices.Equal(segs.Fetched, form.fetched) {
			t.Fatalf("%s: tables %q, fetched %q; want %q, fetched %q", form.name, got, segs.Fetched, want, form.fetched)
		}
		if _, err := r.Tenant(ctx, "nobody"); !errors.Is(err, snapshot.ErrNoTenant) {
			t.Fatalf("%s: a tenant the blob lacks: %v, want ErrNoTenant", form.name, err)
		}
	}
	bad := snapshottest.StoreSegments(b.Written)
	for _, e := range b.Written.Entries {
		if e.Tenant == "globex" {
			bad.Segs[e.Address] = append([]byte{}, bad.Segs[e.Address]...)
			bad.Segs[e.Address][0] ^= 1
		}
	}
	r, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: bad.Fetch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Tenant(ctx, "globex"); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a segment that does not match its address: %v, want ErrCorrupt", err)
	}
	if _, err := snapshot.Open(b.Blob[:len(b.Blob)-1], snapshot.ReaderOptions{Fetch: bad.Fetch}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a blob a byte short: %v, want ErrCorrupt", err)
	}
}
