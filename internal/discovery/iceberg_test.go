package discovery_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	iceberg "github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// icebergServer serves the env's service over Iceberg REST with bearer
// tokens of the test secret.
func (e *env) icebergServer() *httptest.Server {
	e.t.Helper()
	v, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		e.t.Fatal(err)
	}
	h, err := icebergrest.New(icebergrest.Options{Source: e.svc.Iceberg(), Authenticate: func(r *http.Request) (string, error) {
		tok, _ := auth.BearerToken(r.Header.Get("Authorization"))
		return v.Tenant(tok)
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	return srv
}

func icebergCatalog(t *testing.T, url, tenant string) *rest.Catalog {
	t.Helper()
	cat, err := rest.NewCatalog(context.Background(), "lake", url, rest.WithOAuthToken(token(t, tenant)), rest.WithWarehouseLocation(tenant))
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	return cat
}

// iceberg-go's REST client finds a tenant's tables in discovery's memory:
// namespaces, tables, and a loaded table whose schema carries the field ids
// the catalog recorded (kept across an update that adds a field), its
// stable table-uuid, description and name mapping. A table whose column
// Iceberg cannot represent is listed and refused on load naming the column;
// another tenant's catalog is out of reach.
func TestIcebergRESTFromMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	ctx := context.Background()
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	v1 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "total", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	if _, _, err := e.cat.Register(ctx, ref, catalog.TableSpec{Location: "s3://tenant-data/acme/orders/", Schema: v1, Description: "one row per order"}); err != nil {
		t.Fatal(err)
	}
	v2 := arrow.NewSchema([]arrow.Field{{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "total", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	if _, err := e.cat.Update(ctx, ref, catalog.TableSpec{Location: "s3://tenant-data/acme/orders/", Schema: v2}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	half := arrow.NewSchema([]arrow.Field{{Name: "h", Type: arrow.FixedWidthTypes.Float16}}, nil)
	if _, _, err := e.cat.Register(ctx, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "halves"}, catalog.TableSpec{Location: "s3://tenant-data/acme/halves/", Schema: half}); err != nil {
		t.Fatal(err)
	}
	e.register("globex", "secret", "plans", wide(1))
	e.publish()
	srv := e.icebergServer()
	cat := icebergCatalog(t, srv.URL, "acme")

	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil || !slices.EqualFunc(nss, []table.Identifier{{"sales"}}, slices.Equal) {
		t.Fatalf("namespaces %v, %v; want [sales]", nss, err)
	}
	var names []string
	for id, err := range cat.ListTables(ctx, table.Identifier{"sales"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, id[1])
	}
	if !slices.Equal(names, []string{"halves", "orders"}) {
		t.Fatalf("tables %v, want [halves orders]", names)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := e.cat.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := reg.FieldIDs()
	if !slices.Equal(ids.IDs, []int32{3, 1, 2}) || ids.LastColumnID != 3 {
		t.Fatalf("catalog's ids %+v, want note=3 kept after id and total", ids)
	}
	got := tbl.Schema()
	for name, id := range map[string]int{"id": 1, "total": 2, "note": 3} {
		f, ok := got.FindFieldByName(name)
		if !ok || f.ID != id {
			t.Errorf("field %s: %+v, want id %d", name, f, id)
		}
	}
	if f, _ := got.FindFieldByName("id"); !f.Required || !f.Type.Equals(iceberg.PrimitiveTypes.Int64) {
		t.Errorf("id field %+v, want a required long", f)
	}
	md := tbl.Metadata()
	if md.LastColumnID() != 3 || md.Location() != "s3://tenant-data/acme/orders/" || md.Properties()["comment"] != "one row per order" ||
		!strings.Contains(md.Properties()["schema.name-mapping.default"], `"note"`) {
		t.Errorf("metadata: last column %d, location %s, properties %v", md.LastColumnID(), md.Location(), md.Properties())
	}
	before := e.svc.CacheStats().Kinds["answer"]
	again, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders"})
	if err != nil || again.Metadata().TableUUID() != md.TableUUID() || !again.Schema().Equals(got) {
		t.Fatalf("the second load differs: uuid %v vs %v (%v)", again.Metadata().TableUUID(), md.TableUUID(), err)
	}
	// The second load is the kept answer: nothing is decoded or built again.
	if after := e.svc.CacheStats().Kinds["answer"]; after.Hits != before.Hits+1 || after.Misses != before.Misses {
		t.Fatalf("answer cache %+v → %+v, want one hit and no miss", before, after)
	}

	_, err = cat.LoadTable(ctx, table.Identifier{"sales", "halves"})
	if err == nil || !strings.Contains(err.Error(), `column "h"`) || !strings.Contains(err.Error(), "float16") {
		t.Fatalf("load of a float16 table: %v, want a refusal naming the column and its type", err)
	}

	// globex cannot reach acme's catalog, and acme cannot reach globex's.
	if _, err := cat.LoadTable(ctx, table.Identifier{"secret", "plans"}); !errors.Is(err, icecatalog.ErrNoSuchTable) && !errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		t.Fatalf("acme loading globex's table: %v, want no such namespace", err)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/acme/namespaces", nil)
	req.Header.Set("Authorization", "Bearer "+token(t, "globex"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("globex listing acme's namespaces: %d, want 403", resp.StatusCode)
	}
}
