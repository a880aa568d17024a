// Package registerapi is lake's registration HTTP API: one net/http handler
// that the register Lambda serves through an API Gateway adapter and local
// mode serves directly.
//
// Routes (names are path segments, percent-encoded as needed):
//
//	POST   /v1/tenants/{tenant}/namespaces/{namespace}/tables          register
//	GET    /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}  read (strongly consistent)
//	PUT    /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}  update the schema (If-Match: "<etag>" and
//	                                                                   "only_if_no_schema": true make it conditional)
//	DELETE /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}  drop (If-Match: "<etag>" makes it conditional;
//	                                                                   a tombstone keeps it restorable for the retention)
//	POST   /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/undrop  restore a drop: {"creation_id": "…"}
//	GET    /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/versions  kept versions, newest first
//	                                                                   (?limit=1–100&before=V&creation_id=…)
//	GET    /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/versions/{version}  one kept version
//	GET    /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/diff  what changed between two kept versions
//	                                                                   (?from=V[&to=V][&creation_id=…]; to: the newest)
//	GET    /v1/tenants/{tenant}/dropped  the tenant's dropped tables in retention, newest first
//	GET    /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/credentials  access to the table's files
//	POST   /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/sync  the table's files into Iceberg metadata (sync.go)
//	GET    /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/preview  the table's first rows (preview.go;
//	                                                                   ?limit=1–1000, 100 by default; ?columns=a,b)
//	GET|PUT /v1/admin/tenants/{tenant}/settings, POST|DELETE /v1/admin/tenants/{tenant}/allowed-prefixes
//	                                                                   an operator's settings (vending.go)
//
// Every write records its caller (the table's "updated_by", with "op":
// create, update, drop or undrop). The dropped tables come from the
// catalog (catalog.Dropped: the tenant's index of dropped tables and its
// tombstones, read by key), in local mode and on AWS alike, a drop listed
// as soon as it is made; the change feed is discovery's (lake.changes).
//
// POST and PUT bodies may carry "protected" (true refuses the table's drop,
// 409 protected, until a PUT sets it false; on PUT absent keeps it),
// "compatibility" (none, backward, forward or
// full: what later schema updates must keep, by pkg/schemadiff's rules; on
// PUT absent keeps the table's mode), "description" (text) and "properties" (a
// string map), bounded by catalog.MaxDescriptionBytes, MaxProperties,
// MaxPropertyKeyBytes, MaxPropertyValueBytes and MaxPropertiesBytes (beyond
// them: 400 invalid_registration). On PUT a member left out keeps the
// current value; "description": "" clears the description and
// "properties": {} the properties (a given map replaces them whole).
//
// ETags are "<creation id>-<version>": a table dropped and registered again
// gets a new creation id, so a stale If-Match never matches it.
//
// The tenant in the path is what an IAM policy (AWS) or the bearer token
// (local mode) scopes a producer to. Errors are JSON
// {"error":{"code":"…","message":"…"}} with a stable code; a PUT whose
// schema breaks the table's mode is 409 incompatible_schema, and its error
// also lists "breaking_changes": [{"path","change","from","to","reason"}].
//
// The bodies, the error envelope and its codes are pkg/wire's
// (wire.RegisterRequest, wire.Table, wire.ErrorResponse, wire.CodeNotFound,
// …): clients (internal/apiclient) import those, never this package.
package registerapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/apierror"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/schemajson"
	"github.com/lake-catalog/lake/pkg/wire"
)

// MaxBodyBytes bounds a request body. A registration must fit one DynamoDB
// item (400 KB); a JSON schema form is wordier than its IPC bytes.
const MaxBodyBytes = 1 << 20

// Authorizer decides whether a request may act on tenant and returns the
// caller's identity for the log (an IAM ARN, a token subject). Returning an
// error wrapping ErrUnauthenticated gives 401, any other error 403.
type Authorizer func(r *http.Request, tenant string) (caller string, err error)

