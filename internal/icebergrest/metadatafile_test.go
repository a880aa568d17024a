package icebergrest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/icebergrest"
)

// syncedMetadata is a table's metadata file as lake's sync writes it:
// format version 2, the table's schema, one snapshot, current.
const syncedMetadata = `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1",` +
	`"location":"s3://acme-data/sales/synced","last-sequence-number":1,"last-updated-ms":1765000000123,"last-column-id":2,` +
	`"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"note","required":false,"type":"string"}]}],` +
	`"current-schema-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"default-spec-id":0,"last-partition-id":999,` +
	`"properties":{"owner":"sync"},"current-snapshot-id":7001,` +
	`"snapshots":[{"snapshot-id":7001,"sequence-number":1,"timestamp-ms":1765000000000,` +
	`"manifest-list":"s3://acme-data/lake-metadata/sales/synced/snap-7001.avro","summary":{"operation":"append","added-data-files":"2"},"schema-id":0}],` +
	`"snapshot-log":[{"snapshot-id":7001,"timestamp-ms":1765000000000}],"metadata-log":[],` +
	`"sort-orders":[{"order-id":0,"fields":[]}],"default-sort-order-id":0,` +
	`"refs":{"main":{"snapshot-id":7001,"type":"branch"}}}`

const syncedLocation = "s3://acme-data/lake-metadata/sales/synced/v4.metadata.json"

func syncedServer(tb testing.TB) *httptest.Server {
	tb.Helper()
	src := newFakeSource(tb)
	// The Source's schema is not what is answered: the metadata file is.
	src.tables["acme"]["sales"]["synced"] = icebergrest.Table{Location: "s3://acme-data/sales/synced/", Version: 4,
		Schema: ordersSchema(), MetadataLocation: syncedLocation, Metadata: json.RawMessage(syncedMetadata)}
	// A table with a metadata file and no schema is answered all the same.
	src.tables["acme"]["sales"]["schemaless"] = icebergrest.Table{Location: "s3://acme-data/sales/synced/", Version: 4,
		MetadataLocation: syncedLocation, Metadata: json.RawMessage(syncedMetadata)}
	h, err := icebergrest.New(icebergrest.Options{Source: src, Authenticate: authenticate})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

func TestLoadTableAnswersTheMetadataFile(t *testing.T) {
	t.Parallel()
	srv := syncedServer(t)
	for _, name := range []string{"synced", "schemaless"} {
		status, _, body := call(t, srv, http.MethodGet, "/v1/acme/namespaces/sales/tables/"+name, "tok-acme", nil)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", name, status, body)
		}
		var rsp struct {
			MetadataLocation string          `json:"metadata-location"`
			Metadata         json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(body, &rsp); err != nil {
			t.Fatal(err)
		}
		if rsp.MetadataLocation != syncedLocation {
			t.Errorf("%s: metadata-location %q, want %q", name, rsp.MetadataLocation, syncedLocation)
		}
		if !bytes.Equal(rsp.Metadata, []byte(syncedMetadata)) {
			t.Errorf("%s: metadata\n%s\nwant verbatim\n%s", name, rsp.Metadata, syncedMetadata)
		}
	}
}

// iceberg-go's client parses the metadata file and finds its snapshot
// current.
func TestIcebergGoLoadsASyncedTable(t *testing.T) {
	t.Parallel()
	srv := syncedServer(t)
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "lake", srv.URL, rest.WithOAuthToken("tok-acme"), rest.WithWarehouseLocation("acme"))
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	tbl, err := cat.LoadTable(ctx, table.Identifier{"sales", "synced"})
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.SnapshotID != 7001 || snap.ManifestList != "s3://acme-data/lake-metadata/sales/synced/snap-7001.avro" {
		t.Fatalf("current snapshot %+v, want 7001 with its manifest list", snap)
	}
	if got := tbl.MetadataLocation(); got != syncedLocation {
		t.Errorf("metadata location %q, want %q", got, syncedLocation)
	}
	if f, ok := tbl.Schema().FindFieldByName("note"); !ok || f.ID != 2 {
		t.Errorf("schema %s: want the metadata file's (note, id 2)", tbl.Schema())
	}
}
