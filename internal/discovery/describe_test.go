package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// describe runs the describe action as ctx's tenant and returns its one
// Result as it came (raw) and decoded.
func (e *env) describe(ctx context.Context, body string) (map[string]any, *wire.TableDescription, error) {
	e.t.Helper()
	stream, err := e.client.Client.DoAction(ctx, &flight.Action{Type: wire.DescribeActionType, Body: []byte(body)})
	if err != nil {
		return nil, nil, err
	}
	r, err := stream.Recv()
	if err != nil {
		return nil, nil, err
	}
	if extra, err := stream.Recv(); !errors.Is(err, io.EOF) {
		e.t.Fatalf("got a second result %v (%v), want one", extra, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.Body, &raw); err != nil {
		e.t.Fatalf("result %q: %v", r.Body, err)
	}
	var d wire.TableDescription
	if err := json.Unmarshal(r.Body, &d); err != nil {
		e.t.Fatalf("result %q: %v", r.Body, err)
	}
	return raw, &d, nil
}

// registerSpec registers a table with spec and returns its registration.
func (e *env) registerSpec(tenant, ns, name string, spec catalog.TableSpec) catalog.Registration {
	e.t.Helper()
	reg, _, err := e.cat.Register(context.Background(), catalog.TableRef{Tenant: tenant, Namespace: ns, Name: name}, spec)
	if err != nil {
		e.t.Fatal(err)
	}
	return reg
}

func describeBody(t testing.TB, ns, table string) string {
	t.Helper()
	b, err := json.Marshal(wire.DescribeRequest{Namespace: ns, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	described := e.registerSpec("acme", "sales", "orders", catalog.TableSpec{
		Location: "s3://lake/acme/orders/", TableType: "ICEBERG", Schema: nestedSchema(),
		Description: "One row per order.\nLoaded nightly.", Properties: map[string]string{"owner": "sales-eng", "pii": "no"},
	})
	plain := e.registerSpec("acme", "sales", "plain", catalog.TableSpec{Location: "/data/plain", Schema: wide(1)})
	e.register("acme", "ops", "legacy", nil)
	e.publish()
	acme := as(t, "acme")

	tests := []struct {
		name, ns, table string
		want            wire.TableDescription
		wantKeys        []string
	}{
		{"description and properties", "sales", "orders", wire.TableDescription{
			Namespace: "sales", Table: "orders", TableType: "ICEBERG", Location: "s3://lake/acme/orders/",
			Version: described.Version(), CreatedAt: described.CreatedAt(), UpdatedAt: described.UpdatedAt(),
			Description: "One row per order.\nLoaded nightly.", Properties: map[string]string{"owner": "sales-eng", "pii": "no"},
			HasSchema: true,
		}, []string{"created_at", "description", "has_schema", "location", "namespace", "properties", "table", "table_type", "updated_at", "version"}},
		{"neither", "sales", "plain", wire.TableDescription{
			Namespace: "sales", Table: "plain", TableType: plain.TableType(), Location: "/data/plain",
			Version: plain.Version(), CreatedAt: plain.CreatedAt(), UpdatedAt: plain.UpdatedAt(), HasSchema: true,
		}, []string{"created_at", "has_schema", "location", "namespace", "table", "table_type", "updated_at", "version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, got, err := e.describe(acme, describeBody(t, tt.ns, tt.table))
			if err != nil {
				t.Fatal(err)
			}
			if keys := strings.Join(sortedKeys(raw), ","); keys != strings.Join(tt.wantKeys, ",") {
				t.Errorf("got keys %s, want %s", keys, strings.Join(tt.wantKeys, ","))
			}
			if !got.CreatedAt.Equal(tt.want.CreatedAt) || !got.UpdatedAt.Equal(tt.want.UpdatedAt) {
				t.Errorf("got times %v, %v, want %v, %v", got.CreatedAt, got.UpdatedAt, tt.want.CreatedAt, tt.want.UpdatedAt)
			}
			got.CreatedAt, got.UpdatedAt = tt.want.CreatedAt, tt.want.UpdatedAt
			if got.Namespace != tt.want.Namespace || got.Table != tt.want.Table || got.TableType != tt.want.TableType ||
				got.Location != tt.want.Location || got.Version != tt.want.Version || got.Description != tt.want.Description ||
				!maps.Equal(got.Properties, tt.want.Properties) || got.HasSchema != tt.want.HasSchema {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}

	t.Run("without a schema", func(t *testing.T) {
		_, got, err := e.describe(acme, describeBody(t, "ops", "legacy"))
		if err != nil {
			t.Fatal(err)
		}
		if got.HasSchema || got.Location != "/legacy" {
			t.Errorf("got has_schema %v, location %q, want false, /legacy", got.HasSchema, got.Location)
		}
	})
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestDescribeTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	_, _, err := e.describe(as(t, "acme"), describeBody(t, "sales", "orders"))
	if got := codeOf(err); got != codes.Unavailable {
		t.Fatalf("before the first snapshot: got %v (%v), want UNAVAILABLE", got, err)
	}
	e.registerSpec("acme", "sales", "orders", catalog.TableSpec{Location: "/acme/orders", Schema: wide(1), Description: "acme's"})
	e.registerSpec("acme", "secret", "plans", catalog.TableSpec{Location: "/acme/plans", Schema: wide(2)})
	e.registerSpec("globex", "sales", "customers", catalog.TableSpec{Location: "/globex/customers", Schema: wide(3)})
	e.publish()

	missing := func(tenant, ns, table string) string {
		_, _, err := e.describe(as(t, tenant), describeBody(t, ns, table))
		if got := codeOf(err); got != codes.NotFound {
			t.Fatalf("%s describes %s.%s: got %v (%v), want NOT_FOUND", tenant, ns, table, got, err)
		}
		// The message names what was asked for, nothing of whose it is.
		return strings.ReplaceAll(strings.ReplaceAll(status.Convert(err).Message(), ns, "NS"), table, "T")
	}
	tests := []struct{ name, tenant, ns, table string }{
		{"globex asks for acme's table", "globex", "secret", "plans"},
		{"globex asks for acme's table, another name", "globex", "sales", "orders"},
		{"acme asks for globex's table", "acme", "sales", "customers"},
		{"a tenant with no tables", "initech", "sales", "orders"},
	}
	want := missing("globex", "nowhere", "nothing")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := missing(tt.tenant, tt.ns, tt.table); got != want {
				t.Errorf("got message %q, want %q, as for a table nobody has", got, want)
			}
		})
	}

	t.Run("unauthenticated", func(t *testing.T) {
		_, _, err := e.describe(context.Background(), describeBody(t, "sales", "orders"))
		if got := codeOf(err); got != codes.Unauthenticated {
			t.Fatalf("got %v (%v), want UNAUTHENTICATED", got, err)
		}
	})
}

func TestDescribeInvalidRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.registerSpec("acme", "sales", "orders", catalog.TableSpec{Location: "/acme/orders", Schema: wide(1)})
	e.publish()
	tests := []struct{ name, body string }{
		{"empty", ""},
		{"not JSON", "orders"},
		{"no table", `{"namespace":"sales"}`},
		{"no namespace", `{"table":"orders"}`},
		{"empty names", `{"namespace":"","table":""}`},
		{"unknown field", `{"namespace":"sales","table":"orders","tenant":"globex"}`},
		{"trailing data", `{"namespace":"sales","table":"orders"} {}`},
		{"bad name", `{"namespace":"sales","table":"a/b"}`},
		{"name too long", describeBody(t, "sales", strings.Repeat("x", catalog.MaxNameBytes+1))},
		{"body too large", `{"namespace":"sales","table":"orders"}` + strings.Repeat(" ", wire.MaxDescribeBody)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := e.describe(as(t, "acme"), tt.body)
			if got := codeOf(err); got != codes.InvalidArgument {
				t.Fatalf("got %v (%v), want INVALID_ARGUMENT", got, err)
			}
		})
	}
}
