package testenv

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Fault is an injected answer: an HTTP status and a JSON body in DynamoDB's
// error shape.
type Fault struct {
	Status      int
	Body        string
	ContentType string // default application/x-amz-json-1.0
}

// Throttled is DynamoDB's answer to a request over the provisioned rate.
var Throttled = Fault{Status: 400, Body: `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"injected throttling"}`}

// S3InternalError is S3's answer to a server-side failure.
var S3InternalError = Fault{Status: 500, ContentType: "application/xml",
	Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected failure</Message></Error>`}

// InternalError is DynamoDB's answer to a server-side failure.
var InternalError = Fault{Status: 500, Body: `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected failure"}`}

// FaultProxy is a reverse proxy in front of a DynamoDB-protocol server that
// can answer chosen calls with a fault instead of forwarding them: the one
// kind of failure a real server cannot be asked to produce.
type FaultProxy struct {
	// URL is the proxy's endpoint.
	URL string

	mu     sync.Mutex
	calls  map[string]int
	inject func(op string, n int) *Fault
}

// StartFaultProxy proxies to target. inject is asked about the n-th call
// (from 1) of each operation: the X-Amz-Target suffix for DynamoDB (e.g.
// "Scan"), the HTTP method for S3 (e.g. "PUT"). A nil answer forwards the
// call.
func StartFaultProxy(tb testing.TB, target string, inject func(op string, n int) *Fault) *FaultProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatalf("fault proxy target: %v", err)
	}
	p := &FaultProxy{calls: make(map[string]int), inject: inject}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := r.Header.Get("X-Amz-Target")
		if i := strings.LastIndexByte(op, '.'); i >= 0 {
			op = op[i+1:]
		}
		if op == "" {
			op = r.Method
		}
		p.mu.Lock()
		p.calls[op]++
		n := p.calls[op]
		p.mu.Unlock()
		if f := p.inject(op, n); f != nil {
			if f.ContentType == "" {
				f.ContentType = "application/x-amz-json-1.0"
			}
			w.Header().Set("Content-Type", f.ContentType)
			w.WriteHeader(f.Status)
			_, _ = w.Write([]byte(f.Body))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Calls returns how many calls of op the proxy has seen, injected or not.
func (p *FaultProxy) Calls(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[op]
}
