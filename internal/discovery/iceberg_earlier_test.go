package discovery_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/tablesync"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// A table lake never synced is loaded (iceberg-go's REST client) with the
// kept versions as its schema list, from the snapshot in memory: v1 and
// v2 (a column added) under their versions as schema ids, v2 current,
// the field kept across both under one id, the added one under a new id;
// the list is the one a sync writes (tablesync.EarlierSchemas, then the
// current schema). A version that changed the description alone lists no
// schema of its own (Iceberg lists a schema once: current-schema-id is
// the version that registered it), and a table of one version lists one.
func TestIcebergNeverSyncedTableListsItsKeptVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	ctx := context.Background()
	ref := catalog.TableRef{Tenant: "acme", Namespace: "ops", Name: "events"}
	v1 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	v2 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "at", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	spec := catalog.TableSpec{Location: "s3://tenant-data/acme/events/", Schema: v1}
	if _, _, err := e.cat.Register(ctx, ref, spec); err != nil {
		t.Fatal(err)
	}
	spec.Schema = v2
	if _, err := e.cat.Update(ctx, ref, spec, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.register("acme", "ops", "single", v1)
	e.publish()
	srv := e.icebergServer()
	cat := icebergCatalog(t, srv.URL, "acme")

	tbl, err := cat.LoadTable(ctx, table.Identifier{"ops", "events"})
	if err != nil {
		t.Fatal(err)
	}
	md := tbl.Metadata()
	schemas := md.Schemas()
	if len(schemas) != 2 || schemas[0].ID != 1 || schemas[1].ID != 2 || md.CurrentSchema().ID != 2 {
		var ids []int
		for _, sc := range schemas {
			ids = append(ids, sc.ID)
		}
		t.Fatalf("schemas %v, current %d; want [1 2], current 2", ids, md.CurrentSchema().ID)
	}
	id1, ok1 := schemas[0].FindFieldByName("id")
	id2, ok2 := schemas[1].FindFieldByName("id")
	at, ok3 := schemas[1].FindFieldByName("at")
	if !ok1 || !ok2 || !ok3 || id1.ID != id2.ID || at.ID == id1.ID || schemas[0].NumFields() != 1 {
		t.Fatalf("v1 %v, v2 %v: want id under one field id in both, at under a new one, v1 of one field", schemas[0], schemas[1])
	}
	reg, err := e.cat.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	synced, err := tablesync.EarlierSchemas(ctx, e.cat, ref, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || !synced[0].Equals(schemas[0]) || synced[0].ID != schemas[0].ID {
		t.Fatalf("the earlier schemas a sync lists %v; discovery lists %v", synced, schemas[:1])
	}

	// A description alone: v3 of v2's schema, listed once under 2.
	spec.Description = "clicks"
	if _, err := e.cat.Update(ctx, ref, spec, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.publish()
	tbl, err = cat.LoadTable(ctx, table.Identifier{"ops", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if md := tbl.Metadata(); len(md.Schemas()) != 2 || md.CurrentSchema().ID != 2 || md.Properties()["comment"] != "clicks" {
		t.Fatalf("after a description update: %d schemas, current %d, comment %q; want 2, current 2, clicks",
			len(md.Schemas()), md.CurrentSchema().ID, md.Properties()["comment"])
	}

	one, err := cat.LoadTable(ctx, table.Identifier{"ops", "single"})
	if err != nil {
		t.Fatal(err)
	}
	if got := one.Metadata().Schemas(); len(got) != 1 || !slices.ContainsFunc(got, func(s *iceberg.Schema) bool { return s.ID == 1 }) {
		t.Fatalf("a table of one version: schemas %v, want its one (id 1)", got)
	}
}
