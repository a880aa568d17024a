package registerapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/wire"
)

// countingAssumer stands in for STS: it mints credentials and counts calls.
type countingAssumer struct{ calls atomic.Int64 }

func (a *countingAssumer) AssumeRole(_ context.Context, in vending.AssumeInput) (vending.Credentials, error) {
	a.calls.Add(1)
	return vending.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "token",
		Expiration: time.Now().Add(in.Duration)}, nil
}

// adminOnly accepts the operator's token alone.
func adminOnly(r *http.Request, _ string) (string, error) {
	if r.Header.Get("Authorization") != "Bearer operator" {
		return "", errors.New("not an operator's token")
	}
	return "ops@example.com", nil
}

func vendingAPI(t *testing.T, door *vending.Door, admin registerapi.Authorizer) http.Handler {
	t.Helper()
	return newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(func(*http.Request) string { return "producer" }), AuthorizeAdmin: admin, Door: door})
}

func newDoor(t *testing.T) (*vending.Door, *countingAssumer) {
	t.Helper()
	a := &countingAssumer{}
	v, err := vending.New(a, vending.NewGuard([]string{"lake-snapshots"}), vending.Options{RoleARN: "arn:aws:iam::123456789012:role/reader"})
	if err != nil {
		t.Fatal(err)
	}
	return &vending.Door{Vendor: v, Region: "eu-west-1"}, a
}

func registerAt(t *testing.T, h http.Handler, name, location string) {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	r := do(t, h, "POST", base, "application/json", body(t, map[string]any{"name": name, "location": location, "schema": ipcB64(s)}))
	if r.status != http.StatusCreated {
		t.Fatalf("register %s: %d %s", name, r.status, r.body)
	}
}

