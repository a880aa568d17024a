package registerapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Routes of credential vending and of the operator's tenant settings:
//
//	GET    /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/credentials  access to the table's files
//	GET    /v1/admin/tenants/{tenant}/settings            the tenant's settings (wire.TenantSettings)
//	PUT    /v1/admin/tenants/{tenant}/settings            replace its allowed prefixes: {"allowed_prefixes": […]}
//	POST   /v1/admin/tenants/{tenant}/allowed-prefixes    allow one more: {"prefix": "s3://bucket/prefix/"}
//	DELETE /v1/admin/tenants/{tenant}/allowed-prefixes?prefix=s3://bucket/prefix/  allow it no more
//
// The credentials route answers through Options.Door (vending.Door: the
// same code as discovery's lake.credentials): wire.Credentials, never
// cached (Cache-Control: no-store), reading the table's Iceberg metadata
// prefix too when lake has synced its current registration
// (syncedMetadata); a location outside the tenant's
// allowed prefixes is 403 location_not_allowed naming the reason, a
// deployment without vending 501 vending_not_configured, an STS refusal
// 502 vending_failed. The admin routes are authorized by
// Options.AuthorizeAdmin, never by the tenant's own credentials: without
// one they answer 403 not_admin. Each allowed prefix is a location lake
// could vend ("s3://bucket/prefix/", vending.ParseLocation) outside lake's
// own buckets, stored in its canonical form (with its trailing "/").

func (h *Handler) routeVending() {
	const tables = "/v1/tenants/{tenant}/namespaces/{namespace}/tables"
	h.mux.HandleFunc("GET "+tables+"/{table}/credentials", h.credentials)
	const admin = "/v1/admin/tenants/{tenant}"
	h.mux.HandleFunc("GET "+admin+"/settings", h.settings)
	h.mux.HandleFunc("PUT "+admin+"/settings", h.putSettings)
	h.mux.HandleFunc("POST "+admin+"/allowed-prefixes", h.allowPrefix)
	h.mux.HandleFunc("DELETE "+admin+"/allowed-prefixes", h.disallowPrefix)
}

// authorizedTable authorizes r and reads the table its path names: the
// caller, the table and its registration, or false when it answered an
// error.
func (h *Handler) authorizedTable(w http.ResponseWriter, r *http.Request) (string, catalog.TableRef, catalog.Registration, bool) {
	ref := pathRef(r, r.PathValue("table"))
	caller, err := h.authorize(r)
	if err == nil {
		var reg catalog.Registration
		if reg, err = h.cat.Get(r.Context(), ref); err == nil {
			return caller, ref, reg, true
		}
	}
	h.fail(w, r, ref, err)
	return "", ref, catalog.Registration{}, false
}

func (h *Handler) credentials(w http.ResponseWriter, r *http.Request) {
	caller, ref, reg, ok := h.authorizedTable(w, r)
	if !ok {
		return
	}
	if h.opts.Door == nil {
		h.fail(w, r, ref, &apiError{http.StatusNotImplemented, wire.CodeVendingNotConfigured, ref.String() + ": " + vending.ErrNotConfigured.Error()})
		return
	}
	meta, err := h.syncedMetadata(r, ref, reg)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	creds, ok := h.access(r.Context(), w, r, caller, ref, reg, meta)
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, creds)
}

// access is the Door's answer for the table (metadata: its synced Iceberg
// metadata prefix, or ""), under the tenant's allowed prefixes: the one
// way the credentials and preview routes reach a table's files. It
// answers the error itself and returns false when there is none.
func (h *Handler) access(ctx context.Context, w http.ResponseWriter, r *http.Request, caller string, ref catalog.TableRef, reg catalog.Registration, meta string) (wire.Credentials, bool) {
	settings, err := h.cat.TenantSettings(ctx, ref.Tenant)
	if err != nil {
		h.fail(w, r, ref, err)
		return wire.Credentials{}, false
	}
	creds, err := h.opts.Door.Credentials(ctx, vending.TableRequest{Who: caller, Tenant: ref.Tenant, Namespace: ref.Namespace,
		Table: ref.Name, Location: reg.Location(), Allowed: settings.AllowedPrefixes, Metadata: meta})
	if err != nil {
		h.fail(w, r, ref, vendError(ref, err))
		if vending.Code(err) == wire.CodeVendingFailed {
			h.opts.Log.ErrorContext(r.Context(), "register api: vending failed", slog.String("table", ref.String()), slog.String("error", err.Error()))
		}
		return wire.Credentials{}, false
	}
	return creds, true
}

