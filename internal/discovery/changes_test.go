package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

func (e *env) changes(ctx context.Context, body string) (wire.ChangePage, error) {
	e.t.Helper()
	var page wire.ChangePage
	stream, err := e.client.Client.DoAction(ctx, &flight.Action{Type: wire.ChangesActionType, Body: []byte(body)})
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

// lake.changes: the caller's tenant's changes in the order they happened
// (each table's latest, each drop), who made each, paged by cursor; a
// cursor past the last change answers none and keeps it; a new change
// after a cursor is the only one after it; no other tenant sees any; bad
// bodies and forged cursors are INVALID_ARGUMENT.
func TestChangesAction(t *testing.T) {
	e := newEnv(t, discovery.Options{})
	alice := catalog.WithCaller(context.Background(), "alice")
	ref := func(tenant, name string) catalog.TableRef {
		return catalog.TableRef{Tenant: tenant, Namespace: "sales", Name: name}
	}
	for _, r := range []catalog.TableRef{ref("acme", "orders"), ref("acme", "returns"), ref("acm_", "orders")} {
		if _, _, err := e.cat.Register(alice, r, catalog.TableSpec{Location: "/x", Schema: wide(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.cat.Update(alice, ref("acme", "orders"), catalog.TableSpec{Schema: wide(2)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.Drop(catalog.WithCaller(context.Background(), "bob"), ref("acme", "returns")); err != nil {
		t.Fatal(err)
	}
	e.publish()
	acme := as(t, "acme")
	page, err := e.changes(acme, `{"limit":10}`)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(len(page.Changes))
	for _, c := range page.Changes {
		got += fmt.Sprintf(" %s:%s.%s@%d by %s", c.Op, c.Namespace, c.Table, c.Version, c.By)
	}
	if want := "2 update:sales.orders@2 by alice drop:sales.returns@2 by bob"; got != want || page.Tenant != "acme" || page.Next != page.Changes[1].Cursor {
		t.Fatalf("changes: %s, want %s (page %+v)", got, want, page)
	}
	first, err := e.changes(acme, `{"limit":1}`)
	if err != nil || len(first.Changes) != 1 || first.Changes[0] != page.Changes[0] {
		t.Fatalf("first page of 1: %+v, %v", first, err)
	}
	second, err := e.changes(acme, fmt.Sprintf(`{"since":%q,"limit":1}`, first.Next))
	if err != nil || len(second.Changes) != 1 || second.Changes[0] != page.Changes[1] {
		t.Fatalf("second page: %+v, %v", second, err)
	}
	end, err := e.changes(acme, fmt.Sprintf(`{"since":%q,"limit":10}`, second.Next))
	if err != nil || len(end.Changes) != 0 || end.Next != second.Next {
		t.Fatalf("past the last change: %+v, %v", end, err)
	}
	if _, _, err := e.cat.Register(alice, ref("acme", "refunds"), catalog.TableSpec{Location: "/x", Schema: wide(3)}); err != nil {
		t.Fatal(err)
	}
	e.publish()
	next, err := e.changes(acme, fmt.Sprintf(`{"since":%q,"limit":10}`, end.Next))
	if err != nil || len(next.Changes) != 1 || next.Changes[0].Table != "refunds" || next.Changes[0].Op != "create" {
		t.Fatalf("after a new change: %+v, %v", next, err)
	}
	if p, err := e.changes(as(t, "globex"), `{"limit":10}`); err != nil || len(p.Changes) != 0 || p.Tenant != "globex" {
		t.Fatalf("globex's feed: %+v, %v", p, err)
	}
	if p, err := e.changes(as(t, "acm_"), `{"limit":10}`); err != nil || len(p.Changes) != 1 || p.Changes[0].Op != "create" {
		t.Fatalf("acm_'s feed: %+v, %v", p, err)
	}
	for _, body := range []string{``, `{"limit":0}`, `{"limit":501}`, `{"limit":1,"since":"!!"}`, `{"limit":1,"since":"AAAA"}`, `{"limit":1,"tenant":"acme"}`} {
		if _, err := e.changes(acme, body); codeOf(err) != codes.InvalidArgument {
			t.Errorf("body %q: %v, want INVALID_ARGUMENT", body, err)
		}
	}
}
