package discovery

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// A row's Iceberg state that does not decode is served as none (metadata
// built from the registration) and logged once, however often the table
// is loaded.
func TestInvalidIcebergStateIsServedAsNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ref := catalog.TableRef{Tenant: "acme", Namespace: "ops", Name: "events"}
	reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "s3://tenant-data/acme/events/", Schema: catalogtest.WideSchema(1, 2)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w0, err := scan.WriteRegistrations([]scan.Registered{{Ref: ref, Registration: reg}}, snapshot.WriterOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	b0, err := w0.Blob()
	if err != nil {
		t.Fatal(err)
	}
	r0, err := snapshot.Open(b0, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seg, err := r0.Tenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	row := seg.Table(0)
	seg.Release()
	row.Published = 0
	row.IcebergState = []byte(`{"creation_id":"` + reg.CreationID() + `","version":1,"metadata_location":"s3://x","metadata":{}}`)
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 2, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddTenant("acme", []snapshot.Table{row}, nil); err != nil {
		t.Fatal(err)
	}
	written, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s := serveBlob(t, written, slog.New(slog.NewTextHandler(&logged, nil)))
	src := icebergSource{s}
	for range 3 {
		tbl, ok, err := src.Table(ctx, "acme", "ops", "events")
		if err != nil || !ok {
			t.Fatalf("Table = %v, %v", ok, err)
		}
		// Built from the schema (and kept: the second and third loads are
		// the kept answer), never the state's.
		if !strings.HasSuffix(tbl.MetadataLocation, ".lake.metadata.json") || !bytes.Contains(tbl.Metadata, []byte(`"schemas"`)) {
			t.Fatalf("Table with an invalid state: metadata %q at %q; want the metadata built from the schema", tbl.Metadata, tbl.MetadataLocation)
		}
	}
	if n := strings.Count(logged.String(), "does not decode"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logged.String())
	}
}