// syncedMetadata is the Iceberg metadata prefix the table's credentials
// read too (vending.TableRequest.Metadata, issue 41): the directory of the
// metadata file of its Iceberg state when that state was synced against
// reg (its creation id and version) and the file lies in lake's metadata
// store under the table's own "tables/<table-uuid>/metadata/"
// (vending.SyncedMetadata, with icebergrest.TableUUID); otherwise "" (no
// state, an older one, a local file:// metadata location). A stored state
// that does not decode is logged and vends nothing more, as discovery
// serves none; failing to read the store is an error.
func (h *Handler) syncedMetadata(r *http.Request, ref catalog.TableRef, reg catalog.Registration) (string, error) {
	st, ok, err := h.cat.IcebergState(r.Context(), ref)
	if errors.Is(err, catalog.ErrInvalidIcebergState) {
		h.opts.Log.WarnContext(r.Context(), "register api: a table's iceberg state does not decode; credentials vended without its metadata",
			slog.String("table", ref.String()), slog.String("error", err.Error()))
		return "", nil
	}
	if err != nil || !ok || st.CreationID != reg.CreationID() || st.Version != reg.Version() {
		return "", err
	}
	return vending.SyncedMetadata(st.MetadataLocation, icebergrest.TableUUID(ref.Tenant, ref.Namespace, ref.Name, reg.CreationID())), nil
}

// vendError is the answer to a refused or failed vend.
func vendError(ref catalog.TableRef, err error) *apiError {
	switch code := vending.Code(err); code {
	case wire.CodeLocationNotAllowed:
		return &apiError{http.StatusForbidden, code, ref.String() + ": " + err.Error()}
	case wire.CodeVendingNotConfigured:
		return &apiError{http.StatusNotImplemented, code, ref.String() + ": " + err.Error()}
	default:
		return &apiError{http.StatusBadGateway, code, ref.String() + ": STS refused or failed the AssumeRole of the data-reader role; see the server's log"}
	}
}

// authorizeAdmin runs Options.AuthorizeAdmin for the path's tenant.
func (h *Handler) authorizeAdmin(r *http.Request) (string, error) {
	tenant := r.PathValue("tenant")
	if err := catalog.ValidateName("tenant", tenant); err != nil {
		return "", err
	}
	if h.opts.AuthorizeAdmin == nil {
		return "", &apiError{http.StatusForbidden, wire.CodeNotAdmin, "the admin routes are not enabled on this API"}
	}
	caller, err := h.opts.AuthorizeAdmin(r, tenant)
	if errors.Is(err, ErrUnauthenticated) {
		return "", &apiError{http.StatusUnauthorized, wire.CodeUnauthenticated, "missing or invalid credentials"}
	}
	if err != nil {
		return "", &apiError{http.StatusForbidden, wire.CodeNotAdmin, fmt.Sprintf("tenant %q's settings are an operator's: %v", tenant, err)}
	}
	return caller, nil
}

func settingsOf(tenant string, s catalog.TenantSettings) wire.TenantSettings {
	p := s.AllowedPrefixes
	if p == nil {
		p = []string{}
	}
	return wire.TenantSettings{Tenant: tenant, AllowedPrefixes: p, UpdatedBy: s.UpdatedBy, UpdatedAt: s.UpdatedAt}
}

