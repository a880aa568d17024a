package vending

import (
	"errors"
	"fmt"
	"strings"
)

// Reasons the Guard refuses a location, matched with errors.Is on a
// *GuardError. A handler maps each of them to 403 (ErrInvalidLocation may
// also be shown as 400: the table's location itself is not vendable).
var (
	ErrNotAllowed      = errors.New("location is not under a prefix allowed for the tenant")
	ErrOwnBucket       = errors.New("location is in one of lake's own buckets")
	ErrInvalidLocation = errors.New("location is not a valid table location")
)

// GuardError is a refusal of the Guard: the tenant, the location as given and
// the reason (ErrNotAllowed, ErrOwnBucket or ErrInvalidLocation; for the
// last, errors.As also finds the *LocationError saying why).
type GuardError struct {
	Tenant   string
	Location string
	Reason   error
	cause    *LocationError // why, for ErrInvalidLocation
}

func (e *GuardError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("vending: tenant %q: location %q: %v: %v", e.Tenant, e.Location, e.Reason, e.cause.Err)
	}
	return fmt.Sprintf("vending: tenant %q: location %q: %v", e.Tenant, e.Location, e.Reason)
}

func (e *GuardError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Reason, e.cause}
	}
	return []error{e.Reason}
}

// Guard is the confused-deputy check: lake vends credentials for a location
// only when an operator allowed its prefix for the table's tenant, and never
// for lake's own buckets, whatever a tenant registered as a table's location.
// A Guard is immutable and safe for concurrent use.
type Guard struct {
	own map[string]bool
}

// NewGuard returns a Guard that refuses every location in the named buckets
// (lake's own: its catalog, snapshots, anything a tenant must not read
// through lake), even under a prefix allowed for a tenant.
func NewGuard(ownBuckets []string) *Guard {
	own := make(map[string]bool, len(ownBuckets))
	for _, b := range ownBuckets {
		own[b] = true
	}
	return &Guard{own: own}
}

// Check parses location and returns it when it is under one of allowed (the
// prefixes an operator allowed for tenant), on a path-segment boundary
// ("s3://b/sales/" allows "s3://b/sales/orders/", not "s3://b/salesforce/"),
// and not in one of lake's own buckets. Otherwise it returns a *GuardError.
func (g *Guard) Check(tenant string, allowed []Location, location string) (Location, error) {
	refuse := func(reason error, cause *LocationError) (Location, error) {
		return Location{}, &GuardError{Tenant: tenant, Location: location, Reason: reason, cause: cause}
	}
	loc, err := ParseLocation(location)
	if err != nil {
		var le *LocationError
		errors.As(err, &le)
		return refuse(ErrInvalidLocation, le)
	}
	if g.own[loc.Bucket] {
		return refuse(ErrOwnBucket, nil)
	}
	for _, a := range allowed {
		if a.check() == nil && a.Bucket == loc.Bucket && strings.HasPrefix(loc.Prefix, a.Prefix) {
			return loc, nil
		}
	}
	return refuse(ErrNotAllowed, nil)
}
