package icebergrest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// Error types of the spec's error model (IcebergErrorResponse).
const (
	typeBadRequest      = "BadRequestException"
	typeNotAuthorized   = "NotAuthorizedException"
	typeForbidden       = "ForbiddenException"
	typeNoSuchNamespace = "NoSuchNamespaceException"
	typeNoSuchTable     = "NoSuchTableException"
	typeNotFound        = "NotFoundException"
	typeUnsupported     = "UnsupportedOperationException"
	typeUnavailable     = "ServiceUnavailableException"
	typeInternal        = "InternalServerError"
)

// apiError is one answer in the spec's error model.
type apiError struct {
	status  int
	typ     string
	message string
}

var (
	errNoRoute         = &apiError{http.StatusNotFound, typeNotFound, "no such route in lake's Iceberg REST catalog (read side)"}
	errNoSuchNamespace = &apiError{http.StatusNotFound, typeNoSuchNamespace, "namespace does not exist"}
	errNoSuchTable     = &apiError{http.StatusNotFound, typeNoSuchTable, "table does not exist"}
	errInternal        = &apiError{http.StatusInternalServerError, typeInternal, "internal error"}
)

func badRequest(msg string) *apiError {
	return &apiError{http.StatusBadRequest, typeBadRequest, msg}
}

func errUnavailable(msg string) *apiError {
	return &apiError{http.StatusServiceUnavailable, typeUnavailable, msg}
}

// validName checks a name with catalog.ValidateName; the message names the
// part and the reason, not the (bounded but outside) value.
func validName(part, name string) *apiError {
	err := catalog.ValidateName(part, name)
	if err == nil {
		return nil
	}
	var ne *catalog.NameError
	if errors.As(err, &ne) {
		return badRequest("invalid " + part + " name: " + ne.Reason)
	}
	return badRequest("invalid " + part + " name")
}

// errorResponse is IcebergErrorResponse.
type errorResponse struct {
	Error errorModel `json:"error"`
}

type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, errorResponse{errorModel{Message: e.message, Type: e.typ, Code: e.status}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorResponse{errorModel{Message: errInternal.message, Type: typeInternal, Code: status}})
	}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonContentType, noStore
	h["Content-Length"] = []string{strconv.Itoa(len(b))} // one piece, not chunked
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
