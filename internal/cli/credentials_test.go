package cli_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/wire"
)

// nastySecret holds what a careless --export would let a shell run or
// expand: quotes, $, backslashes, backticks, a newline.
const nastySecret = "it's $HOME and $(id) `id` \\' \"q\" \n'; echo pwned; '"

// fixedSTS stands in for STS: every AssumeRole answers nastySecret.
type fixedSTS struct{}

func (fixedSTS) AssumeRole(_ context.Context, in vending.AssumeInput) (vending.Credentials, error) {
	return vending.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: nastySecret, SessionToken: "tok'en$",
		Expiration: time.Now().Add(in.Duration)}, nil
}

// startVending serves the registration API with a vending.Door over
// fixedSTS (Region eu-west-1, local paths under dataRoot; no vendor and
// no hint unless vend) and the
// tenant's and operator's token checks local mode makes, and returns the
// lake command run against it, signing with tokenSecret.
func startVending(t *testing.T, dataRoot string, vend bool) *lake {
	t.Helper()
	v, err := auth.New(auth.Config{HS256Secret: []byte(tokenSecret)})
	if err != nil {
		t.Fatal(err)
	}
	identity := func(r *http.Request) (auth.Identity, error) {
		tok, ok := auth.BearerToken(r.Header.Get("Authorization"))
		if !ok {
			return auth.Identity{}, registerapi.ErrUnauthenticated
		}
		id, err := v.Identity(tok)
		if err != nil {
			return auth.Identity{}, registerapi.ErrUnauthenticated
		}
		return id, nil
	}
	vendor, err := vending.New(fixedSTS{}, vending.NewGuard(nil), vending.Options{RoleARN: "arn:aws:iam::123456789012:role/r"})
	if err != nil {
		t.Fatal(err)
	}
	door := &vending.Door{Region: "eu-west-1", DataRoot: dataRoot}
	if vend {
		door.Vendor = vendor
	}
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{
		Authorize: func(r *http.Request, tenant string) (string, error) {
			id, err := identity(r)
			if err != nil || id.Tenant == tenant {
				return id.Subject, err
			}
			return "", registerapi.ErrUnauthenticated
		},
		AuthorizeAdmin: func(r *http.Request, _ string) (string, error) {
			id, err := identity(r)
			if err == nil && !slices.Contains(id.Audience, local.AdminAudience) {
				return "", registerapi.ErrUnauthenticated
			}
			return id.Subject, err
		},
		Door: door,
		Log:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &lake{t: t, env: map[string]string{"LAKE_API": srv.URL, "LAKE_JWT_HS256_SECRET": tokenSecret, "LAKE_AS": "alice"}}
}

// registerAt registers acme/sales/<name> at location through the API.
func (l *lake) registerAt(name, location string) {
	l.t.Helper()
	tok, err := auth.IssueHS256([]byte(tokenSecret), auth.TokenClaims{Tenant: "acme", TTL: time.Hour, Now: time.Now()})
	if err != nil {
		l.t.Fatal(err)
	}
	c, err := apiclient.New(l.env["LAKE_API"], apiclient.Options{Token: tok})
	if err != nil {
		l.t.Fatal(err)
	}
	s, err := catalog.EncodeSchema(ordersSchema)
	if err != nil {
		l.t.Fatal(err)
	}
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: name}
	if _, _, err := c.Register(context.Background(), ref, apiclient.Spec{Location: location, SchemaIPC: s}); err != nil {
		l.t.Fatal(err)
	}
}

// evalExport runs a POSIX shell that evals script as
// eval "$(cat file)" does and prints the named variables, each ended by a
// NUL.
func evalExport(t *testing.T, script string, names ...string) []string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	file := filepath.Join(t.TempDir(), "export.sh")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	print := ""
	for _, n := range names {
		print += `printf '%s\0' "$` + n + `"; `
	}
	cmd := exec.Command(sh, "-c", `AWS_SESSION_TOKEN=stale; eval "$(cat "$1")"; `+print, "sh", file)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh: %v: %s", err, out)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// lake credentials against a registration API that vends: the default
