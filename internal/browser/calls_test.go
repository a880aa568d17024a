package browser_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"

	"github.com/lake-catalog/lake/internal/browser"
	"github.com/lake-catalog/lake/internal/flightclient"
)

// countingProxy forwards TCP connections to target and counts the bytes
// that come back from it: what a client behind it received from
// discovery, every gRPC frame included.
type countingProxy struct {
	ln       net.Listener
	target   string
	received atomic.Int64
	wg       sync.WaitGroup
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *countingProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(countingWriter{in, &p.received}, out)
			in.Close()
		}()
	}
}

func (p *countingProxy) addr() string { return p.ln.Addr().String() }

// countingWriter adds what it writes to n as it goes, before it writes
// it: the reader may act on the bytes as soon as they are written (answer
// its HTTP request, and the test read n), so counting after the write
// raced that read and could put a page's bytes in the next measurement.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	k, err := c.w.Write(b)
	if k < len(b) {
		c.n.Add(int64(k - len(b)))
	}
	return k, err
}

// A page of a 10,000-table tenant carries a page from discovery to the
// browser's backend, not the tenant: the bytes the backend receives for
// GET /api/tables (one page of 100) are a small fraction of what the
// names alone of the namespace take over GetTables, which is how the
// browser listed before.
func TestPageOfBigTenantCarriesAPage(t *testing.T) {
	target := strings.TrimPrefix(env.in.Endpoints().FlightSQL, "grpc://")
	p := startCountingProxy(t, target)
	h, err := browser.New(browser.Options{Discovery: "grpc://" + p.addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	fetch := func(path string, v any) int64 {
		t.Helper()
		before := p.received.Load()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+env.tokens[bigTenant])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
		return p.received.Load() - before
	}
	var snap browser.SnapshotAnswer
	fetch("/api/snapshot", &snap) // the connection is set up
	if snap.Tables != bigTables {
		t.Fatalf("got %d tables, want %d", snap.Tables, bigTables)
	}

	var page browser.TablesAnswer
	pageBytes := fetch("/api/tables?namespace=wide&offset=5000&limit=100", &page)
	if page.Total != bigTables || len(page.Tables) != 100 || page.Tables[0].Name != "w05000" || page.Tables[0].Columns != 1 {
		t.Fatalf("got %d rows of %d from %+v, want 100 of %d from w05000 with 1 column", len(page.Tables), page.Total, page.Tables[:min(1, len(page.Tables))], bigTables)
	}
	var nss browser.NamespacesAnswer
	nsBytes := fetch("/api/namespaces", &nss)
	if nss.Total != 1 || nss.Namespaces[0].Tables != bigTables {
		t.Fatalf("got namespaces %+v, want wide with %d tables", nss, bigTables)
	}

	// The same namespace's names over GetTables, through the same proxy.
	c, err := flightclient.Dial("grpc://"+p.addr(), env.tokens[bigTenant])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := p.received.Load()
	ns := "wide"
	rows, err := c.Tables(context.Background(), &flightsql.GetTablesOpts{DbSchemaFilterPattern: &ns})
	if err != nil || len(rows) != bigTables {
		t.Fatalf("GetTables: %d rows, %v", len(rows), err)
	}
	wholeBytes := p.received.Load() - before
	t.Logf("received from discovery: a page of 100 tables %d B, the namespace list %d B; GetTables names of all %d tables %d B (%.0f× a page)",
		pageBytes, nsBytes, bigTables, wholeBytes, float64(wholeBytes)/float64(pageBytes))
	// A page's bytes are bounded by the page: 100 rows of two short
	// names, a type and a column count, and the gRPC frames around them.
	if pageBytes > 16<<10 || pageBytes*20 > wholeBytes {
		t.Fatalf("a page took %d bytes from discovery, the whole namespace %d: want at most 16 KiB and a twentieth", pageBytes, wholeBytes)
	}
	if nsBytes > 4<<10 {
		t.Fatalf("the namespace list took %d bytes from discovery, want at most 4 KiB", nsBytes)
	}
}

// callRecorder records the Flight methods a client calls, in order.
type callRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *callRecorder) record(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, method[strings.LastIndex(method, "/")+1:])
}

func (r *callRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// A table view asks describe first and GetTables for the schema only when
// describe says there is one: a legacy table costs no failed schema
// request, a table with a schema one GetTables with it.
func TestTableDescribesFirst(t *testing.T) {
	rec := &callRecorder{}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		rec.record(method)
		return streamer(ctx, desc, cc, method, opts...)
	}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		rec.record(method)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	h, err := browser.New(browser.Options{Discovery: env.in.Endpoints().FlightSQL,
		DialOptions: []grpc.DialOption{grpc.WithChainStreamInterceptor(stream), grpc.WithChainUnaryInterceptor(unary)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tests := []struct {
		query      string
		wantLegacy bool
		want       string
	}{
		{"namespace=legacy&name=events", true, "DoAction GetFlightInfo DoGet"},
		{"namespace=nested&name=rich", false, "DoAction GetFlightInfo DoGet"},
		{"namespace=nested&name=nope", false, "DoAction"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/table?"+tt.query, nil)
			req.Header.Set("Authorization", "Bearer "+env.tokens["acme"])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got browser.TableAnswer
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if calls := strings.Join(rec.take(), " "); calls != tt.want {
				t.Fatalf("got calls %q, want %q", calls, tt.want)
			}
			if resp.StatusCode == http.StatusOK && (got.Legacy != tt.wantLegacy || got.Legacy == (got.Schema != nil)) {
				t.Fatalf("got legacy %v, schema %v, want legacy %v", got.Legacy, got.Schema != nil, tt.wantLegacy)
			}
		})
	}
}
