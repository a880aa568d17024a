package apiclient_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// Description and properties go out with Register and Update and come
// back from Get; Update keeps, replaces or clears them.
func TestDescriptionAndPropertiesRoundTrip(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	c := newClient(t, srv.url, "ok-acme")
	ctx := context.Background()
	schema := ipc(t, catalogtest.WideSchema(1, 3))
	spec := apiclient.Spec{Location: "s3://lake/o/", SchemaIPC: schema,
		Description: "Orders.\nOne row per order.", Properties: map[string]string{"owner": "sales", "pii": ""}}
	if _, created, err := c.Register(ctx, orders, spec); err != nil || !created {
		t.Fatalf("Register: created %v, %v; want created", created, err)
	}
	tests := []struct {
		name      string
		spec      apiclient.Spec
		opts      apiclient.UpdateOptions
		wantDesc  string
		wantProps map[string]string
	}{
		{"registered", apiclient.Spec{}, apiclient.UpdateOptions{}, spec.Description, spec.Properties},
		{"update keeps", apiclient.Spec{SchemaIPC: schema}, apiclient.UpdateOptions{}, spec.Description, spec.Properties},
		{"update replaces", apiclient.Spec{SchemaIPC: schema, Description: "all orders", Properties: map[string]string{"tier": "gold"}},
			apiclient.UpdateOptions{}, "all orders", map[string]string{"tier": "gold"}},
		{"update clears", apiclient.Spec{SchemaIPC: schema, Properties: map[string]string{}},
			apiclient.UpdateOptions{ClearDescription: true}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.spec.SchemaIPC != nil {
				if _, err := c.Update(ctx, orders, tt.spec, tt.opts); err != nil {
					t.Fatal(err)
				}
			}
			got, err := c.Get(ctx, orders)
			if err != nil {
				t.Fatal(err)
			}
			if got.Description != tt.wantDesc || !maps.Equal(got.Properties, tt.wantProps) {
				t.Fatalf("got %q, %v; want %q, %v", got.Description, got.Properties, tt.wantDesc, tt.wantProps)
			}
		})
	}

	_, _, err := c.Register(ctx, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "big"},
		apiclient.Spec{Location: "/x", SchemaIPC: schema, Description: strings.Repeat("d", catalog.MaxDescriptionBytes+1)})
	want := "acme/sales/big: invalid registration: description of 4097 bytes, limit 4096"
	if !errors.Is(err, catalog.ErrInvalidRegistration) || err.Error() != want {
		t.Fatalf("got %v, want %q (ErrInvalidRegistration)", err, want)
	}
}
