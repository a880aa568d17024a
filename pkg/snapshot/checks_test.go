package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lake-catalog/lake/pkg/snapshot"
)

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

func TestDamageIsRejected(t *testing.T) {
	t.Parallel()
	b := write(t, snapshot.WriterOptions{Generation: 1, CreatedAt: t0}, fixtureRows(t)).Blob
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

func TestFixtureDamageIsRejected(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"v4.lakesnap", "v5.lakesnap", "v6.lakesnap", "v7.lakesnap", "v8.lakesnap"} {
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

func TestErrorsSayThePackageOnce(t *testing.T) {
	t.Parallel()
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
		}(), snapshot.ErrVersion, "snapshot: unsupported blob version: version 2, this build reads 4 to 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := snapshot.Open(tc.blob, snapshot.ReaderOptions{})
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.kind) {
				t.Errorf("got %v, want %q (errors.Is %v)", err, tc.want, tc.kind)
			}
		})
	}
}

func FuzzOpen(f *testing.F) {
	for _, name := range []string{"v4.lakesnap", "v5.lakesnap", "v6.lakesnap", "v7.lakesnap", "v8.lakesnap"} {
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
