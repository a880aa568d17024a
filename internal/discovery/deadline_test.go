package discovery_test

import (
	"io"
	"strings"
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

func TestRequestTimeoutFlag(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    time.Duration
		wantErr string
	}{
		{"default", nil, nil, discovery.DefaultRequestTimeout, ""},
		{"env", nil, map[string]string{"LAKE_REQUEST_TIMEOUT": "5s"}, 5 * time.Second, ""},
		{"flag wins", []string{"-request-timeout", "2m"}, map[string]string{"LAKE_REQUEST_TIMEOUT": "5s"}, 2 * time.Minute, ""},
		{"zero", []string{"-request-timeout", "0"}, nil, 0, "-request-timeout"},
		{"too long", []string{"-request-timeout", "2h"}, nil, 0, "-request-timeout"},
		{"not a duration", []string{"-request-timeout", "soon"}, nil, 0, "-request-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"LAKE_SNAPSHOT": "/tmp/x.lakesnap", "LAKE_JWT_HS256_SECRET": strings.Repeat("s", 32)}
			for k, v := range tt.env {
				env[k] = v
			}
			c, err := discovery.ParseConfig(tt.args, func(k string) string { return env[k] }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.RequestTimeout != tt.want {
				t.Fatalf("got %v, want %v", c.RequestTimeout, tt.want)
			}
		})
	}
}