// output names the location, key id and expiry but not the secret;
// --export is eval-able and every value round-trips whatever its bytes;
// --json is the API's answer; a location outside the allowed prefixes is
// refused with the API's reason and a hint, exit 1.
func TestCredentialsCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "acme", "local", "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := startVending(t, root, true)
	l.registerAt("orders", "s3://data/acme/orders/")
	l.registerAt("outside", "s3://elsewhere/x/")
	l.registerAt("local", "file://"+filepath.Join(root, "acme", "local", "t")+"/")
	ref := []string{"--tenant", "acme", "-n", "sales"}

	// Nothing is allowed yet: the 403's reason and what to do.
	_, stderr, code := l.run(append(ref, "credentials", "-t", "orders")...)
	if code != 1 || stderr != `lake: acme/sales/orders: location not allowed for vending: tenant "acme": location "s3://data/acme/orders/": location is not under a prefix allowed for the tenant`+
		"\nhint: ask an operator: lake tenant allow-prefix acme <prefix>\n" {
		t.Fatalf("credentials before any prefix is allowed: exit %d, %q", code, stderr)
	}
	l.must("tenant", "allow-prefix", "acme", "s3://data/acme/")
	if _, stderr, code := l.run(append(ref, "credentials", "-t", "outside", "--export")...); code != 1 ||
		!strings.Contains(stderr, `location "s3://elsewhere/x/": location is not under a prefix allowed for the tenant`) || !strings.HasSuffix(stderr, "\nhint: ask an operator: lake tenant allow-prefix acme <prefix>\n") {
		t.Fatalf("credentials outside the allowed prefixes: exit %d, %q", code, stderr)
	}

	out, stderr, code := l.run(append(ref, "credentials", "-t", "orders")...)
	if code != 0 || !strings.HasPrefix(out, "acme/sales/orders\n  location  s3://data/acme/orders/\n  access    vended: ") ||
		!strings.Contains(out, "  key id    ASIAEXAMPLE\n") || !strings.Contains(out, "  region    eu-west-1\n") ||
		!regexp.MustCompile(` \(in 1[45]m\d+s\)\n`).MatchString(out) || strings.Contains(out, "$HOME") || strings.Contains(out, "tok'en") {
		t.Fatalf("credentials: exit %d\n%s%s", code, out, stderr)
	}

	script := l.must(append(ref, "credentials", "-t", "orders", "--export")...)
	if !strings.HasPrefix(script, "# lake credentials for acme/sales/orders: s3://data/acme/orders/, expires ") {
		t.Fatalf("--export starts %q", script)
	}
	got := evalExport(t, script, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION")
	if want := []string{"ASIAEXAMPLE", nastySecret, "tok'en$", "eu-west-1"}; !slices.Equal(got, want) {
		t.Fatalf("eval of --export set %q, want %q\n%s", got, want, script)
	}

	var c wire.Credentials
	if err := json.Unmarshal([]byte(l.must(append(ref, "credentials", "-t", "orders", "--json")...)), &c); err != nil ||
		c.Access != wire.AccessVended || c.SecretAccessKey != nastySecret || c.Location != "s3://data/acme/orders/" {
		t.Fatalf("--json: %+v, %v", c, err)
	}

	// A local path under the data root is its own access.
	script = l.must(append(ref, "credentials", "-t", "local", "--export")...)
	got = evalExport(t, script, "LAKE_TABLE_PATH", "AWS_SECRET_ACCESS_KEY")
	if want := []string{filepath.Join(root, "acme", "local", "t") + "/", ""}; !slices.Equal(got, want) {
		t.Fatalf("eval of a path's --export set %q, want %q\n%s", got, want, script)
	}
	if out := l.must(append(ref, "credentials", "-t", "local")...); !strings.Contains(out, "  access    path\n") || !strings.Contains(out, "  note      the path is the access") {
		t.Fatalf("credentials of a local path:\n%s", out)
	}
	if _, stderr, code := l.run(append(ref, "credentials", "-t", "orders", "--export", "--json")...); code == 0 || !strings.Contains(stderr, "none of the others can be") {
		t.Fatalf("--export with --json: exit %d, %q", code, stderr)
	}
}

// A deployment without a data-reader role vends nothing: a location an
// operator allowed is 501, with lake's hint when the API gave none and
// without it when it did (local mode names its flags itself), so the
// way to configure it is said once.
func TestCredentialsNotConfigured(t *testing.T) {
	t.Parallel()
	l := startVending(t, "", false)
	l.registerAt("orders", "s3://data/acme/orders/")
	l.must("tenant", "allow-prefix", "acme", "s3://data/acme/")
	if _, stderr, code := l.run("credentials", "--tenant", "acme", "-n", "sales", "-t", "orders"); code != 1 ||
		stderr != "lake: acme/sales/orders: credential vending is not configured\nhint: start lake local with --vending-role-arn … or deploy with data buckets\n" {
		t.Fatalf("credentials without vending: exit %d, %q", code, stderr)
	}

	local := startLocal(t)
	local.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://data/acme/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema))
	local.must("tenant", "allow-prefix", "acme", "s3://data/acme/")
	_, stderr, code := local.run("credentials", "--tenant", "acme", "-n", "sales", "-t", "orders")
	if code != 1 || !strings.HasPrefix(stderr, "lake: acme/sales/orders: credential vending is not configured") || strings.Count(stderr, "--vending-role-arn") != 1 {
		t.Fatalf("local mode without vending: exit %d, %q", code, stderr)
	}
}
