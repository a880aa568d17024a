package apiclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Kinds of API error the catalog has no sentinel for. An *Error unwraps to
// one of these or to a catalog sentinel.
var (
	// ErrVersionMismatch: an If-Match update found another version. It is
	// also catalog.ErrConflict.
	ErrVersionMismatch = errors.New("no longer at the version read")
	// ErrUnauthenticated: the credentials are missing or invalid.
	ErrUnauthenticated = errors.New("missing or invalid credentials")
	// ErrForbidden: the credentials do not cover the tenant.
	ErrForbidden = errors.New("not allowed")
	// ErrUnavailable: the API or its store is unavailable; a retry may
	// succeed.
	ErrUnavailable = errors.New("the registration API is unavailable; retry")
	// ErrBadRequest: the API could not read the request (malformed JSON or
	// base64, wrong content type, no such route): a bug in the client, not
	// in what the user asked.
	ErrBadRequest = errors.New("the registration API rejected the request")
	// ErrLocationNotAllowed: lake vends no access to the table's location:
	// it is outside the prefixes an operator allowed for its tenant, in
	// one of lake's own buckets, or not a location lake vends for; the
	// message names the reason.
	ErrLocationNotAllowed = errors.New("location not allowed for vending")
	// ErrVendingNotConfigured: this deployment vends no credentials.
	ErrVendingNotConfigured = errors.New("credential vending is not configured")
	// ErrVendingFailed: STS refused or failed the AssumeRole; the
	// server's log says why.
	ErrVendingFailed = errors.New("credential vending failed")
	// ErrNotAdmin: an admin route called without an operator's
	// credentials (a tenant's own token, say).
	ErrNotAdmin = errors.New("operators only")
	// ErrInvalidQuery: a query parameter the user gave is out of range or
	// names what is not there (a preview's limit or columns, a history's
	// limit); the message says which.
	ErrInvalidQuery = errors.New("invalid request")
	// ErrPreviewLimit: a preview went past one of its caps (bytes read,
	// files, rows, time, the tenant's concurrent previews); the message
	// names it.
	ErrPreviewLimit = errors.New("past a preview's cap")
	// ErrSchemaMismatch: a file at the table's location does not match
	// its registered schema; the message names the file.
	ErrSchemaMismatch = errors.New("a file does not match the registered schema")
	// ErrPreviewFailed: the table's files could not be read; the message
	// says why.
	ErrPreviewFailed = errors.New("the table's files could not be read")
)

// Error is an error answer of the registration API: its HTTP status, its
// stable code and message, and the table the request was about.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the envelope's stable code (invalid_name, not_found, …), or
	// "http_error" when the answer had no JSON envelope.
	Code string
	// Message is the API's message, as sent.
	Message string
	// Ref is the table the request was about; zero for other requests.
	Ref catalog.TableRef
	// BreakingChanges are an incompatible_schema answer's breaking
	// changes (the first schemadiff.MaxChanges), each with its path and
	// why; BreakingChangesTotal counts them all.
	BreakingChanges      []wire.BreakingChange
	BreakingChangesTotal int
	// kind is the sentinel Unwrap returns; nil for codes this client does
	// not know.
	kind error
}

// kinds maps each code the API sends to its sentinel and whether the
// message carries detail the kind does not say (what is wrong with a name
// or schema, a size).
var kinds = map[string]struct {
	kind   error
	detail bool
}{
	wire.CodeInvalidName:          {catalog.ErrInvalidName, true},
	wire.CodeInvalidSchema:        {catalog.ErrInvalidSchema, true},
	wire.CodeInvalidRegistration:  {catalog.ErrInvalidRegistration, true},
	wire.CodeTooLarge:             {catalog.ErrTooLarge, true},
	wire.CodeNotFound:             {catalog.ErrNotFound, false},
	wire.CodeExists:               {catalog.ErrExists, false},
	wire.CodeConflict:             {catalog.ErrConflict, false},
	wire.CodeIncompatibleSchema:   {catalog.ErrIncompatibleSchema, true},
	wire.CodeProtected:            {catalog.ErrProtected, false},
	wire.CodeVersionMismatch:      {ErrVersionMismatch, false},
	wire.CodeUnauthenticated:      {ErrUnauthenticated, false},
	"unauthorized":                {ErrUnauthenticated, false},
	wire.CodeForbidden:            {ErrForbidden, false},
	wire.CodeUnavailable:          {ErrUnavailable, false},
	wire.CodeInvalidJSON:          {ErrBadRequest, true},
	wire.CodeInvalidBase64:        {ErrBadRequest, true},
	wire.CodeInvalidBody:          {ErrBadRequest, true},
	wire.CodeInvalidIfMatch:       {ErrBadRequest, true},
	wire.CodeInvalidRequest:       {ErrBadRequest, true},
	wire.CodeUnsupportedMediaType: {ErrBadRequest, true},
	wire.CodeNoRoute:              {ErrBadRequest, true},
	wire.CodeMethodNotAllowed:     {ErrBadRequest, true},
	wire.CodeLocationNotAllowed:   {ErrLocationNotAllowed, true},
	wire.CodeVendingNotConfigured: {ErrVendingNotConfigured, true},
	wire.CodeVendingFailed:        {ErrVendingFailed, true},
	wire.CodeNotAdmin:             {ErrNotAdmin, true},
	wire.CodeInvalidQuery:         {ErrInvalidQuery, true},
	wire.CodePreviewLimit:         {ErrPreviewLimit, true},
	wire.CodeSchemaMismatch:       {ErrSchemaMismatch, true},
	wire.CodePreviewFailed:        {ErrPreviewFailed, true},
	wire.CodeNoSchema:             {catalog.ErrSchemaUnavailable, true},
}

