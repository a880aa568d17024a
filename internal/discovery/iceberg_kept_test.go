package discovery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// A loadTable answer is kept once Table made it, for that state of the
// tenant alone: KeptTable gives it (the same bytes, built or synced) to
// the tenant it is of, nothing for a table never loaded, another tenant's
// name or a table changed since; and the handler answers it, with or
// without the fast path, byte for byte as the slow path does.
func TestIcebergKeptTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	built := catalog.TableRef{Tenant: "acme", Namespace: "ops", Name: "built"}
	synced := catalog.TableRef{Tenant: "acme", Namespace: "ops", Name: "events"}
	spec := catalog.TableSpec{Location: "s3://tenant-data/acme/built/", Schema: schema}
	if _, _, err := e.cat.Register(ctx, built, spec); err != nil {
		t.Fatal(err)
	}
	reg, _, err := e.cat.Register(ctx, synced, catalog.TableSpec{Location: "s3://tenant-data/acme/events/", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	const loc = "s3://tenant-data/lake-metadata/acme/events/v1.metadata.json"
	if err := e.cat.PutIcebergState(ctx, synced, catalog.IcebergState{CreationID: reg.CreationID(), Version: reg.Version(),
		MetadataLocation: loc, Metadata: json.RawMessage(syncedMetadata), SyncedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.register("globex", "ops", "built", wide(1))
	e.publish()
	src, ok := e.svc.Iceberg().(icebergrest.KeptSource)
	if !ok {
		t.Fatal("discovery's Iceberg source keeps no answers")
	}
	srv := e.icebergServer()

	for _, name := range []string{"built", "events"} {
		if _, ok := src.KeptTable("acme", "ops", name); ok {
			t.Fatalf("%s: kept before any load", name)
		}
		tbl, ok, err := src.Table(ctx, "acme", "ops", name)
		if err != nil || !ok {
			t.Fatalf("%s: Table = %v, %v", name, ok, err)
		}
		kept, ok := src.KeptTable("acme", "ops", name)
		if !ok {
			t.Fatalf("%s: not kept after a load", name)
		}
		want, _, err := icebergrest.LoadTableAnswer(tbl.MetadataLocation, tbl.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(kept.Answer, want) || !bytes.Equal(kept.Metadata, tbl.Metadata) || kept.MetadataLocation != tbl.MetadataLocation ||
			kept.Location != tbl.Location || kept.Version != tbl.Version {
			t.Errorf("%s: kept %q at %s (table %s v%d), want %q at %s (table %s v%d)", name, kept.Answer, kept.MetadataLocation, kept.Location, kept.Version,
				want, tbl.MetadataLocation, tbl.Location, tbl.Version)
		}
		// Over HTTP: the kept answer, and the slow path's (vended asked,
		// none configured) the same bytes.
		fast := loadTableBody(t, srv.URL, name, "")
		slow := loadTableBody(t, srv.URL, name, "vended-credentials")
		if !bytes.Equal(fast, want) || !bytes.Equal(slow, want) {
			t.Errorf("%s over HTTP:\nfast %s\nslow %s\nwant %s", name, fast, slow, want)
		}
	}
	if kept, _ := src.KeptTable("acme", "ops", "events"); !bytes.Equal(kept.Metadata, []byte(syncedMetadata)) || kept.MetadataLocation != loc {
		t.Errorf("synced table kept %s at %s, want the metadata file at %s", kept.Metadata, kept.MetadataLocation, loc)
	}
	if _, ok := src.KeptTable("globex", "ops", "built"); ok {
		t.Error("globex's ops.built answered from acme's kept answer")
	}
	if _, ok := src.KeptTable("acme", "ops", "missing"); ok {
		t.Error("a table that does not exist is kept")
	}

	// Changed since: its tenant's state is another, nothing kept for it.
	spec.Description = "changed"
	if _, err := e.cat.Update(ctx, built, spec, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.publish()
	if _, ok := src.KeptTable("acme", "ops", "built"); ok {
		t.Error("an answer of the tenant's previous state is kept")
	}
	tbl, ok, err := src.Table(ctx, "acme", "ops", "built")
	if err != nil || !ok || !bytes.Contains(tbl.Metadata, []byte(`"comment":"changed"`)) {
		t.Errorf("after the update: %s, %v, %v; want the new description", tbl.Metadata, ok, err)
	}
}

// loadTableBody is the body of acme's ops.<name> loadTable, with the
// access delegation header when not empty.
func loadTableBody(t *testing.T, url, name, delegation string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/v1/acme/namespaces/ops/tables/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token(t, "acme"))
	if delegation != "" {
		req.Header.Set("X-Iceberg-Access-Delegation", delegation)
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	body, _ := io.ReadAll(rsp.Body)
	if rsp.StatusCode != http.StatusOK {
		t.Fatalf("loadTable %s: %d %s", name, rsp.StatusCode, body)
	}
	return body
}
