package tablesync_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/tablesync"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

var schema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

func writeFile(t *testing.T, path string, ids ...int64) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A sync records the table's Iceberg state in the catalog once: a sync that
// finds nothing new writes nothing (no state, no change counter: refresh
// stays idle); one after a schema update with the same files writes a new
// metadata file listing the kept versions' schemas, the new one current;
// one after another registration change records the same metadata for the
// new version.
func TestSyncRecordsOnlyChanges(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	cat := catalog.New(st, catalog.Options{})
	root := t.TempDir()
	dir := filepath.Join(root, "acme", "orders")
	writeFile(t, filepath.Join(dir, "part-0.parquet"), 1, 2)
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	reg, _, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "file://" + dir + "/", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s := &tablesync.Syncer{Catalog: cat, Door: &vending.Door{DataRoot: root}, Meta: icebergsync.NewLocalMetaStore(t.TempDir()),
		Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	res, err := s.Sync(ctx, "ops", ref, reg)
	if err != nil || !res.Changed || res.Files != 1 || res.Records != 2 {
		t.Fatalf("first sync = %+v, %v", res, err)
	}
	first, ok, err := cat.IcebergState(ctx, ref)
	if err != nil || !ok || first.Version != reg.Version() {
		t.Fatalf("state after the first sync = %+v, %v, %v", first, ok, err)
	}
	changes, _ := catalog.ReadChanges(ctx, st)
	if res, err := s.Sync(ctx, "ops", ref, reg); err != nil || res.Changed {
		t.Fatalf("idle sync = %+v, %v", res, err)
	}
	if again, _, _ := cat.IcebergState(ctx, ref); !again.SyncedAt.Equal(first.SyncedAt) {
		t.Fatalf("an idle sync rewrote the state: synced at %v, was %v", again.SyncedAt, first.SyncedAt)
	}
	if n, _ := catalog.ReadChanges(ctx, st); n != changes {
		t.Fatalf("an idle sync moved the change counter %d → %d", changes, n)
	}
	wider := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	reg2, err := cat.Update(ctx, ref, catalog.TableSpec{Location: "file://" + dir + "/", Schema: wider}, catalog.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err = s.Sync(ctx, "ops", ref, reg2)
	if err != nil || res.Changed || res.Files != 1 {
		t.Fatalf("sync after a schema update alone = %+v, %v", res, err)
	}
	after, _, _ := cat.IcebergState(ctx, ref)
	if after.Version != reg2.Version() || after.MetadataLocation == first.MetadataLocation || after.MetadataLocation != res.MetadataLocation {
		t.Fatalf("state after the update's sync = version %d at %s, want version %d at a new file %s", after.Version, after.MetadataLocation, reg2.Version(), res.MetadataLocation)
	}
	md, err := table.ParseMetadataBytes(after.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, sc := range md.Schemas() {
		ids = append(ids, sc.ID)
	}
	if want := []int{int(reg.Version()), int(reg2.Version())}; !slices.Equal(ids, want) || md.CurrentSchema().ID != want[1] {
		t.Errorf("schemas %v current %d, want %v current %d", ids, md.CurrentSchema().ID, want, want[1])
	}
	if got := len(md.CurrentSchema().Fields()); got != 2 {
		t.Errorf("current schema has %d fields, want 2", got)
	}

	// A description alone: the same metadata, recorded for the new version.
	reg3, err := cat.Update(ctx, ref, catalog.TableSpec{Location: "file://" + dir + "/", Schema: wider, Description: "orders"}, catalog.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Sync(ctx, "ops", ref, reg3); err != nil || res.Changed {
		t.Fatalf("sync after a description update = %+v, %v", res, err)
	}
	if last, _, _ := cat.IcebergState(ctx, ref); last.Version != reg3.Version() || last.MetadataLocation != after.MetadataLocation {
		t.Fatalf("state after the description's sync = version %d at %s, want version %d at %s", last.Version, last.MetadataLocation, reg3.Version(), after.MetadataLocation)
	}
}

// Two syncs of one table at once after a schema update (a write's own and
// a POST …/sync) both succeed: they run one after the other, and one of
// them writes the new metadata file.
func TestConcurrentSyncsOfOneTable(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	cat := catalog.New(st, catalog.Options{})
	root := t.TempDir()
	dir := filepath.Join(root, "acme", "orders")
	writeFile(t, filepath.Join(dir, "part-0.parquet"), 1, 2)
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	reg, _, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "file://" + dir + "/", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	s := &tablesync.Syncer{Catalog: cat, Door: &vending.Door{DataRoot: root}, Meta: icebergsync.NewLocalMetaStore(t.TempDir())}
	if _, err := s.Sync(ctx, "ops", ref, reg); err != nil {
		t.Fatal(err)
	}
	wider := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	reg2, err := cat.Update(ctx, ref, catalog.TableSpec{Location: "file://" + dir + "/", Schema: wider}, catalog.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := s.Sync(ctx, "ops", ref, reg2)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("sync: %v", err)
		}
	}
	got, _, _ := cat.IcebergState(ctx, ref)
	if got.Version != reg2.Version() || !strings.HasSuffix(got.MetadataLocation, "/v2.metadata.json") {
		t.Errorf("state version %d at %s, want %d at …/v2.metadata.json", got.Version, got.MetadataLocation, reg2.Version())
	}
}
