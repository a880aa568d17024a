package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// serveRegistrations loads a blob of regs into a new Service, as Source
// does.
func serveRegistrations(t *testing.T, regs []scan.Registered) *Service {
	t.Helper()
	w, err := scan.WriteRegistrations(regs, snapshot.WriterOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.Blob()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := snapshot.Open(b, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(Options{})
	s.setView(&View{Generation: 1, index: blobIndex{blob: blob}})
	return s
}

// cancelAfter is a context that reports itself cancelled from its n+1th
// Err call on: it stands for a client that goes away mid-request.
type cancelAfter struct {
	context.Context
	n     int64
	calls atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) > c.n {
		return context.Canceled
	}
	return nil
}

// A search stops within a schema when its request ends, not only between
// tables: one table of 2,000 columns is not walked to the end for a client
// that has gone (issue 24, finding 3).
func TestSearchChecksCancellationPerField(t *testing.T) {
	t.Parallel()
	fields := make([]arrow.Field, 2000)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("col_%04d", i), Type: arrow.PrimitiveTypes.Int64}
	}
	reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "/x", Schema: arrow.NewSchema(fields, nil)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := serveRegistrations(t, []scan.Registered{
		{Ref: catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: "wide"}, Registration: reg},
	})

	// Prepare the tenant with a live context first.
	var sent int
	if err := s.search(WithTenant(context.Background(), "acme"), []byte(`{"column_pattern":"col_%"}`), func([]byte) error { sent++; return nil }); err != nil || sent != 1 {
		t.Fatalf("search: %d results, %v; want 1", sent, err)
	}
	// The context ends after the check before the table: the walk must
	// notice among the columns.
	ctx := &cancelAfter{Context: WithTenant(context.Background(), "acme"), n: 1}
	sent = 0
	err = s.search(ctx, []byte(`{"column_pattern":"col_%"}`), func([]byte) error { sent++; return nil })
	if err == nil || sent != 0 {
		t.Fatalf("search with a context cancelled mid-table: %d results, %v; want an error and none", sent, err)
	}
	if got := ctx.calls.Load(); got > 10 {
		t.Errorf("the context was asked %d times after it ended, want the walk to stop at once", got)
	}
}

// fakeStream is a server stream with a context, for interceptor tests.
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s fakeStream) Context() context.Context { return s.ctx }

// The call interceptor gives Flight calls, unary and streaming, a
// deadline no later than the timeout, keeps a client's sooner one, and
// leaves the health service's calls alone.
func TestDeadlineInterceptor(t *testing.T) {
	t.Parallel()
	const d = 30 * time.Second
	c := &calls{authn: anyToken{}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), timeout: d}
	tests := []struct {
		method       string
		clientBudget time.Duration // 0: no client deadline
		wantDeadline bool
	}{
		{"/arrow.flight.protocol.FlightService/DoAction", 0, true},
		{"/arrow.flight.protocol.FlightService/DoGet", time.Second, true},
		{"/arrow.flight.protocol.FlightService/GetFlightInfo", time.Hour, true},
		{"/grpc.health.v1.Health/Watch", 0, false},
	}
	check := func(t *testing.T, ctx context.Context, client context.Context, want bool) {
		t.Helper()
		dl, ok := ctx.Deadline()
		if ok != want {
			t.Fatalf("deadline set %v, want %v", ok, want)
		}
		if !ok {
			return
		}
		if latest := time.Now().Add(d); dl.After(latest) {
			t.Fatalf("deadline %v is later than the timeout allows (%v)", dl, latest)
		}
		if cdl, ok := client.Deadline(); ok && dl.After(cdl) {
			t.Fatalf("deadline %v is later than the client's %v", dl, cdl)
		}
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			t.Parallel()
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer t"))
			if tt.clientBudget > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.clientBudget)
				defer cancel()
			}
			ran := 0
			if _, err := c.unary(ctx, nil, &grpc.UnaryServerInfo{FullMethod: tt.method}, func(hctx context.Context, _ any) (any, error) {
				ran++
				check(t, hctx, ctx, tt.wantDeadline)
				return nil, nil
			}); err != nil {
				t.Fatalf("unary: %v", err)
			}
			if err := c.stream(nil, fakeStream{ctx: ctx}, &grpc.StreamServerInfo{FullMethod: tt.method}, func(_ any, ss grpc.ServerStream) error {
				ran++
				check(t, ss.Context(), ctx, tt.wantDeadline)
				return nil
			}); err != nil {
				t.Fatalf("stream: %v", err)
			}
			if ran != 2 {
				t.Fatalf("the handlers ran %d times, want 2", ran)
			}
		})
	}
}

// anyToken accepts every non-empty token, as tenant "acme".
type anyToken struct{}

func (anyToken) Tenant(token string) (string, error) {
	if token == "" {
		return "", errors.New("no token")
	}
	return "acme", nil
}
