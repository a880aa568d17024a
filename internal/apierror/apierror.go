// Package apierror writes lake's HTTP JSON error envelope
// (wire.ErrorResponse), {"error":{"code":"…","message":"…"}}, the one shape
// every lake HTTP API answers errors in: the registration API, local mode's
// routes and the catalog browser. It imports only pkg/wire, so a program can
// answer errors without linking what the registration API needs (the
// DynamoDB SDK).
package apierror

import (
	"encoding/json"
	"net/http"

	"github.com/lake-catalog/lake/pkg/wire"
)

// JSON is the envelope for code (one of wire's Code… constants) and
// message.
func JSON(code, message string) []byte {
	b, _ := json.Marshal(wire.ErrorResponse{Error: wire.ErrorBody{Code: code, Message: message}}) // two strings: cannot fail
	return b
}

// Write answers status with the envelope of code and message.
func Write(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(JSON(code, message), '\n'))
}
