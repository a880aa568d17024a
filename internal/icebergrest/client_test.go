package icebergrest_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// iceberg-go's own REST client: config, namespaces, tables (paged),
// loadTable with the schema, properties and name mapping as registered.
func TestIcebergGoClient(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "lake", srv.URL, rest.WithOAuthToken("tok-acme"), rest.WithWarehouseLocation("acme"))
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	t.Cleanup(func() { _ = cat.Close() })

	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil {
		t.Fatalf("ListNamespaces: %v", err)
	}
	if want := []table.Identifier{{"big"}, {"empty"}, {"sales"}}; !slices.EqualFunc(nss, want, slices.Equal) {
		t.Errorf("namespaces %q, want %q", nss, want)
	}

	// 250 tables, 100 a page: the client follows next-page-token.
	var names []string
	for id, err := range cat.ListTables(cat.SetPageSize(ctx, 100), table.Identifier{"big"}) {
		if err != nil {
			t.Fatalf("ListTables: %v", err)
		}
		if len(id) != 2 || id[0] != "big" {
			t.Fatalf("identifier %q, want [big name]", id)
		}
		names = append(names, id[1])
	}
	if len(names) != 250 || names[0] != "t000" || names[249] != "t249" {
		t.Errorf("%d tables, want t000…t249", len(names))
	}

	for _, err := range cat.ListTables(ctx, table.Identifier{"nope"}) {
		if !errors.Is(err, catalog.ErrNoSuchNamespace) {
			t.Errorf("ListTables of a missing namespace: %v, want ErrNoSuchNamespace", err)
		}
	}

	tbl, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders"})
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	want := ordersSchema()
	got := tbl.Schema()
	if !got.Equals(want) || got.ID != want.ID || !slices.Equal(got.IdentifierFieldIDs, want.IdentifierFieldIDs) {
		t.Errorf("schema\n%s (id %d, identifiers %v)\nwant\n%s (id %d, identifiers %v)",
			got, got.ID, got.IdentifierFieldIDs, want, want.ID, want.IdentifierFieldIDs)
	}
	for _, f := range want.Fields() {
		g, ok := got.FindFieldByID(f.ID)
		if !ok || g.Name != f.Name || !g.Type.Equals(f.Type) || g.Required != f.Required || g.Doc != f.Doc {
			t.Errorf("field %d: %+v, want %+v", f.ID, g, f)
		}
	}
	md := tbl.Metadata()
	if md.Version() != 2 || md.TableUUID().String() != ordersUUID || md.Location() != "s3://acme-data/sales/orders/" ||
		md.LastColumnID() != 8 || md.LastUpdatedMillis() != ordersUpdated.UnixMilli() || md.CurrentSnapshot() != nil {
		t.Errorf("metadata: version %d uuid %s location %s last column %d updated %d snapshot %v",
			md.Version(), md.TableUUID(), md.Location(), md.LastColumnID(), md.LastUpdatedMillis(), md.CurrentSnapshot())
	}
	if !md.PartitionSpec().IsUnpartitioned() || !md.SortOrder().IsUnsorted() {
		t.Errorf("spec %v, order %v; want unpartitioned, unsorted", md.PartitionSpec(), md.SortOrder())
	}
	props := tbl.Properties()
	if props["comment"] != "orders placed" || props["owner"] != "team-sales" {
		t.Errorf("properties %v", props)
	}
	var wantMapping iceberg.NameMapping
	if err := json.Unmarshal(ordersNameMapping(t), &wantMapping); err != nil {
		t.Fatal(err)
	}
	if got := tbl.NameMapping(); got.String() != wantMapping.String() {
		t.Errorf("name mapping %s, want %s", got, wantMapping)
	}
	if tbl.MetadataLocation() == "" {
		t.Error("metadata location empty")
	}

	// A table without snapshots scans to nothing, with no file read; the
	// client picks its file IO by the metadata location's scheme (file://
	// here: s3:// needs iceberg-go's gocloud IO imported).
	local, err := cat.LoadTable(ctx, table.Identifier{"sales", "local"})
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	at, err := local.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if at.NumRows() != 0 {
		t.Errorf("scan: %d rows, want 0", at.NumRows())
	}
	at.Release()

	if _, err := cat.LoadTable(ctx, table.Identifier{"sales", "nope"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("LoadTable of a missing table: %v, want ErrNoSuchTable", err)
	}
	for _, c := range []struct {
		ident table.Identifier
		want  bool
	}{{table.Identifier{"sales", "orders"}, true}, {table.Identifier{"sales", "nope"}, false}} {
		ok, err := cat.CheckTableExists(ctx, c.ident)
		if err != nil || ok != c.want {
			t.Errorf("CheckTableExists(%q) = %v, %v; want %v", c.ident, ok, err, c.want)
		}
	}
	for _, c := range []struct {
		ns   table.Identifier
		want bool
	}{{table.Identifier{"sales"}, true}, {table.Identifier{"hr"}, false}} {
		ok, err := cat.CheckNamespaceExists(ctx, c.ns)
		if err != nil || ok != c.want {
			t.Errorf("CheckNamespaceExists(%q) = %v, %v; want %v", c.ns, ok, err, c.want)
		}
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"new"}, nil); err == nil {
		t.Error("CreateNamespace: no error from a read-only catalog")
	}
}

// The client with delegation gets the vended credentials.
func TestIcebergGoClientVended(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "lake", srv.URL, rest.WithOAuthToken("tok-acme"),
		rest.WithHeaders(map[string]string{"X-Iceberg-Access-Delegation": "vended-credentials"}))
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	if _, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders"}); err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
}

// A warehouse naming another tenant is refused at config.
func TestIcebergGoClientOtherWarehouse(t *testing.T) {
	srv := newServer(t)
	_, err := rest.NewCatalog(context.Background(), "lake", srv.URL, rest.WithOAuthToken("tok-acme"), rest.WithWarehouseLocation("globex"))
	if !errors.Is(err, rest.ErrForbidden) {
		t.Errorf("NewCatalog with globex's warehouse: %v, want ErrForbidden", err)
	}
	_, err = rest.NewCatalog(context.Background(), "lake", srv.URL, rest.WithOAuthToken("nope"))
	if !errors.Is(err, rest.ErrUnauthorized) {
		t.Errorf("NewCatalog with a bad token: %v, want ErrUnauthorized", err)
	}
}
