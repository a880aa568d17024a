package program

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/discovery"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	secret := map[string]string{"LAKE_JWT_HS256_SECRET": "0123456789abcdef0123456789abcdef"}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(Flags) bool
		wantErr string
	}{
		{name: "defaults", args: []string{"-snapshot", "s3://b/k"}, env: secret, check: func(c Flags) bool {
			return c.Listen == ":50051" && c.HTTPListen == ":8080" && c.AdminListen == "127.0.0.1:8081" && c.PollInterval == 2*time.Second && c.MaxStaleness == 5*time.Minute && c.ShutdownGrace == 20*time.Second && c.SegmentRetryMax == discovery.DefaultSegmentRetryMax &&
				c.BatchBytes == discovery.DefaultBatchBytes && c.TenantClaim == "tenant" && !c.S3PathStyle && c.HS256Secret != "" &&
				c.JWKSURL == "" && c.JWKSRefresh == auth.DefaultJWKSRefresh && c.MaxLifetime == auth.DefaultMaxLifetime && c.BrowserListen == ""
		}},
		{name: "browser listen", args: []string{"-snapshot", "x", "-browser-listen", "10.0.0.5:8443"}, env: secret, check: func(c Flags) bool { return c.BrowserListen == "10.0.0.5:8443" }},
		{name: "browser listen from the environment", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_BROWSER_LISTEN": ":8090"}, check: func(c Flags) bool { return c.BrowserListen == ":8090" }},
		{name: "browser listen dash is off", args: []string{"-snapshot", "x", "-browser-listen", "-"}, env: secret, check: func(c Flags) bool { return c.BrowserListen == "" }},
		{name: "every env variable", env: map[string]string{
			"LAKE_SNAPSHOT": "/data/blob", "LAKE_LISTEN": ":1", "LAKE_HTTP_LISTEN": "-", "LAKE_ADMIN_LISTEN": "-", "LAKE_POLL_INTERVAL": "2s", "LAKE_SHUTDOWN_GRACE": "1s",
			"LAKE_JWKS_FILE": "/keys.json", "LAKE_JWT_ISSUER": "iss", "LAKE_JWT_AUDIENCE": "aud", "LAKE_TENANT_CLAIM": "org",
			"LAKE_BATCH_BYTES": "65536", "LAKE_S3_PATH_STYLE": "true", "LAKE_TLS_CERT": "c.pem", "LAKE_TLS_KEY": "k.pem",
			"LAKE_JWKS_REFRESH": "5m", "LAKE_JWT_MAX_LIFETIME": "1h", "LAKE_MAX_STALENESS": "30s",
		}, check: func(c Flags) bool {
			return c.Snapshot == "/data/blob" && c.Listen == ":1" && c.HTTPListen == "" && c.AdminListen == "" && c.PollInterval == 2*time.Second &&
				c.ShutdownGrace == time.Second && c.JWKSFile == "/keys.json" && c.Issuer == "iss" && c.Audience == "aud" &&
				c.TenantClaim == "org" && c.BatchBytes == 65536 && c.S3PathStyle && c.TLSCert == "c.pem" && c.TLSKey == "k.pem" &&
				c.JWKSRefresh == 5*time.Minute && c.MaxLifetime == time.Hour && c.MaxStaleness == 30*time.Second
		}},
		{name: "jwks url from the environment", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_URL": "https://idp.example.com/jwks", "LAKE_JWT_AUDIENCE": "lake"},
			check: func(c Flags) bool {
				return c.JWKSURL == "https://idp.example.com/jwks" && c.JWKSFile == "" && c.JWKSRefresh == auth.DefaultJWKSRefresh
			}},
		{name: "jwks url, refresh and max lifetime flags", args: []string{"-snapshot", "x", "-jwks-url", "http://127.0.0.1:9000/jwks", "-jwks-refresh", "1m", "-jwt-max-lifetime", "30m"},
			check: func(c Flags) bool {
				return c.JWKSURL == "http://127.0.0.1:9000/jwks" && c.JWKSRefresh == time.Minute && c.MaxLifetime == 30*time.Minute
			}},
		{name: "jwks url and file", args: []string{"-snapshot", "x", "-jwks-url", "https://idp.example.com/jwks", "-jwks-file", "k.json"}, wantErr: "-jwks-url and -jwks-file exclude each other"},
		{name: "jwks url in cleartext", args: []string{"-snapshot", "x", "-jwks-url", "http://idp.example.com/jwks"}, wantErr: "http is accepted only to a loopback host; use https"},
		{name: "jwks url not absolute", args: []string{"-snapshot", "x", "-jwks-url", "idp.example.com/jwks"}, wantErr: "-jwks-url: auth: JWKS URL \"idp.example.com/jwks\": want an absolute URL"},
		{name: "jwks refresh under a minute", args: []string{"-snapshot", "x", "-jwks-refresh", "30s"}, env: secret, wantErr: `-jwks-refresh "30s": want a duration of at least 1m0s`},
		{name: "jwks refresh not a duration", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_JWKS_REFRESH": "hourly"}, wantErr: `-jwks-refresh "hourly"`},
		{name: "max lifetime zero", args: []string{"-snapshot", "x", "-jwt-max-lifetime", "0s"}, env: secret, wantErr: `-jwt-max-lifetime "0s": want a duration of more than zero`},
		{name: "max lifetime negative", args: []string{"-snapshot", "x", "-jwt-max-lifetime", "-1h"}, env: secret, wantErr: `-jwt-max-lifetime "-1h"`},
		{name: "max lifetime not a duration", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_JWT_MAX_LIFETIME": "1d"}, wantErr: `-jwt-max-lifetime "1d"`},
		{name: "a flag wins over its variable", args: []string{"-batch-bytes", "8192", "-snapshot", "x"},
			env: map[string]string{"LAKE_BATCH_BYTES": "65536", "LAKE_JWKS_FILE": "k"}, check: func(c Flags) bool { return c.BatchBytes == 8192 }},
		{name: "cache bytes", args: []string{"-snapshot", "x", "-cache-bytes", "1048576"}, env: secret, check: func(c Flags) bool { return c.CacheBytes == 1<<20 }},
		{name: "cache bytes negative", args: []string{"-snapshot", "x", "-cache-bytes", "-1"}, env: secret, wantErr: `-cache-bytes "-1"`},
		{name: "admin on the health address", args: []string{"-snapshot", "x", "-http-listen", ":9000", "-admin-listen", ":9000"}, env: secret, wantErr: "must differ from -http-listen"},
		{name: "browser on the health address", args: []string{"-snapshot", "x", "-http-listen", ":9000", "-browser-listen", ":9000"}, env: secret, wantErr: "-browser-listen \":9000\": must differ"},
		{name: "browser on the admin address", args: []string{"-snapshot", "x", "-browser-listen", "127.0.0.1:8081"}, env: secret, wantErr: "must differ from -http-listen and -admin-listen"},
		{name: "browser with TLS", args: []string{"-snapshot", "x", "-browser-listen", ":8090", "-tls-cert", "c.pem", "-tls-key", "k.pem"}, env: secret, wantErr: "-browser-listen with -tls-cert"},
		{name: "no snapshot", env: secret, wantErr: "-snapshot (LAKE_SNAPSHOT) is required"},
		{name: "no keys", args: []string{"-snapshot", "x"}, wantErr: "configure token validation"},
		{name: "segment retry max", args: []string{"-snapshot", "x", "-segment-retry-max", "5m"}, env: secret, check: func(c Flags) bool { return c.SegmentRetryMax == 5*time.Minute }},
		{name: "segment retry max from the environment", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_SEGMENT_RETRY_MAX": "10s"},
			check: func(c Flags) bool { return c.SegmentRetryMax == 10*time.Second }},
		{name: "segment retry max under the poll", args: []string{"-snapshot", "x", "-poll-interval", "5s", "-segment-retry-max", "1s"}, env: secret,
			wantErr: `-segment-retry-max "1s": want a duration of at least -poll-interval (5s)`},
		{name: "short poll", args: []string{"-snapshot", "x", "-poll-interval", "10ms"}, env: secret, wantErr: "at least 100ms"},
		{name: "max staleness flag", args: []string{"-snapshot", "x", "-poll-interval", "1s", "-max-staleness", "1500ms"}, env: secret,
			check: func(c Flags) bool {
				return c.PollInterval == time.Second && c.MaxStaleness == 1500*time.Millisecond
			}},
		{name: "max staleness zero disables", args: []string{"-snapshot", "x", "-max-staleness", "0"}, env: secret,
			check: func(c Flags) bool { return c.MaxStaleness == 0 }},
		{name: "max staleness default follows a long poll", args: []string{"-snapshot", "x", "-poll-interval", "1h"}, env: secret,
			check: func(c Flags) bool { return c.PollInterval == time.Hour && c.MaxStaleness == 3*time.Hour }},
		{name: "max staleness equal to the poll", args: []string{"-snapshot", "x", "-poll-interval", "5s", "-max-staleness", "5s"}, env: secret,
			wantErr: `-max-staleness "5s": want a duration of more than -poll-interval (5s)`},
		{name: "max staleness under the default poll", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_MAX_STALENESS": "1s"},
			wantErr: `-max-staleness "1s": want a duration of more than -poll-interval (2s)`},
		{name: "max staleness negative", args: []string{"-snapshot", "x", "-max-staleness", "-5m"}, env: secret, wantErr: `-max-staleness "-5m"`},
		{name: "max staleness not a duration", args: []string{"-snapshot", "x", "-max-staleness", "-"}, env: secret, wantErr: `-max-staleness "-"`},
		{name: "bad grace", args: []string{"-snapshot", "x", "-shutdown-grace", "soon"}, env: secret, wantErr: `-shutdown-grace "soon"`},
		{name: "batch too big", args: []string{"-snapshot", "x", "-batch-bytes", "8388608"}, env: secret, wantErr: "from 4096 to 3145728"},
		{name: "batch not a number", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_BATCH_BYTES": "1MiB"}, wantErr: `-batch-bytes "1MiB"`},
		{name: "path style not a bool", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_S3_PATH_STYLE": "yes please"}, wantErr: "want true or false"},
		{name: "cert without key", args: []string{"-snapshot", "x", "-tls-cert", "c.pem"}, env: secret, wantErr: "go together"},
		{name: "stray argument", args: []string{"-snapshot", "x", "serve"}, env: secret, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"-listne", ":1"}, env: secret, wantErr: "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseFlags(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want an error containing %q", c, err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("got %+v, %v", c, err)
			}
		})
	}
	if _, err := ParseFlags([]string{"-h"}, func(string) string { return "" }, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
}

// Main reports a configuration error as one JSON line on stdout and exit
// code 2, and -h as exit code 0 with the flags on stderr.
func TestMainConfiguration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		args              []string
		wantCode          int
		wantOut, wantErrW string
	}{
		{name: "no snapshot", args: nil, wantCode: 2, wantOut: `"error":"-snapshot (LAKE_SNAPSHOT) is required`},
		{name: "bad blob URI", args: []string{"-snapshot", "gs://b/k", "-http-listen", "-", "-admin-listen", "-", "-listen", "127.0.0.1:0"}, wantCode: 1, wantOut: `unsupported scheme`},
		{name: "help", args: []string{"-h"}, wantCode: 0, wantErrW: "LAKE_BATCH_BYTES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr strings.Builder
			env := map[string]string{"LAKE_JWT_HS256_SECRET": "0123456789abcdef0123456789abcdef"}
			code := Main(t.Context(), tc.args, func(k string) string { return env[k] }, &stdout, &stderr)
			if code != tc.wantCode || !strings.Contains(stdout.String(), tc.wantOut) || !strings.Contains(stderr.String(), tc.wantErrW) {
				t.Fatalf("got exit %d, stdout %q, stderr %q; want exit %d, stdout containing %q, stderr containing %q",
					code, stdout.String(), stderr.String(), tc.wantCode, tc.wantOut, tc.wantErrW)
			}
		})
	}
}

