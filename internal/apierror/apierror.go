// Package apierror writes lake's HTTP JSON error envelope,
// {"error":{"code":"…","message":"…"}}, the one shape every lake HTTP API
// answers errors in: the registration API, local mode's routes and the
// catalog browser. It imports nothing of lake's, so a program can answer
// errors without linking what the registration API needs (the DynamoDB SDK).
package apierror

import (
	"encoding/json"
	"net/http"
)

// JSON is the envelope for code and message.
func JSON(code, message string) []byte {
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message = code, message
	b, _ := json.Marshal(body) // two strings: cannot fail
	return b
}

// Write answers status with the envelope of code and message.
func Write(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(JSON(code, message), '\n'))
}