// ErrUnauthenticated is what an Authorizer wraps for a missing or invalid
// credential.
var ErrUnauthenticated = errors.New("registerapi: unauthenticated")

// AllowAll is the Authorizer for a deployment where something in front of
// the API has already authorized every request it forwards: the register
// Lambda behind API Gateway's IAM authorization, whose policies scope a
// producer to its tenant's paths. It allows every request and names the
// caller with caller (nil: no name). Never use it where requests arrive
// unauthenticated.
func AllowAll(caller func(r *http.Request) string) Authorizer {
	return func(r *http.Request, _ string) (string, error) {
		if caller == nil {
			return "", nil
		}
		return caller(r), nil
	}
}

// Options configures New.
type Options struct {
	// Authorize checks each request and is required: New returns an
	// error without it, so a forgotten authorizer fails closed
	// at start-up instead of allowing every request. Where authorization
	// already ran in front of the API, say so with AllowAll.
	Authorize Authorizer
	// Log receives one line per write. Default slog.Default().
	Log *slog.Logger
	// OnWrite is called after each successful write (local mode schedules a
	// refresh with it).
	OnWrite func()
	// AuthorizeAdmin checks a request to the admin routes (a tenant's
	// settings, vending.go) for the tenant in the path; nil refuses them
	// all (403 not_admin). It must not accept a tenant's own credentials.
	AuthorizeAdmin Authorizer
	// Door answers GET …/tables/{table}/credentials; nil answers 501
	// vending_not_configured.
	Door *vending.Door
	// Sync answers POST …/tables/{table}/sync (sync.go); nil answers 501
	// sync_not_configured.
	Sync Syncer
	// SyncOnWrite also takes a table's file snapshot after each register,
	// update and undrop: a failure is logged, never the write's. Off, a
	// producer syncs with POST …/sync.
	SyncOnWrite bool
	// SyncInline runs SyncOnWrite's sync before the write is answered,
	// bounded by InlineSyncTimeout (a Lambda, whose process may be frozen
	// as soon as it answers); otherwise it runs in the background (local
	// mode).
	SyncInline bool
	// Preview configures GET …/tables/{table}/preview (preview.go), which
	// reads through Door: without a Door it answers 501
	// vending_not_configured.
	Preview PreviewOptions
}

// Handler serves the registration API over a catalog.
type Handler struct {
	cat  *catalog.Catalog
	opts Options
	mux  *http.ServeMux
	// syncs bounds the background syncs of SyncOnWrite.
	syncs chan struct{}
}

// errNoAuthorizer is New's error for Options without an Authorize: the API
// never defaults to allowing every request.
var errNoAuthorizer = errors.New("registerapi: no Authorizer: pass one, or AllowAll where authorization ran in front of the API")

