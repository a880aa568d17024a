package apiclient_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// tokenAuthorizer allows "Bearer ok-<tenant>" to act on <tenant>: a missing
// or malformed token is unauthenticated, another tenant's is forbidden.
func tokenAuthorizer(r *http.Request, tenant string) (string, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ok-")
	if !ok {
		return "", registerapi.ErrUnauthenticated
	}
	if tok != tenant {
		return "", fmt.Errorf("token for %q", tok)
	}
	return "token:" + tok, nil
}

// failingStore is memstore whose reads fail on demand: a store outage.
type failingStore struct {
	*memstore.Store
	fail bool
}

func (s *failingStore) Get(ctx context.Context, key string) ([]byte, error) {
	if s.fail {
		return nil, errors.New("disk on fire")
	}
	return s.Store.Get(ctx, key)
}

var _ metastore.Store = (*failingStore)(nil)

// server is the real registration API over memstore behind httptest.
type server struct {
	url   string
	store *failingStore
}

func newServer(tb testing.TB) *server {
	tb.Helper()
	st := &failingStore{Store: memstore.New(memstore.Options{})}
	tb.Cleanup(func() { st.Close() })
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{Authorize: tokenAuthorizer, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return &server{url: srv.URL, store: st}
}

func newClient(tb testing.TB, url, token string) *apiclient.Client {
	tb.Helper()
	c, err := apiclient.New(url, apiclient.Options{Token: token})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func ipc(tb testing.TB, s *arrow.Schema) []byte {
	tb.Helper()
	b, err := catalog.EncodeSchema(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

var orders = catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	c := newClient(t, srv.url, "ok-acme")
	ctx := context.Background()
	schema := catalogtest.RichSchema()
	spec := apiclient.Spec{Location: "s3://lake/sales/orders/", TableType: "TABLE", SchemaIPC: ipc(t, schema)}

	tb, created, err := c.Register(ctx, orders, spec)
	if err != nil || !created || tb.Version != 1 || tb.Location != spec.Location {
		t.Fatalf("Register = %+v, created %v, %v; want version 1 created", tb, created, err)
	}
	if _, created, err := c.Register(ctx, orders, spec); err != nil || created {
		t.Fatalf("identical Register: created %v, %v; want not created, no error", created, err)
	}
	got, err := c.Get(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	s, err := catalog.DecodeSchema(got.SchemaIPC)
	if err != nil || !catalog.SchemaEqual(s, schema) {
		t.Fatalf("Get schema = %v, %v; want %v", s, err, schema)
	}
	wide := catalogtest.WideSchema(1, 4)
	up, err := c.Update(ctx, orders, apiclient.Spec{SchemaIPC: ipc(t, wide)}, apiclient.UpdateOptions{IfMatch: got.ETag})
	if err != nil || up.Version != 2 || up.Location != spec.Location {
		t.Fatalf("Update = %+v, %v; want version 2 at the old location", up, err)
	}
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, orders); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Get after Drop = %v, want catalog.ErrNotFound", err)
	}
}

// Every error the real handler answers comes back as an *Error whose kind
// is the catalog's sentinel (or this package's), and says the table, the
// kind and any detail once.
func TestErrorKinds(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ctx := context.Background()
	c := newClient(t, srv.url, "ok-acme")
	good := ipc(t, catalogtest.RichSchema())
	other := ipc(t, catalogtest.WideSchema(2, 3))
	if _, _, err := c.Register(ctx, orders, apiclient.Spec{Location: "s3://a/", SchemaIPC: good}); err != nil {
		t.Fatal(err)
	}
	legacy := catalog.TableRef{Tenant: "acme", Namespace: "legacy", Name: "events"}
	if _, _, err := c.Register(ctx, legacy, apiclient.Spec{Location: "s3://b/", SchemaIPC: good}); err != nil {
		t.Fatal(err)
	}
	missing := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "nope"}
	huge := make([]byte, catalog.MaxSchemaIPCBytes+1)

	tests := []struct {
		name       string
		call       func() error
		kind       error
		status     int
		code       string
		wantPrefix string // the message, or its start where the detail is the server's
	}{
		{"get missing", func() error { _, err := c.Get(ctx, missing); return err },
			catalog.ErrNotFound, 404, "not_found", "acme/sales/nope: table not found"},
		{"drop missing", func() error { return c.Drop(ctx, missing) },
			catalog.ErrNotFound, 404, "not_found", "acme/sales/nope: table not found"},
		{"register differently", func() error {
			_, _, err := c.Register(ctx, orders, apiclient.Spec{Location: "s3://elsewhere/", SchemaIPC: good})
			return err
		}, catalog.ErrExists, 409, "exists", "acme/sales/orders: already registered with a different location, type, schema, description or properties"},
		{"update at an old version", func() error {
			_, err := c.Update(ctx, orders, apiclient.Spec{SchemaIPC: other}, apiclient.UpdateOptions{IfMatch: `"0123456789abcdef-7"`})
			return err
		}, apiclient.ErrVersionMismatch, 412, "version_mismatch", "acme/sales/orders: the registration changed since it was read"},
		{"backfill a table that has a schema", func() error {
			_, err := c.Update(ctx, legacy, apiclient.Spec{SchemaIPC: other}, apiclient.UpdateOptions{OnlyIfNoSchema: true})
			return err
		}, catalog.ErrConflict, 409, "conflict", "acme/legacy/events: the registration changed meanwhile"},
		{"invalid schema bytes", func() error {
			_, _, err := c.Register(ctx, missing, apiclient.Spec{Location: "s3://a/", SchemaIPC: []byte("not ipc")})
			return err
		}, catalog.ErrInvalidSchema, 400, "invalid_schema", "acme/sales/nope: invalid schema: "},
		{"schema too large", func() error {
			_, _, err := c.Register(ctx, missing, apiclient.Spec{Location: "s3://a/", SchemaIPC: huge})
			return err
		}, catalog.ErrTooLarge, 413, "too_large", "acme/sales/nope: too large: "},
		{"invalid name", func() error {
			_, _, err := c.Register(ctx, catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "a\x01b"}, apiclient.Spec{Location: "s3://a/", SchemaIPC: good})
			return err
		}, catalog.ErrInvalidName, 400, "invalid_name", `invalid table name "a\x01b": contains a control character`},
		{"no token", func() error { _, err := newClient(t, srv.url, "").Get(ctx, orders); return err },
			apiclient.ErrUnauthenticated, 401, "unauthenticated", "acme/sales/orders: missing or invalid credentials"},
		{"another tenant's token", func() error { _, err := newClient(t, srv.url, "ok-globex").Get(ctx, orders); return err },
			apiclient.ErrForbidden, 403, "forbidden", `acme/sales/orders: not allowed to act on tenant "acme"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ae *apiclient.Error
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *apiclient.Error", err, err)
			}
			if !errors.Is(err, tt.kind) || ae.Status != tt.status || ae.Code != tt.code {
				t.Fatalf("got status %d code %q (%v), want %d %q and errors.Is %v", ae.Status, ae.Code, err, tt.status, tt.code, tt.kind)
			}
			got := err.Error()
			if detail, ok := strings.CutPrefix(got, tt.wantPrefix); !ok || (strings.HasSuffix(tt.wantPrefix, ": ") && detail == "") || (!strings.HasSuffix(tt.wantPrefix, ": ") && detail != "") {
				t.Fatalf("message %q, want %q (followed by the API's detail where it ends in \": \")", got, tt.wantPrefix)
			}
			if strings.Contains(got, "catalog:") || strings.Count(got, "acme/") > 1 {
				t.Fatalf("message %q repeats the ref or an internal prefix", got)
			}
			t.Logf("%s", got)
		})
	}
}

// A store outage is ErrUnavailable, and says nothing of the store's error.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.store.fail = true
	_, err := newClient(t, srv.url, "ok-acme").Get(context.Background(), orders)
	if !errors.Is(err, apiclient.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if got, want := err.Error(), "acme/sales/orders: the registration API is unavailable; retry"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
}

// Answers without the JSON envelope (a proxy, API Gateway's authorizer)
// still get a kind from their status, and an unreachable API is a
// TransportError that names it once.
func TestNonEnvelopeAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		body   string
		kind   error
		want   string
	}{
		{403, `{"message":"User: arn:aws:iam::1:user/x is not authorized to perform: execute-api:Invoke"}`, apiclient.ErrForbidden,
			`acme/sales/orders: not allowed to act on tenant "acme": {"message":"User: arn:aws:iam::1:user/x is not authorized to perform: execute-api:Invoke"}`},
		{502, "bad gateway", apiclient.ErrUnavailable, "acme/sales/orders: the registration API is unavailable; retry: bad gateway"},
		{418, "", nil, "acme/sales/orders: the registration API answered HTTP 418 http_error: I'm a teapot"},
		{500, `{"error":{"code":"internal","message":"internal error"}}`, nil, "acme/sales/orders: the registration API answered HTTP 500 internal: internal error"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, "").Get(context.Background(), orders)
			var ae *apiclient.Error
			if !errors.As(err, &ae) || ae.Status != tt.status {
				t.Fatalf("err = %v, want *apiclient.Error with status %d", err, tt.status)
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want kind %v", err, tt.kind)
			}
			if got := err.Error(); got != tt.want {
				t.Fatalf("message %q, want %q", got, tt.want)
			}
		})
	}

	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := newClient(t, url, "").Get(context.Background(), orders)
	var te *apiclient.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("unreachable API: err = %v (%T), want *apiclient.TransportError", err, err)
	}
	if got := err.Error(); strings.Count(got, url) != 1 || !strings.Contains(got, "connection refused") {
		t.Fatalf("unreachable API message %q: want the URL once and the cause", got)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:8181", "ftp://x", "http://"} {
		if _, err := apiclient.New(u, apiclient.Options{}); err == nil {
			t.Errorf("New(%q) succeeded, want an error", u)
		}
	}
}

// With SigV4 the calls are signed for execute-api with the caller's
// credentials, the body included in the signature.
func TestSigV4Signing(t *testing.T) {
	t.Parallel()
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	sig, err := apiclient.SigV4From(aws.Config{Region: "eu-west-1", Credentials: credentials.StaticCredentialsProvider{Value: creds}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apiclient.SigV4From(aws.Config{Credentials: sig.Credentials}); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("SigV4From without a region = %v, want an error naming AWS_REGION", err)
	}
	var got []*http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, bodies = append(got, r.Clone(context.Background())), append(bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"tenant":"acme","namespace":"sales","name":"orders","version":1}`))
	}))
	defer srv.Close()
	c, err := apiclient.New(srv.URL, apiclient.Options{SigV4: sig, Token: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{{1, 2, 3}, {4, 5, 6}} {
		if _, _, err := c.Register(context.Background(), orders, apiclient.Spec{Location: "s3://b/o", TableType: "TABLE", SchemaIPC: b}); err != nil {
			t.Fatal(err)
		}
	}
	var sigs []string
	for _, r := range got {
		a := r.Header.Get("Authorization")
		if !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(a, "/eu-west-1/execute-api/aws4_request") {
			t.Fatalf("Authorization = %q, want a SigV4 signature for execute-api in eu-west-1", a)
		}
		if !strings.Contains(a, "SignedHeaders=") || !strings.Contains(a, "host") || !strings.Contains(a, "x-amz-date") || r.Header.Get("X-Amz-Date") == "" {
			t.Fatalf("Authorization %q does not sign host and x-amz-date", a)
		}
		sigs = append(sigs, a[strings.Index(a, "Signature="):])
	}
	// Re-sign the first request as received, at its own date: with the body
	// it carried the signature must match, with another body it must not.
	auth0 := got[0].Header.Get("Authorization")
	signed := strings.Split(strings.SplitN(strings.SplitN(auth0, "SignedHeaders=", 2)[1], ",", 2)[0], ";")
	resign := func(body string) string {
		r, err := http.NewRequest(got[0].Method, "http://"+got[0].Host+got[0].URL.RequestURI(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range signed {
			if h != "host" && h != "content-length" {
				r.Header.Set(h, got[0].Header.Get(h))
			}
		}
		date, err := time.Parse("20060102T150405Z", got[0].Header.Get("X-Amz-Date"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(body))
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "execute-api", "eu-west-1", date); err != nil {
			t.Fatal(err)
		}
		a := r.Header.Get("Authorization")
		return a[strings.Index(a, "Signature="):]
	}
	if resign(bodies[0]) != sigs[0] {
		t.Fatal("the signature does not verify against the body that was sent")
	}
	if resign(bodies[1]) == sigs[0] {
		t.Fatal("the signature verifies against another body: the payload is not signed")
	}
}