// authConfig carries the token flags into auth.Config: the JWKS URL, its
// refresh and the maximum lifetime as given, the files read, and a failed
// JWKS refresh logged as one JSON line.
func TestAuthConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jwksFile, secretFile := filepath.Join(dir, "jwks.json"), filepath.Join(dir, "secret")
	jwks := []byte(`{"keys":[]}`)
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(auth.Config) bool
		wantErr string
	}{
		{name: "jwks url", args: []string{"-jwks-url", "https://idp.example.com/jwks", "-jwks-refresh", "2m", "-jwt-max-lifetime", "1h", "-jwt-audience", "lake"},
			check: func(c auth.Config) bool {
				return c.JWKSURL == "https://idp.example.com/jwks" && c.JWKSRefresh == 2*time.Minute && c.MaxLifetime == time.Hour &&
					c.Audience == "lake" && c.JWKSRefreshError != nil && c.JWKS == nil && c.HS256Secret == nil
			}},
		{name: "files", args: []string{"-jwks-file", jwksFile, "-jwt-hs256-secret-file", secretFile},
			check: func(c auth.Config) bool {
				return c.JWKSURL == "" && c.JWKSRefreshError == nil && string(c.JWKS) == string(jwks) &&
					string(c.HS256Secret) == "0123456789abcdef0123456789abcdef" && c.MaxLifetime == auth.DefaultMaxLifetime
			}},
		{name: "missing jwks file", args: []string{"-jwks-file", filepath.Join(dir, "none.json")}, wantErr: "read the JWKS: "},
		{name: "missing secret file", args: []string{"-jwt-hs256-secret-file", filepath.Join(dir, "none")}, wantErr: "read the HS256 secret: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pc, err := ParseFlags(append([]string{"-snapshot", "x"}, tc.args...), func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			got, err := pc.authConfig(slog.New(slog.NewJSONHandler(&logs, nil)))
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(got) {
				t.Fatalf("got %+v, %v", got, err)
			}
			if got.JWKSRefreshError == nil {
				return
			}
			got.JWKSRefreshError(errors.New("auth: refresh the JWKS from https://idp.example.com/jwks (the last keys stay): invalid HTTP status code: 503"))
			if want := `"level":"ERROR","msg":"discovery: JWKS refresh","error":"auth: refresh the JWKS from https://idp.example.com/jwks (the last keys stay): invalid HTTP status code: 503"}`; !strings.Contains(logs.String(), want) {
				t.Fatalf("got log %q, want it to contain %q", logs.String(), want)
			}
		})
	}
}

