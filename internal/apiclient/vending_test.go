package apiclient_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// fakeSTS stands in for STS: every AssumeRole answers the same keys.
type fakeSTS struct{}

func (fakeSTS) AssumeRole(_ context.Context, in vending.AssumeInput) (vending.Credentials, error) {
	return vending.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "s3cr3t", SessionToken: "tok",
		Expiration: time.Now().Add(in.Duration)}, nil
}

// operatorOnly takes "Bearer operator" alone on the admin routes.
func operatorOnly(r *http.Request, _ string) (string, error) {
	switch r.Header.Get("Authorization") {
	case "":
		return "", registerapi.ErrUnauthenticated
	case "Bearer operator":
		return "ops@example.com", nil
	}
	return "", errors.New("not an operator's token")
}

// newVendingServer is the real registration API with a Door vending
// through fakeSTS (door true), or none.
func newVendingServer(tb testing.TB, door bool) string {
	tb.Helper()
	st := memstore.New(memstore.Options{})
	tb.Cleanup(func() { st.Close() })
	opts := registerapi.Options{Authorize: tokenAuthorizer, AuthorizeAdmin: operatorOnly, Log: slog.New(slog.DiscardHandler)}
	if door {
		v, err := vending.New(fakeSTS{}, vending.NewGuard(nil), vending.Options{RoleARN: "arn:aws:iam::123456789012:role/r"})
		if err != nil {
			tb.Fatal(err)
		}
		opts.Door = &vending.Door{Vendor: v, Region: "eu-west-1"}
	}
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), opts)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// An operator allows, lists, removes and replaces a tenant's prefixes;
// each call answers the settings as stored (canonical, with who and when).
func TestTenantSettings(t *testing.T) {
	t.Parallel()
	url := newVendingServer(t, true)
	ops := newClient(t, url, "operator")
	ctx := context.Background()

	s, err := ops.TenantSettings(ctx, "acme")
	if err != nil || s.Tenant != "acme" || len(s.AllowedPrefixes) != 0 || s.UpdatedBy != "" {
		t.Fatalf("TenantSettings of a tenant never set = %+v, %v; want none", s, err)
	}
	if _, err := ops.AllowPrefix(ctx, "acme", "s3://data/acme"); err != nil {
		t.Fatal(err)
	}
	s, err = ops.AllowPrefix(ctx, "acme", "s3://data/shared/")
	if err != nil || !slices.Equal(s.AllowedPrefixes, []string{"s3://data/acme/", "s3://data/shared/"}) || s.UpdatedBy != "ops@example.com" || s.UpdatedAt.IsZero() {
		t.Fatalf("AllowPrefix = %+v, %v; want both prefixes, canonical, by ops@example.com", s, err)
	}
	s, err = ops.DisallowPrefix(ctx, "acme", "s3://data/acme/")
	if err != nil || !slices.Equal(s.AllowedPrefixes, []string{"s3://data/shared/"}) {
		t.Fatalf("DisallowPrefix = %+v, %v", s, err)
	}
	s, err = ops.SetAllowedPrefixes(ctx, "acme", []string{"s3://bkt/x/", "s3://bkt/y/"})
	if err != nil || !slices.Equal(s.AllowedPrefixes, []string{"s3://bkt/x/", "s3://bkt/y/"}) {
		t.Fatalf("SetAllowedPrefixes = %+v, %v", s, err)
	}
	s, err = ops.SetAllowedPrefixes(ctx, "acme", nil)
	if err != nil || len(s.AllowedPrefixes) != 0 {
		t.Fatalf("SetAllowedPrefixes(nil) = %+v, %v; want none", s, err)
	}
	if got, err := ops.TenantSettings(ctx, "acme"); err != nil || len(got.AllowedPrefixes) != 0 {
		t.Fatalf("TenantSettings after clearing = %+v, %v", got, err)
	}
}

