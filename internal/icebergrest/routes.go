package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/wire"
)

// config answers GET /v1/config: the prefix is the caller's tenant, and a
// warehouse, when given, must be it.
func (h *Handler) config(w http.ResponseWriter, r *http.Request, tenant string) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, badRequest("malformed query string"))
		return
	}
	if wh := q.Get("warehouse"); wh != "" && wh != tenant {
		writeError(w, &apiError{http.StatusForbidden, typeForbidden, "the warehouse is not the caller's tenant"})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
		Endpoints []string          `json:"endpoints"`
	}{map[string]string{}, map[string]string{"prefix": tenant}, endpoints})
}

// listNamespaces answers GET …/namespaces. Lake namespaces are one level:
// under an existing parent there are none.
func (h *Handler) listNamespaces(ctx context.Context, w http.ResponseWriter, tenant string, q url.Values) *apiError {
	p, e := parsePage(q, kindNamespaces)
	if e != nil {
		return e
	}
	type response struct {
		Namespaces    [][]string `json:"namespaces"`
		NextPageToken string     `json:"next-page-token,omitempty"`
	}
	if parent := q.Get("parent"); parent != "" {
		ns, e := namespace(parent)
		if e != nil {
			return e
		}
		if _, ok, err := h.src.Tables(ctx, tenant, ns); err != nil {
			return h.sourceError(ctx, err)
		} else if !ok {
			return errNoSuchNamespace
		}
		writeJSON(w, http.StatusOK, response{Namespaces: [][]string{}})
		return nil
	}
	names, err := h.src.Namespaces(ctx, tenant)
	if err != nil {
		return h.sourceError(ctx, err)
	}
	out, next := page(names, p, kindNamespaces)
	rsp := response{Namespaces: make([][]string, len(out)), NextPageToken: next}
	for i, n := range out {
		rsp.Namespaces[i] = []string{n}
	}
	writeJSON(w, http.StatusOK, rsp)
	return nil
}

