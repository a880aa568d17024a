package discovery_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
)

// Every Flight call has a server-side deadline, whatever the client asks:
// with a deadline that has passed before the handler starts, a search and a
// GetTables stream stop with DEADLINE_EXCEEDED at their first check (issue
// 24, finding 3: a search ran for 32 s of CPU with no deadline).
func TestEveryRequestHasAServerDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{RequestTimeout: time.Nanosecond})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	ctx := as(t, "acme") // no client deadline
	_, _, err := e.search(ctx, searchBody(t, "", "%"))
	if got := codeOf(err); got != codes.DeadlineExceeded {
		t.Errorf("search: got %v (%v), want DEADLINE_EXCEEDED", got, err)
	}
	_, err = e.tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if got := codeOf(err); got != codes.DeadlineExceeded {
		t.Errorf("GetTables: got %v (%v), want DEADLINE_EXCEEDED", got, err)
	}
}