// New returns the API handler, or an error when opts.Authorize is nil.
func New(cat *catalog.Catalog, opts Options) (*Handler, error) {
	if opts.Authorize == nil {
		return nil, errNoAuthorizer
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	opts.Preview.defaults()
	h := &Handler{cat: cat, opts: opts, mux: http.NewServeMux(), syncs: make(chan struct{}, backgroundSyncs)}
	const tables = "/v1/tenants/{tenant}/namespaces/{namespace}/tables"
	h.mux.HandleFunc("POST "+tables, h.register)
	h.mux.HandleFunc("GET "+tables+"/{table}", h.get)
	h.mux.HandleFunc("PUT "+tables+"/{table}", h.update)
	h.mux.HandleFunc("DELETE "+tables+"/{table}", h.drop)
	h.mux.HandleFunc("POST "+tables+"/{table}/undrop", h.undrop)
	h.mux.HandleFunc("GET "+tables+"/{table}/versions", h.versions)
	h.mux.HandleFunc("GET "+tables+"/{table}/versions/{version}", h.version)
	h.mux.HandleFunc("GET "+tables+"/{table}/diff", h.diff)
	h.mux.HandleFunc("GET /v1/tenants/{tenant}/dropped", h.dropped)
	h.routeVending()
	h.mux.HandleFunc("POST "+tables+"/{table}/sync", h.sync)
	h.mux.HandleFunc("GET "+tables+"/{table}/preview", h.preview)
	return h, nil
}

// ServeHTTP implements http.Handler. Unknown routes get a JSON 404, known
// routes with another method a JSON 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			h.opts.Log.ErrorContext(r.Context(), "register api panic", slog.Any("panic", v), slog.String("path", r.URL.Path))
			WriteError(w, http.StatusInternalServerError, wire.CodeInternal, "internal error")
		}
	}()
	_, pattern := h.mux.Handler(r)
	if pattern == "" {
		if allow := h.allowed(r); allow != "" {
			w.Header().Set("Allow", allow)
			WriteError(w, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, fmt.Sprintf("%s is not allowed here; allowed: %s", r.Method, allow))
			return
		}
		WriteError(w, http.StatusNotFound, wire.CodeNoRoute, "no such route; see /v1/tenants/{tenant}/namespaces/{namespace}/tables[/{table}]")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// allowed lists the methods that have a route for r's path.
func (h *Handler) allowed(r *http.Request) string {
	var ms []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := h.mux.Handler(probe); p != "" {
			ms = append(ms, m)
		}
	}
	return strings.Join(ms, ", ")
}

// tableOf is the JSON form of ref's registration reg.
func tableOf(ref catalog.TableRef, reg catalog.Registration) wire.Table {
	t := wire.Table{
		Tenant: ref.Tenant, Namespace: ref.Namespace, Name: ref.Name,
		Location: reg.Location(), TableType: reg.TableType(), Version: reg.Version(), ETag: etag(reg),
		CreatedAt: reg.CreatedAt(), UpdatedAt: reg.UpdatedAt(), SchemaIPC: reg.SchemaIPC(),
		Description: reg.Description(), Properties: reg.Properties(), Protected: reg.Protected(),
		UpdatedBy: reg.UpdatedBy(), Op: reg.Op(),
	}
	if m := reg.Compatibility(); m != schemadiff.None {
		t.Compatibility = string(m)
	}
	if s, err := reg.Schema(); err == nil {
		if b, err := schemajson.Format(s); err == nil {
			t.Schema = b
		}
	}
	return t
}

// parseMode reads a request's "compatibility".
func parseMode(s string) (schemadiff.Mode, error) {
	m, err := schemadiff.ParseMode(s)
	if err != nil {
		return "", badRequest(wire.CodeInvalidRegistration, `"compatibility" %q: want none, backward, forward or full`, s)
	}
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	return m, nil
}

// apiError is an error with its HTTP status and stable code.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(code, format string, args ...any) error {
	return &apiError{http.StatusBadRequest, code, fmt.Sprintf(format, args...)}
}

// parseSchema reads the "schema" member: base64 IPC or the JSON form.
func parseSchema(raw json.RawMessage) (*arrow.Schema, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return nil, badRequest(wire.CodeInvalidSchema, `"schema" is required: base64 Arrow IPC or a JSON schema object`)
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest(wire.CodeInvalidJSON, "schema: %v", err)
		}
		ipc, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, badRequest(wire.CodeInvalidBase64, "schema is not standard base64: %v", err)
		}
		if len(ipc) > catalog.MaxSchemaIPCBytes {
			return nil, &apiError{http.StatusRequestEntityTooLarge, wire.CodeTooLarge, fmt.Sprintf("schema IPC of %d bytes exceeds the %d-byte limit", len(ipc), catalog.MaxSchemaIPCBytes)}
		}
		return catalog.DecodeSchema(ipc)
	case raw[0] == '{':
		return schemajson.Parse(raw)
	}
	return nil, badRequest(wire.CodeInvalidSchema, `"schema" must be a base64 string (Arrow IPC) or a JSON schema object`)
}

