package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/lake-catalog/lake/pkg/wire"
)

// Source is what the handler answers from: the discovery core's prepared
// tenants, in memory. Implementations must be safe for concurrent use; the
// handler never modifies a returned slice, map or schema, which stay owned
// by the Source.
//
// An error wrapping ErrUnavailable (no snapshot loaded yet, a dependency
// down) is answered 503 ServiceUnavailableException; any other error is
// 500 and logged. A missing namespace or table is ok false with a nil
// error, never an error.
type Source interface {
	// Namespaces returns the namespaces of the tenant (one level: lake
	// namespaces are flat), sorted, no duplicates. A tenant with no tables
	// has none.
	Namespaces(ctx context.Context, tenant string) ([]string, error)
	// Tables returns the tables of a namespace, sorted by name, no
	// duplicates; ok is false when the namespace does not exist.
	Tables(ctx context.Context, tenant, namespace string) (names []string, ok bool, err error)
	// Table returns what loadTable needs; ok is false when the table (or
	// its namespace) does not exist.
	Table(ctx context.Context, tenant, namespace, name string) (Table, bool, error)
	// Credentials vends access to the table's files: vending.Door's answer,
	// or an error vending.Code classifies (not configured, location not
	// allowed, vending failed). The handler calls it only for a table Table
	// found.
	Credentials(ctx context.Context, tenant, namespace, name string) (wire.Credentials, error)
}

// Table is one table as loadTable describes it: its metadata file when
// lake's Iceberg sync wrote one (MetadataLocation and Metadata, answered
// verbatim, snapshots included), else metadata built from its schema, with
// no snapshot.
type Table struct {
	// UUID is the table's Iceberg table-uuid. Empty or not a UUID: the
	// handler derives a stable one from tenant, namespace and name.
	UUID string
	// Location is the table's base location ("s3://bucket/prefix/").
	Location string
	// Schema is the current schema with its field ids; its ID is the
	// table's Version (or 0). Required: Iceberg cannot describe a table
	// without one (a legacy registration), so a Source should not list
	// such tables; loadTable answers one 500 with a message saying so.
	Schema *iceberg.Schema
	// Earlier are the schemas of the registration's earlier kept versions
	// (catalog.History), oldest first, each with its own schema id (the
	// version that registered it) and its field ids as recorded (a field
	// keeps its id while its path exists). The metadata lists them before
	// Schema, an equal schema once (under the first one's id, which is
	// then current-schema-id when Schema equals it). Nil: Schema alone.
	Earlier []*iceberg.Schema
	// LastColumnID is the highest field id ever assigned (at least the
	// schema's highest); the handler uses the larger of the two.
	LastColumnID int
	// Properties are the table's own properties; Iceberg's reserved ones
	// (format-version, uuid, current-snapshot-id…) are dropped.
	Properties map[string]string
	// Description becomes the "comment" property when not empty.
	Description string
	// UpdatedAt becomes last-updated-ms (the time of the answer when zero).
	UpdatedAt time.Time
	// Version is the catalog version of the registration.
	Version int64
	// NameMapping is the JSON of schema.name-mapping.default (maps the
	// Parquet files' column names to field ids), or nil.
	NameMapping []byte
	// MetadataLocation and Metadata are the table's current metadata file:
	// its location and its TableMetadata JSON (an object), which loadTable
	// answers as they are, instead of metadata built from Schema (which
	// may then be nil). Metadata nil: none yet. The Source checked them
	// (catalog.DecodeIcebergState); the handler does not parse them.
	MetadataLocation string
	Metadata         json.RawMessage
	// Answer, when not nil, is loadTable's whole answer without
	// credentials (LoadTableAnswer of MetadataLocation and Metadata),
	// written as it is in one write; Metadata may then be a part of it.
	Answer []byte
}

