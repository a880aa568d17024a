package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/internal/cli"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
)

// `lake quota recompute` counts a store's usage again in whole
// registrations: an item from before (schema bytes alone) gets what the
// tenant's registrations take as stored.
func TestQuotaRecompute(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := rocksdb.Open(filepath.Join(dir, local.MetaDir), rocksdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: "t"}
	_, _, err = catalog.New(st, catalog.Options{}).Register(ctx, r, catalog.TableSpec{Location: "/d", Schema: catalogtest.WideSchema(1, 3), Description: strings.Repeat("d", 4096)})
	if err == nil {
		err = st.Put(ctx, catalog.QuotaPrefix+"acme", []byte(`{"tables":1,"schema_bytes":5}`))
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := cli.Run(ctx, cli.NewFactory(func(string) string { return "" }, &out, &errOut), []string{"--data-dir", dir, "quota", "recompute"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if got, want := out.String(), "quota recompute: 1 tenants counted, 1 changed\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if st, err = rocksdb.Open(filepath.Join(dir, local.MetaDir), rocksdb.Options{}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key, _ := r.Key()
	raw, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// The registration and its version record.
	held := int64(len(key) + len(raw))
	versions, err := st.ScanPrefix(ctx, catalog.VersionPrefix)
	if err != nil || len(versions) != 1 {
		t.Fatalf("version records %v, %v; want one", versions, err)
	}
	held += int64(len(catalog.VersionPrefix) + len(versions[0].Key) + len(versions[0].Value))
	u, err := catalog.New(st, catalog.Options{}).Usage(ctx, "acme")
	if want := (catalog.Usage{Tables: 1, Bytes: held}); err != nil || u != want {
		t.Fatalf("usage = %+v, %v; want %+v", u, err, want)
	}
}