// decodeBody checks the content type and size, refuses a body that is not
// valid UTF-8, and decodes JSON strictly.
func decodeBody(r *http.Request, v any) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &apiError{http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType, fmt.Sprintf("Content-Type %q: send application/json", ct)}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return badRequest(wire.CodeInvalidBody, "reading the body: %v", err)
	}
	if len(body) > MaxBodyBytes {
		return &apiError{http.StatusRequestEntityTooLarge, wire.CodeTooLarge, fmt.Sprintf("request body exceeds the %d-byte limit", MaxBodyBytes)}
	}
	// encoding/json would turn invalid UTF-8 into U+FFFD, so that two
	// different byte strings decode to one name: refuse it first.
	if !utf8.Valid(body) {
		return badRequest(wire.CodeInvalidJSON, "malformed JSON body: not valid UTF-8 at byte %d", invalidUTF8At(body))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest(wire.CodeInvalidJSON, "malformed JSON body: %v", err)
	}
	if dec.More() {
		return badRequest(wire.CodeInvalidJSON, "malformed JSON body: data after the object")
	}
	return nil
}

// invalidUTF8At is the offset of b's first byte that is not valid UTF-8,
// or len(b).
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// authorize runs the Authorizer for the path's tenant.
func (h *Handler) authorize(r *http.Request) (string, error) {
	tenant := r.PathValue("tenant")
	caller, err := h.opts.Authorize(r, tenant)
	if errors.Is(err, ErrUnauthenticated) {
		return "", &apiError{http.StatusUnauthorized, wire.CodeUnauthenticated, "missing or invalid credentials"}
	}
	if err != nil {
		return "", &apiError{http.StatusForbidden, wire.CodeForbidden, fmt.Sprintf("not allowed to act on tenant %q", tenant)}
	}
	return caller, nil
}

func pathRef(r *http.Request, table string) catalog.TableRef {
	return catalog.TableRef{Tenant: r.PathValue("tenant"), Namespace: r.PathValue("namespace"), Name: table}
}

func (h *Handler) register(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, "") // the name comes with the body
	caller, err := h.authorize(r)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	r = r.WithContext(catalog.WithCaller(r.Context(), caller))
	var req wire.RegisterRequest
	if err := decodeBody(r, &req); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	ref.Name = req.Name
	if err := ref.Validate(); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	schema, err := parseSchema(req.Schema)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	mode, err := parseMode(req.Compatibility)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	spec := catalog.TableSpec{Location: req.Location, TableType: req.TableType, Schema: schema,
		Description: req.Description, Properties: req.Properties, Compatibility: mode, Protected: req.Protected}
	reg, created, err := h.cat.Register(r.Context(), ref, spec)
	if err = h.stored(r, "register", ref, err); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		h.wrote(r.Context(), "register", ref, caller, reg)
	}
	w.Header().Set("ETag", etag(reg))
	writeJSON(w, status, tableOf(ref, reg))
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, r.PathValue("table"))
	if _, err := h.authorize(r); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	reg, err := h.cat.Get(r.Context(), ref)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	w.Header().Set("ETag", etag(reg))
	writeJSON(w, http.StatusOK, tableOf(ref, reg))
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, r.PathValue("table"))
	caller, err := h.authorize(r)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	r = r.WithContext(catalog.WithCaller(r.Context(), caller))
	if err := ref.Validate(); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	var opts catalog.UpdateOptions
	if im := r.Header.Get("If-Match"); im != "" {
		if opts.IfVersion, opts.IfCreationID, err = parseETag(im); err != nil {
			h.fail(w, r, ref, err)
			return
		}
	}
	var req wire.UpdateRequest
	if err := decodeBody(r, &req); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	opts.IfNoSchema = req.OnlyIfNoSchema
	schema, err := parseSchema(req.Schema)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	mode, err := parseMode(req.Compatibility)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	spec := catalog.TableSpec{Location: req.Location, TableType: req.TableType, Schema: schema, Properties: req.Properties, Compatibility: mode, Protected: req.Protected}
	if req.Description != nil {
		spec.Description = *req.Description
		opts.ClearDescription = *req.Description == ""
	}
	reg, err := h.cat.Update(r.Context(), ref, spec, opts)
	if err = h.stored(r, "update", ref, err); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	h.wrote(r.Context(), "update", ref, caller, reg)
	w.Header().Set("ETag", etag(reg))
	writeJSON(w, http.StatusOK, tableOf(ref, reg))
}

