package backfill

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// Scope is where a backfill may read. A registration's location is written
// by its tenant, and a backfill reads it with the operator's credentials
// (AWS and file system), so every location is checked against the scope
// first: one outside it is refused (reported, never read). The zero Scope
// refuses every location.
type Scope struct {
	// Tenant is the tenant whose registrations are backfilled: only the
	// S3Prefixes allowed to it admit its locations.
	Tenant string
	// S3Prefixes are the s3:// locations that may be read, each allowed to
	// one tenant: TENANT=s3://bucket/ or TENANT=s3://bucket/key-prefix (a
	// location is written by its tenant, so a prefix allowed for the run
	// would let one tenant point a table at another's files and copy their
	// schema). A location of Tenant is inside one of Tenant's prefixes when
	// it names the same bucket and its key starts with the prefix's key,
	// character by character as S3 lists and IAM matches: s3://lake/orders
	// also admits s3://lake/orders-archive/, s3://lake/orders/ does not.
	// Neither may hold a "." or ".." segment, and no tenant's prefix may
	// cover another tenant's. Empty: every s3:// location is refused.
	S3Prefixes []string
	// LocalRoot is the folder local locations (paths and file:// URLs) must
	// lie in. A location is cleaned (so ".." cannot climb out) and read
	// through os.Root, so no symbolic link inside leads out either. Empty:
	// every local location is refused.
	LocalRoot string
}

// RefusedError is a location outside the Scope. Run reports the table as
// refused and never reads the location.
type RefusedError struct {
	Location string
	// Reason says why, and what to set to allow it.
	Reason string
}

var _ error = (*RefusedError)(nil)

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%q %s", e.Location, e.Reason)
}

// s3Prefix is one parsed Scope.S3Prefixes entry.
type s3Prefix struct{ entry, tenant, bucket, key string }

// scope is a checked Scope, with its local root open.
type scope struct {
	tenant   string
	s3       []s3Prefix // the tenant's
	rootPath string     // absolute and clean; "" when no local root
	root     *os.Root   // nil when no local root
}

// Validate reports what Run would refuse of sc: a prefix that is not
// s3://bucket/… or holds a "." or ".." segment, or a local root that is
// not a readable folder.
func (sc Scope) Validate() error {
	s, err := sc.open()
	if err != nil {
		return err
	}
	s.close()
	return nil
}

// open checks sc and opens its local root. The caller closes it.
func (sc Scope) open() (*scope, error) {
	s := &scope{tenant: sc.Tenant}
	var all []s3Prefix
	for _, p := range sc.S3Prefixes {
		tenant, loc, ok := strings.Cut(p, "=")
		if !ok || catalog.ValidateName("tenant", tenant) != nil {
			return nil, fmt.Errorf("backfill: --allow-prefix %q: name the tenant it is for: TENANT=s3://bucket/prefix/", p)
		}
		bucket, key, ok := parseS3(loc)
		if !ok || bucket == "" || hasDotSegment(key) {
			return nil, fmt.Errorf("backfill: --allow-prefix %q: want s3://bucket/ or s3://bucket/key-prefix, without . or .. segments", p)
		}
		all = append(all, s3Prefix{p, tenant, bucket, key})
	}
	for _, a := range all {
		for _, b := range all {
			if a.tenant != b.tenant && a.bucket == b.bucket && strings.HasPrefix(b.key, a.key) {
				_, bLoc, _ := strings.Cut(b.entry, "=")
				return nil, fmt.Errorf("backfill: --allow-prefix %q covers %s's %q: a tenant's prefix may not reach another's data", a.entry, b.tenant, bLoc)
			}
		}
		if a.tenant == sc.Tenant {
			s.s3 = append(s.s3, a)
		}
	}
	if sc.LocalRoot != "" {
		abs, err := filepath.Abs(sc.LocalRoot)
		if err != nil {
			return nil, fmt.Errorf("backfill: --local-root: %w", err)
		}
		if s.root, err = os.OpenRoot(abs); err != nil {
			return nil, fmt.Errorf("backfill: --local-root: %w", err)
		}
		s.rootPath = abs
	}
	return s, nil
}

