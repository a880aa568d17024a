package discovery_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// mintingAssumer stands in for STS: it mints credentials and counts calls.
type mintingAssumer struct {
	calls atomic.Int64
	last  atomic.Pointer[vending.AssumeInput]
}

func (a *mintingAssumer) AssumeRole(_ context.Context, in vending.AssumeInput) (vending.Credentials, error) {
	a.calls.Add(1)
	a.last.Store(&in)
	return vending.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "token", Expiration: time.Now().Add(in.Duration)}, nil
}

func vendingEnv(t *testing.T, door func(*mintingAssumer) *vending.Door) (*env, *mintingAssumer) {
	t.Helper()
	a := &mintingAssumer{}
	e := newEnv(t, discovery.Options{Door: door(a)})
	for _, r := range []struct{ tenant, name, loc string }{
		{"acme", "orders", "s3://tenant-data/acme/orders/"},
		{"acme", "stolen", "s3://tenant-data/globex/orders/"},
		{"acme", "snapshots", "s3://lake-snapshots/acme/"},
		{"globex", "orders", "s3://tenant-data/globex/orders/"},
	} {
		if _, _, err := e.cat.Register(context.Background(), catalog.TableRef{Tenant: r.tenant, Namespace: "sales", Name: r.name},
			catalog.TableSpec{Location: r.loc, Schema: wide(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.cat.UpdateTenantSettings(context.Background(), "acme", "ops", func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = []string{"s3://tenant-data/acme/", "s3://lake-snapshots/acme/"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.publish()
	return e, a
}

func withDoor(a *mintingAssumer) *vending.Door {
	v, err := vending.New(a, vending.NewGuard([]string{"lake-snapshots"}), vending.Options{RoleARN: "arn:aws:iam::123456789012:role/reader"})
	if err != nil {
		panic(err)
	}
	return &vending.Door{Vendor: v, Region: "eu-west-1"}
}

func (e *env) credentials(ctx context.Context, body string) (wire.Credentials, error) {
	e.t.Helper()
	stream, err := e.client.Client.DoAction(ctx, &flight.Action{Type: wire.CredentialsActionType, Body: []byte(body)})
	if err != nil {
		return wire.Credentials{}, err
	}
	r, err := stream.Recv()
	if err != nil {
		return wire.Credentials{}, err
	}
	var c wire.Credentials
	if err := json.Unmarshal(r.Body, &c); err != nil {
		e.t.Fatalf("result %q: %v", r.Body, err)
	}
	return c, nil
}

// lake.credentials vends for the caller's table under its tenant's allowed
// prefixes, which reach discovery in the tenant's segment; the tenant comes
// from the token alone, so globex cannot name acme's table, and a location
// outside the prefixes, or in lake's own bucket, is PERMISSION_DENIED
// naming why.
func TestCredentialsAction(t *testing.T) {
	t.Parallel()
	e, a := vendingEnv(t, withDoor)
	acme := as(t, "acme")
	c, err := e.credentials(acme, `{"namespace":"sales","table":"orders"}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tenant != "acme" || c.Access != wire.AccessVended || c.Location != "s3://tenant-data/acme/orders/" || c.AccessKeyID != "ASIAEXAMPLE" || c.Region != "eu-west-1" {
		t.Fatalf("credentials = %+v", c)
	}
	if in := a.last.Load(); !strings.Contains(string(in.Policy), "arn:aws:s3:::tenant-data/acme/orders/*") {
		t.Fatalf("session policy %s does not name the table's prefix", in.Policy)
	}
	// The cache answers the second ask.
	if _, err := e.credentials(acme, `{"namespace":"sales","table":"orders"}`); err != nil || a.calls.Load() != 1 {
		t.Fatalf("second ask: %v after %d AssumeRole calls, want 1", err, a.calls.Load())
	}
	for _, tt := range []struct {
		name string
		ctx  context.Context
		body string
		code codes.Code
		text string
	}{
		{"outside the allowed prefixes", acme, `{"namespace":"sales","table":"stolen"}`, codes.PermissionDenied, "not under a prefix allowed"},
		{"lake's own bucket", acme, `{"namespace":"sales","table":"snapshots"}`, codes.PermissionDenied, "lake's own buckets"},
		{"another tenant's token, nothing allowed", as(t, "globex"), `{"namespace":"sales","table":"orders"}`, codes.PermissionDenied, "not under a prefix allowed"},
		{"another tenant's table is not there", as(t, "globex"), `{"namespace":"sales","table":"stolen"}`, codes.NotFound, "no table"},
		{"unknown field", acme, `{"namespace":"sales","table":"orders","tenant":"globex"}`, codes.InvalidArgument, "unknown field"},
		{"bad name", acme, `{"namespace":"","table":"orders"}`, codes.InvalidArgument, "namespace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.credentials(tt.ctx, tt.body)
			if codeOf(err) != tt.code || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("error %v, want %v mentioning %q", err, tt.code, tt.text)
			}
		})
	}
	if n := a.calls.Load(); n != 1 {
		t.Fatalf("AssumeRole calls = %d, want 1: refusals assume nothing", n)
	}
	// A table vending refuses is listed and described as always.
	if _, d, err := e.describe(acme, `{"namespace":"sales","table":"stolen"}`); err != nil || d.Location != "s3://tenant-data/globex/orders/" {
		t.Fatalf("describe of a table vending refuses: %+v, %v", d, err)
	}
}

// A discovery without vending says so (UNIMPLEMENTED), after checking the
// table is the caller's.
func TestCredentialsActionWithoutVending(t *testing.T) {
	t.Parallel()
	e, _ := vendingEnv(t, func(*mintingAssumer) *vending.Door { return nil })
	if _, err := e.credentials(as(t, "acme"), `{"namespace":"sales","table":"orders"}`); codeOf(err) != codes.Unimplemented || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("error %v, want UNIMPLEMENTED saying vending is not configured", err)
	}
	if _, err := e.credentials(as(t, "acme"), `{"namespace":"sales","table":"nothere"}`); codeOf(err) != codes.NotFound {
		t.Fatalf("missing table: %v, want NOT_FOUND", err)
	}
}
