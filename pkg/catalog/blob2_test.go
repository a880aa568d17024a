package catalog_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
)

var update = flag.Bool("update", false, "rewrite testdata/v1.lakesnap with the version 1 encoder")

// fixtureCatalog registers what testdata/v1.lakesnap holds: two tenants,
// the rich schema, a wide one, and a legacy registration.
func fixtureCatalog(tb testing.TB) (*catalog.Catalog, metastore.Store) {
	tb.Helper()
	c, st, _ := newCatalog(tb)
	mustRegister(tb, c, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}, catalog.TableSpec{Location: "s3://lake/acme/orders/", Schema: catalogtest.RichSchema()})
	mustRegister(tb, c, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "customers"}, catalog.TableSpec{Location: "s3://lake/acme/customers/", Schema: catalogtest.WideSchema(3, 12)})
	mustRegister(tb, c, catalog.TableRef{Tenant: "globex", Namespace: "finance", Name: "ledger"}, catalog.TableSpec{Location: "s3://lake/globex/ledger/", Schema: catalogtest.WideSchema(7, 5)})
	if err := st.Put(context.Background(), "tbl/globex/legacy/old", []byte(`{"location":"/old","created_at":"2024-01-01T00:00:00Z"}`)); err != nil {
		tb.Fatal(err)
	}
	return c, st
}

// fixtureSnapshot is the fixture catalog's snapshot at generation 7.
func fixtureSnapshot(tb testing.TB) *catalog.Snapshot {
	tb.Helper()
	_, st := fixtureCatalog(tb)
	snap, _, err := catalog.Refresh(context.Background(), st, 7, t0)
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

// A version 1 blob written by an older refresh still opens: OpenBlob regroups
// it, and every tenant's tables are exactly the original ones.
func TestV1FixtureOpens(t *testing.T) {
	path := filepath.Join("testdata", "v1.lakesnap")
	want := fixtureSnapshot(t)
	if *update {
		b, err := catalog.EncodeBlobV1(want)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := catalog.ReadBlobHeader(b); err != nil || h.Version != catalog.BlobVersion {
		t.Fatalf("fixture header = %+v, %v; want version 1", h, err)
	}
	blob, err := catalog.OpenBlob(b, catalog.DecodeOptions{})
	if err != nil {
		t.Fatalf("OpenBlob(v1 fixture): %v", err)
	}
	if h := blob.Header(); h.Version != catalog.BlobVersion || h.Generation != 7 || h.Counts != want.Counts {
		t.Fatalf("header = %+v, want version 1, generation 7, counts %+v", h, want.Counts)
	}
	equalTenants(t, blob, want)
	orders := tenantTable(t, blob, "acme", "orders")
	if s, err := orders.Schema(); err != nil || !catalog.SchemaEqual(s, catalogtest.RichSchema()) {
		t.Fatalf("acme/sales/orders schema from the v1 fixture = %v, %v; want the rich schema", s, err)
	}
}

// A version 2 blob (what refresh wrote before the change marker) still
// opens, with every tenant's tables exactly, and has no marker.
func TestV2FixtureOpens(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "v2.lakesnap"))
	if err != nil {
		t.Fatal(err)
	}
	want := fixtureSnapshot(t)
	blob, err := catalog.OpenBlob(b, catalog.DecodeOptions{})
	if err != nil {
		t.Fatalf("OpenBlob(v2 fixture): %v", err)
	}
	if h := blob.Header(); h.Version != catalog.BlobVersion2 || h.Generation != 7 || h.Counts != want.Counts || h.Changes != 0 || !h.FullScanAt.IsZero() {
		t.Fatalf("header = %+v, want version 2, generation 7, counts %+v, no marker", h, want.Counts)
	}
	equalTenants(t, blob, want)
	if _, tenants, err := catalog.ReadBlobIndex(b); err != nil || len(tenants) != len(want.Tenants()) {
		t.Fatalf("ReadBlobIndex(v2) = %d tenants, %v", len(tenants), err)
	}
}