// phrases say each kind to a user; the ref is said before it.
var phrases = map[error]string{
	catalog.ErrInvalidName:         "invalid name",
	catalog.ErrInvalidSchema:       "invalid schema",
	catalog.ErrInvalidRegistration: "invalid registration",
	catalog.ErrTooLarge:            "too large",
	catalog.ErrNotFound:            "table not found",
	catalog.ErrExists:              "already registered with a different location, type, schema, description or properties",
	catalog.ErrConflict:            "the registration changed meanwhile",
	catalog.ErrIncompatibleSchema:  "the schema breaks the table's compatibility mode",
	catalog.ErrProtected:           "the table is protected; unprotect it first (lake update --unprotect)",
	ErrVersionMismatch:             "the registration changed since it was read",
	ErrUnauthenticated:             "missing or invalid credentials",
	ErrForbidden:                   "not allowed",
	ErrUnavailable:                 "the registration API is unavailable; retry",
	ErrBadRequest:                  "the registration API rejected the request",
	ErrLocationNotAllowed:          "location not allowed for vending",
	ErrVendingNotConfigured:        "credential vending is not configured",
	ErrVendingFailed:               "credential vending failed",
	ErrNotAdmin:                    "operators only",
	ErrInvalidQuery:                "invalid request",
	ErrPreviewLimit:                "past a preview's cap",
	ErrSchemaMismatch:              "a file does not match the registered schema",
	ErrPreviewFailed:               "the table's files could not be read",
	catalog.ErrSchemaUnavailable:   "the table has no schema",
}

// Unwrap returns the error's kind: a catalog sentinel or one of this
// package's; a version mismatch is ErrVersionMismatch and
// catalog.ErrConflict.
func (e *Error) Unwrap() []error {
	switch {
	case e.kind == nil:
		return nil
	case e.kind == ErrVersionMismatch:
		return []error{ErrVersionMismatch, catalog.ErrConflict}
	}
	return []error{e.kind}
}

// Error says the table, then the kind, then what the API added that the
// kind does not say, each once:
//
//	acme/sales/orders: table not found
//	acme/sales/orders: invalid schema: field "x": unsupported type
func (e *Error) Error() string {
	phrase, known := phrases[e.kind]
	if e.kind == catalog.ErrInvalidName {
		// The API's message names the part and quotes the name (invalid
		// table name "a/b": contains '/'); a ref holding the name would say
		// it twice, and confusingly when it holds a '/'.
		if d := detail(e.Message, e.Ref, ""); d != "" {
			return d
		}
		return phrase
	}
	var b strings.Builder
	if e.Ref != (catalog.TableRef{}) {
		b.WriteString(e.Ref.String())
		b.WriteString(": ")
	}
	switch {
	case !known:
		fmt.Fprintf(&b, "the registration API answered HTTP %d %s", e.Status, e.Code)
	case e.kind == ErrForbidden && e.Ref.Tenant != "":
		fmt.Fprintf(&b, "%s to act on tenant %q", phrase, e.Ref.Tenant)
	default:
		b.WriteString(phrase)
	}
	if k, codeKnown := kinds[e.Code]; !codeKnown || k.detail {
		if d := detail(e.Message, e.Ref, phrase); d != "" {
			b.WriteString(": ")
			b.WriteString(d)
		}
	}
	return b.String()
}

// detail is what msg says beyond the ref and the kind's phrase: package
// prefixes ("catalog: "), the operation and ref ("register a/b/c: ") and the
// phrase itself are dropped, so nothing is said twice.
func detail(msg string, ref catalog.TableRef, phrase string) string {
	d := strings.TrimSpace(msg)
	if phrase != "" {
		if i := strings.LastIndex(d, phrase); i >= 0 {
			d = d[i+len(phrase):]
		}
	}
	for {
		before := d
		d = strings.TrimLeft(d, ": ")
		if i := strings.Index(d, ": "); i > 0 && isPrefixWord(d[:i]) {
			d = d[i+2:]
		}
		if ref != (catalog.TableRef{}) {
			for _, op := range []string{"register ", "update ", "drop ", ""} {
				d = strings.TrimPrefix(d, op+ref.String()+": ")
			}
		}
		if d == before {
			return d
		}
	}
}

// isPrefixWord reports whether s is a package prefix such as "catalog" or
// "schemajson": one lower-case word.
func isPrefixWord(s string) bool {
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return s != ""
}

// decodeError reads an error answer: the JSON envelope (wire.ErrorResponse)
// {"error":{"code":"…","message":"…"}} or, from something in front of the
// API (a proxy, API Gateway), any other body.
func decodeError(status int, raw []byte, ref catalog.TableRef) *Error {
	var env wire.ErrorResponse
	e := &Error{Status: status, Ref: ref}
	if json.Unmarshal(raw, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message, e.BreakingChanges = env.Error.Code, env.Error.Message, env.Error.BreakingChanges
		e.BreakingChangesTotal = max(env.Error.BreakingChangesTotal, len(e.BreakingChanges))
		e.kind = kinds[e.Code].kind
		return e
	}
	e.Code = "http_error"
	e.Message = strings.TrimSpace(string(raw))
	if len(e.Message) > 200 {
		e.Message = e.Message[:200] + "…"
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	switch status {
	case http.StatusUnauthorized:
		e.kind = ErrUnauthenticated
	case http.StatusForbidden:
		// API Gateway's IAM authorizer answers 403 {"message":"…"}.
		e.kind = ErrForbidden
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests:
		e.kind = ErrUnavailable
	}
	return e
}
