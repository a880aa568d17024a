package snapshot_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// segmentStore keeps a Written's segments apart, by address, and counts
// what is fetched.
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

// readAll reads every tenant of r once and returns the first error.
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

// A manifest stored alone opens with no segment fetched, and reading each
// tenant fetches its segment once; the one-file form reads with none
// fetched; other lengths are corrupt.
func TestOpenEitherForm(t *testing.T) {
	_, st := fixture(t)
	b := build(t, st, snapshot.BuildOptions{Generation: 3, CreatedAt: t0})
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

// Reading one tenant fetches the one segment it is asked for, from a
// manifest alone, and none from a one-file blob; a tenant the blob lacks
// is ErrNoTenant; a segment that does not match its address is ErrCorrupt.
func TestTenantFetchesItsSegmentAlone(t *testing.T) {
	_, st := fixture(t)
	b := build(t, st, snapshot.BuildOptions{Generation: 3, CreatedAt: t0})
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

// Apply to a manifest opened alone fetches only the changed tenants'
// segments, writes only theirs, references the rest, and gives the blob a
// full build over the same base (its segments fetched) gives.
func TestApplyToAManifestFetchesOnlyChangedTenants(t *testing.T) {
	ctx := context.Background()
	c, st := fixture(t)
	base := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0, Marker: snapshot.Marker{FullScanAt: t0}})
	segs := storeSegments(base.Written)
	m, err := snapshot.Open(base.Written.Manifest, snapshot.ReaderOptions{Fetch: segs.fetch})
	if err != nil {
		t.Fatal(err)
	}
	register(t, c, ref("globex", "finance", "budget"), catalog.TableSpec{Location: "/b", Schema: catalogtest.WideSchema(3, 2)})
	t1 := t0.Add(time.Minute)
	applied, err := snapshot.Apply(ctx, st, m, []string{"tbl/globex/finance/budget"}, snapshot.ApplyOptions{Generation: 2, CreatedAt: t1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(segs.fetched, []string{"globex"}) || applied.Fetched != 1 || applied.Tenants != 1 {
		t.Fatalf("fetched %q (%d), wrote %d tenants; want globex alone", segs.fetched, applied.Fetched, applied.Tenants)
	}
	for i, e := range applied.Written.Entries {
		if wrote := applied.Written.Segments[i] != nil; wrote != (e.Tenant == "globex") {
			t.Errorf("%s: segment written %v", e.Tenant, wrote)
		}
	}
	m2, err := snapshot.Open(base.Written.Manifest, snapshot.ReaderOptions{Fetch: segs.fetch})
	if err != nil {
		t.Fatal(err)
	}
	full := build(t, st, snapshot.BuildOptions{Generation: 2, CreatedAt: t1, Base: m2})
	if got, want := applied.Written.Header, full.Written.Header; got.ContentHash != want.ContentHash || got.Counts != want.Counts {
		t.Fatalf("applied %+v, full build %+v", got, want)
	}
	// Without a Fetch, a detached changed tenant is an error, not a loss.
	m, _ = snapshot.Open(base.Written.Manifest, snapshot.ReaderOptions{})
	if _, err := snapshot.Apply(ctx, st, m, []string{"tbl/globex/finance/budget"}, snapshot.ApplyOptions{Generation: 2, CreatedAt: t1}); !errors.Is(err, snapshot.ErrDetached) {
		t.Fatalf("Apply without a Fetch: %v, want ErrDetached", err)
	}
}

// Apply lists the changes it brought in: a create, an update, a drop (by
// its tombstone, with who dropped it), and nothing for a key that changed
// nothing.
func TestApplyListsItsChanges(t *testing.T) {
	ctx := context.Background()
	c, st := fixture(t)
	base := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0, Marker: snapshot.Marker{FullScanAt: t0}})
	by := catalog.WithCaller(ctx, "bob")
	register(t, c, ref("globex", "finance", "budget"), catalog.TableSpec{Location: "/b", Schema: catalogtest.WideSchema(3, 2)})
	if _, err := c.Update(by, ref("acme", "sales", "orders"), catalog.TableSpec{Schema: catalogtest.WideSchema(8, 2)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(by, ref("globex", "finance", "ledger")); err != nil {
		t.Fatal(err)
	}
	tomb, err := st.ScanPrefix(ctx, "dropped/globex/finance/ledger/")
	if err != nil || len(tomb) != 1 {
		t.Fatalf("tombstone %v, %v", tomb, err)
	}
	keys := []string{"tbl/globex/finance/budget", "tbl/acme/sales/orders", "tbl/globex/finance/ledger",
		"dropped/globex/finance/ledger/" + tomb[0].Key, "tbl/acme/sales/customers"}
	applied, err := snapshot.Apply(ctx, st, open(t, base.Blob), keys, snapshot.ApplyOptions{Generation: 2, CreatedAt: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range applied.Changes {
		got = append(got, fmt.Sprintf("%s %s v%d by %s", ch.Op, ch.Ref, ch.Version, ch.By))
	}
	slices.Sort(got)
	want := []string{"create globex/finance/budget v1 by ", "drop globex/finance/ledger v2 by bob", "update acme/sales/orders v2 by bob"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
}
