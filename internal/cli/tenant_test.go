package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/wire"
)

// An operator's allowed prefixes through local mode: allow-prefix then
// show lists them (canonical, who changed them on stderr), disallow and
// set-prefixes change them, --json prints the API's body; a tenant's own
// token is refused (not_admin), an operator's printed token is taken.
func TestTenantCommands(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	out, stderr, code := l.run("tenant", "allow-prefix", "acme", "s3://data/acme", "s3://data/shared/")
	if code != 0 || out != "s3://data/acme/\ns3://data/shared/\n" || !strings.HasPrefix(stderr, "2 allowed prefixes for acme; changed by alice at ") {
		t.Fatalf("allow-prefix: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	out, stderr, code = l.run("tenant", "show", "acme")
	if code != 0 || out != "s3://data/acme/\ns3://data/shared/\n" || !strings.HasPrefix(stderr, "2 allowed prefixes for acme; changed by alice at ") {
		t.Fatalf("show: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if _, stderr, _ := l.run("tenant", "show", "globex"); stderr != "0 allowed prefixes for globex (never set: lake vends nothing for its tables)\n" {
		t.Fatalf("show of a tenant never set: stderr %q", stderr)
	}
	if out := l.must("tenant", "disallow-prefix", "acme", "s3://data/acme/", "--as", "bob"); out != "s3://data/shared/\n" {
		t.Fatalf("disallow-prefix printed %q", out)
	}
	var s wire.TenantSettings
	if err := json.Unmarshal([]byte(l.must("tenant", "show", "acme", "--json")), &s); err != nil ||
		s.Tenant != "acme" || len(s.AllowedPrefixes) != 1 || s.AllowedPrefixes[0] != "s3://data/shared/" || s.UpdatedBy != "bob" || s.UpdatedAt.IsZero() {
		t.Fatalf("show --json: %+v, %v", s, err)
	}
	if out := l.must("tenant", "set-prefixes", "acme", "s3://data/x/", "s3://data/y/"); out != "s3://data/x/\ns3://data/y/\n" {
		t.Fatalf("set-prefixes printed %q", out)
	}
	out, stderr, code = l.run("tenant", "set-prefixes", "acme")
	if code != 0 || out != "" || !strings.HasPrefix(stderr, "0 allowed prefixes for acme (lake vends nothing for its tables); changed by alice at ") {
		t.Fatalf("set-prefixes to none: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	// A prefix lake could never vend under is refused with the API's reason.
	if _, stderr, code := l.run("tenant", "allow-prefix", "acme", "s3://data/ok/", "s3://data"); code == 0 ||
		!strings.Contains(stderr, "allowed s3://data/ok/ before s3://data was refused\n") || !strings.Contains(stderr, "a whole bucket is not table-scoped") {
		t.Fatalf("allow-prefix of a whole bucket: exit %d, %q", code, stderr)
	}

	// A tenant's own token is not an operator's.
	tenantToken := strings.TrimSpace(l.must("token", "--tenant", "acme"))
	if _, stderr, code := l.run("tenant", "show", "acme", "--token", tenantToken); code == 0 ||
		!strings.HasPrefix(stderr, `lake: operators only: tenant "acme"'s settings are an operator's: the token is not an operator's (mint one with `+"`lake token --admin`)") {
		t.Fatalf("show with a tenant's token: exit %d, %q", code, stderr)
	}
	if _, stderr, code := l.run("tenant", "allow-prefix", "acme", "s3://data/z/", "--token", tenantToken); code == 0 || !strings.Contains(stderr, "operators only") {
		t.Fatalf("allow-prefix with a tenant's token: exit %d, %q", code, stderr)
	}
	// lake token --admin prints a token the admin routes take, for any
	// tenant; its subject is who changed the settings.
	adminToken := strings.TrimSpace(l.must("token", "--admin", "--as", "ops"))
	if _, stderr, code := l.run("tenant", "allow-prefix", "globex", "s3://data/globex/", "--token", adminToken); code != 0 || !strings.Contains(stderr, "changed by ops at ") {
		t.Fatalf("allow-prefix with lake token --admin's token: exit %d, %q", code, stderr)
	}
	// …and it is no tenant's token.
	if _, stderr, code := l.run("dropped", "--tenant", "acme", "--token", adminToken); code == 0 || !strings.Contains(stderr, "not allowed") {
		t.Fatalf("dropped with an operator's token: exit %d, %q", code, stderr)
	}
	if _, stderr, code := l.run("tenant", "show"); code == 0 || !strings.Contains(stderr, "accepts 1 arg") {
		t.Fatalf("show without a tenant: exit %d, %q", code, stderr)
	}
}
