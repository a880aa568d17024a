package icebergsync_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// readMetadata parses the metadata file v<version>.metadata.json under dir.
func readMetadata(tb testing.TB, dir string, version int) table.Metadata {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(metaPrefix), "v"+strconv.Itoa(version)+".metadata.json"))
	if err != nil {
		tb.Fatal(err)
	}
	md, err := table.ParseMetadataBytes(b)
	if err != nil {
		tb.Fatal(err)
	}
	return md
}

func schemaIDs(md table.Metadata) []int {
	var ids []int
	for _, sc := range md.Schemas() {
		ids = append(ids, sc.ID)
	}
	return ids
}

func fieldIDs(sc *iceberg.Schema) []int {
	var ids []int
	for _, f := range sc.Fields() {
		ids = append(ids, f.ID)
	}
	return ids
}

// A change of the registration's schema with the same files writes a new
// metadata file: the kept versions' schemas listed, the new one current,
// the snapshot as it was taken (its schema id the old one). The next
// Sync with nothing changed writes nothing; the next that finds a file
// takes its snapshot under the new schema.
func TestSyncSchemaAloneWritesMetadata(t *testing.T) {
	ctx := context.Background()
	dataDir, metaDir := t.TempDir(), t.TempDir()
	writeFile(t, dataDir, "a.parquet", parquetBytes(t, rowsOf([]int64{1, 2}, "a"), false, true))
	data, meta := icebergsync.NewLocalFiles(dataDir), icebergsync.NewLocalMetaStore(metaDir)
	now := clock()

	// Version 1 of the registration: id, name.
	ids1 := icebergschema.Assign(nil, icebergschema.FieldIDs{}, tableSchema)
	tbl := testTable("file://" + dataDir)
	tbl.Schema, tbl.IDs, tbl.SchemaID = tableSchema, ids1, 1
	r1, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Changed || r1.State.Version != 1 {
		t.Fatalf("v1: got changed %v version %d, want true 1", r1.Changed, r1.State.Version)
	}

	// Version 2: a column added, the files as they were.
	v2 := arrow.NewSchema(append(slices.Clone(tableSchema.Fields()), arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), nil)
	ids2 := icebergschema.Assign(tableSchema, ids1, v2)
	earlier, err := icebergschema.ToIceberg(tableSchema, ids1, 1)
	if err != nil {
		t.Fatal(err)
	}
	tbl.Schema, tbl.IDs, tbl.SchemaID, tbl.Earlier = v2, ids2, 2, []*iceberg.Schema{earlier}
	files := count(t, metaDir)
	r2, err := icebergsync.Sync(ctx, tbl, r1.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Changed || !r2.SchemaChanged || r2.State.Version != 2 || r2.MetadataLocation != r2.State.MetadataLocation || r2.SnapshotID != r1.SnapshotID || r2.Added != 0 || r2.Files != 1 {
		t.Fatalf("v2: got changed %v schema changed %v version %d snapshot %d (v1's %d) added %d files %d, want false true 2, v1's snapshot, 0 1",
			r2.Changed, r2.SchemaChanged, r2.State.Version, r2.SnapshotID, r1.SnapshotID, r2.Added, r2.Files)
	}
	if got := count(t, metaDir) - files; got != 1 {
		t.Errorf("v2 wrote %d objects, want 1 (the metadata file)", got)
	}
	md := readMetadata(t, metaDir, 2)
	if got, want := schemaIDs(md), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("schemas %v, want %v", got, want)
	}
	if got := md.CurrentSchema().ID; got != 2 {
		t.Errorf("current-schema-id %d, want 2", got)
	}
	if got, want := fieldIDs(md.CurrentSchema()), []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("current schema's field ids %v, want %v", got, want)
	}
	snap := md.CurrentSnapshot()
	if snap == nil || snap.SnapshotID != r1.SnapshotID || snap.SchemaID == nil || *snap.SchemaID != 1 {
		t.Errorf("current snapshot %+v, want v1's (%d) with schema id 1", snap, r1.SnapshotID)
	}
	if md.LastColumnID() != 3 {
		t.Errorf("last-column-id %d, want 3", md.LastColumnID())
	}
	want := []row{{1, "a1"}, {2, "a2"}}
	if got := scan(t, r2.MetadataLocation, iceio.LocalFS{}); !slices.Equal(got, want) {
		t.Fatalf("scan after the schema change: got %v, want %v", got, want)
	}

	// Nothing changed: nothing written.
	files = count(t, metaDir)
	r3, err := icebergsync.Sync(ctx, tbl, r2.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Changed || r3.SchemaChanged || r3.MetadataLocation != r2.MetadataLocation || r3.FooterBytes != 0 || count(t, metaDir) != files {
		t.Errorf("unchanged: got changed %v at %s, %d footer bytes, %d objects written", r3.Changed, r3.MetadataLocation, r3.FooterBytes, count(t, metaDir)-files)
	}

	// A file added: a snapshot under schema 2.
	writeFile(t, dataDir, "b.parquet", parquetBytes(t, rowsOf([]int64{3}, "b"), false, true))
	r4, err := icebergsync.Sync(ctx, tbl, r3.State, data, meta, metaPrefix, icebergsync.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !r4.Changed || r4.Added != 1 || r4.State.Version != 3 {
		t.Fatalf("v3: got changed %v added %d version %d, want true 1 3", r4.Changed, r4.Added, r4.State.Version)
	}
	md = readMetadata(t, metaDir, 3)
	if got, want := schemaIDs(md), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("v3 schemas %v, want %v", got, want)
	}
	if snap := md.CurrentSnapshot(); snap == nil || snap.SchemaID == nil || *snap.SchemaID != 2 {
		t.Errorf("v3 snapshot %+v, want schema id 2", snap)
	}
}

// The first metadata file of a table lists its earlier kept versions'
// schemas.
func TestSyncFirstListsEarlierSchemas(t *testing.T) {
	ctx := context.Background()
	dataDir, metaDir := t.TempDir(), t.TempDir()
	writeFile(t, dataDir, "a.parquet", parquetBytes(t, rowsOf([]int64{1}, "a"), false, true))
	v1 := arrow.NewSchema(tableSchema.Fields()[:1], nil)
	ids1 := icebergschema.Assign(nil, icebergschema.FieldIDs{}, v1)
	earlier, err := icebergschema.ToIceberg(v1, ids1, 1)
	if err != nil {
		t.Fatal(err)
	}
	tbl := testTable("file://" + dataDir)
	tbl.IDs, tbl.SchemaID, tbl.Earlier = icebergschema.Assign(v1, ids1, tableSchema), 3, []*iceberg.Schema{earlier, earlier}
	r, err := icebergsync.Sync(ctx, tbl, icebergsync.State{}, icebergsync.NewLocalFiles(dataDir), icebergsync.NewLocalMetaStore(metaDir), metaPrefix, icebergsync.Limits{}, clock())
	if err != nil {
		t.Fatal(err)
	}
	md := readMetadata(t, metaDir, r.State.Version)
	if got, want := schemaIDs(md), []int{1, 3}; !slices.Equal(got, want) {
		t.Errorf("schemas %v, want %v", got, want)
	}
	if got := md.CurrentSchema().ID; got != 3 {
		t.Errorf("current-schema-id %d, want 3", got)
	}
	if snap := md.CurrentSnapshot(); snap == nil || snap.SchemaID == nil || *snap.SchemaID != 3 {
		t.Errorf("snapshot %+v, want schema id 3", snap)
	}
}
