package vending

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/lake-catalog/lake/pkg/wire"
)

// ErrNotConfigured is the error for a location this deployment cannot vend
// for because it has no Vendor (no data-reader role, or local mode without
// an STS endpoint and role).
var ErrNotConfigured = errors.New("credential vending is not configured")

// ErrOutsideDataRoot is the reason a local path location is refused: it is
// not under local mode's data root (or local mode has none, or this is not
// local mode).
var ErrOutsideDataRoot = errors.New("a local path is readable through lake only under local mode's --data-root")

// Door is the one code path every surface answers a request for a table's
// access through (the Flight action lake.credentials, the registration
// API's GET …/credentials, the `lake credentials` command through it, and
// Iceberg REST's vended credentials): an s3:// location is vended by
// Vendor, a local path (file:///… or /…) under DataRoot is its own access,
// anything else is refused. A Door is safe for concurrent use.
type Door struct {
	// Vendor vends s3:// locations; nil answers ErrNotConfigured for
	// them.
	Vendor *Vendor
	// DataRoot is local mode's --data-root: local paths under it are
	// readable by path. "" refuses every local path.
	DataRoot string
	// Region is reported with vended credentials ("" when unknown).
	Region string
	// Hint ends ErrNotConfigured's message: how to configure vending here.
	Hint string
}

// TableRequest asks a Door for access to one table's files. Allowed are
// the tenant's allowed prefixes as stored (catalog.TenantSettings); one
// that ParseLocation refuses allows nothing. Metadata is the table's
// Iceberg metadata prefix in lake's metadata store when lake has synced its
// current registration ("s3://bucket/tables/<table-uuid>/metadata/", see
// Request.Metadata and SyncedMetadata), or "": the vended credentials read
// it too. A local path location ignores it.
type TableRequest struct {
	Who, Tenant, Namespace, Table, Location string
	Allowed                                 []string
	Metadata                                string
}

// Credentials answers r. Its errors are classified for a surface by Code.
func (d *Door) Credentials(ctx context.Context, r TableRequest) (wire.Credentials, error) {
	out := wire.Credentials{Tenant: r.Tenant, Namespace: r.Namespace, Table: r.Table, Location: r.Location}
	if p, ok := localPath(r.Location); ok {
		dir, err := d.underRoot(p, r.Tenant)
		if err != nil {
			return wire.Credentials{}, &LocationError{Location: r.Location, Err: err}
		}
		out.Access = wire.AccessPath
		out.Location = "file://" + filepath.ToSlash(dir) + "/"
		out.Note = "the path is the access: local mode reads file:// locations under its --data-root directly; no credentials are needed"
		return out, nil
	}
	if d.Vendor == nil {
		// Still refuse what could never be vended, so the answer says the
		// real reason first.
		if _, err := NewGuard(nil).Check(r.Tenant, parseAllowed(r.Allowed), r.Location); err != nil {
			return wire.Credentials{}, err
		}
		if r.Metadata != "" {
			if _, err := ParseMetadataLocation(r.Metadata); err != nil {
				return wire.Credentials{}, err
			}
		}
		if d.Hint != "" {
			return wire.Credentials{}, fmt.Errorf("%w: %s", ErrNotConfigured, d.Hint)
		}
		return wire.Credentials{}, ErrNotConfigured
	}
	allowed := parseAllowed(r.Allowed)
	v, err := d.Vendor.Vend(ctx, Request{Who: r.Who, Tenant: r.Tenant, Namespace: r.Namespace, Table: r.Table, Location: r.Location,
		Allowed: allowed, Metadata: r.Metadata})
	if err != nil {
		return wire.Credentials{}, err
	}
	out.Access = wire.AccessVended
	out.Location = v.Location.String()
	out.AccessKeyID, out.SecretAccessKey, out.SessionToken = v.Credentials.AccessKeyID, v.Credentials.SecretAccessKey, v.Credentials.SessionToken
	out.Expiration = v.Credentials.Expiration.UTC()
	out.Region = d.Region
	return out, nil
}

func parseAllowed(prefixes []string) []Location {
	out := make([]Location, 0, len(prefixes))
	for _, p := range prefixes {
		if l, err := ParseLocation(p); err == nil {
			out = append(out, l)
		}
	}
	return out
}

// localPath reports whether loc names a local path (file:///… or an
// absolute path) and returns it.
func localPath(loc string) (string, bool) {
	if strings.HasPrefix(loc, "/") {
		return loc, true
	}
	if !strings.HasPrefix(loc, "file:") {
		return "", false
	}
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", true // a file location, but not one naming a local path: refused by underRoot
	}
	return u.Path, true
}

// underRoot returns p cleaned, with its symbolic links resolved as far as
// it exists, when it is the tenant's folder of DataRoot (DataRoot/<tenant>)
// or under it; otherwise ErrOutsideDataRoot, or ErrOtherTenantsFolder for
// a path elsewhere under DataRoot. Local mode serves several tenants from
// one data root: each reads its own folder's files, never another's.
func (d *Door) underRoot(p, tenant string) (string, error) {
	if d.DataRoot == "" || p == "" || !filepath.IsAbs(p) {
		return "", ErrOutsideDataRoot
	}
	root, err := filepath.EvalSymlinks(d.DataRoot)
	if err != nil {
		return "", fmt.Errorf("%w (the data root %s: %v)", ErrOutsideDataRoot, d.DataRoot, err)
	}
	resolved := resolveExisting(filepath.Clean(p))
	if resolved != root && !strings.HasPrefix(resolved, root+string(filepath.Separator)) {
		return "", ErrOutsideDataRoot
	}
	own := filepath.Join(root, tenant)
	if tenant == "" || filepath.Base(own) != tenant || resolved != own && !strings.HasPrefix(resolved, own+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: tenant %q reads %s only", ErrOtherTenantsFolder, tenant, own+string(filepath.Separator))
	}
	return resolved, nil
}

// ErrOtherTenantsFolder is the reason a local path under the data root
// but outside the tenant's own folder of it (DataRoot/<tenant>/) is
// refused.
var ErrOtherTenantsFolder = errors.New("a local path is readable through lake only under the tenant's own folder of --data-root")

// resolveExisting resolves the symbolic links of the longest existing
// ancestor of p and joins the rest back on.
func resolveExisting(p string) string {
	rest := ""
	for q := p; ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(r, rest)
		}
		if _, err := os.Lstat(q); err == nil {
			return p // exists but cannot be resolved (a loop): keep as is
		}
		parent := filepath.Dir(q)
		if parent == q {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
	}
}

// Code classifies an error of Door.Credentials for a surface: the wire
// error code (wire.CodeLocationNotAllowed for a location refused by the
// guard or by its form, wire.CodeVendingNotConfigured, else
// wire.CodeVendingFailed: STS refused or failed).
func Code(err error) string {
	var ge *GuardError
	var le *LocationError
	switch {
	case errors.Is(err, ErrNotConfigured):
		return wire.CodeVendingNotConfigured
	case errors.As(err, &ge), errors.As(err, &le):
		return wire.CodeLocationNotAllowed
	}
	return wire.CodeVendingFailed
}