func (h *Handler) drop(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, r.PathValue("table"))
	caller, err := h.authorize(r)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	r = r.WithContext(catalog.WithCaller(r.Context(), caller))
	if im := r.Header.Get("If-Match"); im != "" {
		var opts catalog.DropOptions
		if opts.IfVersion, opts.IfCreationID, err = parseETag(im); err != nil {
			h.fail(w, r, ref, err)
			return
		}
		err = h.cat.DropIf(r.Context(), ref, opts)
	} else {
		err = h.cat.Drop(r.Context(), ref)
	}
	if err = h.stored(r, "drop", ref, err); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	h.wrote(r.Context(), "drop", ref, caller, catalog.Registration{})
	w.WriteHeader(http.StatusNoContent)
}

// historyQuery reads the versions routes' query: creation_id (a dropped
// registration's; empty: the one registered now), before and limit.
func historyQuery(r *http.Request) (creationID string, before int64, limit int, err error) {
	q := r.URL.Query()
	creationID, limit = q.Get("creation_id"), 20
	if v := q.Get("before"); v != "" {
		if before, err = strconv.ParseInt(v, 10, 64); err != nil || before < 1 {
			return "", 0, 0, badRequest(wire.CodeInvalidQuery, "before must be a version number from 1 to %d, got %q", int64(math.MaxInt64), v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > catalog.MaxHistoryPage {
			return "", 0, 0, badRequest(wire.CodeInvalidQuery, "limit must be 1 to %d, got %q", catalog.MaxHistoryPage, v)
		}
	}
	return creationID, before, limit, nil
}

// versions answers GET …/tables/{table}/versions: a page of the table's
// kept versions, newest first.
func (h *Handler) versions(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, r.PathValue("table"))
	if _, err := h.authorize(r); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	creationID, before, limit, err := historyQuery(r)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	vs, next, err := h.cat.History(r.Context(), ref, creationID, before, limit)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	page := wire.VersionPage{Versions: []wire.Table{}, NextBefore: next}
	for _, v := range vs {
		page.Versions = append(page.Versions, tableOf(ref, v.Registration))
	}
	writeJSON(w, http.StatusOK, page)
}

// version answers GET …/tables/{table}/versions/{version}: the table as it
// was at that version (404 when it is not kept).
func (h *Handler) version(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, r.PathValue("table"))
	if _, err := h.authorize(r); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	v, err := parseVersion("version", r.PathValue("version"))
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	creationID, _, _, err := historyQuery(r)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	reg, err := h.cat.Version(r.Context(), ref, creationID, v)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	writeJSON(w, http.StatusOK, tableOf(ref, reg))
}

// parseVersion reads a version number (1 to math.MaxInt64) given as name.
func parseVersion(name, s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return 0, badRequest(wire.CodeInvalidVersion, "%s must be a version number from 1 to %d, got %q", name, int64(math.MaxInt64), s)
	}
	return v, nil
}

