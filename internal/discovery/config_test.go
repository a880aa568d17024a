package discovery

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	secret := map[string]string{"LAKE_JWT_HS256_SECRET": "0123456789abcdef0123456789abcdef"}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(ProgramConfig) bool
		wantErr string
	}{
		{name: "defaults", args: []string{"-snapshot", "s3://b/k"}, env: secret, check: func(c ProgramConfig) bool {
			return c.Listen == ":50051" && c.HTTPListen == ":8080" && c.AdminListen == "127.0.0.1:8081" && c.PollInterval == 10*time.Second && c.ShutdownGrace == 20*time.Second &&
				c.BatchBytes == DefaultBatchBytes && c.TenantClaim == "tenant" && !c.S3PathStyle && c.HS256Secret != ""
		}},
		{name: "every env variable", env: map[string]string{
			"LAKE_SNAPSHOT": "/data/blob", "LAKE_LISTEN": ":1", "LAKE_HTTP_LISTEN": "-", "LAKE_ADMIN_LISTEN": "-", "LAKE_POLL_INTERVAL": "2s", "LAKE_SHUTDOWN_GRACE": "1s",
			"LAKE_JWKS_FILE": "/keys.json", "LAKE_JWT_ISSUER": "iss", "LAKE_JWT_AUDIENCE": "aud", "LAKE_TENANT_CLAIM": "org",
			"LAKE_BATCH_BYTES": "65536", "LAKE_S3_PATH_STYLE": "true", "LAKE_TLS_CERT": "c.pem", "LAKE_TLS_KEY": "k.pem",
		}, check: func(c ProgramConfig) bool {
			return c.Snapshot == "/data/blob" && c.Listen == ":1" && c.HTTPListen == "" && c.AdminListen == "" && c.PollInterval == 2*time.Second &&
				c.ShutdownGrace == time.Second && c.JWKSFile == "/keys.json" && c.Issuer == "iss" && c.Audience == "aud" &&
				c.TenantClaim == "org" && c.BatchBytes == 65536 && c.S3PathStyle && c.TLSCert == "c.pem" && c.TLSKey == "k.pem"
		}},
		{name: "a flag wins over its variable", args: []string{"-batch-bytes", "8192", "-snapshot", "x"},
			env: map[string]string{"LAKE_BATCH_BYTES": "65536", "LAKE_JWKS_FILE": "k"}, check: func(c ProgramConfig) bool { return c.BatchBytes == 8192 }},
		{name: "cache bytes", args: []string{"-snapshot", "x", "-cache-bytes", "1048576"}, env: secret, check: func(c ProgramConfig) bool { return c.CacheBytes == 1<<20 }},
		{name: "cache bytes negative", args: []string{"-snapshot", "x", "-cache-bytes", "-1"}, env: secret, wantErr: `-cache-bytes "-1"`},
		{name: "admin on the health address", args: []string{"-snapshot", "x", "-http-listen", ":9000", "-admin-listen", ":9000"}, env: secret, wantErr: "must differ from -http-listen"},
		{name: "no snapshot", env: secret, wantErr: "-snapshot (LAKE_SNAPSHOT) is required"},
		{name: "no keys", args: []string{"-snapshot", "x"}, wantErr: "configure token validation"},
		{name: "short poll", args: []string{"-snapshot", "x", "-poll-interval", "10ms"}, env: secret, wantErr: "at least 100ms"},
		{name: "bad grace", args: []string{"-snapshot", "x", "-shutdown-grace", "soon"}, env: secret, wantErr: `-shutdown-grace "soon"`},
		{name: "batch too big", args: []string{"-snapshot", "x", "-batch-bytes", "8388608"}, env: secret, wantErr: "from 4096 to 3145728"},
		{name: "batch not a number", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_BATCH_BYTES": "1MiB"}, wantErr: `-batch-bytes "1MiB"`},
		{name: "path style not a bool", env: map[string]string{"LAKE_SNAPSHOT": "x", "LAKE_JWKS_FILE": "k", "LAKE_S3_PATH_STYLE": "yes please"}, wantErr: "want true or false"},
		{name: "cert without key", args: []string{"-snapshot", "x", "-tls-cert", "c.pem"}, env: secret, wantErr: "go together"},
		{name: "stray argument", args: []string{"-snapshot", "x", "serve"}, env: secret, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"-listne", ":1"}, env: secret, wantErr: "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
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
	if _, err := ParseConfig([]string{"-h"}, func(string) string { return "" }, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
}

// Main reports a configuration error as one JSON line on stdout and exit
// code 2, and -h as exit code 0 with the flags on stderr.
func TestMainConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name              string
		args              []string
		wantCode          int
		wantOut, wantErrW string
	}{
		{name: "no snapshot", args: nil, wantCode: 2, wantOut: `"error":"-snapshot (LAKE_SNAPSHOT) is required`},
		{name: "bad blob URI", args: []string{"-snapshot", "gs://b/k", "-http-listen", "-", "-listen", "127.0.0.1:0"}, wantCode: 1, wantOut: `unsupported scheme`},
		{name: "help", args: []string{"-h"}, wantCode: 0, wantErrW: "LAKE_BATCH_BYTES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
