package refresh_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// A table registered at v1 and updated to v2 (a column added) is
// published with v1 as its earlier version, its schema and field ids as
// the catalog recorded them: through a stream batch of its key (Apply)
// and through a full scan (a scheduled run).
func TestPublishedRowsCarryTheirEarlierVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _, p, blobs, clk := counted(t)
	ref := catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: "events"}
	v1 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	v2 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "at", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	first, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "/d/events", Schema: v1})
	if err != nil {
		t.Fatal(err)
	}
	run(t, p)
	if got := publishedRow(t, blobs, ref); got.Earlier != nil {
		t.Fatalf("v1 published with earlier versions %+v, want none", got.Earlier)
	}
	if _, err := c.Update(ctx, ref, catalog.TableSpec{Location: "/d/events", Schema: v2}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ids, _ := first.FieldIDs()
	check := func(what string) {
		t.Helper()
		got := publishedRow(t, blobs, ref)
		if got.Version != 2 || len(got.Earlier) != 1 {
			t.Fatalf("%s: version %d with earlier versions %+v, want 2 with v1", what, got.Version, got.Earlier)
		}
		e := got.Earlier[0]
		if e.Version != 1 || !bytes.Equal(e.SchemaIPC, first.SchemaIPC()) || len(e.FieldIDs) != 1 || e.FieldIDs[0] != ids.IDs[0] ||
			e.LastColumnID != ids.LastColumnID {
			t.Fatalf("%s: earlier version %+v, want v1's schema and ids %v (last %d)", what, e, ids.IDs, ids.LastColumnID)
		}
		if got.FieldIDs[0] != e.FieldIDs[0] {
			t.Fatalf("%s: id keeps field id %d in v1 and %d in v2", what, e.FieldIDs[0], got.FieldIDs[0])
		}
	}
	clk.t = clk.t.Add(time.Second)
	res, err := p.Apply(ctx, []string{catalog.KeyPrefix + ref.String(), catalog.ChangesKey})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Incremental || res.Outcome != refresh.Published {
		t.Fatalf("apply = %+v; want incremental, published", res)
	}
	check("applied")
	clk.t = clk.t.Add(48 * time.Hour) // past the reconciliation: a full scan
	if res := run(t, p); !res.Scanned {
		t.Fatalf("run after the reconciliation interval = %+v, want a full scan", res)
	}
	check("scanned")
}

// publishedRow is a table's row in the current blob.
func publishedRow(t *testing.T, blobs blobstore.Store, ref catalog.TableRef) snapshot.Table {
	t.Helper()
	cur, err := blobs.Get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	seg, err := load(t, blobs, cur.Data).Tenant(context.Background(), ref.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Release()
	for i := range seg.NumTables() {
		if seg.Tables.Namespace.Value(i) == ref.Namespace && seg.Tables.Name.Value(i) == ref.Name {
			return seg.Table(i)
		}
	}
	t.Fatalf("%s: no row in the published blob", ref)
	return snapshot.Table{}
}