// diff answers GET …/tables/{table}/diff?from=V[&to=V][&creation_id=]:
// what changed between two kept versions (to: the newest kept by default).
func (h *Handler) diff(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, r.PathValue("table"))
	if _, err := h.authorize(r); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	q := r.URL.Query()
	from, err := parseVersion("from", q.Get("from"))
	var to int64
	if err == nil && q.Has("to") {
		to, err = parseVersion("to", q.Get("to"))
	}
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	creationID, _, _, err := historyQuery(r)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	d, err := h.cat.Diff(r.Context(), ref, creationID, from, to)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	out := wire.Diff{From: d.From, To: d.To, SchemaChanges: []wire.SchemaChange{}, SchemaChangesTotal: d.SchemaCount, Changes: d.Attributes, Lines: d.Lines()}
	for _, c := range d.Schema {
		out.SchemaChanges = append(out.SchemaChanges, wire.SchemaChange{Path: c.Path, Change: string(c.Kind), From: c.From, To: c.To,
			Nullable: c.Nullable && (c.Kind == schemadiff.Added || c.Kind == schemadiff.Removed)})
	}
	if out.Changes == nil {
		out.Changes = []catalog.AttributeChange{}
	}
	writeJSON(w, http.StatusOK, out)
}

// undrop restores a dropped table from its tombstone: 200 with the table,
// 404 not_found without a tombstone in retention, 409 exists when the name
// has been registered again since.
func (h *Handler) undrop(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, r.PathValue("table"))
	caller, err := h.authorize(r)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	var req wire.UndropRequest
	if err := decodeBody(r, &req); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	if err := ref.Validate(); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	reg, err := h.cat.Undrop(catalog.WithCaller(r.Context(), caller), ref, req.CreationID)
	if err = h.stored(r, "undrop", ref, err); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	h.wrote(r.Context(), "undrop", ref, caller, reg)
	w.Header().Set("ETag", etag(reg))
	writeJSON(w, http.StatusOK, tableOf(ref, reg))
}

// etag names one state of one registration: "<creation id>-<version>", so
// a table dropped and registered again never repeats an ETag (and a stale
// If-Match cannot overwrite the new registration); "<version>" for
// registrations written before creation ids existed.
func etag(reg catalog.Registration) string {
	v := strconv.FormatInt(reg.Version(), 10)
	if id := reg.CreationID(); id != "" {
		return `"` + id + "-" + v + `"`
	}
	return `"` + v + `"`
}

// parseETag reads an If-Match value written by etag: the version and the
// creation id (empty for the legacy "<version>" form).
func parseETag(im string) (version int64, creationID string, err error) {
	s := strings.TrimPrefix(strings.TrimSpace(im), "W/")
	bad := badRequest(wire.CodeInvalidIfMatch, `If-Match must be one ETag this API sent, such as "9f3a61c2d4b5e607-3", got %q`, im)
	if len(s) < 3 || s[0] != '"' || s[len(s)-1] != '"' {
		return 0, "", bad
	}
	s = s[1 : len(s)-1]
	if i := strings.LastIndexByte(s, '-'); i >= 0 {
		creationID, s = s[:i], s[i+1:]
		if creationID == "" || strings.Trim(creationID, "0123456789abcdef") != "" {
			return 0, "", bad
		}
	}
	version, perr := strconv.ParseInt(s, 10, 64)
	if perr != nil || version <= 0 {
		return 0, "", bad
	}
	return version, creationID, nil
}

func (h *Handler) wrote(ctx context.Context, op string, ref catalog.TableRef, caller string, reg catalog.Registration) {
	h.opts.Log.InfoContext(ctx, "registration written",
		slog.String("op", op), slog.String("table", ref.String()), slog.String("caller", caller), slog.Int64("version", reg.Version()))
	if h.opts.OnWrite != nil {
		h.opts.OnWrite()
	}
	if h.opts.SyncOnWrite && h.opts.Sync != nil && op != "drop" {
		if h.opts.SyncInline {
			h.syncAfterWrite(context.WithoutCancel(ctx), ref, caller, reg)
		} else {
			go h.syncAfterWrite(context.WithoutCancel(ctx), ref, caller, reg)
		}
	}
}

