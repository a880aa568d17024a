package icebergrest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/lake-catalog/lake/internal/icebergrest"
)

// keptSource is the fake source keeping acme's sales.plain answer ready:
// it counts the calls of Table, and checks that Table has a deadline.
type keptSource struct {
	*fakeSource
	answer             []byte
	tables, noDeadline atomic.Int64
}

func (k *keptSource) KeptTable(tenant, ns, name string) (icebergrest.Table, bool) {
	if tenant != "acme" || ns != "sales" || name != "plain" {
		return icebergrest.Table{}, false
	}
	return icebergrest.Table{Location: "s3://acme-data/sales/plain/", Version: 1, MetadataLocation: "s3://kept/v1.metadata.json",
		Metadata: k.answer[len(`{"metadata-location":"s3://kept/v1.metadata.json","metadata":`) : len(k.answer)-len(`,"config":{}}`)],
		Answer:   k.answer}, true
}

func (k *keptSource) Table(ctx context.Context, tenant, ns, name string) (icebergrest.Table, bool, error) {
	k.tables.Add(1)
	if _, ok := ctx.Deadline(); !ok {
		k.noDeadline.Add(1)
	}
	return k.fakeSource.Table(ctx, tenant, ns, name)
}

// A loadTable whose answer a KeptSource keeps is written as kept, without
// calling Table, after the same authentication and prefix checks as every
// request; one asking vended credentials, with a bad query, or of a table
// not kept goes the way of every request (Table, under a deadline).
func TestLoadTableKept(t *testing.T) {
	answer, md, err := icebergrest.LoadTableAnswer("s3://kept/v1.metadata.json", []byte(`{"format-version":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata-location":"s3://kept/v1.metadata.json","metadata":{"format-version":2},"config":{}}`; string(answer) != want || string(md) != `{"format-version":2}` {
		t.Fatalf("LoadTableAnswer = %s, %s; want %s", answer, md, want)
	}
	src := &keptSource{fakeSource: newFakeSource(t), answer: answer}
	h, err := icebergrest.New(icebergrest.Options{Source: src, Authenticate: authenticate})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tests := []struct {
		name, path, token string
		hdr               map[string]string
		status            int
		kept              bool // the kept answer, Table not called
	}{
		{"kept", "/v1/acme/namespaces/sales/tables/plain", "tok-acme", nil, 200, true},
		{"kept, no prefix", "/v1/namespaces/sales/tables/plain", "tok-acme", nil, 200, true},
		{"kept, snapshots=all", "/v1/acme/namespaces/sales/tables/plain?snapshots=all", "tok-acme", nil, 200, true},
		{"no token", "/v1/acme/namespaces/sales/tables/plain", "", nil, 401, false},
		{"bad token", "/v1/acme/namespaces/sales/tables/plain", "nope", nil, 401, false},
		{"another tenant's prefix", "/v1/acme/namespaces/sales/tables/plain", "tok-globex", nil, 403, false},
		{"bad snapshots", "/v1/acme/namespaces/sales/tables/plain?snapshots=some", "tok-acme", nil, 400, false},
		{"vended asked", "/v1/acme/namespaces/sales/tables/plain", "tok-acme", map[string]string{"X-Iceberg-Access-Delegation": "vended-credentials"}, 200, false},
		{"not kept", "/v1/acme/namespaces/sales/tables/orders", "tok-acme", nil, 200, false},
		{"missing", "/v1/acme/namespaces/sales/tables/nothere", "tok-acme", nil, 404, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := src.tables.Load()
			status, hdr, body := call(t, srv, http.MethodGet, tt.path, tt.token, tt.hdr)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, body)
			}
			called := src.tables.Load() != before
			if tt.kept {
				if called || string(body) != string(answer) {
					t.Errorf("Table called %v, body %s; want the kept answer %s alone", called, body, answer)
				}
				if hdr.Get("Content-Length") != strconv.Itoa(len(answer)) || hdr.Get("Content-Type") != "application/json" || hdr.Get("Cache-Control") != "no-store" {
					t.Errorf("headers %v", hdr)
				}
			} else if status == 200 && !called {
				t.Errorf("answered without Table: %s", body)
			}
		})
	}
	if n := src.noDeadline.Load(); n != 0 {
		t.Errorf("Table called %d times without a deadline", n)
	}
}
