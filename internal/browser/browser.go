// Package browser is lake's read-only web catalog browser: an http.Handler
// serving one page (embedded assets, no build step, no network at runtime)
// and a JSON API under /api/. Every answer comes from discovery, through a
// Flight SQL client acting with the bearer token the page sends, so a
// caller sees exactly what discovery shows its tenant: the browser reads no
// metastore and holds no credentials of its own. In local mode it can also
// mint dev tokens for local mode's dev tenants (Options.DevToken).
//
// The API (all GET, JSON, `Authorization: Bearer <token>` unless noted):
//
//	/api/config                      dev tenants offered (no token needed)
//	/api/dev-token?tenant=T          a read-only dev token (POST; local mode only; no token needed)
//	/api/namespaces?offset=&limit=   the tenant's namespaces with table counts
//	/api/tables?namespace=&offset=&limit=  tables, all or one namespace's,
//	                                 with column counts and descriptions
//	/api/table?namespace=&name=      one table: its description, properties,
//	                                 location, version and times (lake.describe
//	                                 action), then its schema as a tree with
//	                                 exact types (TypeString), or legacy
//	/api/search?table=&column=       discovery's lake.search action
//	/api/snapshot                    the tenant's snapshot generation and age
//	/api/history?namespace=&name=    the table's kept versions (local mode)
//	/api/preview?namespace=&name=&limit=&columns=  the table's first rows: the
//	                                 registration API's GET …/preview answer
//	                                 (wire.Preview, or its error) as is, asked
//	                                 with the page's token (local mode;
//	                                 elsewhere 501 not_implemented)
//
// Lists are paginated: limit defaults to 100 and is at most MaxLimit.
// Discovery pages them (its lake.list_tables and lake.list_namespaces
// actions), so a page carries a page from discovery, not the tenant.
// Errors are {"error": {"code", "message"}}: 401 without or with a bad
// token, 400 for bad parameters, 404 for an unknown table, 503 while
// discovery has no snapshot, 502 when discovery fails otherwise.
package browser

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/apierror"
	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Page sizes.
const (
	DefaultLimit = 100
	MaxLimit     = wire.MaxListLimit
)

//go:embed static
var static embed.FS

// Options configure a Handler.
type Options struct {
	// Discovery is discovery's Flight SQL address (see
	// flightclient.ParseEndpoint).
	Discovery string
	// DevTenants are offered on the page when DevToken is set.
	DevTenants []string
	// DevToken, when set (local mode only), mints a dev token for one of
	// DevTenants.
	DevToken func(tenant string) (string, error)
	// Now is the clock for snapshot ages; default time.Now.
	Now func() time.Time
	// DialOptions are added to the gRPC dial options of the connection to
	// discovery (tests count calls with an interceptor).
	DialOptions []grpc.DialOption
	// History, when set (local mode: the catalog in process), gives a
	// table's kept versions newest first, for the table's history view.
	// Without it (discovery's browser on AWS, which reaches no registration
	// store) the view points at lake history.
	History func(ctx context.Context, ref catalog.TableRef) ([]catalog.Version, error)
	// PreviewAPI, when set (local mode: the registration API in process),
	// answers the Preview tab: /api/preview is served by it as
	// GET /v1/tenants/{tenant}/namespaces/{ns}/tables/{name}/preview with
	// the page's token, the tenant the token's as discovery authenticates
	// it. It must take the browser's read-only dev tokens for that route.
	// Without it (discovery's browser on AWS, whose registration API takes
	// IAM callers alone) the tab points at lake preview.
	PreviewAPI http.Handler
}

// Handler serves the page and its API. It is safe for concurrent use.
type Handler struct {
	opts   Options
	client *flightclient.Client
	mux    *http.ServeMux
}

