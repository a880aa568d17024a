package snapshot_test

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/lake-catalog/lake/pkg/snapshot"
)

type segmentStore struct {
	mu      sync.Mutex
	segs    map[[32]byte][]byte
	fetched []string
}

func storeSegments(w *snapshot.Written) *segmentStore {
	s := &segmentStore{segs: map[[32]byte][]byte{}}
	for i, seg := range w.Segments {
		s.segs[w.Entries[i].Address] = seg
	}
	return s
}

func (s *segmentStore) fetch(_ context.Context, e snapshot.Entry) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetched = append(s.fetched, e.Tenant)
	b, ok := s.segs[e.Address]
	if !ok {
		return nil, errors.New("no segment " + hex.EncodeToString(e.Address[:]))
	}
	return b, nil
}

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
	segs := storeSegments(b.Written)
	r, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: segs.fetch})
	if err != nil {
		t.Fatal(err)
	}
	if r.Form() != snapshot.ManifestAlone || len(segs.fetched) != 0 {
		t.Fatalf("opened the manifest as %v, fetched %q; want the manifest alone, none fetched", r.Form(), segs.fetched)
	}
	if err := readAll(r); err != nil {
		t.Fatal(err)
	}
	slices.Sort(segs.fetched)
	if want := []string{"acme", "globex", "initech"}; !slices.Equal(segs.fetched, want) {
		t.Fatalf("fetched %q, want %q", segs.fetched, want)
	}
	if got := names(tenant(t, r, "acme")); !slices.Equal(got, names(tenant(t, open(t, b.Blob), "acme"))) {
		t.Fatalf("acme from the manifest and its segments: %q", got)
	}
	segs.fetched = nil
	whole, err := snapshot.Open(b.Blob, snapshot.ReaderOptions{Fetch: segs.fetch})
	if err == nil {
		err = readAll(whole)
	}
	if err != nil || whole.Form() != snapshot.OneFile || len(segs.fetched) != 0 {
		t.Fatalf("one-file form: %v, fetched %q", err, segs.fetched)
	}
	if _, err := snapshot.Open(b.Blob[:len(b.Blob)-1], snapshot.ReaderOptions{Fetch: segs.fetch}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a blob a byte short: %v, want ErrCorrupt", err)
	}

	// A segment the store lacks is the store's error, no sentinel: try
	// again. One that does not match its address is a corrupt blob.
	missing := storeSegments(b.Written)
	delete(missing.segs, b.Written.Entries[1].Address)
	if r, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: missing.fetch}); err != nil {
		t.Fatal(err)
	} else if err := readAll(r); err == nil || errors.Is(err, snapshot.ErrCorrupt) || errors.Is(err, snapshot.ErrVersion) {
		t.Fatalf("a missing segment: %v, want the fetch's error alone", err)
	}
	bad := storeSegments(b.Written)
	a := b.Written.Entries[0].Address
	bad.segs[a] = append([]byte{}, bad.segs[a]...)
	bad.segs[a][0] ^= 1
	if r, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: bad.fetch}); err != nil {
		t.Fatal(err)
	} else if err := readAll(r); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a segment that does not match its address: %v, want ErrCorrupt", err)
	}
}

func TestTenantFetchesItsSegmentAlone(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, fixtureRows(t))
	want := names(tenant(t, open(t, b.Blob), "globex"))
	ctx := context.Background()
	for _, form := range []struct {
		name    string
		b       []byte
		fetched []string
	}{{"manifest", b.Written.Manifest, []string{"globex"}}, {"one file", b.Blob, nil}} {
		segs := storeSegments(b.Written)
		r, err := snapshot.Open(form.b, snapshot.ReaderOptions{Fetch: segs.fetch})
		if err != nil {
			t.Fatalf("%s: %v", form.name, err)
		}
		seg, err := r.Tenant(ctx, "globex")
		if err != nil {
			t.Fatalf("%s: %v", form.name, err)
		}
		got := names(seg)
		seg.Release()
		if !slices.Equal(got, want) || !slices.Equal(segs.fetched, form.fetched) {
			t.Fatalf("%s: tables %q, fetched %q; want %q, fetched %q", form.name, got, segs.fetched, want, form.fetched)
		}
		if _, err := r.Tenant(ctx, "nobody"); !errors.Is(err, snapshot.ErrNoTenant) {
			t.Fatalf("%s: a tenant the blob lacks: %v, want ErrNoTenant", form.name, err)
		}
	}
	bad := storeSegments(b.Written)
	for _, e := range b.Written.Entries {
		if e.Tenant == "globex" {
			bad.segs[e.Address] = append([]byte{}, bad.segs[e.Address]...)
			bad.segs[e.Address][0] ^= 1
		}
	}
	r, err := snapshot.Open(b.Written.Manifest, snapshot.ReaderOptions{Fetch: bad.fetch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Tenant(ctx, "globex"); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a segment that does not match its address: %v, want ErrCorrupt", err)
	}
	if _, err := snapshot.Open(b.Blob[:len(b.Blob)-1], snapshot.ReaderOptions{Fetch: bad.fetch}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a blob a byte short: %v, want ErrCorrupt", err)
	}
}
