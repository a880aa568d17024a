package icebergrest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/lake-catalog/lake/internal/icebergrest"
)

var fuzzMethods = []string{"GET", "HEAD", "POST", "DELETE", "PUT", "OPTIONS", "PATCH"}

// FuzzRoutes sends fuzzed paths and queries to the handler: it never
// panics and answers either a success or the spec's error model in JSON.
func FuzzRoutes(f *testing.F) {
	for _, s := range []struct {
		method      byte
		path, query string
		acme        bool
	}{
		{0, "/v1/config", "warehouse=acme", true},
		{0, "/v1/acme/namespaces", "pageToken=&pageSize=1", true},
		{0, "/v1/acme/namespaces", "parent=sales%1Fx", true},
		{0, "/v1/acme/namespaces/big/tables", "pageToken=dHQxMDA", true},
		{0, "/v1/acme/namespaces/sales/tables/orders", "snapshots=all", true},
		{0, "/v1/acme/namespaces/sales/tables/orders/credentials", "", true},
		{1, "/v1/acme/namespaces/sales%1Forders", "", true},
		{2, "/v1/acme/namespaces/sales/tables", "", true},
		{0, "/v1/globex/namespaces", "", true},
		{0, "/v1/namespaces/%2F/tables/%00", "pageSize=-1", true},
		{0, "/v1/acme/namespaces", "", false},
	} {
		f.Add(s.method, s.path, s.query, s.acme)
	}
	h, err := icebergrest.New(icebergrest.Options{Source: newFakeSource(f), Authenticate: authenticate})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method byte, path, query string, acme bool) {
		u, err := url.Parse(path)
		if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
			t.Skip()
		}
		u.RawQuery = query
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		req := httptest.NewRequest(m, "/", nil)
		req.URL = u
		req.RequestURI = u.RequestURI()
		if acme {
			req.Header.Set("Authorization", "Bearer tok-acme")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		status, body := rec.Code, rec.Body.Bytes()
		switch {
		case status == http.StatusNoContent:
			if len(body) != 0 {
				t.Fatalf("%s %s?%s: 204 with body %q", m, path, query, body)
			}
		case status == http.StatusOK:
			if !json.Valid(body) {
				t.Fatalf("%s %s?%s: 200 with body %q, not JSON", m, path, query, body)
			}
		case status >= 400:
			var eb errorBody
			if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code != status || eb.Error.Type == "" || eb.Error.Message == "" {
				t.Fatalf("%s %s?%s: %d with body %q, not the error model", m, path, query, status, body)
			}
		default:
			t.Fatalf("%s %s?%s: status %d", m, path, query, status)
		}
	})
}
