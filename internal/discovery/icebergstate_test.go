package discovery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// syncedMetadata is a metadata file as lake's sync writes it: format
// version 2, one snapshot, current.
const syncedMetadata = `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1",` +
	`"location":"s3://tenant-data/acme/events","last-sequence-number":1,"last-updated-ms":1765000000123,"last-column-id":1,` +
	`"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}],` +
	`"current-schema-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"default-spec-id":0,"last-partition-id":999,` +
	`"properties":{},"current-snapshot-id":42,` +
	`"snapshots":[{"snapshot-id":42,"sequence-number":1,"timestamp-ms":1765000000000,` +
	`"manifest-list":"s3://tenant-data/lake-metadata/acme/events/snap-42.avro","summary":{"operation":"append"},"schema-id":0}],` +
	`"snapshot-log":[{"snapshot-id":42,"timestamp-ms":1765000000000}],"metadata-log":[],` +
	`"sort-orders":[{"order-id":0,"fields":[]}],"default-sort-order-id":0,` +
	`"refs":{"main":{"snapshot-id":42,"type":"branch"}}}`

// loadTableRaw answers GET …/tables/{name} of acme's events as the
// metadata-location and metadata it holds.
func loadTableRaw(t *testing.T, url, name string) (string, json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/v1/acme/namespaces/ops/tables/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token(t, "acme"))
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	body, _ := io.ReadAll(rsp.Body)
	if rsp.StatusCode != http.StatusOK {
		t.Fatalf("loadTable %s: %d %s", name, rsp.StatusCode, body)
	}
	var out struct {
		MetadataLocation string          `json:"metadata-location"`
		Metadata         json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out.MetadataLocation, out.Metadata
}

// A table's Iceberg state, written through the catalog and published by a
// scan, is what loadTable answers (its metadata file verbatim, which
// iceberg-go's client loads with its snapshot current) while the table is
// at the version it was synced against; after an update it is not served
// (metadata built from the new registration, without snapshots) until the
// next sync.
func TestIcebergStateReachesLoadTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	ctx := context.Background()
	ref := catalog.TableRef{Tenant: "acme", Namespace: "ops", Name: "events"}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	spec := catalog.TableSpec{Location: "s3://tenant-data/acme/events/", Schema: schema}
	reg, _, err := e.cat.Register(ctx, ref, spec)
	if err != nil {
		t.Fatal(err)
	}
	const loc = "s3://tenant-data/lake-metadata/acme/events/v1.metadata.json"
	if err := e.cat.PutIcebergState(ctx, ref, catalog.IcebergState{CreationID: reg.CreationID(), Version: reg.Version(),
		MetadataLocation: loc, Metadata: json.RawMessage(syncedMetadata), SyncedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.publish()
	srv := e.icebergServer()

	gotLoc, md := loadTableRaw(t, srv.URL, "events")
	if gotLoc != loc || !bytes.Equal(md, []byte(syncedMetadata)) {
		t.Fatalf("loadTable: metadata-location %q, metadata\n%s\nwant %q and the metadata file verbatim", gotLoc, md, loc)
	}
	tbl, err := icebergCatalog(t, srv.URL, "acme").LoadTable(ctx, table.Identifier{"ops", "events"})
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	if snap := tbl.CurrentSnapshot(); snap == nil || snap.SnapshotID != 42 {
		t.Fatalf("current snapshot %+v, want 42", snap)
	}

	// Updated since the sync: the state is of an older version.
	spec.Description = "changed"
	if _, err := e.cat.Update(ctx, ref, spec, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.publish()
	gotLoc, md = loadTableRaw(t, srv.URL, "events")
	if gotLoc == loc || !strings.HasSuffix(gotLoc, ".lake.metadata.json") || bytes.Contains(md, []byte(`"current-snapshot-id":42`)) {
		t.Fatalf("after an update: metadata-location %q, metadata %s; want metadata built from the registration", gotLoc, md)
	}
	tbl, err = icebergCatalog(t, srv.URL, "acme").LoadTable(ctx, table.Identifier{"ops", "events"})
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	if snap := tbl.CurrentSnapshot(); snap != nil {
		t.Fatalf("after an update: current snapshot %+v, want none", snap)
	}
}
