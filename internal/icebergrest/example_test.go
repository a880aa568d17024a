package icebergrest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/pkg/wire"
)

// exampleSource is a Source with one tenant, acme, and one namespace.
type exampleSource struct{}

func (exampleSource) Namespaces(context.Context, string) ([]string, error) {
	return []string{"sales"}, nil
}

func (exampleSource) Tables(_ context.Context, _, ns string) ([]string, bool, error) {
	return []string{"orders"}, ns == "sales", nil
}

func (exampleSource) Table(context.Context, string, string, string) (icebergrest.Table, bool, error) {
	return icebergrest.Table{}, false, nil
}

func (exampleSource) Credentials(context.Context, string, string, string) (wire.Credentials, error) {
	return wire.Credentials{}, fmt.Errorf("example: no vending")
}

func ExampleNew() {
	h, err := icebergrest.New(icebergrest.Options{
		Source: exampleSource{},
		Authenticate: func(r *http.Request) (string, error) {
			if r.Header.Get("Authorization") != "Bearer secret" {
				return "", fmt.Errorf("example: bad token")
			}
			return "acme", nil
		},
	})
	if err != nil {
		panic(err)
	}
	for _, path := range []string{"/v1/acme/namespaces", "/v1/acme/namespaces/sales/tables", "/v1/globex/namespaces"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer secret")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body.String())
	}
	// Output:
	// 200 {"namespaces":[["sales"]]}
	// 200 {"identifiers":[{"namespace":["sales"],"name":"orders"}]}
	// 403 {"error":{"message":"the prefix is not the caller's tenant","type":"ForbiddenException","code":403}}
}
