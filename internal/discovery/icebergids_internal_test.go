package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// preparedFor is the prepared state of the authenticated tenant, as a
// request finds it.
func preparedFor(t *testing.T, s *Service, tenant string) *tenantState {
	t.Helper()
	ctx := WithTenant(context.Background(), tenant)
	tenant, v, err := s.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// A prepared tenant exposes each table's creation id and Iceberg field
// ids as the catalog recorded them, published through refresh's scan: a
// new table's, an evolved table's, and none for a legacy table without a
// schema.
func TestPreparedTenantExposesIcebergIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	c := catalog.New(st, catalog.Options{})
	orders := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	events := catalog.TableRef{Tenant: "acme", Namespace: "web", Name: "events"}
	for _, ref := range []catalog.TableRef{orders, events} {
		if _, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "s3://data/acme/" + ref.Name + "/", Schema: catalogtest.WideSchema(5, 3)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Update(ctx, events, catalog.TableSpec{Schema: catalogtest.WideSchema(5, 4)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, catalog.KeyPrefix+"acme/legacy/old", []byte(`{"location":"/old","created_at":"2024-01-01T00:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	built, err := scan.Build(ctx, st, scan.BuildOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ts := preparedFor(t, serveBlob(t, built.Written, slog.New(slog.DiscardHandler)), "acme")

	for _, ref := range []catalog.TableRef{orders, events} {
		reg, err := c.Get(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := reg.FieldIDs()
		i, ok := ts.find(ref.Namespace, ref.Name)
		if !ok {
			t.Fatalf("%s: not found", ref)
		}
		if got := ts.creationID(i); got != reg.CreationID() || got == "" {
			t.Errorf("%s: creation id %q, want %q", ref, got, reg.CreationID())
		}
		ids, last := ts.fieldIDs(i)
		if !slices.Equal(ids, want.IDs) || last != want.LastColumnID || len(ids) == 0 {
			t.Errorf("%s: field ids %v (last %d), want %v (last %d)", ref, ids, last, want.IDs, want.LastColumnID)
		}
		ids[0] = -1 // the caller's own copy
		if again, _ := ts.fieldIDs(i); !slices.Equal(again, want.IDs) {
			t.Errorf("%s: field ids after the caller changed its copy: %v, want %v", ref, again, want.IDs)
		}
	}
	// Three fields, the third a list (four paths), and one added.
	i, _ := ts.find("web", "events")
	if ids, last := ts.fieldIDs(i); !slices.Equal(ids, []int32{1, 2, 3, 4, 5}) || last != 5 {
		t.Errorf("events after adding a field: field ids %v (last %d), want [1 2 3 4 5] (last 5)", ids, last)
	}
	i, ok := ts.find("legacy", "old")
	if !ok {
		t.Fatal("legacy.old: not found")
	}
	if id := ts.creationID(i); id != "" {
		t.Errorf("legacy.old: creation id %q, want none", id)
	}
	if ids, last := ts.fieldIDs(i); ids != nil || last != 0 {
		t.Errorf("legacy.old: field ids %v (last %d), want none", ids, last)
	}
}

// A segment before format version 8 (pkg/snapshot's version 7 fixture)
// prepares with no creation ids or field ids; the version 8 fixture's
// acme has them for each table.
func TestFixtureSegmentsIcebergIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		withIDs bool
	}{{"v4.lakesnap", false}, {"v7.lakesnap", false}, {"v8.lakesnap", true}} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("..", "..", "pkg", "snapshot", "testdata", tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			r, err := snapshot.Open(b, snapshot.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			seg, err := r.Tenant(context.Background(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(seg.Release)
			ts, err := prepareTenant(seg, 1<<20, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ts.n {
				id := ts.creationID(i)
				ids, last := ts.fieldIDs(i)
				if got := id != "" && len(ids) > 0 && last > 0; got != tc.withIDs {
					t.Errorf("row %d: creation id %q, field ids %v (last %d); want ids %v", i, id, ids, last, tc.withIDs)
				}
			}
		})
	}
}

// The creation ids and field ids are counted in what a prepared tenant is
// charged in the cache.
func TestIcebergIDsCountInThePreparedSize(t *testing.T) {
	t.Parallel()
	const tables = 200
	prepare := func(withIDs bool) int64 {
		t.Helper()
		w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 1, CreatedAt: time.Unix(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]snapshot.Table, tables)
		for i := range rows {
			rows[i] = snapshot.Table{Namespace: "sales", Name: fmt.Sprintf("t%03d", i), TableType: "TABLE", Location: "s3://data/acme/t/"}
			if withIDs {
				rows[i].CreationID = fmt.Sprintf("%016x", i)
				rows[i].FieldIDs = make([]int32, 20)
				for j := range rows[i].FieldIDs {
					rows[i].FieldIDs[j] = int32(j + 1)
				}
				rows[i].LastColumnID = 20
			}
		}
		if err := w.AddTenant("acme", rows, nil); err != nil {
			t.Fatal(err)
		}
		written, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		b, err := written.Blob()
		if err != nil {
			t.Fatal(err)
		}
		r, err := snapshot.Open(b, snapshot.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seg, err := r.Tenant(context.Background(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(seg.Release)
		ts, err := prepareTenant(seg, 1<<20, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		return ts.bytes
	}
	// Each row: 16 bytes of creation id, 22 of encoded ids; less the
	// validity bitmap of field_ids all null, and padding.
	without, with := prepare(false), prepare(true)
	if want := int64(tables*(16+22) - 64); with-without < want {
		t.Fatalf("prepared with ids: %d bytes, without: %d; want at least %d more", with, without, want)
	}
}
