package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// openAll opens b and decodes every tenant.
func openAll(b []byte) error {
	r, err := snapshot.Open(b, snapshot.ReaderOptions{})
	if err != nil {
		return err
	}
	for _, e := range r.Entries() {
		seg, err := r.Tenant(context.Background(), e.Tenant)
		if err != nil {
			return err
		}
		seg.Release()
	}
	return nil
}

// Every single-bit flip past the version field and every truncation of a
// blob is rejected as corrupt: the manifest by its checksum, a segment by
// its address (cut at the manifest's end, it is the manifest alone:
// truncated).
func TestDamageIsRejected(t *testing.T) {
	_, st := fixture(t)
	b := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0}).Blob
	for i := 10; i < len(b); i++ {
		for bit := range 8 {
			x := bytes.Clone(b)
			x[i] ^= 1 << bit
			if err := openAll(x); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("flip of bit %d at byte %d of %d: %v, want ErrCorrupt", bit, i, len(b), err)
			}
		}
	}
	truncated(t, b)
	if _, err := snapshot.Open(append(bytes.Clone(b), 0), snapshot.ReaderOptions{}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a padded blob: %v, want ErrCorrupt", err)
	}
}

// The committed fixtures of every readable version are checked as
// strictly: every flip is rejected at open (the manifest's checksum, each
// segment's address) and every truncation (truncated).
func TestFixtureDamageIsRejected(t *testing.T) {
	for _, name := range []string{"v4.lakesnap", "v5.lakesnap", "v6.lakesnap"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		damaged(t, b)
	}
}

func damaged(t *testing.T, b []byte) {
	t.Helper()
	for i := 10; i < len(b); i += 3 {
		x := bytes.Clone(b)
		x[i] ^= 0x10
		if err := openAll(x); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Fatalf("flip at byte %d of %d: %v, want ErrCorrupt", i, len(b), err)
		}
	}
	truncated(t, b)
}

// truncated checks every truncation of a one-file blob: each is rejected
// as corrupt, but the cut at the manifest's end, which is the blob's
// manifest alone (the form refresh publishes): that opens, and serves no
// tenant without its segments (ErrDetached).
func truncated(t *testing.T, b []byte) {
	t.Helper()
	h, err := snapshot.ReadHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	manifest := snapshot.HeaderSize + int(h.ManifestBytes)
	for n := range len(b) {
		r, err := snapshot.Open(b[:n], snapshot.ReaderOptions{})
		if n == manifest {
			if err != nil || r.Form() != snapshot.ManifestAlone {
				t.Fatalf("the manifest alone (%d of %d bytes): %v, want it opened alone", n, len(b), err)
			}
			if err := openAll(b[:n]); !errors.Is(err, snapshot.ErrDetached) {
				t.Fatalf("a tenant of the manifest alone: %v, want ErrDetached", err)
			}
			continue
		}
		if !errors.Is(err, snapshot.ErrCorrupt) {
			t.Fatalf("truncation to %d of %d bytes: %v, want ErrCorrupt", n, len(b), err)
		}
	}
}

// Errors say the package once, and the kind first.
func TestErrorsSayThePackageOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		blob []byte
		kind error
		want string
	}{
		{"truncated header", []byte(snapshot.Magic + "12"), snapshot.ErrCorrupt,
			fmt.Sprintf("snapshot: corrupt blob: truncated to 10 bytes, the header is %d", snapshot.HeaderSize)},
		{"not a blob", make([]byte, snapshot.HeaderSize), snapshot.ErrCorrupt, "snapshot: corrupt blob: not a snapshot blob (bad magic)"},
		{"version 2", func() []byte {
			b := make([]byte, snapshot.HeaderSize)
			copy(b, snapshot.Magic)
			b[8] = 2
			return b
		}(), snapshot.ErrVersion, "snapshot: unsupported blob version: version 2, this build reads 4 to 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := snapshot.Open(tc.blob, snapshot.ReaderOptions{})
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.kind) {
				t.Errorf("got %v, want %q (errors.Is %v)", err, tc.want, tc.kind)
			}
		})
	}
}

// Every type the catalog promises survives register → store → scan →
// blob → segment exactly, metadata included. The store is RocksDB, as in
// local mode.
func TestRichSchemaRoundTripsExactly(t *testing.T) {
	st, err := rocksdb.Open(t.TempDir(), rocksdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := catalog.New(st, catalog.Options{})
	rich := catalogtest.RichSchema()
	r := catalog.TableRef{Tenant: "ácme", Namespace: "データ", Name: "every_type ✓"}
	register(t, c, r, catalog.TableSpec{Location: "s3://lake/rich/", Schema: rich})
	seg := tenant(t, open(t, build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0}).Blob), r.Tenant)
	if seg.NumTables() != 1 || seg.Tables.Name.Value(0) != r.Name || seg.Tables.Namespace.Value(0) != r.Namespace {
		t.Fatalf("segment holds %q", names(seg))
	}
	got, err := catalog.DecodeSchema(seg.Schema(0))
	if err != nil {
		t.Fatal(err)
	}
	// Field by field, so a failure names the type that broke.
	for i, f := range rich.Fields() {
		if g := got.Field(i); !g.Equal(f) {
			t.Errorf("field %d: got %v, want %v", i, g, f)
		}
	}
	if rich.Metadata().Len() == 0 || !got.Metadata().Equal(rich.Metadata()) {
		t.Errorf("schema metadata = %v, want %v", got.Metadata(), rich.Metadata())
	}
}

