package registerapi_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/wire"
)

// GET /v1/tenants/{tenant}/dropped lists the tenant's drops in retention,
// newest first, with who dropped each and the creation id undrop takes;
// another tenant's list holds none of them.
func TestDroppedThroughTheAPI(t *testing.T) {
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(func(r *http.Request) string { return r.Header.Get("X-Caller") })})
	for _, name := range []string{"orders", "returns"} {
		if r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": name, "location": "s3://lake/" + name + "/", "schema": ipcB64(catalogtest.WideSchema(1, 2))})); r.status != http.StatusCreated {
			t.Fatalf("register %s: %d %s", name, r.status, r.body)
		}
	}
	if r := do(t, h, "DELETE", base+"/orders", "", nil, "X-Caller", "alice"); r.status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	time.Sleep(2 * time.Millisecond) // the two drops' times apart
	if r := do(t, h, "DELETE", base+"/returns", "", nil, "X-Caller", "bob"); r.status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	r := do(t, h, "GET", "/v1/tenants/acme/dropped", "", nil)
	var page wire.DroppedPage
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != http.StatusOK || len(page.Dropped) != 2 || page.Tenant != "acme" || page.Total != 2 {
		t.Fatalf("dropped: %d %s", r.status, r.body)
	}
	if d := page.Dropped[0]; d.Table != "returns" || d.DroppedBy != "bob" || d.Version != 2 || len(d.CreationID) != 16 || !d.ExpiresAt.After(d.DroppedAt) {
		t.Fatalf("newest drop %+v, want returns, by bob, at version 2", d)
	}
	if d := page.Dropped[1]; d.Table != "orders" || d.DroppedBy != "alice" {
		t.Fatalf("older drop %+v, want orders by alice", d)
	}
	r = do(t, h, "POST", base+"/orders/undrop", "application/json", body(t, map[string]any{"creation_id": page.Dropped[1].CreationID}))
	if r.status != http.StatusOK {
		t.Fatalf("undrop of the listed creation id: %d %s", r.status, r.body)
	}
	if r := do(t, h, "GET", "/v1/tenants/globex/dropped", "", nil); r.status != http.StatusOK || string(r.body) != `{"tenant":"globex","total":0,"dropped":[]}`+"\n" {
		t.Fatalf("globex's dropped: %d %s", r.status, r.body)
	}
	if r := do(t, h, "GET", "/v1/tenants/ac*/dropped", "", nil); r.status != http.StatusBadRequest {
		t.Fatalf("an invalid tenant: %d %s, want 400", r.status, r.body)
	}
}

// SnapshotDropped reads the published snapshot on a real S3-protocol
// server (versitygw): the manifest and the asked tenant's segment alone,
// its tombstones in retention newest first; none for a tenant the
// snapshot lacks or before any snapshot; a segment that does not match its
// address is an error, never a list.
func TestSnapshotDropped(t *testing.T) {
	srv := testenv.SharedS3(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := now
	st := memstore.New(memstore.Options{})
	cat := catalog.New(st, catalog.Options{Now: func() time.Time { return clock }, TombstoneRetention: 48 * time.Hour})
	for _, ref := range []catalog.TableRef{{Tenant: "acme", Namespace: "sales", Name: "orders"}, {Tenant: "acme", Namespace: "sales", Name: "returns"},
		{Tenant: "globex", Namespace: "finance", Name: "ledger"}} {
		if _, _, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "/x", Schema: catalogtest.WideSchema(1, 2)}); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Hour)
		if err := cat.Drop(catalog.WithCaller(ctx, "arn:aws:iam::1:user/"+ref.Name), ref); err != nil {
			t.Fatal(err)
		}
	}
	blobs, err := blobstore.NewS3(srv.Client(), srv.NewBucket(t), "snapshots/catalog.lakesnap", 0)
	if err != nil {
		t.Fatal(err)
	}
	list := registerapi.SnapshotDropped(blobs, func() time.Time { return now.Add(49 * time.Hour) })
	if ds, err := list(ctx, "acme"); err != nil || len(ds) != 0 {
		t.Fatalf("before any snapshot: %v, %v; want none", ds, err)
	}
	built, err := snapshot.Build(ctx, st, snapshot.BuildOptions{Generation: 1, CreatedAt: clock})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range built.Written.Entries {
		if err := blobs.PutSegment(ctx, hex.EncodeToString(e.Address[:]), built.Written.Segments[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := blobs.Put(ctx, built.Written.Manifest, blobstore.Condition{}); err != nil {
		t.Fatal(err)
	}
	// At 49 h, orders' retention (dropped at 0 h, 48 h) has ended.
	ds, err := list(ctx, "acme")
	if err != nil || len(ds) != 1 || ds[0].Table != "returns" || ds[0].DroppedBy != "arn:aws:iam::1:user/returns" || ds[0].Version != 2 {
		t.Fatalf("acme's dropped from the snapshot: %+v, %v; want returns alone", ds, err)
	}
	if ds, err := list(ctx, "initech"); err != nil || len(ds) != 0 {
		t.Fatalf("a tenant the snapshot lacks: %v, %v", ds, err)
	}
	// acme's segment damaged in place: an error, not a list.
	for i, e := range built.Written.Entries {
		if e.Tenant == "acme" {
			bad := append([]byte{}, built.Written.Segments[i]...)
			bad[len(bad)/2] ^= 1
			if err := blobs.PutSegment(ctx, hex.EncodeToString(e.Address[:]), bad); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ds, err := list(ctx, "acme"); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a damaged segment: %v, %v; want ErrCorrupt", ds, err)
	}
}
