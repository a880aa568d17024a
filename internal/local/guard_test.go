package local_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/local"
)

// startWithBrowser starts local mode with the demo catalog and the catalog
// browser, both on loopback ports.
func startWithBrowser(t *testing.T) *local.Instance {
	t.Helper()
	in, err := local.Start(context.Background(), local.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		BrowserListen: "127.0.0.1:0", RefreshInterval: time.Hour, Demo: true, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	return in
}

// send sends method url with the given Host and headers and returns the
// status and body.
func send(t testing.TB, method, url, host string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// The probe: a page on another site (a DNS-rebinding name, a
// cross-site form) gets a dev token from the browser's listener and drops
// a tenant's tables through the registration API. Local listeners answer
// only loopback Host values; a POST needs a same-origin Origin, or no
// Origin and the X-Lake-Request header no form can send; the browser's dev
// tokens are read-only: discovery takes them, the registration API does not
// (issue 24, finding 4).
func TestLocalListenersRefuseOtherSitesAndDevTokensCannotWrite(t *testing.T) {
	in := startWithBrowser(t)
	ep := in.Endpoints()
	browserBase := strings.TrimSuffix(ep.Browser, "/")
	browserHost := strings.TrimPrefix(browserBase, "http://")
	apiHost := strings.TrimPrefix(ep.API, "http://")
	adminStatus := "http://" + ep.HTTP + "/status"
	port := browserHost[strings.LastIndex(browserHost, ":"):]
	devToken := browserBase + "/api/dev-token?tenant=acme"
	orders := ep.API + "/v1/tenants/acme/namespaces/sales/tables/orders"
	cli := map[string]string{"X-Lake-Request": "1"}

	refused := []struct {
		name, method, url, host string
		hdr                     map[string]string
	}{
		{"the issue's curl probe: a rebinding Host", http.MethodPost, devToken, "rebind.attacker.example" + port, nil},
		{"a rebinding Host with the custom header", http.MethodPost, devToken, "rebind.attacker.example" + port, cli},
		{"a rebinding Host, GET of the page", http.MethodGet, browserBase + "/", "rebind.attacker.example" + port, nil},
		{"a rebinding Host on the registration API", http.MethodGet, orders, "rebind.attacker.example:8181", nil},
		{"a rebinding Host reading the admin listener's /status", http.MethodGet, adminStatus, "rebind.attacker.example:8182", nil},
		{"a cross-site form post", http.MethodPost, devToken, browserHost, map[string]string{"Origin": "https://attacker.example"}},
		{"an opaque origin (sandboxed frame)", http.MethodPost, devToken, browserHost, map[string]string{"Origin": "null"}},
		{"another local port's origin", http.MethodPost, devToken, browserHost, map[string]string{"Origin": "http://127.0.0.1:1"}},
		{"no Origin and no custom header", http.MethodPost, devToken, browserHost, nil},
		{"a cross-site delete on the registration API", http.MethodDelete, orders, apiHost, map[string]string{"Origin": "https://attacker.example", "X-Lake-Request": "1"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			status, body := send(t, tc.method, tc.url, tc.host, tc.hdr)
			if status != http.StatusForbidden {
				t.Fatalf("got %d %s, want 403", status, body)
			}
			if strings.Contains(string(body), "token") && strings.Contains(string(body), "eyJ") {
				t.Fatalf("the answer carries a token: %s", body)
			}
		})
	}

	// The page itself (same origin, under any loopback name) gets a token.
	var tok string
	for _, host := range []string{browserHost, "localhost" + port, "[::1]" + port} {
		status, body := send(t, http.MethodPost, devToken, host, map[string]string{"Origin": "http://" + host})
		if status != http.StatusOK {
			t.Fatalf("POST dev-token as the page on %s: got %d %s, want 200", host, status, body)
		}
		var got struct{ Token string }
		if err := json.Unmarshal(body, &got); err != nil || got.Token == "" {
			t.Fatalf("dev-token answer %s: %v", body, err)
		}
		tok = got.Token
	}
	// Discovery takes the dev token ...
	if status, body := send(t, http.MethodGet, browserBase+"/api/tables", "", map[string]string{"Authorization": "Bearer " + tok}); status != http.StatusOK {
		t.Fatalf("browser tables with the dev token: got %d %s, want 200", status, body)
	}
	// ... the registration API does not, not even to read.
	for _, method := range []string{http.MethodDelete, http.MethodGet} {
		status, body := send(t, method, orders, "", map[string]string{"Authorization": "Bearer " + tok, "X-Lake-Request": "1"})
		if status != http.StatusUnauthorized && status != http.StatusForbidden {
			t.Fatalf("%s with the browser's dev token: got %d %s, want 401 or 403", method, status, body)
		}
	}
	if status, body := send(t, http.MethodPost, ep.API+"/v1/refresh", "", map[string]string{"Authorization": "Bearer " + tok, "X-Lake-Request": "1"}); status != http.StatusUnauthorized {
		t.Fatalf("refresh with the browser's dev token: got %d %s, want 401", status, body)
	}
	// The table is still there, and a write token (the lake command's) still
	// writes.
	write := token(t, in, "acme")
	if status, body := send(t, http.MethodGet, orders, "", map[string]string{"Authorization": "Bearer " + write}); status != http.StatusOK {
		t.Fatalf("GET orders with a write token: got %d %s, want 200", status, body)
	}
	if status, body := send(t, http.MethodDelete, orders, "", map[string]string{"Authorization": "Bearer " + write, "X-Lake-Request": "1"}); status != http.StatusNoContent {
		t.Fatalf("DELETE orders with a write token: got %d %s, want 204", status, body)
	}
}

// The browser mints tokens for anyone who can reach it: on an address that
// is not loopback local mode refuses to start unless told so explicitly,
// and then warns.
func TestRemoteBrowserNeedsExplicitConsent(t *testing.T) {
	base := local.Config{APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", RefreshInterval: time.Hour}
	for _, listen := range []string{"0.0.0.0:0", ":0"} {
		cfg := base
		cfg.DataDir, cfg.BrowserListen, cfg.Log = filepath.Join(t.TempDir(), "data"), listen, slog.New(slog.DiscardHandler)
		in, err := local.Start(context.Background(), cfg)
		if err == nil {
			in.Close()
			t.Fatalf("browser on %s: started, want a refusal", listen)
		}
		if !strings.Contains(err.Error(), "--allow-remote-browser") {
			t.Fatalf("browser on %s: got %v, want it to name --allow-remote-browser", listen, err)
		}
	}
	var logs strings.Builder
	cfg := base
	cfg.DataDir, cfg.BrowserListen, cfg.AllowRemoteBrowser = filepath.Join(t.TempDir(), "data"), "0.0.0.0:0", true
	cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	in, err := local.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "dev tokens") {
		t.Fatalf("got log %q, want a warning about dev tokens", logs.String())
	}
}

// A request carrying a bearer token needs no X-Lake-Request: a page of
// another site cannot send Authorization without a CORS preflight, which
// local mode never grants, and no browser sends a bearer token by itself.
// So curl, Python requests and SDKs write with the token alone, as on AWS
// (issue 38, finding 9). A request with no credentials, or with only a
// cookie, still needs a same-site Origin or the header; a bearer token
// from a cross-site Origin is still refused.
func TestBearerRequestsNeedNoRequestHeader(t *testing.T) {
	in := startWithBrowser(t)
	ep := in.Endpoints()
	browserBase := strings.TrimSuffix(ep.Browser, "/")
	browserHost := strings.TrimPrefix(browserBase, "http://")
	write := token(t, in, "acme")
	bearer := "Bearer " + write
	orders := ep.API + "/v1/tenants/acme/namespaces/sales/tables/orders"

	tests := []struct {
		name, method, url string
		hdr               map[string]string
		want              int
	}{
		{"refresh with a bearer token alone", http.MethodPost, ep.API + "/v1/refresh", map[string]string{"Authorization": bearer}, http.StatusOK},
		{"refresh with a lower-case scheme", http.MethodPost, ep.API + "/v1/refresh", map[string]string{"Authorization": "bearer " + write}, http.StatusOK},
		{"refresh with a bad bearer token reaches the API (401)", http.MethodPost, ep.API + "/v1/refresh", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"refresh with no credentials", http.MethodPost, ep.API + "/v1/refresh", nil, http.StatusForbidden},
		{"refresh with a cookie alone", http.MethodPost, ep.API + "/v1/refresh", map[string]string{"Cookie": "session=1"}, http.StatusForbidden},
		{"refresh with an empty bearer", http.MethodPost, ep.API + "/v1/refresh", map[string]string{"Authorization": "Bearer "}, http.StatusForbidden},
		{"refresh with Basic credentials (a browser may send them by itself)", http.MethodPost, ep.API + "/v1/refresh", map[string]string{"Authorization": "Basic YWNtZTp4"}, http.StatusForbidden},
		{"a bearer token from another site", http.MethodDelete, orders, map[string]string{"Authorization": bearer, "Origin": "https://attacker.example"}, http.StatusForbidden},
		{"dev token with no credentials", http.MethodPost, browserBase + "/api/dev-token?tenant=acme", nil, http.StatusForbidden},
		{"delete with a bearer token alone", http.MethodDelete, orders, map[string]string{"Authorization": bearer}, http.StatusNoContent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := ""
			if strings.HasPrefix(tc.url, browserBase) {
				host = browserHost
			}
			status, body := send(t, tc.method, tc.url, host, tc.hdr)
			if status != tc.want {
				t.Fatalf("got %d %s, want %d", status, body, tc.want)
			}
			if tc.want == http.StatusForbidden && !strings.Contains(string(body), "cross_origin") {
				t.Errorf("got %s, want a cross_origin refusal", body)
			}
		})
	}
}
