package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/wire"
)

// call sends a JSON request with a bearer token and returns status and body.
func call(t *testing.T, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// In local mode a table under --data-root is its own access, on the
// registration API and on Flight alike; an s3:// table says vending is not
// configured and how to configure it once its prefix is allowed; a path outside the data root is
// refused; a tenant's token cannot change its allowed prefixes, an
// operator's (aud lake-admin) can.
func TestLocalVending(t *testing.T) {
	dataDir, root := filepath.Join(t.TempDir(), "data"), t.TempDir()
	in, err := local.Start(context.Background(), local.Config{
		DataDir: dataDir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		RefreshInterval: time.Hour, DataRoot: root, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	api := in.Endpoints().API
	acme, err := in.Token("acme", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := local.LoadSecret(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := auth.IssueHS256(secret, auth.TokenClaims{Tenant: local.AdminTenant, Subject: "ops", Audience: local.AdminAudience, TTL: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"fields": []any{map[string]any{"name": "id", "type": "int64"}}}
	tables := api + "/v1/tenants/acme/namespaces/sales/tables"
	for name, loc := range map[string]string{"files": "file://" + root + "/acme/files/", "orders": "s3://tenant-data/acme/orders/", "etc": "file:///etc/"} {
		if code, b := call(t, "POST", tables, acme, map[string]any{"name": name, "location": loc, "schema": schema}); code != http.StatusCreated {
			t.Fatalf("register %s: %d %s", name, code, b)
		}
	}

	realRoot, _ := filepath.EvalSymlinks(root)
	code, b := call(t, "GET", tables+"/files/credentials", acme, nil)
	var c wire.Credentials
	if err := json.Unmarshal(b, &c); err != nil || code != http.StatusOK || c.Access != wire.AccessPath || c.Location != "file://"+realRoot+"/acme/files/" || c.AccessKeyID != "" {
		t.Fatalf("file table: %d %s", code, b)
	}
	if code, b := call(t, "GET", tables+"/orders/credentials", acme, nil); code != http.StatusForbidden || !strings.Contains(string(b), "not under a prefix allowed") {
		t.Fatalf("s3 table outside any allowed prefix: %d %s", code, b)
	}
	if code, b := call(t, "GET", tables+"/etc/credentials", acme, nil); code != http.StatusForbidden || !strings.Contains(string(b), wire.CodeLocationNotAllowed) ||
		!strings.Contains(string(b), "--data-root") {
		t.Fatalf("path outside the data root: %d %s", code, b)
	}

	allow := api + "/v1/admin/tenants/acme/allowed-prefixes"
	if code, b := call(t, "POST", allow, acme, wire.AllowPrefixRequest{Prefix: "s3://tenant-data/acme/"}); code != http.StatusForbidden || !strings.Contains(string(b), wire.CodeNotAdmin) {
		t.Fatalf("tenant token on the admin route: %d %s", code, b)
	}
	if code, b := call(t, "POST", allow, admin, wire.AllowPrefixRequest{Prefix: "s3://tenant-data/acme/"}); code != http.StatusOK || !strings.Contains(string(b), `"updated_by":"ops"`) {
		t.Fatalf("operator token on the admin route: %d %s", code, b)
	}
	if code, b := call(t, "GET", tables+"/orders/credentials", acme, nil); code != http.StatusNotImplemented || !strings.Contains(string(b), wire.CodeVendingNotConfigured) ||
		!strings.Contains(string(b), "--vending-role-arn") {
		t.Fatalf("s3 table without vending: %d %s", code, b)
	}

	// Flight answers through the same Door once the refresh has run.
	if _, err := in.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	client, err := flightsql.NewClient(strings.TrimPrefix(in.Endpoints().FlightSQL, "grpc://"), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+acme)
	stream, err := client.Client.DoAction(ctx, &flight.Action{Type: wire.CredentialsActionType, Body: []byte(`{"namespace":"sales","table":"files"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var fc wire.Credentials
	if err := json.Unmarshal(r.Body, &fc); err != nil || fc.Access != wire.AccessPath || fc.Location != c.Location {
		t.Fatalf("Flight lake.credentials = %s (%v), want %+v", r.Body, err, c)
	}
}

// Given a role and an STS endpoint, local mode vends s3:// tables: the
// credentials read the table's objects and nothing beside them (versitygw
// evaluating the session policy through testenv's STS stand-in).
func TestLocalVendsThroughSTS(t *testing.T) {
	gw := testenv.StartIAMS3(t)
	st := testenv.StartSTS(t, gw)
	gw.CreateBucket(t, "tenant-data")
	gw.PutObject(t, "tenant-data", "acme/orders/part-0", []byte("acme rows"))
	gw.PutObject(t, "tenant-data", "acme/customers/part-0", []byte("not for orders"))
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIALOCALDEPUTY")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local-deputy-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	dataDir := filepath.Join(t.TempDir(), "data")
	in, err := local.Start(context.Background(), local.Config{
		DataDir: dataDir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		RefreshInterval: time.Hour, Vending: vending.Config{RoleARN: st.RoleARN, STSEndpoint: st.URL}, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	api := in.Endpoints().API
	acme, _ := in.Token("acme", time.Hour)
	secret, _ := local.LoadSecret(dataDir)
	admin, _ := auth.IssueHS256(secret, auth.TokenClaims{Tenant: local.AdminTenant, Audience: local.AdminAudience, TTL: time.Hour, Now: time.Now()})
	tables := api + "/v1/tenants/acme/namespaces/sales/tables"
	schema := map[string]any{"fields": []any{map[string]any{"name": "id", "type": "int64"}}}
	if code, b := call(t, "POST", tables, acme, map[string]any{"name": "orders", "location": "s3://tenant-data/acme/orders/", "schema": schema}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	if code, b := call(t, "POST", api+"/v1/admin/tenants/acme/allowed-prefixes", admin, wire.AllowPrefixRequest{Prefix: "s3://tenant-data/acme/"}); code != http.StatusOK {
		t.Fatalf("allow: %d %s", code, b)
	}
	code, b := call(t, "GET", tables+"/orders/credentials", acme, nil)
	var c wire.Credentials
	if err := json.Unmarshal(b, &c); err != nil || code != http.StatusOK || c.Access != wire.AccessVended || st.Count() != 1 {
		t.Fatalf("credentials: %d %s after %d AssumeRole calls", code, b, st.Count())
	}
	s3c := gw.ClientFor(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	out, err := s3c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("tenant-data"), Key: aws.String("acme/orders/part-0")})
	if err != nil {
		t.Fatalf("read the table's object: %v", err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != "acme rows" {
		t.Fatalf("read %q", got)
	}
	if _, err := s3c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("tenant-data"), Key: aws.String("acme/customers/part-0")}); err == nil {
		t.Fatal("the credentials read another table's object")
	}
}

// --iceberg-listen serves the Iceberg REST catalog on loopback with the dev
// tokens; a Host that is not loopback is refused, as on every local
// listener.
func TestLocalIcebergListener(t *testing.T) {
	in, err := local.Start(context.Background(), local.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		IcebergListen: "127.0.0.1:0", RefreshInterval: time.Hour, Demo: true, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	uri := in.Endpoints().Iceberg
	if uri == "" {
		t.Fatal("no Iceberg endpoint")
	}
	acme, _ := in.Token("acme", time.Hour)
	code, b := call(t, "GET", uri+"/v1/acme/namespaces", acme, nil)
	if code != http.StatusOK || !strings.Contains(string(b), `["sales"]`) {
		t.Fatalf("namespaces: %d %s", code, b)
	}
	if code, b := send(t, "GET", uri+"/v1/acme/namespaces", "evil.example", map[string]string{"Authorization": "Bearer " + acme}); code != http.StatusForbidden && code != http.StatusMisdirectedRequest {
		t.Fatalf("a non-loopback Host: %d %s", code, b)
	}
}
