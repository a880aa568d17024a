package discovery_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// dropped runs lake.dropped as ctx's tenant.
func (e *env) dropped(ctx context.Context, body string) (wire.DroppedPage, error) {
	e.t.Helper()
	var page wire.DroppedPage
	stream, err := e.client.Client.DoAction(ctx, &flight.Action{Type: wire.DroppedActionType, Body: []byte(body)})
	if err != nil {
		return page, err
	}
	r, err := stream.Recv()
	if err != nil {
		return page, err
	}
	if err := json.Unmarshal(r.Body, &page); err != nil {
		e.t.Fatalf("result %q: %v", r.Body, err)
	}
	return page, nil
}

// lake.dropped answers the caller's tenant's drops from the snapshot,
// newest first, paged, with who dropped each; no other tenant sees them,
// even one whose name is a pattern of it; bad bodies are
// INVALID_ARGUMENT.
func TestDroppedAction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	for _, tenant := range []string{"acme", "acm_", "globex"} {
		e.register(tenant, "sales", "orders", wide(1))
		e.register(tenant, "sales", "returns", wide(2))
	}
	by := catalog.WithCaller(context.Background(), "arn:aws:iam::1:user/bob")
	for _, name := range []string{"orders", "returns"} {
		if err := e.cat.Drop(by, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	e.publish()
	page, err := e.dropped(as(t, "acme"), `{"limit":10}`)
	if err != nil {
		t.Fatal(err)
	}
	if page.Tenant != "acme" || page.Total != 2 || len(page.Dropped) != 2 {
		t.Fatalf("acme's dropped page %+v", page)
	}
	for _, d := range page.Dropped {
		if d.DroppedBy != "arn:aws:iam::1:user/bob" || d.CreationID == "" || d.Version != 2 || !d.ExpiresAt.After(d.DroppedAt) {
			t.Fatalf("dropped %+v", d)
		}
	}
	if page.Dropped[0].DroppedAt.Before(page.Dropped[1].DroppedAt) {
		t.Fatalf("not newest first: %+v", page.Dropped)
	}
	if p, err := e.dropped(as(t, "acme"), `{"offset":1,"limit":1}`); err != nil || p.Total != 2 || len(p.Dropped) != 1 || p.Dropped[0] != page.Dropped[1] {
		t.Fatalf("second page %+v, %v", p, err)
	}
	for _, other := range []string{"acm_", "globex", "nobody"} {
		if p, err := e.dropped(as(t, other), `{"limit":10}`); err != nil || p.Tenant != other || p.Total != 0 || len(p.Dropped) != 0 {
			t.Fatalf("%s sees dropped %+v (%v), want none", other, p, err)
		}
	}
	for _, body := range []string{``, `{"limit":0}`, `{"limit":10,"namespace":"sales"}`, `{"limit":10,"tenant":"globex"}`, `[]`} {
		if _, err := e.dropped(as(t, "acme"), body); codeOf(err) != codes.InvalidArgument {
			t.Errorf("body %q: %v, want INVALID_ARGUMENT", body, err)
		}
	}
	if _, err := e.dropped(context.Background(), `{"limit":10}`); codeOf(err) != codes.Unauthenticated {
		t.Fatalf("without a token: %v, want UNAUTHENTICATED", err)
	}
}
