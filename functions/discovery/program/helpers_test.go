package program_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// The helpers of the tests that moved here with Start from
// internal/discovery (run_test.go), as that package's tests have them.

var secret = []byte("discovery-test-secret-0123456789abcdef")

// errInjected is what a failingStore's Get fails with while failing.
var errInjected = errors.New("injected read failure")

// failingStore reads through to a Store, fails every Get while fail is
// set, and holds every Get while hang is set (until it is cleared or the
// context ends).
type failingStore struct {
	blobstore.Store
	fail, hang atomic.Bool
}

func (s *failingStore) Get(ctx context.Context, ifNoneMatch string) (blobstore.Blob, error) {
	for s.hang.Load() {
		select {
		case <-ctx.Done():
			return blobstore.Blob{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	if s.fail.Load() {
		return blobstore.Blob{}, errInjected
	}
	return s.Store.Get(ctx, ifNoneMatch)
}

// blobFile is a snapshot blob file read through a failingStore.
type blobFile struct {
	path  string
	store *failingStore
}

func newBlobFile(t testing.TB) *blobFile {
	path := filepath.Join(t.TempDir(), "catalog.lakesnap")
	return &blobFile{path: path, store: &failingStore{Store: blobstore.NewFile(path)}}
}

// write publishes a blob of generation gen holding tenant acme's tables.
func (f *blobFile) write(t testing.TB, gen uint64, tables ...string) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	c := catalog.New(st, catalog.Options{})
	for i, name := range tables {
		ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: name}
		if _, _, err := c.Register(context.Background(), ref, catalog.TableSpec{Location: "/d/" + name, Schema: catalogtest.WideSchema(i, 20)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := scan.Build(context.Background(), st, scan.BuildOptions{Generation: gen, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := b.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path, blob, 0o644); err != nil {
		t.Fatal(err)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// as is an outgoing context with a bearer token of tenant.
func as(t testing.TB, tenant string) context.Context {
	t.Helper()
	tok, err := auth.IssueHS256(secret, auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}