// loadNamespace answers GET and HEAD …/namespaces/{namespace}.
func (h *Handler) loadNamespace(ctx context.Context, w http.ResponseWriter, tenant, ns string, head bool) *apiError {
	_, ok, err := h.src.Tables(ctx, tenant, ns)
	if err != nil {
		return h.sourceError(ctx, err)
	}
	if !ok {
		return errNoSuchNamespace
	}
	if head {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	writeJSON(w, http.StatusOK, struct {
		Namespace  []string          `json:"namespace"`
		Properties map[string]string `json:"properties"`
	}{[]string{ns}, map[string]string{}})
	return nil
}

// identifier is TableIdentifier.
type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// listTables answers GET …/namespaces/{namespace}/tables: a missing
// namespace is 404, never an empty list.
func (h *Handler) listTables(ctx context.Context, w http.ResponseWriter, tenant, ns string, q url.Values) *apiError {
	p, e := parsePage(q, kindTables)
	if e != nil {
		return e
	}
	names, ok, err := h.src.Tables(ctx, tenant, ns)
	if err != nil {
		return h.sourceError(ctx, err)
	}
	if !ok {
		return errNoSuchNamespace
	}
	out, next := page(names, p, kindTables)
	rsp := struct {
		Identifiers   []identifier `json:"identifiers"`
		NextPageToken string       `json:"next-page-token,omitempty"`
	}{Identifiers: make([]identifier, len(out)), NextPageToken: next}
	for i, n := range out {
		rsp.Identifiers[i] = identifier{Namespace: []string{ns}, Name: n}
	}
	writeJSON(w, http.StatusOK, rsp)
	return nil
}

// table returns the table, or which of namespace and table is missing.
func (h *Handler) table(ctx context.Context, tenant, ns, name string) (Table, *apiError) {
	t, ok, err := h.src.Table(ctx, tenant, ns, name)
	if err != nil {
		return Table{}, h.sourceError(ctx, err)
	}
	if ok {
		return t, nil
	}
	if _, ok, err := h.src.Tables(ctx, tenant, ns); err != nil {
		return Table{}, h.sourceError(ctx, err)
	} else if !ok {
		return Table{}, errNoSuchNamespace
	}
	return Table{}, errNoSuchTable
}

// tableExists answers HEAD …/tables/{table}.
func (h *Handler) tableExists(ctx context.Context, w http.ResponseWriter, tenant, ns, name string) *apiError {
	if _, e := h.table(ctx, tenant, ns, name); e != nil {
		return e
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// storageCredential is StorageCredential.
type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// loadTable answers GET …/tables/{table}: LoadTableResult: the table's
// metadata file (Table.MetadataLocation, Table.Metadata) verbatim when the
// Source has one, else metadata built from its schema under a stable
// name (buildMetadata, metadataLocation). The snapshots parameter is
// checked, and all snapshots are answered either way (the spec lets a
// server do so). With
// X-Iceberg-Access-Delegation: vended-credentials, the table's credentials
// come in config and storage-credentials; a deployment without vending, or
// a table lake vends nothing for, is answered without them.
func (h *Handler) loadTable(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, ns, name string, q url.Values) *apiError {
	switch q.Get("snapshots") {
	case "", "all", "refs":
	default:
		return badRequest(`invalid snapshots: want "all" or "refs"`)
	}
	t, e := h.table(ctx, tenant, ns, name)
	if e != nil {
		return e
	}
	mdLoc, md := t.MetadataLocation, t.Metadata
	if md == nil {
		// No metadata file yet: built from the schema.
		if t.Schema == nil {
			return &apiError{http.StatusInternalServerError, typeInternal, "the table has no schema to describe"}
		}
		var err error
		if md, err = buildMetadata(tenant, ns, name, t); err != nil {
			h.log.ErrorContext(ctx, "icebergrest: load table", "tenant", tenant, "namespace", ns, "table", name, "err", err)
			return errInternal
		}
		mdLoc = metadataLocation(tenant, ns, name, t)
	}
	rsp := struct {
		MetadataLocation   string              `json:"metadata-location"`
		Metadata           json.RawMessage     `json:"metadata"`
		Config             map[string]string   `json:"config"`
		StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
	}{
		MetadataLocation: mdLoc,
		Metadata:         md,
		Config:           map[string]string{},
	}
	if wantsVended(r.Header) {
		c, err := h.src.Credentials(ctx, tenant, ns, name)
		switch {
		case err == nil:
			sc := storageCredentialOf(c, t.Location)
			rsp.Config = sc.Config
			rsp.StorageCredentials = []storageCredential{sc}
		case !errors.Is(err, ErrUnavailable) && (vending.Code(err) == wire.CodeVendingNotConfigured || vending.Code(err) == wire.CodeLocationNotAllowed):
			// No vending here, or none for this table (its location is
			// outside its tenant's allowed prefixes): the metadata alone,
			// as a table is listed and described whatever vending says;
			// GET …/credentials answers the refusal itself.
		default:
			return h.credentialsError(ctx, err)
		}
	}
	if t.Answer != nil && len(rsp.Config) == 0 && len(rsp.StorageCredentials) == 0 {
		writeAnswer(w, t.Answer)
		return nil
	}
	writeLoadTable(w, rsp.MetadataLocation, rsp.Metadata, rsp.Config, rsp.StorageCredentials)
	return nil
}

// loadKept answers a loadTable from the KeptSource's ready answer, before
// any deadline is armed: a GET of …/namespaces/{ns}/tables/{table} (a
// valid query, no vended credentials asked: vending may block) whose
// answer h.kept has. False, having written nothing, for every other
// request: the route answers it.
func (h *Handler) loadKept(w http.ResponseWriter, r *http.Request, tenant string, segs []string, q url.Values) bool {
	if r.Method != http.MethodGet || len(segs) != 4 || segs[0] != "namespaces" || segs[2] != "tables" {
		return false
	}
	switch q.Get("snapshots") {
	case "", "all", "refs":
	default:
		return false
	}
	ns, e := namespace(segs[1])
	if e != nil || validName("table", segs[3]) != nil || wantsVended(r.Header) {
		return false
	}
	t, ok := h.kept.KeptTable(tenant, ns, segs[3])
	if !ok || t.Metadata == nil {
		return false
	}
	if t.Answer != nil {
		writeAnswer(w, t.Answer)
	} else {
		writeLoadTable(w, t.MetadataLocation, t.Metadata, nil, nil)
	}
	return true
}

// LoadTableAnswer returns loadTable's answer without credentials for a
// metadata file: the LoadTableResult JSON writeLoadTable writes, and the
// metadata within it (a part of answer, not a copy). A Source that keeps
// answers keeps this (Table.Answer) and the handler writes it in one
// write. metadata must be a JSON object, as for Table.Metadata.
func LoadTableAnswer(location string, metadata []byte) (answer, md []byte, err error) {
	if len(metadata) == 0 {
		return nil, nil, errors.New("icebergrest: no metadata")
	}
	loc, err := quoted(location)
	if err != nil {
		return nil, nil, err
	}
	answer = make([]byte, 0, len(loadTableOpen)+len(loc)+len(loadTableMid)+len(metadata)+len(emptyConfigTail))
	answer = append(append(append(answer, loadTableOpen...), loc...), loadTableMid...)
	start := len(answer)
	answer = append(append(answer, metadata...), emptyConfigTail...)
	return answer, answer[start : start+len(metadata) : start+len(metadata)], nil
}

// writeAnswer writes a whole JSON answer of 200 with its length.
func writeAnswer(w http.ResponseWriter, answer []byte) {
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonContentType, noStore
	h["Content-Length"] = []string{strconv.Itoa(len(answer))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(answer)
}

// quoted is s as a JSON string.
func quoted(s string) (string, error) {
	if !needsEscape(s) {
		return `"` + s + `"`, nil
	}
	q, err := json.Marshal(s)
	return string(q), err
}

// The fixed parts of a LoadTableResult.
const loadTableOpen, loadTableMid = `{"metadata-location":`, `,"metadata":`

// writeLoadTable writes a LoadTableResult. The metadata is written as it
// is, not run through encoding/json, which would check and compact its
// kilobytes again on every load: it is a JSON object the catalog checked
// when the sync stored it (catalog.DecodeIcebergState) or that
// BuildMetadata made. The rest is small and encoded as usual.
func writeLoadTable(w http.ResponseWriter, location string, metadata json.RawMessage, config map[string]string, creds []storageCredential) {
	if len(metadata) == 0 {
		writeError(w, errInternal)
		return
	}
	loc, err := quoted(location)
	if err != nil {
		writeError(w, errInternal)
		return
	}
	tail := emptyConfigTail
	if len(config) > 0 || len(creds) > 0 {
		cfg, err := json.Marshal(config)
		var sc []byte
		if err == nil && len(creds) > 0 {
			sc, err = json.Marshal(creds)
		}
		if err != nil {
			writeError(w, errInternal)
			return
		}
		tail = append(append([]byte(`,"config":`), cfg...), ',')
		if sc != nil {
			tail = append(append(append(tail, `"storage-credentials":`...), sc...), ',')
		}
		tail[len(tail)-1] = '}'
	}
	const open, mid = loadTableOpen, loadTableMid
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonContentType, noStore
	// The length is known: said up front, the answer goes out in one
	// piece rather than chunked (net/http chunks a body over 2 KB whose
	// length it was not told).
	h["Content-Length"] = []string{strconv.Itoa(len(open) + len(loc) + len(mid) + len(metadata) + len(tail))}
	w.WriteHeader(http.StatusOK)
	// Written in pieces, not copied into one buffer first.
	_, _ = io.WriteString(w, open)
	_, _ = io.WriteString(w, loc)
	_, _ = io.WriteString(w, mid)
	_, _ = w.Write(metadata)
	_, _ = w.Write(tail)
}

// emptyConfigTail ends a LoadTableResult without credentials.
var emptyConfigTail = []byte(`,"config":{}}`)

// Header values every answer carries, shared (net/http only reads them).
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// needsEscape reports whether encoding/json would write s other than as
// it is between quotes: anything but printable ASCII, a quote, a
// backslash, or one of the HTML characters it escapes. Every location lake
// names needs none.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return true
		}
	}
	return false
}

// wantsVended reports whether X-Iceberg-Access-Delegation (a comma list)
// asks for vended credentials.
func wantsVended(hd http.Header) bool {
	for _, v := range hd.Values("X-Iceberg-Access-Delegation") {
		for m := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(m) == "vended-credentials" {
				return true
			}
		}
	}
	return false
}