func settingsOf(t *testing.T, r response) wire.TenantSettings {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	var s wire.TenantSettings
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

const adminBase = "/v1/admin/tenants/acme"

// A tenant's settings are an operator's: the tenant's own credentials, and
// an API without an admin authorizer, are refused; an operator adds,
// lists and removes prefixes, stored canonical, sorted, once each.
func TestAdminRoutesSetAllowedPrefixes(t *testing.T) {
	door, _ := newDoor(t)
	h := vendingAPI(t, door, adminOnly)
	op := []string{"Authorization", "Bearer operator"}
	add := func(p string, hdr ...string) response {
		return do(t, h, "POST", adminBase+"/allowed-prefixes", "application/json", body(t, wire.AllowPrefixRequest{Prefix: p}), hdr...)
	}
	if r := add("s3://tenant-data/acme/", "Authorization", "Bearer acme-producer"); r.status != http.StatusForbidden || errorCode(t, r) != wire.CodeNotAdmin {
		t.Fatalf("tenant's own token: %d %s, want 403 not_admin", r.status, r.body)
	}
	// Refused before the body is looked at: a tenant learns nothing of the rules.
	if r := add("not a prefix", "Authorization", "Bearer acme-producer"); r.status != http.StatusForbidden || errorCode(t, r) != wire.CodeNotAdmin {
		t.Fatalf("tenant's own token, bad prefix: %d %s, want 403 not_admin", r.status, r.body)
	}
	if r := do(t, h, "GET", adminBase+"/settings", "", nil); r.status != http.StatusForbidden || errorCode(t, r) != wire.CodeNotAdmin {
		t.Fatalf("GET without operator: %d %s, want 403 not_admin", r.status, r.body)
	}
	if s := settingsOf(t, do(t, h, "GET", adminBase+"/settings", "", nil, op...)); len(s.AllowedPrefixes) != 0 || s.Tenant != "acme" {
		t.Fatalf("settings before = %+v, want none allowed", s)
	}
	add("s3://tenant-data/acme/warehouse", op...)
	s := settingsOf(t, add("s3://tenant-data/acme/raw/", op...))
	s = settingsOf(t, add("s3://tenant-data/acme/raw/", op...))
	if strings.Join(s.AllowedPrefixes, ",") != "s3://tenant-data/acme/raw/,s3://tenant-data/acme/warehouse/" || s.UpdatedBy != "ops@example.com" {
		t.Fatalf("settings = %+v", s)
	}
	for _, bad := range []string{"s3://tenant-data/", "s3://tenant-data/a*/", "gs://tenant-data/acme/", "s3://lake-snapshots/acme/", "s3://tenant-data/a/../b/"} {
		if r := add(bad, op...); r.status != http.StatusBadRequest || errorCode(t, r) != wire.CodeInvalidRequest {
			t.Fatalf("allow %q: %d %s, want 400", bad, r.status, r.body)
		}
	}
	s = settingsOf(t, do(t, h, "DELETE", adminBase+"/allowed-prefixes?prefix=s3://tenant-data/acme/raw", "", nil, op...))
	if strings.Join(s.AllowedPrefixes, ",") != "s3://tenant-data/acme/warehouse/" {
		t.Fatalf("after DELETE = %+v", s)
	}
	s = settingsOf(t, do(t, h, "PUT", adminBase+"/settings", "application/json", body(t, map[string]any{"allowed_prefixes": []string{"s3://b2b/x/", "s3://b1b/y"}}), op...))
	if strings.Join(s.AllowedPrefixes, ",") != "s3://b1b/y/,s3://b2b/x/" {
		t.Fatalf("after PUT = %+v", s)
	}
	if s := settingsOf(t, do(t, h, "GET", "/v1/admin/tenants/globex/settings", "", nil, op...)); len(s.AllowedPrefixes) != 0 {
		t.Fatalf("another tenant's settings = %+v, want none", s)
	}
	noAdmin := vendingAPI(t, door, nil)
	if r := do(t, noAdmin, "GET", adminBase+"/settings", "", nil, op...); r.status != http.StatusForbidden || errorCode(t, r) != wire.CodeNotAdmin {
		t.Fatalf("API without an admin authorizer: %d %s, want 403", r.status, r.body)
	}
}

// GET …/credentials vends for a table under an allowed prefix, refuses
// one outside with a 403 naming the reason, answers 501 where vending is
// not configured and 404 for a table that is not there.
func TestCredentialsRoute(t *testing.T) {
	door, a := newDoor(t)
	h := vendingAPI(t, door, adminOnly)
	registerAt(t, h, "orders", "s3://tenant-data/acme/orders/")
	registerAt(t, h, "stolen", "s3://tenant-data/globex/orders/")
	registerAt(t, h, "snapshots", "s3://lake-snapshots/acme/")
	r := do(t, h, "GET", base+"/orders/credentials", "", nil)
	if r.status != http.StatusForbidden || errorCode(t, r) != wire.CodeLocationNotAllowed || !strings.Contains(string(r.body), "not under a prefix allowed") {
		t.Fatalf("before any prefix is allowed: %d %s", r.status, r.body)
	}
	do(t, h, "POST", adminBase+"/allowed-prefixes", "application/json", body(t, wire.AllowPrefixRequest{Prefix: "s3://tenant-data/acme/"}), "Authorization", "Bearer operator")
	r = do(t, h, "GET", base+"/orders/credentials", "", nil)
	var c wire.Credentials
	if err := json.Unmarshal(r.body, &c); err != nil || r.status != http.StatusOK {
		t.Fatalf("credentials: %d %s", r.status, r.body)
	}
	if c.Access != wire.AccessVended || c.Location != "s3://tenant-data/acme/orders/" || c.AccessKeyID != "ASIAEXAMPLE" || c.SessionToken != "token" ||
		c.Region != "eu-west-1" || c.Expiration.IsZero() || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("credentials = %+v, headers %v", c, r.header)
	}
	for table, reason := range map[string]string{"stolen": "not under a prefix allowed", "snapshots": "lake's own buckets"} {
		r := do(t, h, "GET", base+"/"+table+"/credentials", "", nil)
		if r.status != http.StatusForbidden || errorCode(t, r) != wire.CodeLocationNotAllowed || !strings.Contains(string(r.body), reason) {
			t.Fatalf("%s: %d %s, want 403 naming %q", table, r.status, r.body, reason)
		}
	}
	if r := do(t, h, "GET", base+"/nothere/credentials", "", nil); r.status != http.StatusNotFound {
		t.Fatalf("missing table: %d %s", r.status, r.body)
	}
	if n := a.calls.Load(); n != 1 {
		t.Fatalf("AssumeRole calls = %d, want 1 (refusals assume nothing)", n)
	}
	off := vendingAPI(t, nil, adminOnly)
	registerAt(t, off, "orders", "s3://tenant-data/acme/orders/")
	if r := do(t, off, "GET", base+"/orders/credentials", "", nil); r.status != http.StatusNotImplemented || errorCode(t, r) != wire.CodeVendingNotConfigured {
		t.Fatalf("without vending: %d %s, want 501", r.status, r.body)
	}
}