// stored passes on err, a write's, unless it says the write is stored and
// only writes that go with it failed (catalog.ErrSideWrite: a version
// record, the usage, a tombstone's clean-up): those are logged, one
// warning naming each (the catalog counts them in its Stats), and the
// write is answered as stored, since a retry would write it again. A
// write whose change counter failed (catalog.ErrUnsignalled) is still
// answered 503 unsignalled: refresh was not told.
func (h *Handler) stored(r *http.Request, op string, ref catalog.TableRef, err error) error {
	if !errors.Is(err, catalog.ErrSideWrite) || errors.Is(err, catalog.ErrUnsignalled) {
		return err
	}
	var parts []string
	if ce, ok := errors.AsType[*catalog.Error](err); ok {
		for _, sw := range ce.SideWrites {
			parts = append(parts, string(sw.Part)+" "+sw.Key)
		}
	}
	h.opts.Log.WarnContext(r.Context(), "register api: stored, but a side write failed", slog.String("op", op), slog.String("table", ref.String()),
		slog.Any("side_writes", parts), slog.String("error", err.Error()))
	return nil
}

// fail answers err: its status and stable code from the error's kind, and
// a message built from the kind, the table and what the kind does not say
// (a *catalog.Error's Detail, a *catalog.NameError's parts), never the
// text of an internal error chain. ref is the
// table the request is about, zero before it is known.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, ref catalog.TableRef, err error) {
	ae := h.classify(r, ref, err)
	if ae.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if breaking, total := breakingChanges(err); len(breaking) > 0 && ae.code == wire.CodeIncompatibleSchema {
		writeJSON(w, ae.status, wire.ErrorResponse{Error: wire.ErrorBody{Code: ae.code, Message: ae.message, BreakingChanges: breaking, BreakingChangesTotal: total}})
		return
	}
	WriteError(w, ae.status, ae.code, ae.message)
}

// breakingChanges lists the breaking changes of an ErrIncompatibleSchema
// the catalog kept (the first schemadiff.MaxChanges) and counts them all.
func breakingChanges(err error) ([]wire.BreakingChange, int) {
	ce, ok := errors.AsType[*catalog.Error](err)
	if !ok || !errors.Is(err, catalog.ErrIncompatibleSchema) {
		return nil, 0
	}
	out := make([]wire.BreakingChange, len(ce.Breaches))
	for i, b := range ce.Breaches {
		out[i] = wire.BreakingChange{Path: b.Path, Change: string(b.Kind), From: b.From, To: b.To, Reason: b.Reason}
	}
	return out, max(ce.BreachCount, len(out))
}