func (s *scope) close() {
	if s.root != nil {
		s.root.Close()
	}
}

// parseS3 splits an s3:// (or s3a://) URL into bucket and key the way
// parquetschema.FromLocation does, so what is checked is what is read.
func parseS3(location string) (bucket, key string, ok bool) {
	u, err := url.Parse(location)
	if err != nil || (u.Scheme != "s3" && u.Scheme != "s3a") {
		return "", "", false
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), true
}

func hasDotSegment(key string) bool {
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// target is a location inside the scope: an s3:// location (read as
// written) or a path relative to the local root.
type target struct {
	s3    bool
	local string // slash-separated, relative to the root
}

// check returns where location may be read, or a *RefusedError.
func (s *scope) check(location string) (target, error) {
	refuse := func(format string, args ...any) (target, error) {
		return target{}, &RefusedError{Location: location, Reason: fmt.Sprintf(format, args...)}
	}
	if location == "" {
		return refuse("is empty")
	}
	if bucket, key, ok := parseS3(location); ok {
		switch {
		case bucket == "":
			return refuse("names no bucket")
		case hasDotSegment(key):
			return refuse("has a . or .. segment")
		case len(s.s3) == 0:
			return refuse("is on S3 and no s3:// prefix is allowed to tenant %s: set --allow-prefix %s=s3://bucket/prefix/ (LAKE_BACKFILL_ALLOW_PREFIXES) to read it", s.tenant, s.tenant)
		}
		for _, p := range s.s3 {
			if bucket == p.bucket && strings.HasPrefix(key, p.key) {
				return target{s3: true}, nil
			}
		}
		return refuse("is outside every --allow-prefix of tenant %s", s.tenant)
	}
	p := location
	if u, err := url.Parse(location); err == nil && u.Scheme != "" {
		if u.Scheme != "file" {
			return refuse("is neither s3:// nor a local path")
		}
		if u.Host != "" && u.Host != "localhost" {
			return refuse("is a file URL of another host")
		}
		p = u.Path
	}
	if s.root == nil {
		return refuse("is a local path and no local root is set: set --local-root (LAKE_BACKFILL_LOCAL_ROOT) to the folder that holds it to read it")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return refuse("cannot be made absolute: %v", err)
	}
	rel, err := filepath.Rel(s.rootPath, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return refuse("is outside --local-root %s", s.rootPath)
	}
	return target{local: filepath.ToSlash(rel)}, nil
}

// readLocal reads the schema of the first .parquet file (in name order) at
// rel, a file or a folder under the root, through the root: neither ".."
// nor a symbolic link reaches outside it. It returns the file it read.
func (s *scope) readLocal(rel string) (*arrow.Schema, string, error) {
	show := func(name string) string { return filepath.Join(s.rootPath, filepath.FromSlash(name)) }
	st, err := s.root.Stat(rel)
	if err != nil {
		return nil, "", fmt.Errorf("backfill: %s: %w", show(rel), err)
	}
	file := rel
	if st.IsDir() {
		var files []string
		err := fs.WalkDir(s.root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			return nil, "", fmt.Errorf("backfill: %s: %w", show(rel), err)
		}
		if len(files) == 0 {
			return nil, "", fmt.Errorf("%w: %s", parquetschema.ErrNoParquet, show(rel))
		}
		sort.Strings(files)
		file = files[0]
	}
	f, err := s.root.Open(file)
	if err != nil {
		return nil, show(file), fmt.Errorf("backfill: %s: %w", show(file), err)
	}
	defer f.Close()
	sch, err := parquetschema.FromReader(f)
	if err != nil {
		return nil, show(file), fmt.Errorf("%s: %w", show(file), err)
	}
	return sch, show(file), nil
}

// read reads the schema at a location check admitted.
func (s *scope) read(ctx context.Context, location string, t target, client parquetschema.S3API) (*arrow.Schema, string, error) {
	if t.s3 {
		return parquetschema.FromLocation(ctx, location, client)
	}
	return s.readLocal(t.local)
}