// Main fetches a JWKS URL before it opens the blob: a URL that answers
// lets start-up go on (to the blob, which fails here), one that does not
// stops the program with exit code 1 and the reason.
func TestMainFetchesJWKSURL(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.PublicKey.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	raw, b64 := pub.Bytes(), base64.RawURLEncoding.EncodeToString
	jwks := fmt.Sprintf(`{"keys":[{"kty":"EC","kid":"k1","alg":"ES256","crv":"P-256","x":%q,"y":%q}]}`, b64(raw[1:33]), b64(raw[33:]))
	var fetches atomic.Int32
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = io.WriteString(w, jwks)
	}))
	t.Cleanup(idp.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, tc := range []struct {
		name        string
		url         string
		wantOut     string
		wantFetches int32
	}{
		{"fetched, then the blob fails", idp.URL, "unsupported scheme", 1},
		{"cannot be fetched", down.URL, `"error":"auth: fetch the JWKS from ` + down.URL + `: `, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fetches.Store(0)
			var stdout strings.Builder
			env := map[string]string{"LAKE_JWKS_URL": tc.url, "LAKE_JWT_AUDIENCE": "lake"}
			args := []string{"-snapshot", "gs://b/k", "-http-listen", "-", "-admin-listen", "-", "-listen", "127.0.0.1:0"}
			code := Main(t.Context(), args, func(k string) string { return env[k] }, &stdout, io.Discard)
			if code != 1 || !strings.Contains(stdout.String(), tc.wantOut) || fetches.Load() != tc.wantFetches {
				t.Fatalf("got exit %d, stdout %q, %d fetches; want exit 1, stdout containing %q, %d fetches",
					code, stdout.String(), fetches.Load(), tc.wantOut, tc.wantFetches)
			}
		})
	}
}