// A table under an allowed prefix gets vended credentials; the refusals
// come back typed, with the API's reason said once.
func TestCredentials(t *testing.T) {
	t.Parallel()
	url := newVendingServer(t, true)
	ctx := context.Background()
	c := newClient(t, url, "ok-acme")
	ops := newClient(t, url, "operator")
	good := ipc(t, catalogtest.RichSchema())
	outside := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "outside"}
	for ref, loc := range map[catalog.TableRef]string{orders: "s3://data/acme/orders/", outside: "s3://elsewhere/x/"} {
		if _, _, err := c.Register(ctx, ref, apiclient.Spec{Location: loc, SchemaIPC: good}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ops.AllowPrefix(ctx, "acme", "s3://data/acme/"); err != nil {
		t.Fatal(err)
	}
	creds, err := c.Credentials(ctx, orders)
	if err != nil || creds.Access != "vended" || creds.AccessKeyID != "ASIAEXAMPLE" || creds.SecretAccessKey != "s3cr3t" ||
		creds.SessionToken != "tok" || creds.Region != "eu-west-1" || creds.Location != "s3://data/acme/orders/" || creds.Expiration.Before(time.Now()) {
		t.Fatalf("Credentials = %+v, %v", creds, err)
	}

	missing := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "nope"}
	tests := []struct {
		name   string
		call   func() error
		kind   error
		status int
		code   string
		want   string // the message's start
	}{
		{"outside the allowed prefixes", func() error { _, err := c.Credentials(ctx, outside); return err },
			apiclient.ErrLocationNotAllowed, 403, "location_not_allowed", `acme/sales/outside: location not allowed for vending: tenant "acme": location "s3://elsewhere/x/": location is not under a prefix allowed for the tenant`},
		{"no such table", func() error { _, err := c.Credentials(ctx, missing); return err },
			catalog.ErrNotFound, 404, "not_found", "acme/sales/nope: table not found"},
		{"another tenant's token", func() error { _, err := newClient(t, url, "ok-globex").Credentials(ctx, orders); return err },
			apiclient.ErrForbidden, 403, "forbidden", `acme/sales/orders: not allowed to act on tenant "acme"`},
		{"no vending here", func() error {
			other := newVendingServer(t, false)
			if _, _, err := newClient(t, other, "ok-acme").Register(ctx, orders, apiclient.Spec{Location: "s3://data/acme/orders/", SchemaIPC: good}); err != nil {
				return err
			}
			_, err := newClient(t, other, "ok-acme").Credentials(ctx, orders)
			return err
		}, apiclient.ErrVendingNotConfigured, 501, "vending_not_configured", "acme/sales/orders: credential vending is not configured"},
		{"a tenant's token on the admin routes", func() error { _, err := c.AllowPrefix(ctx, "acme", "s3://data/x/"); return err },
			apiclient.ErrNotAdmin, 403, "not_admin", `operators only: tenant "acme"'s settings are an operator's: not an operator's token`},
		{"no token on the admin routes", func() error { _, err := newClient(t, url, "").TenantSettings(ctx, "acme"); return err },
			apiclient.ErrUnauthenticated, 401, "unauthenticated", "missing or invalid credentials"},
		{"a prefix lake cannot vend under", func() error { _, err := ops.AllowPrefix(ctx, "acme", "s3://data"); return err },
			apiclient.ErrBadRequest, 400, "invalid_request", `the registration API rejected the request: allowed prefix "s3://data": prefix is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ae *apiclient.Error
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *apiclient.Error", err, err)
			}
			if !errors.Is(err, tt.kind) || ae.Status != tt.status || ae.Code != tt.code {
				t.Fatalf("got status %d code %q (%v), want %d %q and errors.Is %v", ae.Status, ae.Code, err, tt.status, tt.code, tt.kind)
			}
			if got := err.Error(); !strings.HasPrefix(got, tt.want) || strings.Count(got, "acme/") > 1 || strings.Contains(got, ": vending: tenant") {
				t.Fatalf("message %q, want it to start %q, saying the ref and no package prefix once", got, tt.want)
			}
		})
	}
}
