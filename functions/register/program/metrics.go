package program

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// Handler is the register Lambda's handler of API Gateway HTTP API events.
type Handler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// statser is what Measured reads: *catalog.Catalog.
type statser interface{ Stats() catalog.Stats }

// Measured wraps next, the handler of a registration API over cat, so
// each invocation writes one CloudWatch Embedded Metric Format line to w
// (the function's stdout) in namespace "lake", without dimensions:
//
//   - SideWritesFailed (Count): the writes that went with the request's
//     stored mutation and failed (a version record, a tombstone's clean-up,
//     the usage item, the change counter; catalog.ErrSideWrite), and a
//     usage correction that failed after a refused one; 0 when none did.
//     The registration API answers such a write as stored and logs a
//     warning naming each; alarm on the metric's sum.
//   - Commits (Count): the mutations the request stored.
//
// and as properties SideWritesFailedByPart (the count by
// catalog.Part), Method and Status. The counts are cat.Stats() after the
// request less before it: a Lambda runs one request at a time in a
// process, so they are that request's. now stamps the line (nil:
// time.Now).
func Measured(next Handler, cat statser, w io.Writer, now func() time.Time) Handler {
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		before := cat.Stats()
		resp, err := next(ctx, ev)
		after := cat.Stats()
		byPart := map[string]uint64{}
		for part, n := range after.FailedByPart {
			if d := n - before.FailedByPart[part]; d > 0 {
				byPart[string(part)] = d
			}
		}
		metric := func(name string) map[string]string { return map[string]string{"Name": name, "Unit": "Count"} }
		line, merr := json.Marshal(map[string]any{
			"_aws": map[string]any{
				"Timestamp": now().UnixMilli(),
				"CloudWatchMetrics": []any{map[string]any{
					"Namespace":  "lake",
					"Dimensions": [][]string{{}},
					"Metrics":    []any{metric("SideWritesFailed"), metric("Commits")},
				}},
			},
			"SideWritesFailed":       after.SideWritesFailed - before.SideWritesFailed,
			"SideWritesFailedByPart": byPart,
			"Commits":                after.Commits - before.Commits,
			"Method":                 ev.RequestContext.HTTP.Method,
			"Status":                 resp.StatusCode,
		})
		if merr == nil {
			_, _ = w.Write(append(line, '\n'))
		}
		return resp, err
	}
}