// KeptSource is a Source that keeps loadTable answers ready. The handler
// asks KeptTable first for a loadTable without vended credentials and, when
// it has the answer, writes it without arming the request's deadline
// (nothing is left that could block); otherwise it calls Table under the
// deadline as for any Source.
type KeptSource interface {
	Source
	// KeptTable returns what Table would for the table when its answer
	// is kept ready (Table.Metadata set), with nothing to prepare, build
	// or wait for; ok false otherwise, also for a table that does not
	// exist (Table then says which). It never blocks, does no I/O and
	// answers only from the tenant's own state, as Table does.
	KeptTable(tenant, namespace, name string) (Table, bool)
}

// Authenticator returns the tenant of a request (a bearer token's tenant);
// the tenant comes from nothing else. An error is answered 401
// NotAuthorizedException, or 503 when it wraps ErrUnavailable (a key set
// that cannot be fetched).
type Authenticator func(r *http.Request) (tenant string, err error)

// ErrUnavailable marks a Source or Authenticator error that a retry may
// cure; the handler answers it 503 ServiceUnavailableException.
var ErrUnavailable = errors.New("unavailable; retry")

// ErrNotRepresentable marks a Source error for a table Iceberg cannot
// describe (a column whose Arrow type has no Iceberg type, a table without
// a schema): the handler answers 400 BadRequestException with the error's
// message, which names the column and its type. Listings still name the
// table; Flight SQL serves its exact schema.
var ErrNotRepresentable = errors.New("cannot be served over Iceberg REST")

// Page sizes of listings (see the package documentation).
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// DefaultTimeout is the deadline of a request when Options.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// Options configure New.
type Options struct {
	// Source answers every request. Required.
	Source Source
	// Authenticate gives the tenant of a request. Required.
	Authenticate Authenticator
	// Timeout bounds each request (DefaultTimeout when 0).
	Timeout time.Duration
	// Logger receives internal errors (slog.Default() when nil).
	Logger *slog.Logger
}

// Handler answers the Iceberg REST protocol, read side. It is safe for
// concurrent use.
type Handler struct {
	src     Source
	kept    KeptSource // src, when it keeps answers; else nil
	auth    Authenticator
	timeout time.Duration
	log     *slog.Logger
}

var _ http.Handler = (*Handler)(nil)

// New returns the handler of o.
func New(o Options) (*Handler, error) {
	if o.Source == nil {
		return nil, errors.New("icebergrest: Options.Source is required")
	}
	if o.Authenticate == nil {
		return nil, errors.New("icebergrest: Options.Authenticate is required")
	}
	h := &Handler{src: o.Source, auth: o.Authenticate, timeout: o.Timeout, log: o.Logger}
	h.kept, _ = o.Source.(KeptSource)
	if h.timeout <= 0 {
		h.timeout = DefaultTimeout
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h, nil
}

// endpoints are the served routes, as /v1/config advertises them.
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
}

// ServeHTTP authenticates, checks the prefix, then routes. Request bodies
// are never read. Every request is authenticated; the Source is called
// under the request's deadline (Options.Timeout), but for a loadTable
// whose answer a KeptSource has ready.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant, err := h.auth(r)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			writeError(w, errUnavailable("authentication is unavailable; retry"))
			return
		}
		writeError(w, &apiError{http.StatusUnauthorized, typeNotAuthorized, "not authenticated"})
		return
	}
	if e := validName("tenant", tenant); e != nil {
		writeError(w, &apiError{http.StatusUnauthorized, typeNotAuthorized, "not authenticated"})
		return
	}
	var buf [maxSegments]string
	segs, ok := splitPath(r.URL, buf[:0])
	if !ok {
		writeError(w, errNoRoute)
		return
	}
	if len(segs) == 1 && segs[0] == "config" {
		if e := checkMethod(r); e != nil {
			writeError(w, e)
			return
		}
		h.config(w, r, tenant)
		return
	}
	switch {
	case len(segs) >= 2 && segs[0] == tenant && isRoot(segs[1]):
		segs = segs[1:]
	case isRoot(segs[0]):
		// no prefix (a tenant named "namespaces" takes the prefix form)
	case len(segs) >= 2 && segs[0] != tenant:
		// Another tenant, existing or not: the same answer either way.
		writeError(w, &apiError{http.StatusForbidden, typeForbidden, "the prefix is not the caller's tenant"})
		return
	default:
		writeError(w, errNoRoute)
		return
	}
	if e := checkMethod(r); e != nil {
		writeError(w, e)
		return
	}
	var q url.Values // nil reads as empty: most requests have no query
	if r.URL.RawQuery != "" {
		if q, err = url.ParseQuery(r.URL.RawQuery); err != nil {
			writeError(w, badRequest("malformed query string"))
			return
		}
	}
	if h.kept != nil && h.loadKept(w, r, tenant, segs, q) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	if e := h.route(ctx, w, r, tenant, segs, q); e != nil {
		writeError(w, e)
	}
}

