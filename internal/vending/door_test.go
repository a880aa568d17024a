package vending

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/wire"
)

func tableRequest(location string, allowed ...string) TableRequest {
	return TableRequest{Who: "alice", Tenant: "acme", Namespace: "sales", Table: "orders", Location: location, Allowed: allowed}
}

func TestDoorVendsAnAllowedS3Location(t *testing.T) {
	v, a, clock, _ := newTestVendor(t, Options{})
	d := &Door{Vendor: v, Region: "eu-west-1"}
	got, err := d.Credentials(context.Background(), tableRequest("s3://tenant-data/acme/orders", "s3://tenant-data/acme/", "not a location"))
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Credentials{Tenant: "acme", Namespace: "sales", Table: "orders", Location: "s3://tenant-data/acme/orders/",
		Access: wire.AccessVended, AccessKeyID: "AK1", SecretAccessKey: "secret1", SessionToken: "token1",
		Expiration: clock.Now().Add(DefaultDuration), Region: "eu-west-1"}
	if got != want {
		t.Fatalf("Credentials =\n%+v, want\n%+v", got, want)
	}
	if a.count() != 1 {
		t.Fatalf("AssumeRole calls = %d, want 1", a.count())
	}
}

func TestDoorRefusals(t *testing.T) {
	v, a, _, _ := newTestVendor(t, Options{})
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		door     *Door
		req      TableRequest
		wantCode string
		wantErr  error
		wantText string
	}{
		{"outside the allowed prefixes", &Door{Vendor: v}, tableRequest("s3://tenant-data/globex/orders/", "s3://tenant-data/acme/"),
			wire.CodeLocationNotAllowed, ErrNotAllowed, "not under a prefix allowed"},
		{"no prefix allowed", &Door{Vendor: v}, tableRequest("s3://tenant-data/acme/orders/"),
			wire.CodeLocationNotAllowed, ErrNotAllowed, "not under a prefix allowed"},
		{"lake's own bucket", &Door{Vendor: v}, tableRequest("s3://lake-data/acme/orders/", "s3://lake-data/"),
			wire.CodeLocationNotAllowed, ErrOwnBucket, "lake's own buckets"},
		{"another scheme", &Door{Vendor: v}, tableRequest("gs://tenant-data/acme/orders/", "s3://tenant-data/acme/"),
			wire.CodeLocationNotAllowed, ErrInvalidLocation, "scheme"},
		{"not configured", &Door{Hint: "start lake local with --vending-role-arn"}, tableRequest("s3://tenant-data/acme/orders/", "s3://tenant-data/acme/"),
			wire.CodeVendingNotConfigured, ErrNotConfigured, "--vending-role-arn"},
		{"not configured, and not allowed either", &Door{}, tableRequest("s3://tenant-data/acme/orders/", "s3://tenant-data/globex/"),
			wire.CodeLocationNotAllowed, ErrNotAllowed, "not under a prefix allowed"},
		{"a local path without a data root", &Door{Vendor: v}, tableRequest("file://" + root + "/t/"),
			wire.CodeLocationNotAllowed, ErrOutsideDataRoot, "--data-root"},
		{"a local path outside the data root", &Door{DataRoot: root}, tableRequest("file://" + outside + "/t/"),
			wire.CodeLocationNotAllowed, ErrOutsideDataRoot, "--data-root"},
		{"dot-dot out of the data root", &Door{DataRoot: root}, tableRequest(root + "/../" + filepath.Base(outside) + "/t"),
			wire.CodeLocationNotAllowed, ErrOutsideDataRoot, "--data-root"},
		{"a symbolic link out of the data root", &Door{DataRoot: root}, tableRequest("file://" + root + "/escape/t/"),
			wire.CodeLocationNotAllowed, ErrOutsideDataRoot, "--data-root"},
		{"a file URL naming a host", &Door{DataRoot: root}, tableRequest("file://server" + root + "/t/"),
			wire.CodeLocationNotAllowed, ErrOutsideDataRoot, "--data-root"},
		// Local mode serves several tenants from one root: each reads its
		// own folder of it alone.
		{"another tenant's folder of the data root", &Door{DataRoot: root}, tableRequest("file://" + root + "/globex/orders/"),
			wire.CodeLocationNotAllowed, ErrOtherTenantsFolder, "/acme/"},
		{"the data root itself", &Door{DataRoot: root}, tableRequest("file://" + root + "/"),
			wire.CodeLocationNotAllowed, ErrOtherTenantsFolder, "/acme/"},
		{"a sibling folder that starts like the tenant's", &Door{DataRoot: root}, tableRequest(root + "/acmex/orders"),
			wire.CodeLocationNotAllowed, ErrOtherTenantsFolder, "/acme/"},
		{"dot-dot out of the tenant's folder", &Door{DataRoot: root}, tableRequest(root + "/acme/../globex/orders"),
			wire.CodeLocationNotAllowed, ErrOtherTenantsFolder, "/acme/"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.door.Credentials(context.Background(), tt.req)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.wantErr) || Code(err) != tt.wantCode || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("error %q (code %s), want %v, code %s, mentioning %q", err, Code(err), tt.wantErr, tt.wantCode, tt.wantText)
			}
		})
	}
	if a.count() != 0 {
		t.Fatalf("AssumeRole calls = %d, want none for a refusal", a.count())
	}
}

func TestDoorLocalPathIsItsOwnAccess(t *testing.T) {
	root := t.TempDir()
	d := &Door{DataRoot: root}
	real, _ := filepath.EvalSymlinks(root)
	for _, loc := range []string{"file://" + root + "/acme/sales/orders/", root + "/acme/sales/orders", "file://localhost" + root + "/acme/sales/orders"} {
		got, err := d.Credentials(context.Background(), tableRequest(loc))
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		if got.Access != wire.AccessPath || got.Location != "file://"+real+"/acme/sales/orders/" || got.AccessKeyID != "" || !strings.Contains(got.Note, "the path is the access") {
			t.Fatalf("%s: Credentials = %+v", loc, got)
		}
	}
}

func TestCodeOfOtherErrors(t *testing.T) {
	if c := Code(errors.New("sts: throttled")); c != wire.CodeVendingFailed {
		t.Fatalf("Code = %s, want %s", c, wire.CodeVendingFailed)
	}
}
