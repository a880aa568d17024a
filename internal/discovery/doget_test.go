package discovery_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lake-catalog/lake/internal/discovery"
)

// scrape returns the env's /metrics text.
func (e *env) scrape() string {
	e.t.Helper()
	srv := httptest.NewServer(discovery.AdminHandler(e.src, e.reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// metric returns the value of one sample line ("name{labels}") in text.
func metric(text, sample string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// Concurrent first requests for a cold tenant prepare it once.
func TestConcurrentFirstRequestsBuildOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	for i := range 200 {
		e.register("acme", "ns", fmt.Sprintf("t%03d", i), wide(i))
	}
	e.publish()
	ctx := as(t, "acme")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if rows, err := e.tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true}); err != nil || len(rows) != 200 {
				t.Errorf("GetTables: %d rows, %v", len(rows), err)
			}
		})
	}
	wg.Wait()
	if b := e.svc.CacheStats().Builds; b != 1 {
		t.Fatalf("builds = %d, want 1", b)
	}
}

// Pre-encoded whole-tenant answers equal what the streaming path sends for
// the same rows ("%_%" selects every table without being "all").
func TestPreEncodedEqualsStreamed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{BatchBytes: 16 << 10})
	for i := range 120 {
		e.register("acme", fmt.Sprintf("ns%d", i%3), fmt.Sprintf("t%03d", i), wide(i))
	}
	e.publish()
	ctx := as(t, "acme")
	for _, include := range []bool{false, true} {
		whole, err := e.tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: include})
		if err != nil {
			t.Fatal(err)
		}
		sliced, err := e.tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: include, TableNameFilterPattern: strp("%_%")})
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) != 120 || fmt.Sprint(whole) != fmt.Sprint(sliced) {
			t.Fatalf("include_schema=%v: pre-encoded %d rows differ from streamed %d rows", include, len(whole), len(sliced))
		}
	}
	if got := metric(e.scrape(), `lake_discovery_preencoded_responses_total{command="GetTables"}`); got != "2" {
		t.Fatalf("pre-encoded GetTables answers = %q, want 2", got)
	}
}

// Tickets are parsed before anything else: garbage, an unknown message
// and a command lake does not serve get INVALID_ARGUMENT or UNIMPLEMENTED,
// never a crash.
func TestBadTickets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	ctx := as(t, "acme")
	unknown, _ := anypb.New(wrapperspb.String("hello"))
	unknownBytes, _ := proto.Marshal(unknown)
	for name, tc := range map[string]struct {
		ticket []byte
		want   codes.Code
	}{
		"garbage":         {[]byte{0xff, 0x01, 0x02}, codes.InvalidArgument},
		"empty":           {nil, codes.InvalidArgument},
		"unknown message": {unknownBytes, codes.InvalidArgument},
	} {
		rdr, err := e.client.DoGet(ctx, &flight.Ticket{Ticket: tc.ticket})
		if err == nil {
			rdr.Release()
			t.Fatalf("%s: DoGet succeeded", name)
		}
		if codeOf(err) != tc.want {
			t.Fatalf("%s: %v, want %v", name, err, tc.want)
		}
	}
}