// New returns a Handler that asks the discovery server at opts.Discovery.
// The connection is made lazily. Call Close to close it.
func New(opts Options) (*Handler, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DevToken == nil {
		opts.DevTenants = nil
	}
	c, err := flightclient.Dial(opts.Discovery, "", opts.DialOptions...)
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	h := &Handler{opts: opts, client: c, mux: http.NewServeMux()}
	assets, err := fs.Sub(static, "static")
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	h.mux.Handle("GET /", http.FileServerFS(assets))
	h.mux.HandleFunc("GET /api/config", h.config)
	h.mux.HandleFunc("POST /api/dev-token", h.devToken)
	h.mux.HandleFunc("GET /api/namespaces", h.authed(h.namespaces))
	h.mux.HandleFunc("GET /api/tables", h.authed(h.tables))
	h.mux.HandleFunc("GET /api/table", h.authed(h.table))
	h.mux.HandleFunc("GET /api/search", h.authed(h.search))
	h.mux.HandleFunc("GET /api/snapshot", h.authed(h.snapshot))
	h.mux.HandleFunc("GET /api/history", h.authed(h.history))
	h.mux.HandleFunc("GET /api/preview", h.authed(h.preview))
	h.mux.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		apierror.Write(w, http.StatusNotFound, wire.CodeNotFound, "no such API endpoint")
	})
	return h, nil
}

// Close closes the connection to discovery.
func (h *Handler) Close() error { return h.client.Close() }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	h.mux.ServeHTTP(w, r)
}

// authed runs next with a client acting with the request's bearer token,
// or answers 401 when there is none.
func (h *Handler) authed(next func(http.ResponseWriter, *http.Request, *flightclient.Client)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := auth.BearerToken(r.Header.Get("Authorization"))
		if !ok || tok == "" {
			apierror.Write(w, http.StatusUnauthorized, wire.CodeUnauthenticated, "send a token: Authorization: Bearer <token>")
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		next(w, r, h.client.WithToken(tok))
	}
}

// discoveryError answers err, an error from a discovery call, with the
// status its gRPC code maps to; the message names the kind, not the chain.
func discoveryError(w http.ResponseWriter, err error) {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		apierror.Write(w, http.StatusUnauthorized, wire.CodeUnauthenticated, "the token was refused: missing, invalid or expired")
	case codes.InvalidArgument:
		apierror.Write(w, http.StatusBadRequest, wire.CodeInvalid, status.Convert(err).Message())
	case codes.Unavailable:
		apierror.Write(w, http.StatusServiceUnavailable, wire.CodeUnavailable, "discovery has no snapshot yet or cannot be reached; retry")
	default:
		apierror.Write(w, http.StatusBadGateway, wire.CodeDiscoveryFailed, "discovery failed to answer")
	}
}

func badRequest(w http.ResponseWriter, msg string) {
	apierror.Write(w, http.StatusBadRequest, wire.CodeInvalid, msg)
}

// page reads offset and limit.
func page(r *http.Request) (offset, limit int, err error) {
	offset, limit = 0, DefaultLimit
	if s := r.FormValue("offset"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil || offset < 0 {
			return 0, 0, errors.New("offset must be a whole number ≥ 0")
		}
	}
	if s := r.FormValue("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > MaxLimit {
			return 0, 0, fmt.Errorf("limit must be a whole number from 1 to %d", MaxLimit)
		}
	}
	return offset, limit, nil
}

// configAnswer is GET /api/config.
type configAnswer struct {
	// DevTenants are the tenants a dev token can be minted for (local mode);
	// empty: paste a token.
	DevTenants []string `json:"dev_tenants"`
}

func (h *Handler) config(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, configAnswer{DevTenants: append([]string{}, h.opts.DevTenants...)})
}

func (h *Handler) devToken(w http.ResponseWriter, r *http.Request) {
	if h.opts.DevToken == nil {
		apierror.Write(w, http.StatusNotFound, wire.CodeNotFound, "dev tokens exist only in local mode")
		return
	}
	tenant := r.FormValue("tenant")
	if !slices.Contains(h.opts.DevTenants, tenant) {
		badRequest(w, fmt.Sprintf("tenant %q is not a dev tenant", tenant))
		return
	}
	tok, err := h.opts.DevToken(tenant)
	if err != nil {
		apierror.Write(w, http.StatusInternalServerError, wire.CodeInternal, "minting the dev token failed")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, struct {
		Tenant string `json:"tenant"`
		Token  string `json:"token"`
	}{tenant, tok})
}

// Namespace is one row of GET /api/namespaces.
type Namespace struct {
	Name   string `json:"name"`
	Tables int    `json:"tables"`
}

// NamespacesAnswer is GET /api/namespaces.
type NamespacesAnswer struct {
	Tenant     string      `json:"tenant"`
	Namespaces []Namespace `json:"namespaces"`
	Total      int         `json:"total"`
	Offset     int         `json:"offset"`
	Limit      int         `json:"limit"`
}