// lastAssumer stands in for STS and keeps the last AssumeInput.
type lastAssumer struct {
	last atomic.Pointer[vending.AssumeInput]
}

func (a *lastAssumer) AssumeRole(_ context.Context, in vending.AssumeInput) (vending.Credentials, error) {
	a.last.Store(&in)
	return vending.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "token",
		Expiration: time.Now().Add(in.Duration)}, nil
}

// A synced table's credentials read its Iceberg metadata prefix in lake's
// metadata bucket too (its own bucket, outside the tenant's allowed
// prefixes) while its state is of its current registration; a table never
// synced, updated since, or with a local metadata file gets its data's
// grant alone.
func TestCredentialsRouteCarriesSyncedMetadata(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	cat := catalog.New(st, catalog.Options{})
	a := &lastAssumer{}
	v, err := vending.New(a, vending.NewGuard([]string{"lake-snapshots", "lake-iceberg"}), vending.Options{RoleARN: "arn:aws:iam::123456789012:role/reader"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := registerapi.New(cat, registerapi.Options{Authorize: registerapi.AllowAll(func(*http.Request) string { return "producer" }),
		Door: &vending.Door{Vendor: v}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cat.UpdateTenantSettings(ctx, "acme", "ops", func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = []string{"s3://tenant-data/acme/"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	s3File := func(uuid string) string { return "s3://lake-iceberg/tables/" + uuid + "/metadata/v2.metadata.json" }
	for _, tt := range []struct {
		table    string
		file     func(uuid string) string // the state's metadata location; nil: no state
		update   bool                     // updated after the sync
		wantMeta bool
	}{
		{"synced", s3File, false, true},
		{"unsynced", nil, false, false},
		{"updated", s3File, true, false},
		{"local", func(uuid string) string {
			return "file:///var/lake/iceberg/tables/" + uuid + "/metadata/v2.metadata.json"
		}, false, false},
	} {
		t.Run(tt.table, func(t *testing.T) {
			ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: tt.table}
			spec := catalog.TableSpec{Location: "s3://tenant-data/acme/" + tt.table + "/", Schema: schema}
			reg, _, err := cat.Register(ctx, ref, spec)
			if err != nil {
				t.Fatal(err)
			}
			uuid := icebergrest.TableUUID(ref.Tenant, ref.Namespace, ref.Name, reg.CreationID())
			if tt.file != nil {
				md := `{"format-version":2,"table-uuid":"` + uuid + `"}`
				if err := cat.PutIcebergState(ctx, ref, catalog.IcebergState{CreationID: reg.CreationID(), Version: reg.Version(),
					MetadataLocation: tt.file(uuid), Metadata: json.RawMessage(md), SyncedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.update {
				spec.Description = "changed"
				if _, err := cat.Update(ctx, ref, spec, catalog.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			a.last.Store(nil)
			r := do(t, h, "GET", base+"/"+tt.table+"/credentials", "", nil)
			if r.status != http.StatusOK {
				t.Fatalf("credentials: %d %s", r.status, r.body)
			}
			in := a.last.Load()
			if in == nil {
				t.Fatal("no AssumeRole call")
			}
			meta := "tables/" + uuid + "/metadata/"
			grant := strings.Contains(string(in.Policy), "arn:aws:s3:::lake-iceberg/"+meta+"*")
			tagged := false
			for _, tag := range in.Tags {
				tagged = tagged || tag == vending.Tag{Key: vending.TagMetaPrefix, Value: meta}
			}
			if grant != tt.wantMeta || tagged != tt.wantMeta || (!tt.wantMeta && strings.Contains(string(in.Policy), "lake-iceberg")) {
				t.Fatalf("policy %s\ntags %v\nwant the grant of %s: %v", in.Policy, in.Tags, meta, tt.wantMeta)
			}
		})
	}
}