// loopbackFlight gives the browser an address it can dial: the listen
// address, with every interface replaced by loopback.
func TestLoopbackFlight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ listen, want string }{
		{"[::]:50051", "grpc://127.0.0.1:50051"},
		{"0.0.0.0:50051", "grpc://127.0.0.1:50051"},
		{":50051", "grpc://127.0.0.1:50051"},
		{"127.0.0.1:4000", "grpc://127.0.0.1:4000"},
		{"[::1]:4000", "grpc://[::1]:4000"},
		{"10.0.0.5:50051", "grpc://10.0.0.5:50051"},
	} {
		if got := loopbackFlight(tc.listen); got != tc.want {
			t.Errorf("loopbackFlight(%q): got %q, want %q", tc.listen, got, tc.want)
		}
	}
}

// The flag list in functions/discovery/main.go's doc names every flag
// ParseFlags defines (as -h prints them), and no other.
func TestMainDocListsEveryFlag(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(src), "\n") {
		line, ok := strings.CutPrefix(line, "//\t-")
		if !ok {
			continue
		}
		// "-tls-cert, -tls-key  LAKE_TLS_CERT, …": the names before the
		// first variable.
		for _, f := range strings.Fields(line) {
			f = strings.TrimSuffix(strings.TrimPrefix(f, "-"), ",")
			if strings.HasPrefix(f, "LAKE_") {
				break
			}
			documented[f] = true
		}
	}
	var usage strings.Builder
	if _, err := ParseFlags([]string{"-h"}, func(string) string { return "" }, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	defined := map[string]bool{}
	for _, line := range strings.Split(usage.String(), "\n") {
		if f, ok := strings.CutPrefix(line, "  -"); ok {
			defined[strings.Fields(f)[0]] = true
		}
	}
	for f := range defined {
		if !documented[f] {
			t.Errorf("-%s is a flag, missing from main.go's list", f)
		}
	}
	for f := range documented {
		if !defined[f] {
			t.Errorf("main.go lists -%s, which is no flag", f)
		}
	}
	if len(defined) < 20 {
		t.Fatalf("read %d flags from -h, want them all: %q", len(defined), usage.String())
	}
}