// classify maps err to the answer fail sends.
func (h *Handler) classify(r *http.Request, ref catalog.TableRef, err error) *apiError {
	// about says the table first, when the request names a whole one.
	about := func(phrase string, detail string) string {
		msg := phrase
		if ref.Tenant != "" && ref.Namespace != "" && ref.Name != "" {
			msg = ref.String() + ": " + phrase
		}
		if detail != "" {
			msg += ": " + detail
		}
		return msg
	}
	// detail is what the catalog's error adds to its kind and table.
	var detail, op string
	if ce, ok := errors.AsType[*catalog.Error](err); ok {
		detail, op = ce.Detail, ce.Op
	}
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, catalog.ErrInvalidName):
		// A *NameError names the part and quotes the name; a ref holding
		// the bad name would say it twice.
		msg := "invalid name"
		if ne, ok := errors.AsType[*catalog.NameError](err); ok {
			msg = fmt.Sprintf("invalid %s name %q: %s", ne.Part, ne.Value, ne.Reason)
		} else if detail != "" {
			msg += ": " + detail
		}
		return &apiError{http.StatusBadRequest, wire.CodeInvalidName, msg}
	case errors.Is(err, catalog.ErrTooLarge):
		return &apiError{http.StatusRequestEntityTooLarge, wire.CodeTooLarge, about("too large", detail)}
	case errors.Is(err, catalog.ErrInvalidSchema):
		return &apiError{http.StatusBadRequest, wire.CodeInvalidSchema, about("invalid schema", detail)}
	case errors.Is(err, schemajson.ErrInvalid):
		// schemajson's errors are its sentinel and one detail ("%w: …").
		detail := strings.TrimPrefix(strings.TrimPrefix(err.Error(), schemajson.ErrInvalid.Error()), ": ")
		return &apiError{http.StatusBadRequest, wire.CodeInvalidSchema, about("invalid schema", detail)}
	case errors.Is(err, catalog.ErrInvalidRegistration):
		return &apiError{http.StatusBadRequest, wire.CodeInvalidRegistration, about("invalid registration", detail)}
	case errors.Is(err, catalog.ErrQuotaExceeded):
		return &apiError{http.StatusForbidden, wire.CodeQuotaExceeded, about("the tenant's quota is used up", detail) + "; drop tables or ask the operator to raise it"}
	case errors.Is(err, catalog.ErrNotFound) && op == "version of" && detail != "":
		// The table is there; the version asked for is not kept.
		return &apiError{http.StatusNotFound, wire.CodeNotFound, about("no such version", detail)}
	case errors.Is(err, catalog.ErrNotFound):
		return &apiError{http.StatusNotFound, wire.CodeNotFound, about("table not found", "")}
	case errors.Is(err, catalog.ErrExists) && op == "undrop":
		return &apiError{http.StatusConflict, wire.CodeExists, about("cannot restore the drop: another table has been registered under this name since", "") +
			"; drop that table (or register it elsewhere) first, then undrop"}
	case errors.Is(err, catalog.ErrExists):
		return &apiError{http.StatusConflict, wire.CodeExists, about("already registered with a different location, type, schema, description or properties", detail) + "; change it with PUT"}
	case errors.Is(err, catalog.ErrProtected):
		return &apiError{http.StatusConflict, wire.CodeProtected, about("the table is protected", "") + `; unset it first with a PUT of "protected": false`}
	case errors.Is(err, catalog.ErrIncompatibleSchema):
		return &apiError{http.StatusConflict, wire.CodeIncompatibleSchema, about("the schema breaks the table's compatibility mode", detail) +
			`; keep the mode's rules, or set "compatibility" to none in the same update to change it anyway`}
	case errors.Is(err, catalog.ErrUnsignalled):
		// Written, but refresh was not told: the caller must learn it (the
		// table may show only at the next full scan); a retry is safe.
		h.opts.Log.ErrorContext(r.Context(), "register api: write not signalled", slog.String("error", err.Error()), slog.String("path", r.URL.Path))
		return &apiError{http.StatusServiceUnavailable, wire.CodeUnsignalled, about("written, but refresh was not told of it", "") + "; it may show in discovery only at the next full scan; retrying is safe"}
	case errors.Is(err, catalog.ErrConflict) && r.Header.Get("If-Match") != "":
		return &apiError{http.StatusPreconditionFailed, wire.CodeVersionMismatch, about("the registration changed since it was read", detail)}
	case errors.Is(err, catalog.ErrConflict):
		return &apiError{http.StatusConflict, wire.CodeConflict, about("the registration changed meanwhile", detail)}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{http.StatusServiceUnavailable, wire.CodeUnavailable, "the request was cancelled or timed out; retry"}
	}
	// A store failure: log it whole, answer retryable and generic.
	h.opts.Log.ErrorContext(r.Context(), "register api: store error", slog.String("error", err.Error()), slog.String("path", r.URL.Path))
	return &apiError{http.StatusServiceUnavailable, wire.CodeUnavailable, "the catalog store is unavailable; retry"}
}

// WriteError answers status with the API's JSON error envelope
// (apierror.Write).
func WriteError(w http.ResponseWriter, status int, code, message string) {
	apierror.Write(w, status, code, message)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, apierror.JSON(wire.CodeInternal, "encoding the response failed")
	}
	writeBody(w, status, b)
}

func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
