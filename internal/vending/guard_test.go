package vending

import (
	"errors"
	"testing"
)

func mustLocation(t testing.TB, s string) Location {
	t.Helper()
	loc, err := ParseLocation(s)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestGuard(t *testing.T) {
	g := NewGuard([]string{"lake-data", "lake-snapshots"})
	allowed := []Location{mustLocation(t, "s3://tenant-data/sales/"), mustLocation(t, "s3://lake-data/acme/")}
	tests := []struct {
		location string
		want     error
	}{
		{"s3://tenant-data/sales/", nil},
		{"s3://tenant-data/sales/orders/", nil},
		{"s3://tenant-data/sales/orders", nil},
		{"s3://tenant-data/salesforce/", ErrNotAllowed},
		{"s3://tenant-data/sale/", ErrNotAllowed},
		{"s3://tenant-data/other/", ErrNotAllowed},
		{"s3://other-bucket/sales/", ErrNotAllowed},
		{"s3://lake-data/acme/orders/", ErrOwnBucket},
		{"s3://lake-snapshots/x/", ErrOwnBucket},
		{"s3://tenant-data/sales/../hr/", ErrInvalidLocation},
		{"s3://tenant-data", ErrInvalidLocation},
		{"file:///tmp/x", ErrInvalidLocation},
	}
	for _, tt := range tests {
		t.Run(tt.location, func(t *testing.T) {
			loc, err := g.Check("acme", allowed, tt.location)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check(%q) error = %v, want allowed", tt.location, err)
				}
				if loc.String() != mustLocation(t, tt.location).String() {
					t.Fatalf("Check(%q) = %v", tt.location, loc)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Check(%q) error = %v, want %v", tt.location, err, tt.want)
			}
			var ge *GuardError
			if !errors.As(err, &ge) || ge.Tenant != "acme" || ge.Location != tt.location {
				t.Fatalf("Check(%q) error = %#v, want *GuardError naming tenant and location", tt.location, err)
			}
		})
	}
	if _, err := g.Check("acme", nil, "s3://tenant-data/sales/"); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("Check with no allowed prefixes error = %v, want %v", err, ErrNotAllowed)
	}
	var le *LocationError
	if _, err := g.Check("acme", allowed, "s3://tenant-data/a*/"); !errors.As(err, &le) || !errors.Is(err, ErrWildcard) {
		t.Fatalf("Check(invalid) error = %v, want the *LocationError within", err)
	}
}