func (h *Handler) settings(w http.ResponseWriter, r *http.Request) {
	if _, err := h.authorizeAdmin(r); err != nil {
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	tenant := r.PathValue("tenant")
	s, err := h.cat.TenantSettings(r.Context(), tenant)
	if err != nil {
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsOf(tenant, s))
}

// allowedPrefix checks one prefix an operator allows and returns its
// canonical form.
func (h *Handler) allowedPrefix(p string) (string, error) {
	loc, err := vending.ParseLocation(p)
	if le, ok := errors.AsType[*vending.LocationError](err); ok {
		return "", badRequest(wire.CodeInvalidRequest, "allowed prefix %q: %v", p, le.Err)
	}
	if err != nil {
		return "", badRequest(wire.CodeInvalidRequest, "allowed prefix %q: %v", p, err)
	}
	if h.opts.Door != nil && h.opts.Door.Vendor != nil && h.opts.Door.Vendor.OwnBucket(loc.Bucket) {
		return "", badRequest(wire.CodeInvalidRequest, "allowed prefix %q: %v", p, vending.ErrOwnBucket)
	}
	return loc.String(), nil
}

// updateSettings changes the path's tenant's settings with fn and answers
// the settings as stored.
func (h *Handler) updateSettings(w http.ResponseWriter, r *http.Request, caller string, fn func(*catalog.TenantSettings) error) {
	tenant := r.PathValue("tenant")
	s, err := h.cat.UpdateTenantSettings(r.Context(), tenant, caller, fn)
	if errors.Is(err, catalog.ErrInvalidSettings) {
		err = badRequest(wire.CodeInvalidRequest, "%v", err)
	}
	if err != nil { // ErrUnsignalled: stored, but refresh was not told (503, retry)
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	h.opts.Log.InfoContext(r.Context(), "tenant settings", slog.String("tenant", tenant), slog.String("by", caller),
		slog.Any("allowed_prefixes", s.AllowedPrefixes))
	if h.opts.OnWrite != nil {
		h.opts.OnWrite()
	}
	writeJSON(w, http.StatusOK, settingsOf(tenant, s))
}

func (h *Handler) putSettings(w http.ResponseWriter, r *http.Request) {
	caller, err := h.authorizeAdmin(r)
	if err != nil {
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	var req wire.TenantSettings
	if err := decodeBody(r, &req); err != nil {
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	if req.Tenant != "" && req.Tenant != r.PathValue("tenant") {
		h.fail(w, r, catalog.TableRef{}, badRequest(wire.CodeInvalidRequest, "the body names tenant %q, the path %q", req.Tenant, r.PathValue("tenant")))
		return
	}
	prefixes := make([]string, 0, len(req.AllowedPrefixes))
	for _, p := range req.AllowedPrefixes {
		c, err := h.allowedPrefix(p)
		if err != nil {
			h.fail(w, r, catalog.TableRef{}, err)
			return
		}
		prefixes = append(prefixes, c)
	}
	h.updateSettings(w, r, caller, func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = prefixes
		return nil
	})
}

func (h *Handler) allowPrefix(w http.ResponseWriter, r *http.Request) {
	caller, err := h.authorizeAdmin(r)
	if err != nil {
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	var req wire.AllowPrefixRequest
	if err := decodeBody(r, &req); err != nil {
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	c, err := h.allowedPrefix(req.Prefix)
	if err != nil {
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	h.updateSettings(w, r, caller, func(s *catalog.TenantSettings) error {
		if !slices.Contains(s.AllowedPrefixes, c) {
			s.AllowedPrefixes = append(s.AllowedPrefixes, c)
		}
		return nil
	})
}

func (h *Handler) disallowPrefix(w http.ResponseWriter, r *http.Request) {
	caller, err := h.authorizeAdmin(r)
	if err != nil {
		h.fail(w, r, catalog.TableRef{}, err)
		return
	}
	p := r.URL.Query().Get("prefix")
	if p == "" {
		h.fail(w, r, catalog.TableRef{}, badRequest(wire.CodeInvalidQuery, "?prefix= names the prefix to allow no more"))
		return
	}
	// Any stored text may be removed, canonical or not, so a prefix the
	// rules now refuse can still be taken away.
	c := p
	if loc, err := vending.ParseLocation(p); err == nil {
		c = loc.String()
	}
	h.updateSettings(w, r, caller, func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = slices.DeleteFunc(s.AllowedPrefixes, func(x string) bool { return x == c || x == p })
		return nil
	})
}
