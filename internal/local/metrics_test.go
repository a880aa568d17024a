package local_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// failingVersionPuts fails every write of a version record, and nothing
// else (fault injection).
type failingVersionPuts struct{ metastore.Store }

func (s failingVersionPuts) Put(ctx context.Context, key string, value []byte) error {
	if strings.HasPrefix(key, catalog.VersionPrefix) {
		return errors.New("injected: the version records' partition is unavailable")
	}
	return s.Store.Put(ctx, key, value)
}

// A side write that fails is counted in local mode's /metrics:
// lake_catalog_side_writes_failed_total by part, every part from 0, beside
// the mutations stored.
func TestCatalogCollectorCountsFailedSideWrites(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	cat := catalog.New(failingVersionPuts{st}, catalog.Options{})
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	if _, _, err := cat.Register(context.Background(), ref, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)}); !errors.Is(err, catalog.ErrSideWrite) {
		t.Fatalf("register: %v, want ErrSideWrite", err)
	}
	want := `
# HELP lake_catalog_commits_total Catalog mutations stored (register, update, drop, undrop, purge).
# TYPE lake_catalog_commits_total counter
lake_catalog_commits_total 1
# HELP lake_catalog_side_writes_failed_total Writes that went with a stored catalog mutation and failed (a version record, a tombstone's clean-up, the usage item, the change counter), by part: the mutation is answered as stored and the registration API logs a warning.
# TYPE lake_catalog_side_writes_failed_total counter
lake_catalog_side_writes_failed_total{part="change counter"} 0
lake_catalog_side_writes_failed_total{part="tombstone"} 0
lake_catalog_side_writes_failed_total{part="usage item"} 0
lake_catalog_side_writes_failed_total{part="version record"} 1
`
	if err := testutil.CollectAndCompare(local.CatalogCollector(cat), strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// lake local serves the catalog's counts in /metrics.
func TestLocalMetricsHaveTheCatalogsCounts(t *testing.T) {
	cfg := local.Config{DataDir: filepath.Join(t.TempDir(), "data"), APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		BrowserListen: "-", RefreshInterval: time.Hour, Demo: true, Log: slog.New(slog.DiscardHandler)}
	in, err := local.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	resp, err := http.Get("http://" + in.Endpoints().HTTP + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`lake_catalog_side_writes_failed_total{part="version record"} 0`, "lake_catalog_commits_total "} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, body)
		}
	}
}
