package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// buildFixture is the v1 fixture's catalog plus tables that share one
// schema, an undecodable schema and malformed entries.
func buildFixture(t *testing.T) (*catalog.Catalog, metastore.Store) {
	t.Helper()
	c, st := fixtureCatalog(t)
	for _, name := range []string{"a", "b", "c"} {
		mustRegister(t, c, catalog.TableRef{Tenant: "umbrella", Namespace: "shared", Name: name}, catalog.TableSpec{Location: "/s/" + name, Schema: catalogtest.WideSchema(5, 6)})
	}
	for key, val := range map[string]string{
		"tbl/umbrella/n/garbled": `{"location":"/x","created_at":"2024-01-01T00:00:00Z","schema_ipc":"AAAA"}`,
		"tbl/umbrella/n/notjson": `{{{`,
		"tbl/onlytwo/parts":      `{"location":"/x"}`,
		"other/t1/n/x":           `{"location":"/x"}`,
	} {
		if err := st.Put(context.Background(), key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	return c, st
}

// BuildBlob writes, byte for byte, the blob EncodeBlobWith makes of the
// snapshot of the same scan, and reports the same counts and skipped keys.
func TestBuildBlobEqualsEncodedSnapshot(t *testing.T) {
	ctx := context.Background()
	c, st := buildFixture(t)
	snap, scan, err := catalog.Refresh(ctx, st, 7, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := encode(t, snap)
	got, err := catalog.BuildBlob(ctx, st, catalog.BuildOptions{Generation: 7, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Blob, want) {
		t.Fatalf("BuildBlob wrote %d bytes that differ from the encoded snapshot's %d", len(got.Blob), len(want))
	}
	if got.Counts != snap.Counts || got.Counts != (catalog.Counts{Tables: 8, SchemaUnavailable: 2, Skipped: 2}) {
		t.Fatalf("counts %+v, snapshot %+v", got.Counts, snap.Counts)
	}
	if !slices.Equal(got.SkippedKeys, scan.SkippedKeys) || got.Stats.Kept != scan.Stats.Kept {
		t.Fatalf("skipped %q stats %+v, scan %q %+v", got.SkippedKeys, got.Stats, scan.SkippedKeys, scan.Stats)
	}
	// Four schemas and the garbled bytes are distinct; the three
	// umbrella/shared tables share theirs.
	if got.DistinctSchemas != 5 {
		t.Fatalf("distinct schemas = %d, want 5", got.DistinctSchemas)
	}
	if h, _ := catalog.ReadBlobHeader(want); got.Header != h {
		t.Fatalf("header %+v, want %+v", got.Header, h)
	}
	blob, err := catalog.OpenBlob(got.Blob, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	equalTenants(t, blob, snap)

	// With the previous index, unchanged tenants keep their generation,
	// exactly as EncodeBlobWith carries it.
	_, prev, _ := catalog.ReadBlobIndex(got.Blob)
	mustRegister(t, c, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "returns"}, catalog.TableSpec{Location: "/r", Schema: catalogtest.WideSchema(9, 4)})
	later := t0.Add(time.Hour)
	snap2, _, err := catalog.Refresh(ctx, st, 8, later)
	if err != nil {
		t.Fatal(err)
	}
	want2, err := catalog.EncodeBlobWith(snap2, catalog.EncodeOptions{Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	got2, err := catalog.BuildBlob(ctx, st, catalog.BuildOptions{Generation: 8, CreatedAt: later, Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got2.Blob, want2) {
		t.Fatal("with a previous index, BuildBlob differs from EncodeBlobWith")
	}
	b2, _ := catalog.OpenBlob(got2.Blob, catalog.DecodeOptions{})
	if g, _ := b2.Tenant("globex"); g.Generation != 7 {
		t.Fatalf("unchanged globex has generation %d, want 7", g.Generation)
	}
	if a, _ := b2.Tenant("acme"); a.Generation != 8 {
		t.Fatalf("changed acme has generation %d, want 8", a.Generation)
	}
}

// An empty catalog builds a valid blob of no tenants.
func TestBuildBlobEmpty(t *testing.T) {
	got, err := catalog.BuildBlob(context.Background(), memstore.New(memstore.Options{}), catalog.BuildOptions{Generation: 1, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := catalog.OpenBlob(got.Blob, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(blob.Tenants()) != 0 || got.Counts != (catalog.Counts{}) {
		t.Fatalf("tenants %v counts %+v", blob.Tenants(), got.Counts)
	}
}

// A scan that fails builds nothing and says so.
func TestBuildBlobScanError(t *testing.T) {
	st := memstore.New(memstore.Options{})
	_ = st.Close()
	got, err := catalog.BuildBlob(context.Background(), st, catalog.BuildOptions{Generation: 1, CreatedAt: t0})
	if err == nil || got.Blob != nil {
		t.Fatalf("BuildBlob over a closed store: %d bytes, %v", len(got.Blob), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := catalog.BuildBlob(ctx, memstore.New(memstore.Options{}), catalog.BuildOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("BuildBlob with a cancelled context: %v", err)
	}
}