// A full build keeps a table without schema bytes or with bytes that do
// not decode (schema unavailable) and skips malformed keys and values, and
// tombstones, counting them.
func TestBuildMarksUnavailableAndSkipsMalformed(t *testing.T) {
	c, st := newStore(t)
	ctx := context.Background()
	register(t, c, ref("t1", "n", "good"), catalog.TableSpec{Location: "/g", Schema: catalogtest.WideSchema(1, 2)})
	for key, val := range map[string]string{
		"tbl/t1/n/legacy":         `{"location":"/l","created_at":"2024-01-01T00:00:00Z"}`,
		"tbl/t1/n/garbled":        `{"location":"/x","created_at":"2024-01-01T00:00:00Z","schema_ipc":"AAAA"}`,
		"tbl/t1/n/notjson":        `{{{`,
		"tbl/t1/too/many/parts":   `{"location":"/x"}`,
		"tbl/onlytwo/parts":       `{"location":"/x"}`,
		"other/t1/n/x":            `{"location":"/x"}`,
		"dropped/t1/n/gone/nocid": `{"registration":{"location":"/x"},"dropped_at":"2026-01-01T00:00:00Z"}`,
	} {
		if err := st.Put(ctx, key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	b := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0})
	want := []string{"dropped/t1/n/gone/nocid", "tbl/onlytwo/parts", "tbl/t1/n/notjson", "tbl/t1/too/many/parts"}
	if !slices.Equal(b.SkippedKeys, want) {
		t.Fatalf("skipped %q, want %q", b.SkippedKeys, want)
	}
	if w := (catalog.Counts{Tables: 3, SchemaUnavailable: 2, Skipped: 4}); b.Counts != w {
		t.Fatalf("counts = %+v, want %+v", b.Counts, w)
	}
	seg := tenant(t, open(t, b.Blob), "t1")
	for i, want := range map[int]bool{0: false, 1: true, 2: false} { // garbled, good, legacy
		if got := seg.Schema(i) != nil; got != want {
			t.Errorf("%s: has a schema %v, want %v", seg.Tables.Name.Value(i), got, want)
		}
	}
}

// An empty catalog builds a valid blob of no tenants; a scan that fails
// builds nothing and says so.
func TestBuildEmptyAndFailing(t *testing.T) {
	_, st := newStore(t)
	b := build(t, st, snapshot.BuildOptions{Generation: 1, CreatedAt: t0})
	if r := open(t, b.Blob); len(r.Entries()) != 0 || b.Counts != (catalog.Counts{}) {
		t.Fatalf("empty catalog: entries %v, counts %+v", r.Entries(), b.Counts)
	}
	closed := memstore.New(memstore.Options{})
	_ = closed.Close()
	if got, err := snapshot.Build(context.Background(), closed, snapshot.BuildOptions{Generation: 1}); err == nil || got.Written != nil {
		t.Fatalf("Build over a closed store: %v, %v", got.Written, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := snapshot.Build(ctx, st, snapshot.BuildOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Build with a cancelled context: %v, want context.Canceled", err)
	}
}

// A table's change fields (who wrote it, by which operation) are carried
// into its row.
func TestChangeFieldsAreCarried(t *testing.T) {
	_, st := newStore(t)
	reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "/x", Schema: catalogtest.WideSchema(1, 1)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	js, err := reg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	js = append(js[:len(js)-1], []byte(`,"updated_by":"arn:aws:iam::1:user/alice","op":"update"}`)...)
	if err := st.Put(context.Background(), "tbl/acme/n/t", js); err != nil {
		t.Fatal(err)
	}
	row := tenant(t, open(t, build(t, st, snapshot.BuildOptions{CreatedAt: t0}).Blob), "acme").Table(0)
	if row.UpdatedBy != "arn:aws:iam::1:user/alice" || row.Op != catalog.OpUpdate {
		t.Fatalf("change fields: by %q, op %q", row.UpdatedBy, row.Op)
	}
}

func FuzzOpen(f *testing.F) {
	for _, name := range []string{"v4.lakesnap", "v5.lakesnap", "v6.lakesnap"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(snapshot.Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := snapshot.Open(b, snapshot.ReaderOptions{Options: snapshot.Options{MaxSegmentBytes: 1 << 20}})
		if err != nil {
			if errors.Is(err, snapshot.ErrCorrupt) == errors.Is(err, snapshot.ErrVersion) {
				t.Fatalf("error wraps not exactly one sentinel: %v", err)
			}
			return
		}
		for _, e := range r.Entries() {
			seg, err := r.Tenant(context.Background(), e.Tenant)
			if r.Form() == snapshot.ManifestAlone && errors.Is(err, snapshot.ErrDetached) {
				continue // a manifest alone: no segment to decode
			}
			if err != nil {
				if !errors.Is(err, snapshot.ErrCorrupt) || errors.Is(err, snapshot.ErrVersion) {
					t.Fatalf("segment error wraps not exactly ErrCorrupt: %v", err)
				}
				continue
			}
			seg.Release()
		}
	})
}