func (h *Handler) namespaces(w http.ResponseWriter, r *http.Request, c *flightclient.Client) {
	offset, limit, err := page(r)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	p, err := c.ListNamespaces(r.Context(), offset, limit)
	if err != nil {
		discoveryError(w, err)
		return
	}
	out := NamespacesAnswer{Tenant: p.Tenant, Namespaces: []Namespace{}, Total: p.Total, Offset: offset, Limit: limit}
	for _, n := range p.Namespaces {
		out.Namespaces = append(out.Namespaces, Namespace{Name: n.Name, Tables: n.Tables})
	}
	writeJSON(w, out)
}

// TableRow is one row of GET /api/tables.
type TableRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"table_type"`
	// Columns is the number of top-level columns, -1 for a legacy table
	// (no schema stored).
	Columns int `json:"columns"`
	// Description is the start of the registration's (at most
	// wire.MaxListedDescription bytes; DescriptionTruncated says it
	// goes on).
	Description          string `json:"description,omitempty"`
	DescriptionTruncated bool   `json:"description_truncated,omitempty"`
}

// TablesAnswer is GET /api/tables.
type TablesAnswer struct {
	Tenant string     `json:"tenant"`
	Tables []TableRow `json:"tables"`
	Total  int        `json:"total"`
	Offset int        `json:"offset"`
	Limit  int        `json:"limit"`
}

// tables answers a page with discovery's list-tables action, which reads
// and sends that page alone (GetTables would send the whole tenant or
// namespace, to be cut here).
func (h *Handler) tables(w http.ResponseWriter, r *http.Request, c *flightclient.Client) {
	offset, limit, err := page(r)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	ns, filtered := r.Form["namespace"]
	if filtered && ns[0] == "" {
		badRequest(w, "namespace must not be empty (leave it out for every namespace)")
		return
	}
	namespace := ""
	if filtered {
		namespace = ns[0]
	}
	p, err := c.ListTables(r.Context(), namespace, offset, limit)
	if err != nil {
		discoveryError(w, err)
		return
	}
	out := TablesAnswer{Tenant: p.Tenant, Tables: []TableRow{}, Total: p.Total, Offset: offset, Limit: limit}
	for _, t := range p.Tables {
		out.Tables = append(out.Tables, TableRow{Namespace: t.Namespace, Name: t.Table, Type: t.TableType, Columns: t.Columns,
			Description: t.Description, DescriptionTruncated: t.DescriptionTruncated})
	}
	writeJSON(w, out)
}

// TableAnswer is GET /api/table.
type TableAnswer struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"table_type"`
	// Legacy is set for a table registered before schemas were stored:
	// discovery has no schema for it, and Fix says how to add one.
	Legacy bool    `json:"legacy"`
	Fix    string  `json:"fix,omitempty"`
	Schema *Schema `json:"schema,omitempty"`

	// The rest is discovery's lake.describe answer, all absent when it
	// failed (DescribeError then says so); Description, Properties and the
	// times are also absent when the registration has none.
	Location    string            `json:"location,omitempty"`
	Version     int64             `json:"version,omitempty"`
	CreatedAt   *time.Time        `json:"created_at,omitempty"`
	UpdatedAt   *time.Time        `json:"updated_at,omitempty"`
	Description string            `json:"description,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	// DescribeError is why the fields above are missing: the schema view
	// does not depend on them.
	DescribeError string `json:"describe_error,omitempty"`
}

// table asks discovery's describe action first and GetTables for the one
// table's schema only when describe says it has one; a legacy table costs
// no failed schema request. When describe fails for another reason than
// the caller's token or discovery's state, the schema is still answered
// (asked for as before describe existed) with DescribeError in place of
// describe's fields.
func (h *Handler) table(w http.ResponseWriter, r *http.Request, c *flightclient.Client) {
	ns, name := r.FormValue("namespace"), r.FormValue("name")
	if ns == "" || name == "" {
		badRequest(w, "namespace and name are required")
		return
	}
	notFound := func() {
		apierror.Write(w, http.StatusNotFound, wire.CodeNotFound, fmt.Sprintf("no table %s.%s in your tenant", ns, name))
	}
	d, derr := c.Describe(r.Context(), ns, name)
	switch status.Code(derr) {
	case codes.OK:
	case codes.NotFound:
		notFound()
		return
	case codes.Unauthenticated, codes.PermissionDenied, codes.Unavailable, codes.InvalidArgument:
		discoveryError(w, derr)
		return
	}
	nsP, nameP := flightclient.EscapeLike(ns), flightclient.EscapeLike(name)
	opts := &flightsql.GetTablesOpts{DbSchemaFilterPattern: &nsP, TableNameFilterPattern: &nameP, IncludeSchema: derr != nil || d.HasSchema}
	rows, err := c.Tables(r.Context(), opts)
	legacy := !opts.IncludeSchema
	if derr != nil && status.Code(err) == codes.FailedPrecondition {
		legacy, opts.IncludeSchema = true, false
		rows, err = c.Tables(r.Context(), opts)
	}
	if err != nil {
		discoveryError(w, err)
		return
	}
	if len(rows) != 1 {
		notFound()
		return
	}
	t := rows[0]
	out := TableAnswer{Tenant: t.Catalog, Namespace: t.Namespace, Name: t.Name, Type: t.Type, Legacy: legacy}
	if legacy {
		out.Fix = fmt.Sprintf("this table was registered without a schema; run `lake backfill --tenant %s` (or re-register it) to store one", t.Catalog)
	} else {
		out.Schema = SchemaTree(t.Schema)
	}
	if derr != nil {
		out.DescribeError = fmt.Sprintf("discovery did not describe the table (%s); description, properties, location, version and times are not shown", status.Code(derr))
	} else {
		out.Location, out.Version, out.Description, out.Properties = d.Location, d.Version, d.Description, d.Properties
		out.CreatedAt, out.UpdatedAt = knownTime(d.CreatedAt), knownTime(d.UpdatedAt)
	}
	writeJSON(w, out)
}

// knownTime is &t, or nil for the zero time (a legacy registration's
// missing update time).
func knownTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (h *Handler) search(w http.ResponseWriter, r *http.Request, c *flightclient.Client) {
	table, column := r.FormValue("table"), r.FormValue("column")
	if table == "" && column == "" {
		badRequest(w, "give table or column (or both): LIKE patterns, % and _ as wildcards")
		return
	}
	res, err := c.Search(r.Context(), table, column)
	if err != nil {
		discoveryError(w, err)
		return
	}
	writeJSON(w, SearchAnswer{Matches: res.Matches, Truncated: res.Truncated})
}

// SearchAnswer is GET /api/search.
type SearchAnswer struct {
	Matches []wire.SearchMatch `json:"matches"`
	// Truncated is set when discovery returned only the first
	// wire.MaxSearchMatches matches.
	Truncated bool `json:"truncated"`
}

// HistoryVersion is one version of GET /api/history: who made it, how and
// when, its column count (-1: no schema) and what it changed from the
// version before it (schema field by field with dotted paths, then
// description, location and properties).
type HistoryVersion struct {
	Version int64     `json:"version"`
	Op      string    `json:"op,omitempty"`
	By      string    `json:"by,omitempty"`
	At      time.Time `json:"at"`
	Columns int       `json:"columns"`
	Changes []string  `json:"changes"`
}

// HistoryAnswer is GET /api/history. Available is false where the browser
// has no history to read (Note says where it is).
type HistoryAnswer struct {
	Available bool             `json:"available"`
	Note      string           `json:"note,omitempty"`
	Versions  []HistoryVersion `json:"versions"`
}

// history answers GET /api/history?namespace=&name=: the table's kept
// versions, each with its diff from the one before. The tenant is the
// token's, as discovery authenticates it (a list call answers it).
func (h *Handler) history(w http.ResponseWriter, r *http.Request, c *flightclient.Client) {
	ns, name := r.FormValue("namespace"), r.FormValue("name")
	if ns == "" || name == "" {
		badRequest(w, "namespace and name are required")
		return
	}
	if h.opts.History == nil {
		writeJSON(w, HistoryAnswer{Versions: []HistoryVersion{}, Note: "this browser reads discovery only; the history is kept by the registration API: lake history"})
		return
	}
	ref, ok := callerTable(w, r, c, ns, name)
	if !ok {
		return
	}
	vs, err := h.opts.History(r.Context(), ref)
	if errors.Is(err, catalog.ErrNotFound) {
		apierror.Write(w, http.StatusNotFound, wire.CodeNotFound, fmt.Sprintf("no table %s.%s in your tenant", ns, name))
		return
	}
	if err != nil {
		apierror.Write(w, http.StatusServiceUnavailable, wire.CodeUnavailable, "the history could not be read; retry")
		return
	}
	out := HistoryAnswer{Available: true, Versions: []HistoryVersion{}}
	for i, v := range vs {
		reg := v.Registration
		hv := HistoryVersion{Version: v.Version, Op: reg.Op(), By: reg.UpdatedBy(), At: reg.UpdatedAt(), Columns: -1, Changes: []string{}}
		s, serr := reg.Schema()
		if serr == nil {
			hv.Columns = s.NumFields()
		}
		if i+1 < len(vs) { // the version before it is kept: what changed
			hv.Changes = append(hv.Changes, catalog.DiffRegistrations(vs[i+1].Registration, reg).Lines()...)
		}
		out.Versions = append(out.Versions, hv)
	}
	writeJSON(w, out)
}

// callerTable is table ns.name of the caller's tenant: the tenant as
// discovery authenticates the page's token (a list call answers it). It
// answers the error itself and returns false when there is none.
func callerTable(w http.ResponseWriter, r *http.Request, c *flightclient.Client, ns, name string) (catalog.TableRef, bool) {
	page, err := c.ListNamespaces(r.Context(), 0, 1)
	if err != nil {
		discoveryError(w, err)
		return catalog.TableRef{}, false
	}
	ref := catalog.TableRef{Tenant: page.Tenant, Namespace: ns, Name: name}
	if err := ref.Validate(); err != nil {
		badRequest(w, err.Error())
		return catalog.TableRef{}, false
	}
	return ref, true
}

// preview answers GET /api/preview?namespace=&name=&limit=&columns= with
// Options.PreviewAPI's answer to the table's preview route, as the caller:
// the rows (wire.Preview) or the API's error envelope, status included,
// so the tab shows its message (a file that does not match the schema, a
// location lake may not read, a cap).
func (h *Handler) preview(w http.ResponseWriter, r *http.Request, c *flightclient.Client) {
	ns, name := r.FormValue("namespace"), r.FormValue("name")
	if ns == "" || name == "" {
		badRequest(w, "namespace and name are required")
		return
	}
	if h.opts.PreviewAPI == nil {
		apierror.Write(w, http.StatusNotImplemented, wire.CodeNotImplemented,
			"this browser reads discovery only; preview the table's rows with lake preview (the registration API's GET …/preview)")
		return
	}
	ref, ok := callerTable(w, r, c, ns, name)
	if !ok {
		return
	}
	q := url.Values{}
	for _, k := range []string{"limit", "columns"} {
		if v, ok := r.Form[k]; ok {
			q[k] = v[:1]
		}
	}
	fwd := r.Clone(r.Context())
	fwd.URL = &url.URL{Path: "/v1/tenants/" + ref.Tenant + "/namespaces/" + ref.Namespace + "/tables/" + ref.Name + "/preview", RawQuery: q.Encode()}
	fwd.RequestURI, fwd.Form = "", nil
	h.opts.PreviewAPI.ServeHTTP(w, fwd)
}

// SnapshotAnswer is GET /api/snapshot.
type SnapshotAnswer struct {
	Generation int64 `json:"generation"`
	// CreatedAt and AgeSeconds are absent when the tenant has no tables.
	CreatedAt  *time.Time `json:"created_at,omitempty"`
	AgeSeconds *float64   `json:"age_seconds,omitempty"`
	Tables     int64      `json:"tables"`
}

func (h *Handler) snapshot(w http.ResponseWriter, r *http.Request, c *flightclient.Client) {
	info, err := c.SnapshotInfo(r.Context())
	if err != nil {
		discoveryError(w, err)
		return
	}
	out := SnapshotAnswer{Generation: info.Generation, Tables: info.Tables}
	if !info.CreatedAt.IsZero() {
		at := info.CreatedAt
		age := h.opts.Now().Sub(at).Seconds()
		out.CreatedAt, out.AgeSeconds = &at, &age
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		apierror.Write(w, http.StatusInternalServerError, wire.CodeInternal, "encoding the response failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}
