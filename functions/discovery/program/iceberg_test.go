package program_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/functions/discovery/program"
	"github.com/lake-catalog/lake/internal/auth"
)

// -iceberg-listen serves the Iceberg REST catalog from the program's
// snapshot, with the Flight SQL tokens: the config names the caller's
// tenant as the prefix, its tables load, and no token is refused.
func TestIcebergListener(t *testing.T) {
	t.Parallel()
	f := newBlobFile(t)
	f.write(t, 1, "orders")
	validator, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := program.Start(t.Context(), program.Config{
		Listen: "127.0.0.1:0", IcebergListen: "127.0.0.1:0", Blobs: f.store, PollInterval: 50 * time.Millisecond, Auth: validator, Log: quietLog(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	tok, err := auth.IssueHS256(secret, auth.TokenClaims{Tenant: "acme", TTL: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+srv.IcebergAddr()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/config", tok); code != http.StatusOK || !strings.Contains(body, `"prefix":"acme"`) {
		t.Fatalf("config: %d %s", code, body)
	}
	waitUntil(t, "the snapshot to load", func() (bool, string) {
		code, body := get("/v1/acme/namespaces/sales/tables/orders", tok)
		return code == http.StatusOK && strings.Contains(body, `"format-version":2`), body
	})
	if code, body := get("/v1/config", ""); code != http.StatusUnauthorized {
		t.Fatalf("config without a token: %d %s", code, body)
	}
}