// credentials answers GET …/tables/{table}/credentials:
// LoadCredentialsResponse.
func (h *Handler) credentials(ctx context.Context, w http.ResponseWriter, tenant, ns, name string) *apiError {
	t, e := h.table(ctx, tenant, ns, name)
	if e != nil {
		return e
	}
	c, err := h.src.Credentials(ctx, tenant, ns, name)
	if err != nil {
		return h.credentialsError(ctx, err)
	}
	writeJSON(w, http.StatusOK, struct {
		StorageCredentials []storageCredential `json:"storage-credentials"`
	}{[]storageCredential{storageCredentialOf(c, t.Location)}})
	return nil
}

// storageCredentialOf is c in iceberg-go's and pyiceberg's S3 property
// names. A path access (local mode) needs no keys: its config is empty.
func storageCredentialOf(c wire.Credentials, location string) storageCredential {
	prefix := c.Location
	if prefix == "" {
		prefix = location
	}
	cfg := map[string]string{}
	if c.Access == wire.AccessVended {
		cfg["s3.access-key-id"] = c.AccessKeyID
		cfg["s3.secret-access-key"] = c.SecretAccessKey
		cfg["s3.session-token"] = c.SessionToken
		if !c.Expiration.IsZero() {
			cfg["s3.session-token-expires-at-ms"] = strconv.FormatInt(c.Expiration.UnixMilli(), 10)
		}
	}
	if c.Region != "" {
		cfg["client.region"] = c.Region
	}
	return storageCredential{Prefix: prefix, Config: cfg}
}

