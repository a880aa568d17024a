package cli

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// Message is what the user reads for err (after "lake: "): built from the
// error's kind and the table it is about, each said once, never the
// internal chain of package prefixes.
func Message(err error) string {
	if ne, ok := errors.AsType[*catalog.NameError](err); ok {
		return fmt.Sprintf("invalid %s name %q: %s", ne.Part, ne.Value, ne.Reason)
	}
	if ae, ok := errors.AsType[*apiclient.Error](err); ok {
		return ae.Error()
	}
	if de, ok := errors.AsType[*discoveryError](err); ok {
		return de.Error()
	}
	return err.Error()
}

// discoveryError is a failed Flight SQL call: the endpoint, what the call
// was about (a table ref or a tenant), and the gRPC status.
type discoveryError struct {
	addr  string
	about string
	err   error
}

func (e *discoveryError) Unwrap() error { return e.err }

// phrases say each gRPC code a discovery call can end with.
var grpcPhrases = map[codes.Code]string{
	codes.Unauthenticated:  "missing or invalid token",
	codes.PermissionDenied: "not allowed",
	codes.Unavailable:      "discovery is unavailable",
	codes.DeadlineExceeded: "discovery did not answer in time",
	codes.InvalidArgument:  "invalid request",
	codes.NotFound:         "not found",
}

func (e *discoveryError) Error() string {
	var b strings.Builder
	if e.about != "" {
		b.WriteString(e.about)
		b.WriteString(": ")
	}
	st, ok := status.FromError(e.err)
	if !ok {
		fmt.Fprintf(&b, "discovery %s: %v", e.addr, e.err)
		return b.String()
	}
	phrase, known := grpcPhrases[st.Code()]
	if !known {
		phrase = "discovery answered " + st.Code().String()
	}
	b.WriteString(phrase)
	if st.Code() == codes.Unavailable || st.Code() == codes.DeadlineExceeded {
		fmt.Fprintf(&b, " at %s", e.addr)
	}
	// Drop the server's own restatement of the code ("unauthenticated: …").
	msg := st.Message()
	if rest, ok := strings.CutPrefix(msg, strings.ToLower(st.Code().String())+": "); ok {
		msg = rest
	}
	if msg != "" && !strings.Contains(phrase, msg) {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	return b.String()
}

// discoveryErr wraps a Flight SQL call's error with the endpoint and what
// it was about; nil stays nil.
func discoveryErr(addr, about string, err error) error {
	if err == nil {
		return nil
	}
	return &discoveryError{addr: addr, about: about, err: err}
}

// plural says n of what, in the singular for one: "1 change", "2 changes".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
