package wire

// ErrorResponse is the JSON error envelope of every lake HTTP API (the
// registration API, local mode's routes, the catalog browser's API):
//
//	{"error":{"code":"not_found","message":"acme/sales/orders: table not found"}}
//
// A client decides by Code, never by Message, which is for people.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is an ErrorResponse's error: a stable Code (one of the Code…
// constants) and a Message. An incompatible_schema error also lists the
// breaking changes the table's mode refused (the first
// schemadiff.MaxChanges) and counts them all; other errors have neither.
type ErrorBody struct {
	Code                 string           `json:"code"`
	Message              string           `json:"message"`
	BreakingChanges      []BreakingChange `json:"breaking_changes,omitempty"`
	BreakingChangesTotal int              `json:"breaking_changes_total,omitempty"`
}

// The error codes of lake's HTTP APIs. A code is never renamed; a client
// that meets one it does not know treats it by the HTTP status.
const (
	// The request names something invalid, or breaks a limit.
	CodeInvalidName         = "invalid_name"
	CodeInvalidSchema       = "invalid_schema"
	CodeInvalidRegistration = "invalid_registration"
	CodeTooLarge            = "too_large"
	CodeQuotaExceeded       = "quota_exceeded"

	// The request does not fit the table's state.
	CodeNotFound           = "not_found"
	CodeExists             = "exists"
	CodeConflict           = "conflict"
	CodeVersionMismatch    = "version_mismatch"
	CodeProtected          = "protected"
	CodeIncompatibleSchema = "incompatible_schema"

	// The caller.
	CodeUnauthenticated = "unauthenticated"
	CodeForbidden       = "forbidden"

	// The server could not do it now; a retry may succeed (503, with
	// Retry-After where the registration API says so). Unsignalled is a
	// write stored whose refresh was not told.
	CodeUnavailable   = "unavailable"
	CodeUnsignalled   = "unsignalled"
	CodeInternal      = "internal"
	CodeRefreshFailed = "refresh_failed"

	// The request could not be read: a bug in the client, not in what its
	// user asked.
	CodeInvalidJSON          = "invalid_json"
	CodeInvalidBase64        = "invalid_base64"
	CodeInvalidBody          = "invalid_body"
	CodeInvalidQuery         = "invalid_query"
	CodeInvalidVersion       = "invalid_version"
	CodeInvalidIfMatch       = "invalid_if_match"
	CodeInvalidRequest       = "invalid_request"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeNoRoute              = "no_route"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeNotImplemented       = "not_implemented"

	// Local mode's request guard (a web page may not drive local mode).
	CodeForbiddenHost = "forbidden_host"
	CodeCrossOrigin   = "cross_origin"

	// The catalog browser's API: a request it cannot read, and discovery
	// failing to answer it.
	CodeInvalid         = "invalid"
	CodeDiscoveryFailed = "discovery_failed"
)
