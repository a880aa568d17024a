package cli_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/cli"
	"github.com/lake-catalog/lake/internal/local"
)

// `lake token --ttl` is bounded by the longest lifetime discovery accepts
// by default (auth.DefaultMaxLifetime, 24 h), so the command never prints a
// token that validation would refuse; at the bound the token validates.
func TestTokenTTLBoundedByMaxLifetime(t *testing.T) {
	t.Parallel()
	v := tokenValidator(t)
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string // the whole of stderr; "" for a token
	}{
		{"default", nil, ""},
		{"an hour", []string{"--ttl", "1h"}, ""},
		{"at the bound", []string{"--ttl", "24h"}, ""},
		{"a second over", []string{"--ttl", "24h0m1s"}, "lake: --ttl 24h0m1s: at most 24h0m0s; discovery refuses tokens that live longer\n"},
		{"a year", []string{"--ttl", "8760h"}, "lake: --ttl 8760h0m0s: at most 24h0m0s; discovery refuses tokens that live longer\n"},
		{"zero", []string{"--ttl", "0s"}, "lake: --ttl 0s: a token must be valid for some time\n"},
		{"negative", []string{"--ttl", "-1h"}, "lake: --ttl -1h0m0s: a token must be valid for some time\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runToken(nil, tt.args...)
			if tt.wantErr != "" {
				if code != 1 || errOut != tt.wantErr || out != "" {
					t.Fatalf("got exit %d, stdout %q, stderr %q; want exit 1, no token, stderr %q", code, out, errOut, tt.wantErr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("got exit %d (%s), want 0", code, errOut)
			}
			if tenant, err := v.Tenant(strings.TrimSpace(out)); err != nil || tenant != "acme" {
				t.Fatalf("got %q, %v from the printed token; want acme", tenant, err)
			}
		})
	}
}

// A printed token's subject is --as (or LAKE_AS) when given, else the
// tenant: never the OS user who printed it, since the token is handed on.
func TestTokenSubject(t *testing.T) {
	t.Parallel()
	v := tokenValidator(t)
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"default", nil, nil, "acme"},
		{"--as", nil, []string{"--as", "etl-job"}, "etl-job"},
		{"LAKE_AS", map[string]string{"LAKE_AS": "bob"}, nil, "bob"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runToken(tt.env, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if id, err := v.Identity(strings.TrimSpace(out)); err != nil || id.Subject != tt.want {
				t.Fatalf("subject %q, %v; want %q", id.Subject, err, tt.want)
			}
		})
	}
}

// lake token --admin prints an operator's token: aud and tenant
// lake-admin (local.AdminAudience, local.AdminTenant), subject --as or
// else lake-admin; --tenant is not needed.
func TestTokenAdmin(t *testing.T) {
	t.Parallel()
	v := tokenValidator(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"default", []string{"token", "--admin"}, local.AdminTenant},
		{"--as", []string{"token", "--admin", "--as", "ops"}, "ops"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			f := cli.NewFactory(func(k string) string { return map[string]string{"LAKE_JWT_HS256_SECRET": tokenSecret}[k] }, &out, &errOut)
			if code := cli.Run(context.Background(), f, tt.args); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			id, err := v.Identity(strings.TrimSpace(out.String()))
			if err != nil || id.Tenant != local.AdminTenant || id.Subject != tt.want || !slices.Equal(id.Audience, []string{local.AdminAudience}) {
				t.Fatalf("got %+v, %v; want tenant and aud %s, subject %s", id, err, local.AdminAudience, tt.want)
			}
		})
	}
}

// tokenSecret signs the tokens `lake token` prints in these tests.
const tokenSecret = "0123456789abcdef0123456789abcdef"

// tokenValidator validates tokens signed with tokenSecret.
func tokenValidator(t *testing.T) *auth.Validator {
	t.Helper()
	v, err := auth.New(auth.Config{HS256Secret: []byte(tokenSecret)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// runToken runs `lake token --tenant acme args...` with tokenSecret and
// env in its environment, and returns its exit code, stdout and stderr.
func runToken(env map[string]string, args ...string) (int, string, string) {
	all := map[string]string{"LAKE_JWT_HS256_SECRET": tokenSecret}
	maps.Copy(all, env)
	var out, errOut bytes.Buffer
	f := cli.NewFactory(func(k string) string { return all[k] }, &out, &errOut)
	code := cli.Run(context.Background(), f, append([]string{"token", "--tenant", "acme"}, args...))
	return code, out.String(), errOut.String()
}