// isRoot reports whether seg starts a spec route without a prefix.
func isRoot(seg string) bool {
	switch seg {
	case "namespaces", "tables", "views", "transactions":
		return true
	}
	return false
}

// checkMethod refuses every method but GET and HEAD: the read side
// supports no writes.
func checkMethod(r *http.Request) *apiError {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	return &apiError{http.StatusNotAcceptable, typeUnsupported, "lake's Iceberg REST catalog is read-only: " + methodName(r.Method) + " is not supported"}
}

// methodName bounds a method for a message.
func methodName(m string) string {
	if len(m) > 16 {
		return "this method"
	}
	return m
}

// route answers the routes under the prefix.
func (h *Handler) route(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant string, segs []string, q url.Values) *apiError {
	head := r.Method == http.MethodHead
	switch {
	case len(segs) == 1 && segs[0] == "namespaces":
		return h.listNamespaces(ctx, w, tenant, q)
	case len(segs) >= 2 && segs[0] == "namespaces":
		ns, e := namespace(segs[1])
		if e != nil {
			return e
		}
		switch {
		case len(segs) == 2:
			return h.loadNamespace(ctx, w, tenant, ns, head)
		case len(segs) == 3 && segs[2] == "tables":
			return h.listTables(ctx, w, tenant, ns, q)
		case len(segs) >= 4 && segs[2] == "tables":
			name := segs[3]
			if e := validName("table", name); e != nil {
				return e
			}
			switch {
			case len(segs) == 4 && head:
				return h.tableExists(ctx, w, tenant, ns, name)
			case len(segs) == 4:
				return h.loadTable(ctx, w, r, tenant, ns, name, q)
			case len(segs) == 5 && segs[4] == "credentials":
				return h.credentials(ctx, w, tenant, ns, name)
			}
		}
	}
	return errNoRoute
}

// maxSegments bounds the segments of a path after /v1/: no route has more.
const maxSegments = 8

// splitPath appends to segs the percent-decoded segments of u's path
// after /v1/, split before decoding so an encoded '/' stays inside its
// segment; false for a path that is not one (empty segments, more than
// maxSegments, a bad escape). A segment without escapes is a part of the
// path, not a copy.
func splitPath(u *url.URL, segs []string) ([]string, bool) {
	rest, ok := strings.CutPrefix(u.EscapedPath(), "/v1/")
	if !ok || rest == "" {
		return nil, false
	}
	for {
		raw, after, more := strings.Cut(rest, "/")
		if len(segs) == maxSegments {
			return nil, false
		}
		d, err := url.PathUnescape(raw)
		if err != nil || d == "" {
			return nil, false
		}
		segs = append(segs, d)
		if !more {
			return segs, true
		}
		rest = after
	}
}

// namespace checks a namespace path segment: a multi-level namespace (its
// levels joined by the unit separator) names no lake namespace.
func namespace(seg string) (string, *apiError) {
	if strings.ContainsRune(seg, 0x1f) {
		return "", errNoSuchNamespace
	}
	if e := validName("namespace", seg); e != nil {
		return "", e
	}
	return seg, nil
}