// credentialsError maps a Credentials error (vending.Code's classes).
func (h *Handler) credentialsError(ctx context.Context, err error) *apiError {
	if errors.Is(err, ErrUnavailable) {
		return h.sourceError(ctx, err)
	}
	switch vending.Code(err) {
	case wire.CodeLocationNotAllowed:
		return &apiError{http.StatusForbidden, typeForbidden, "the table's location is not one credentials are vended for"}
	case wire.CodeVendingNotConfigured:
		return &apiError{http.StatusNotImplemented, typeUnsupported, "credential vending is not configured"}
	}
	h.log.WarnContext(ctx, "icebergrest: vend credentials", "err", err)
	return errUnavailable("credential vending failed; retry")
}

// sourceError maps a Source error: ErrUnavailable is 503, anything else
// 500 and logged (deadline included: the request's budget ran out).
func (h *Handler) sourceError(ctx context.Context, err error) *apiError {
	if errors.Is(err, ErrUnavailable) {
		return errUnavailable("the catalog is unavailable; retry")
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errUnavailable("the request ran out of time; retry")
	}
	if errors.Is(err, ErrNotRepresentable) {
		return badRequest(err.Error())
	}
	h.log.ErrorContext(ctx, "icebergrest: source", "err", err)
	return errInternal
}
