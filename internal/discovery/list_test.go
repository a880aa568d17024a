package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// list runs a list action as ctx's tenant and decodes its one Result into
// v.
func (e *env) list(ctx context.Context, action, body string, v any) error {
	e.t.Helper()
	stream, err := e.client.Client.DoAction(ctx, &flight.Action{Type: action, Body: []byte(body)})
	if err != nil {
		return err
	}
	r, err := stream.Recv()
	if err != nil {
		return err
	}
	if extra, err := stream.Recv(); !errors.Is(err, io.EOF) {
		e.t.Fatalf("got a second result %v (%v), want one", extra, err)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		e.t.Fatalf("result %q: %v", r.Body, err)
	}
	return nil
}

// The list actions page a tenant's tables and namespaces in order, with
// column counts and cut descriptions, and never show another tenant's.
func TestListActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	// "x" then two-byte characters: byte wire.MaxListedDescription falls inside
	// one, so the cut goes back to its start.
	long := "x" + strings.Repeat("é", wire.MaxListedDescription)
	e.registerSpec("acme", "a", "described", catalog.TableSpec{Location: "/d", Schema: nestedSchema(), Description: "short"})
	e.registerSpec("acme", "a", "long", catalog.TableSpec{Location: "/l", Schema: wide(1), Description: long})
	e.register("acme", "b", "legacy", nil)
	for i := range 30 {
		e.register("acme", "c", fmt.Sprintf("t%02d", i), wide(i))
	}
	e.register("globex", "a", "secret", wide(2))
	e.publish()
	acme := as(t, "acme")

	var all wire.TablePage
	if err := e.list(acme, wire.ListTablesActionType, `{"limit":500}`, &all); err != nil {
		t.Fatal(err)
	}
	if all.Tenant != "acme" || all.Total != 33 || len(all.Tables) != 33 {
		t.Fatalf("got %d of %d tables, want 33 of 33", len(all.Tables), all.Total)
	}
	first := all.Tables[:3]
	want := []wire.ListedTable{
		{Namespace: "a", Table: "described", TableType: "TABLE", Columns: len(nestedSchema().Fields()), Description: "short"},
		{Namespace: "a", Table: "long", TableType: "TABLE", Columns: 20, Description: long[:wire.MaxListedDescription-1], DescriptionTruncated: true},
		{Namespace: "b", Table: "legacy", TableType: "TABLE", Columns: -1},
	}
	if fmt.Sprint(first) != fmt.Sprint(want) {
		t.Fatalf("got %+v, want %+v", first, want)
	}

	pages := []struct {
		body       string
		wantTotal  int
		wantTables string
	}{
		{`{"namespace":"c","offset":10,"limit":3}`, 30, "c.t10 c.t11 c.t12"},
		{`{"namespace":"c","offset":28,"limit":5}`, 30, "c.t28 c.t29"},
		{`{"namespace":"c","offset":30,"limit":5}`, 30, ""},
		{`{"namespace":"c","offset":1000000,"limit":5}`, 30, ""},
		{`{"offset":1,"limit":2}`, 33, "a.long b.legacy"},
		{`{"namespace":"nope","limit":5}`, 0, ""},
		{`{"namespace":"secret","limit":5}`, 0, ""},
	}
	for _, tt := range pages {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			var got wire.TablePage
			if err := e.list(acme, wire.ListTablesActionType, tt.body, &got); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range got.Tables {
				names = append(names, r.Namespace+"."+r.Table)
			}
			if got.Total != tt.wantTotal || strings.Join(names, " ") != tt.wantTables {
				t.Fatalf("got %d: %v, want %d: %s", got.Total, names, tt.wantTotal, tt.wantTables)
			}
		})
	}

	var ns wire.NamespacePage
	if err := e.list(acme, wire.ListNamespacesActionType, `{"offset":1,"limit":5}`, &ns); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(ns), fmt.Sprint(wire.NamespacePage{Tenant: "acme", Total: 3, Namespaces: []wire.ListedNamespace{{Name: "b", Tables: 1}, {Name: "c", Tables: 30}}}); got != want {
		t.Fatalf("namespaces: got %s, want %s", got, want)
	}
	var globex wire.TablePage
	if err := e.list(as(t, "globex"), wire.ListTablesActionType, `{"namespace":"a","limit":5}`, &globex); err != nil {
		t.Fatal(err)
	}
	if globex.Tenant != "globex" || globex.Total != 1 || len(globex.Tables) != 1 || globex.Tables[0].Table != "secret" {
		t.Fatalf("globex: got %+v, want its one table", globex)
	}
	var none wire.TablePage
	if err := e.list(as(t, "initech"), wire.ListTablesActionType, `{"limit":5}`, &none); err != nil || none.Total != 0 || len(none.Tables) != 0 {
		t.Fatalf("a tenant without tables: got %+v, %v, want an empty page", none, err)
	}

	bad := []struct{ action, body string }{
		{wire.ListTablesActionType, `{"limit":0}`},
		{wire.ListTablesActionType, `{"limit":501}`},
		{wire.ListTablesActionType, `{"offset":-1,"limit":5}`},
		{wire.ListTablesActionType, `{"limit":5,"extra":1}`},
		{wire.ListTablesActionType, `{"limit":5} {}`},
		{wire.ListTablesActionType, `{"namespace":"a/b","limit":5}`},
		{wire.ListTablesActionType, ``},
		{wire.ListNamespacesActionType, `{"namespace":"a","limit":5}`},
		{wire.ListTablesActionType, `{"namespace":"` + strings.Repeat("x", 2000) + `","limit":5}`},
	}
	for _, tt := range bad {
		t.Run(tt.action+" "+tt.body, func(t *testing.T) {
			t.Parallel()
			var v any
			if err := e.list(acme, tt.action, tt.body, &v); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
		})
	}
	if err := e.list(context.Background(), wire.ListTablesActionType, `{"limit":5}`, new(any)); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without a token: got %v, want Unauthenticated", err)
	}
}