// A version 3 blob's change marker reads back from its first
// BlobMarkerPrefix bytes alone, and from the whole verified blob.
func TestChangeMarkerRoundTrips(t *testing.T) {
	snap := fixtureSnapshot(t)
	at := time.Date(2026, 12, 3, 17, 0, 0, 123, time.UTC)
	b, err := catalog.EncodeBlobWith(snap, catalog.EncodeOptions{Marker: catalog.ChangeMarker{Changes: 4242, FullScanAt: at}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := catalog.ReadBlobHeader(b[:catalog.BlobMarkerPrefix])
	if err != nil || h.Version != catalog.BlobVersion3 || h.Changes != 4242 || !h.FullScanAt.Equal(at) {
		t.Fatalf("header from the prefix = %+v, %v; want version 3, changes 4242, full scan at %v", h, err, at)
	}
	if h, err := catalog.ReadBlobHeader(b[:catalog.BlobHeaderSize]); err != nil || h.Changes != 0 {
		t.Fatalf("header alone = %+v, %v; want no marker (not read)", h, err)
	}
	blob, err := catalog.OpenBlob(b, catalog.DecodeOptions{})
	if err != nil || blob.Header().Changes != 4242 || !blob.Header().FullScanAt.Equal(at) {
		t.Fatalf("OpenBlob header = %+v, %v", blob.Header(), err)
	}
	equalTenants(t, blob, snap)
	zero, err := catalog.EncodeBlob(snap)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := catalog.ReadBlobHeader(zero); h.Changes != 0 || !h.FullScanAt.IsZero() {
		t.Fatalf("zero marker read back as %+v", h)
	}
}

// equalTenants checks the blob's index and each tenant's segment against snap.
func equalTenants(t *testing.T, blob *catalog.Blob, snap *catalog.Snapshot) {
	t.Helper()
	if got, want := len(blob.Tenants()), len(snap.Tenants()); got != want {
		t.Fatalf("%d tenants in the index, want %d", got, want)
	}
	for _, name := range snap.Tenants() {
		info, ok := blob.Tenant(name)
		if !ok || info.Tables != len(snap.Tenant(name)) {
			t.Fatalf("index entry of %s = %+v, %v; want %d tables", name, info, ok, len(snap.Tenant(name)))
		}
		got, err := blob.TenantTables(name)
		if err != nil {
			t.Fatalf("TenantTables(%s): %v", name, err)
		}
		wantTables := snap.Tenant(name)
		if len(got) != len(wantTables) {
			t.Fatalf("%s: %d tables, want %d", name, len(got), len(wantTables))
		}
		for i := range got {
			a, b := got[i], wantTables[i]
			if a.Ref != b.Ref || a.Location != b.Location || a.TableType != b.TableType || a.Version != b.Version ||
				!a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) || !bytes.Equal(a.SchemaIPC, b.SchemaIPC) ||
				a.HasSchema() != b.HasSchema() || a.SchemaError != b.SchemaError {
				t.Fatalf("%s table %d = %+v, want %+v", name, i, a, b)
			}
		}
	}
	if _, err := blob.TenantTables("initech"); !errors.Is(err, catalog.ErrTenantNotInBlob) {
		t.Fatalf("TenantTables(unknown) = %v, want ErrTenantNotInBlob", err)
	}
}

func tenantTable(t *testing.T, blob *catalog.Blob, tenant, name string) catalog.Table {
	t.Helper()
	tables, err := blob.TenantTables(tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if tb.Ref.Name == name {
			return tb
		}
	}
	t.Fatalf("%s/%s not in the blob", tenant, name)
	return catalog.Table{}
}

func TestBlobV2RoundTrip(t *testing.T) {
	for _, snap := range []*catalog.Snapshot{fixtureSnapshot(t), snapshotOf(t, 0, 3), snapshotOf(t, 500, 4)} {
		b := encode(t, snap)
		blob, err := catalog.OpenBlob(b, catalog.DecodeOptions{})
		if err != nil {
			t.Fatalf("OpenBlob: %v", err)
		}
		if h := blob.Header(); h.Version != catalog.BlobVersion3 || h.Generation != snap.Generation || h.Counts != snap.Counts {
			t.Fatalf("header = %+v", h)
		}
		equalTenants(t, blob, snap)
	}
	blob, _ := catalog.OpenBlob(encode(t, fixtureSnapshot(t)), catalog.DecodeOptions{})
	rich := tenantTable(t, blob, "acme", "orders")
	if s, err := rich.Schema(); err != nil || !catalog.SchemaEqual(s, catalogtest.RichSchema()) {
		t.Fatalf("rich schema through v2 = %v, %v", s, err)
	}
}

// Every single-bit flip and every truncation of a v2 blob is rejected: by
// OpenBlob, or, for a flip inside a segment that a forger also re-checksummed,
// by TenantTables.
func TestBlobV2RejectsDamage(t *testing.T) {
	snap := fixtureSnapshot(t)
	b := encode(t, snap)
	openAll := func(x []byte) error {
		blob, err := catalog.OpenBlob(x, catalog.DecodeOptions{})
		if err != nil {
			return err
		}
		for _, info := range blob.Tenants() {
			if _, err := blob.TenantTables(info.Name); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 10; i < len(b); i++ {
		for bit := range 8 {
			x := bytes.Clone(b)
			x[i] ^= 1 << bit
			if err := openAll(x); !errors.Is(err, catalog.ErrBlobCorrupt) {
				t.Fatalf("flip of bit %d at byte %d: %v, want ErrBlobCorrupt", bit, i, err)
			}
		}
	}
	for n := 0; n < len(b); n++ {
		if _, err := catalog.OpenBlob(b[:n], catalog.DecodeOptions{}); err == nil {
			t.Fatalf("truncation to %d of %d bytes opened", n, len(b))
		}
	}
	// Every bit flip inside one segment with the CRC recomputed (a forger's
	// blob) is still caught when that tenant is decoded: by zstd or by the
	// segment's hash.
	h, _ := catalog.ReadBlobHeader(b)
	blob, err := catalog.OpenBlob(b, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := blob.Tenants()[0]
	start := catalog.BlobHeaderSize + int(h.IndexBytes)
	for i := start; i < start+first.CompressedBytes; i++ {
		for bit := range 8 {
			x := bytes.Clone(b)
			x[i] ^= 1 << bit
			reCRC(x)
			err := openAll(x)
			if err == nil {
				// A bit zstd ignores (an unused frame header flag): the
				// tenant must then decode to exactly its tables.
				forged, _ := catalog.OpenBlob(x, catalog.DecodeOptions{})
				equalTenants(t, forged, snap)
				continue
			}
			if !errors.Is(err, catalog.ErrBlobCorrupt) {
				t.Fatalf("re-checksummed flip of bit %d at byte %d of %s's segment: %v, want ErrBlobCorrupt", bit, i-start, first.Name, err)
			}
		}
	}
}

func reCRC(b []byte) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	binary.LittleEndian.PutUint32(b[100:104], crc32.Update(crc32.Checksum(b[:100], tab), tab, b[catalog.BlobHeaderSize:]))
}

// A small blob with forged counts or sizes and a recomputed CRC is a
// rejected blob, never a huge allocation.
func TestForgedCountsAreRejected(t *testing.T) {
	snap := snapshotOf(t, 3, 1)
	v1, err := catalog.EncodeBlobV1(snap)
	if err != nil {
		t.Fatal(err)
	}
	forge := func(b []byte, at int, v uint64) []byte {
		x := bytes.Clone(b)
		binary.LittleEndian.PutUint64(x[at:], v)
		reCRC(x)
		return x
	}
	for name, x := range map[string][]byte{
		"v1 table count":   forge(v1, 28, 1<<40),
		"v1 payload bytes": forge(v1, 52, 1<<40),
	} {
		if _, err := catalog.DecodeBlob(x, catalog.DecodeOptions{MaxPayloadBytes: 1 << 50}); !errors.Is(err, catalog.ErrBlobCorrupt) {
			t.Errorf("%s: %v, want ErrBlobCorrupt", name, err)
		}
		if _, err := catalog.OpenBlob(x, catalog.DecodeOptions{MaxPayloadBytes: 1 << 50}); !errors.Is(err, catalog.ErrBlobCorrupt) {
			t.Errorf("%s through OpenBlob: %v, want ErrBlobCorrupt", name, err)
		}
	}
	v2 := encode(t, snap) // version 3: the tenant index follows the change marker
	h, _ := catalog.ReadBlobHeader(v2)
	idx := catalog.BlobMarkerPrefix
	nameLen := int(binary.LittleEndian.Uint16(v2[idx+4:]))
	entry := idx + 4 + 2 + nameLen // the first entry's numbers
	for name, x := range map[string][]byte{
		"v2 tenant count":                  func() []byte { y := bytes.Clone(v2); binary.LittleEndian.PutUint32(y[idx:], 1<<31); reCRC(y); return y }(),
		"v2 segment tables":                forge(v2, entry+24, 1<<40),
		"v2 segment bytes":                 forge(v2, entry+16, 1<<40),
		"v2 compressed bytes":              forge(v2, entry+8, 1<<40),
		"v2 header table count":            forge(v2, 28, 1<<40),
		"v2 index bytes":                   forge(v2, 52, h.BodyBytes+1),
		"v3 index shorter than its marker": forge(v2, 52, 8),
	} {
		if _, err := catalog.OpenBlob(x, catalog.DecodeOptions{}); !errors.Is(err, catalog.ErrBlobCorrupt) {
			t.Errorf("%s: %v, want ErrBlobCorrupt", name, err)
		}
	}
}

// A tenant whose segment is unchanged keeps the generation of its last
// change; a changed tenant takes the new blob's.
func TestEncodeCarriesUnchangedGenerations(t *testing.T) {
	ctx := context.Background()
	c, st := fixtureCatalog(t)
	first, _, err := catalog.Refresh(ctx, st, 7, t0)
	if err != nil {
		t.Fatal(err)
	}
	b1 := encode(t, first)
	_, prev, err := catalog.ReadBlobIndex(b1)
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, c, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "returns"}, catalog.TableSpec{Location: "s3://lake/acme/returns/", Schema: catalogtest.WideSchema(9, 4)})
	later := t0.Add(time.Hour)
	second, _, err := catalog.Refresh(ctx, st, 8, later)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := catalog.EncodeBlobWith(second, catalog.EncodeOptions{Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := catalog.OpenBlob(b2, catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := blob.Tenant("acme")
	globex, _ := blob.Tenant("globex")
	if acme.Generation != 8 || !acme.ChangedAt.Equal(later) {
		t.Fatalf("changed tenant acme: generation %d at %v, want 8 at %v", acme.Generation, acme.ChangedAt, later)
	}
	if globex.Generation != 7 || !globex.ChangedAt.Equal(t0) {
		t.Fatalf("unchanged tenant globex: generation %d at %v, want 7 at %v", globex.Generation, globex.ChangedAt, t0)
	}
	h1, _ := catalog.ReadBlobHeader(b1)
	if h2 := blob.Header(); h1.ContentHash == h2.ContentHash {
		t.Fatal("a changed catalog kept its content hash")
	}
}

func FuzzOpenBlob(f *testing.F) {
	f.Add(encode(f, snapshotOf(f, 3, 1)))
	if v1, err := catalog.EncodeBlobV1(snapshotOf(f, 3, 1)); err == nil {
		f.Add(v1)
	}
	f.Add([]byte("LAKESNAP"))
	f.Fuzz(func(t *testing.T, b []byte) {
		blob, err := catalog.OpenBlob(b, catalog.DecodeOptions{MaxPayloadBytes: 1 << 20, MaxSegmentBytes: 1 << 20})
		if err != nil {
			if !errors.Is(err, catalog.ErrBlobMagic) && !errors.Is(err, catalog.ErrBlobVersion) && !errors.Is(err, catalog.ErrBlobCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, info := range blob.Tenants() {
			_, err := blob.TenantTables(info.Name)
			if err != nil && !errors.Is(err, catalog.ErrBlobCorrupt) {
				t.Fatalf("untyped segment error %v", err)
			}
			verr := blob.VisitTenant(info.Name, func(*catalog.Table) error { return nil })
			if (err == nil) != (verr == nil) {
				t.Fatalf("TenantTables says %v, VisitTenant %v", err, verr)
			}
		}
	})
}

// VisitTenant walks exactly the tables TenantTables builds, stops at the
// function's error, and knows no tenant the blob lacks.
func TestVisitTenantEqualsTenantTables(t *testing.T) {
	snap := fixtureSnapshot(t)
	blob, err := catalog.OpenBlob(encode(t, snap), catalog.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range blob.Tenants() {
		want, err := blob.TenantTables(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		var got []catalog.Table
		if err := blob.VisitTenant(info.Name, func(tb *catalog.Table) error {
			c := *tb
			c.Ref = catalog.TableRef{Tenant: strings.Clone(tb.Ref.Tenant), Namespace: strings.Clone(tb.Ref.Namespace), Name: strings.Clone(tb.Ref.Name)}
			c.Location, c.TableType, c.SchemaError = strings.Clone(tb.Location), strings.Clone(tb.TableType), strings.Clone(tb.SchemaError)
			if tb.SchemaIPC != nil {
				c.SchemaIPC = bytes.Clone(tb.SchemaIPC)
			}
			got = append(got, c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: visited %d tables, want %d", info.Name, len(got), len(want))
		}
		for i := range got {
			a, b := got[i], want[i]
			if a.Ref != b.Ref || a.Location != b.Location || a.TableType != b.TableType || a.Version != b.Version ||
				!a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) || !bytes.Equal(a.SchemaIPC, b.SchemaIPC) ||
				a.HasSchema() != b.HasSchema() || a.SchemaError != b.SchemaError {
				t.Fatalf("%s table %d: visited %+v, want %+v", info.Name, i, a, b)
			}
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := blob.VisitTenant("acme", func(*catalog.Table) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("VisitTenant with a failing function: %v after %d calls, want its error after 1", err, calls)
	}
	if err := blob.VisitTenant("nobody", func(*catalog.Table) error { return nil }); !errors.Is(err, catalog.ErrTenantNotInBlob) {
		t.Fatalf("VisitTenant(nobody) = %v, want ErrTenantNotInBlob", err)
	}
}
