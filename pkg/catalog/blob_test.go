package catalog_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// snapshotOf registers n tables over a few tenants, plus one legacy
// registration, and builds a snapshot.
func snapshotOf(tb testing.TB, n int, gen uint64) *catalog.Snapshot {
	tb.Helper()
	c, st, _ := newCatalog(tb)
	ctx := context.Background()
	for i := range n {
		ref := catalog.TableRef{Tenant: fmt.Sprintf("tenant%d", i%3), Namespace: fmt.Sprintf("ns%d", i%5), Name: fmt.Sprintf("table_%04d", i)}
		mustRegister(tb, c, ref, catalog.TableSpec{Location: "s3://lake/" + ref.String(), Schema: catalogtest.WideSchema(i, 1+i%20)})
	}
	if err := st.Put(ctx, "tbl/tenant0/legacy/old", []byte(`{"location":"/old","created_at":"2024-01-01T00:00:00Z"}`)); err != nil {
		tb.Fatal(err)
	}
	if err := st.Put(ctx, "tbl/broken", []byte(`{}`)); err != nil {
		tb.Fatal(err)
	}
	snap, _, err := catalog.Refresh(ctx, st, gen, t0)
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

func encode(tb testing.TB, s *catalog.Snapshot) []byte {
	tb.Helper()
	b, err := catalog.EncodeBlob(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func equalSnapshots(t *testing.T, got, want *catalog.Snapshot) {
	t.Helper()
	if got.Generation != want.Generation || !got.CreatedAt.Equal(want.CreatedAt) || got.Counts != want.Counts {
		t.Fatalf("header: got gen %d at %v %+v, want gen %d at %v %+v", got.Generation, got.CreatedAt, got.Counts, want.Generation, want.CreatedAt, want.Counts)
	}
	g, w := got.Tables(), want.Tables()
	if len(g) != len(w) {
		t.Fatalf("%d tables, want %d", len(g), len(w))
	}
	for i := range w {
		a, b := g[i], w[i]
		if a.Ref != b.Ref || a.Location != b.Location || a.TableType != b.TableType || a.Version != b.Version ||
			!a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) || string(a.SchemaIPC) != string(b.SchemaIPC) ||
			a.SchemaError != b.SchemaError || a.HasSchema() != b.HasSchema() {
			t.Fatalf("table %d = %+v, want %+v", i, a, b)
		}
	}
}

func TestBlobRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 40, 16384 + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			snap := snapshotOf(t, n, 42)
			blob := encode(t, snap)
			got, err := catalog.DecodeBlob(blob, catalog.DecodeOptions{})
			if err != nil {
				t.Fatalf("DecodeBlob: %v", err)
			}
			equalSnapshots(t, got, snap)
			h, err := catalog.ReadBlobHeader(blob)
			if err != nil || h.Generation != 42 || h.Counts != snap.Counts || h.Counts.SchemaUnavailable != 1 || h.Counts.Skipped != 1 {
				t.Fatalf("header = %+v, %v", h, err)
			}
		})
	}
}

// The content hash covers tables only: same tables, other generation and
// time, same hash; one change, another hash.
func TestBlobContentHash(t *testing.T) {
	a := snapshotOf(t, 30, 1)
	b := snapshotOf(t, 30, 2)
	c := snapshotOf(t, 31, 3)
	ha, _ := catalog.ReadBlobHeader(encode(t, a))
	hb, _ := catalog.ReadBlobHeader(encode(t, b))
	hc, _ := catalog.ReadBlobHeader(encode(t, c))
	if ha.ContentHash != hb.ContentHash {
		t.Fatal("same tables in two generations hash differently")
	}
	if ha.ContentHash == hc.ContentHash {
		t.Fatal("different tables hash the same")
	}
}

func TestBlobRejectsDamage(t *testing.T) {
	blob := encode(t, snapshotOf(t, 50, 9))
	newer := append([]byte{}, blob...)
	binary.LittleEndian.PutUint16(newer[8:], catalog.BlobVersion3+1)
	magic := append([]byte{}, blob...)
	copy(magic, "PARQUET1")
	cases := map[string]struct {
		b    []byte
		want error
	}{
		"empty":           {nil, catalog.ErrBlobMagic},
		"wrong magic":     {magic, catalog.ErrBlobMagic},
		"newer version":   {newer, catalog.ErrBlobVersion},
		"header only":     {blob[:104], catalog.ErrBlobCorrupt},
		"truncated magic": {blob[:5], catalog.ErrBlobCorrupt},
		"truncated":       {blob[:len(blob)-1], catalog.ErrBlobCorrupt},
		"extended":        {append(append([]byte{}, blob...), 0), catalog.ErrBlobCorrupt},
	}
	for name, c := range cases {
		if _, err := catalog.DecodeBlob(c.b, catalog.DecodeOptions{}); !errors.Is(err, c.want) {
			t.Errorf("%s: error = %v, want %v", name, err, c.want)
		}
	}
	// Every single-bit flip past the version field is caught.
	for i := 10; i < len(blob); i += max(1, len(blob)/997) {
		for bit := range 8 {
			flipped := append([]byte{}, blob...)
			flipped[i] ^= 1 << bit
			if _, err := catalog.DecodeBlob(flipped, catalog.DecodeOptions{}); !errors.Is(err, catalog.ErrBlobCorrupt) {
				t.Fatalf("flip of bit %d at byte %d: error = %v, want ErrBlobCorrupt", bit, i, err)
			}
		}
	}
}

func TestBlobPayloadLimit(t *testing.T) {
	blob := encode(t, snapshotOf(t, 20, 1))
	blob2, err := catalog.OpenBlob(blob, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	largest := 0
	for _, info := range blob2.Tenants() {
		largest = max(largest, info.PayloadBytes)
	}
	if _, err := catalog.DecodeBlob(blob, catalog.DecodeOptions{MaxSegmentBytes: uint64(largest) - 1}); !errors.Is(err, catalog.ErrBlobCorrupt) {
		t.Fatalf("over-limit segment error = %v, want ErrBlobCorrupt", err)
	}
	v1, err := catalog.EncodeBlobV1(snapshotOf(t, 20, 1))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := catalog.ReadBlobHeader(v1)
	if _, err := catalog.DecodeBlob(v1, catalog.DecodeOptions{MaxPayloadBytes: h.PayloadBytes - 1}); !errors.Is(err, catalog.ErrBlobCorrupt) {
		t.Fatalf("over-limit v1 payload error = %v, want ErrBlobCorrupt", err)
	}
}

func FuzzDecodeBlob(f *testing.F) {
	f.Add(encode(f, snapshotOf(f, 3, 1)))
	f.Add(encode(f, snapshotOf(f, 0, 1)))
	f.Add([]byte("LAKESNAP"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := catalog.DecodeBlob(b, catalog.DecodeOptions{MaxPayloadBytes: 1 << 20})
		if err != nil {
			if !errors.Is(err, catalog.ErrBlobMagic) && !errors.Is(err, catalog.ErrBlobVersion) && !errors.Is(err, catalog.ErrBlobCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// What decodes re-encodes to a blob with the same content.
		again, err := catalog.DecodeBlob(encode(t, s), catalog.DecodeOptions{})
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		equalSnapshots(t, again, s)
	})
}
