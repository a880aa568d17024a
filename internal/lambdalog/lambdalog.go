// Package lambdalog makes the JSON slog logger Lambda functions use: every
// record logged with a context carries the invocation's request ID.
package lambdalog

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// New returns a JSON logger writing to w that adds "request_id" from the
// Lambda context of each record's context.
func New(w io.Writer) *slog.Logger {
	return slog.New(handler{slog.NewJSONHandler(w, nil)})
}

type handler struct{ slog.Handler }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		r.AddAttrs(slog.String("request_id", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler { return handler{h.Handler.WithAttrs(as)} }
func (h handler) WithGroup(name string) slog.Handler    { return handler{h.Handler.WithGroup(name)} }
