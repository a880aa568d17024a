package refresh_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// segmentFiles lists the segment files beside a file store's blob.
func segmentFiles(t *testing.T, blobPath string) []string {
	t.Helper()
	ents, err := os.ReadDir(blobPath + ".segments")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// A full run publishes the manifest alone and every tenant's segment
// beside it; a batch touching one tenant reads and writes that tenant's
// segment and the manifest, and releases the segment it replaced.
func TestPublishesSegmentsApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, p, blobs := setup(t)
	for _, tenant := range []string{"acme", "globex", "initech"} {
		ref := catalog.TableRef{Tenant: tenant, Namespace: "ns", Name: "t"}
		if _, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(len(tenant), 4)}); err != nil {
			t.Fatal(err)
		}
	}
	res := run(t, p)
	if res.Outcome != refresh.Published || res.SegmentsWritten != 3 || res.SegmentsReleased != 0 {
		t.Fatalf("first run = %+v, want 3 segments written", res)
	}
	b, err := blobs.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	h, err := snapshot.ReadHeader(b.Data)
	if err != nil || len(b.Data) != snapshot.HeaderSize+int(h.ManifestBytes) || h.BodyBytes == h.ManifestBytes {
		t.Fatalf("the blob is %d bytes (%v), want the manifest alone (%d)", len(b.Data), err, snapshot.HeaderSize+int(h.ManifestBytes))
	}
	path := blobs.Location()
	before := segmentFiles(t, path)
	r := load(t, blobs, b.Data)
	var want []string
	for _, e := range r.Entries() {
		want = append(want, hex.EncodeToString(e.Address[:]))
	}
	slices.Sort(want)
	if !slices.Equal(before, want) {
		t.Fatalf("segment files %q, want the manifest's %q", before, want)
	}

	if _, _, err := c.Register(ctx, catalog.TableRef{Tenant: "globex", Namespace: "ns", Name: "u"}, catalog.TableSpec{Location: "/u", Schema: catalogtest.WideSchema(9, 2)}); err != nil {
		t.Fatal(err)
	}
	res, err = p.Apply(ctx, []string{"tbl/globex/ns/u"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != refresh.Published || !res.Incremental || res.SegmentsRead != 1 || res.SegmentsWritten != 1 || res.SegmentsReleased != 1 {
		t.Fatalf("batch of one tenant = %+v, want 1 segment read, written and released", res)
	}
	after := segmentFiles(t, path)
	kept := 0
	for _, name := range after {
		if slices.Contains(before, name) {
			kept++
		}
	}
	if len(after) != 3 || kept != 2 {
		t.Fatalf("after the batch: %d segment files, %d of them from before; want 3 and 2", len(after), kept)
	}
	if got := current(t, blobs); len(got.Tables) != 4 {
		t.Fatalf("published %d tables, want 4", len(got.Tables))
	}

	// A segment of a changed tenant goes missing.
	gen := current(t, blobs).Generation
	head := func() uint64 {
		b, err := blobs.Get(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		h, err := snapshot.ReadHeader(b.Data)
		if err != nil {
			t.Fatal(err)
		}
		return h.Generation
	}
	for _, name := range after {
		if !slices.Contains(before, name) {
			if err := os.Remove(filepath.Join(path+".segments", name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, _, err := c.Register(ctx, catalog.TableRef{Tenant: "globex", Namespace: "ns", Name: "v"}, catalog.TableSpec{Location: "/v", Schema: catalogtest.WideSchema(9, 2)}); err != nil {
		t.Fatal(err)
	}
	// The batch falls back to a full scan, which stores every segment
	// again (the batch, retried, would fail the same way).
	if res, err := p.Apply(ctx, []string{"tbl/globex/ns/v"}); err != nil || res.Outcome != refresh.Published || !res.Scanned || res.SegmentsWritten != 3 {
		t.Fatalf("a batch whose tenant's segment is missing = %+v, %v; want a published full scan writing every segment", res, err)
	}
	if got := head(); got != gen+1 {
		t.Fatalf("generation %d after the batch, want %d", got, gen+1)
	}
	if got := current(t, blobs); len(got.Tables) != 5 {
		t.Fatalf("published %d tables, want 5", len(got.Tables))
	}
}
