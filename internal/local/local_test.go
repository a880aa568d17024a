package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
)

// The data folder is its owner's alone: created 0700, an existing folder
// open to others tightened to 0700 at start with a log line saying so, and
// the files lake writes there (the dev secret, the blob, the blob's lock,
// the demo marker) 0600, also when an earlier run left them wider.
func TestDataFolderIsPrivate(t *testing.T) {
	secret := strings.Repeat("ab", 32) + "\n"
	tests := []struct {
		name     string
		setup    func(t *testing.T, dir string) // nil: the folder does not exist
		wantLogs []string                       // paths (relative to dir) reported tightened
	}{
		{"new folder", nil, nil},
		{"existing private folder", func(t *testing.T, dir string) { mkdir(t, dir, 0o700) }, nil},
		{"existing 0755 folder", func(t *testing.T, dir string) { mkdir(t, dir, 0o755) }, []string{"."}},
		{"existing 0750 folder with a 0644 secret", func(t *testing.T, dir string) {
			mkdir(t, dir, 0o750)
			writeFile(t, filepath.Join(dir, local.SecretFile), secret, 0o644)
		}, []string{".", local.SecretFile}},
		{"existing private folder with a 0640 secret", func(t *testing.T, dir string) {
			mkdir(t, dir, 0o700)
			writeFile(t, filepath.Join(dir, local.SecretFile), secret, 0o640)
		}, []string{local.SecretFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			var logs bytes.Buffer
			in, err := local.Start(context.Background(), local.Config{
				DataDir: dir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
				RefreshInterval: time.Hour, Demo: true, Log: slog.New(slog.NewJSONHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			in.Close()

			checkMode(t, dir, 0o700)
			for _, name := range []string{local.SecretFile, local.BlobFile, local.BlobFile + ".lock", "demo-seeded"} {
				checkMode(t, filepath.Join(dir, name), 0o600)
			}
			if got, want := tightened(t, &logs, dir), tt.wantLogs; strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("got tightened %q in the log, want %q", got, want)
			}
		})
	}
}

func mkdir(t testing.TB, dir string, mode fs.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, data string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func checkMode(t testing.TB, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Fatalf("%s: got mode %v, want %v", filepath.Base(path), got, want)
	}
}

// tightened returns the paths, relative to dir, of the log's
// "tightened permissions" lines.
func tightened(t testing.TB, logs *bytes.Buffer, dir string) []string {
	t.Helper()
	var paths []string
	for line := range strings.Lines(logs.String()) {
		var rec struct {
			Msg, Path, Was, Now string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if !strings.Contains(rec.Msg, "tightened permissions") {
			continue
		}
		rel, err := filepath.Rel(dir, rec.Path)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, rel)
	}
	return paths
}

// A data folder whose usage items predate whole-registration counting
// (schema bytes alone) is counted again at start (issue 24, finding 2).
func TestStartRecomputesUsage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := local.Config{DataDir: dir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		RefreshInterval: time.Hour, Demo: true, Log: slog.New(slog.DiscardHandler)}
	in, err := local.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	// What an older lake left: acme's usage in schema bytes, no marker.
	st, err := rocksdb.Open(filepath.Join(dir, local.MetaDir), rocksdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want, err := catalog.New(st, catalog.Options{}).Usage(ctx, "acme")
	if err == nil {
		err = st.Put(ctx, "quota/acme", []byte(`{"tables":4,"schema_bytes":10}`))
	}
	if err == nil {
		err = st.Delete(ctx, catalog.UsageFormatKey)
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if in, err = local.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	in.Close()
	if st, err = rocksdb.Open(filepath.Join(dir, local.MetaDir), rocksdb.Options{}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := catalog.New(st, catalog.Options{}).Usage(ctx, "acme")
	if err != nil || got != want || want.Bytes < 1000 {
		t.Fatalf("usage after start = %+v, %v; want %+v, the demo tables' stored bytes", got, err, want)
	}
}
