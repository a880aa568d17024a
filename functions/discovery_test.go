package functions_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

const discoverySecret = "functions-test-secret-0123456789abcdef"

type discoveryProc struct {
	proc       *testenv.Process
	addr, http string
	admin      string
	client     *flightsql.Client
	health     healthpb.HealthClient
}

func startDiscovery(t *testing.T, snapshot string, env ...string) *discoveryProc {
	t.Helper()
	bin := testenv.Binary(t, "discovery")
	port, hport, aport := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	d := &discoveryProc{addr: "127.0.0.1:" + strconv.Itoa(port), http: "127.0.0.1:" + strconv.Itoa(hport), admin: "127.0.0.1:" + strconv.Itoa(aport)}
	d.proc = testenv.StartEnv(t, append([]string{"LAKE_JWT_HS256_SECRET=" + discoverySecret}, env...), bin,
		"-listen", d.addr, "-http-listen", d.http, "-admin-listen", d.admin, "-snapshot", snapshot, "-poll-interval", "200ms", "-shutdown-grace", "5s")
	d.proc.WaitTCP(t, d.addr, 30*time.Second)
	var err error
	if d.client, err = flightsql.NewClient(d.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.client.Close() })
	cc, err := grpc.NewClient(d.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	d.health = healthpb.NewHealthClient(cc)
	return d
}

func tenantCtx(t testing.TB, tenant string) context.Context {
	tok, err := auth.IssueHS256([]byte(discoverySecret), auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

// tableNames lists a tenant's tables through Flight SQL, or the error.
func (d *discoveryProc) tableNames(t testing.TB, tenant string, includeSchema bool) ([]string, error) {
	rows, err := flightclient.GetTables(tenantCtx(t, tenant), d.client, &flightsql.GetTablesOpts{IncludeSchema: includeSchema})
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	return names, err
}

func (d *discoveryProc) serving(t testing.TB) healthpb.HealthCheckResponse_ServingStatus {
	resp, err := d.health.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return resp.Status
}

// waitFor polls cond every 50 ms until it holds, failing after limit (a
// bound against hangs, not a performance claim).
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func writeBlob(t *testing.T, path string, gen uint64, tables ...string) {
	t.Helper()
	blob := blobBytes(t, gen, tables...)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// blobBytes is a snapshot blob of generation gen holding tenant acme's
// tables in namespace sales.
func blobBytes(t *testing.T, gen uint64, tables ...string) []byte {
	t.Helper()
	st := memstore.New(memstore.Options{})
	c := catalog.New(st, catalog.Options{})
	for i, name := range tables {
		ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: name}
		if _, _, err := c.Register(context.Background(), ref, catalog.TableSpec{Location: "/d/" + name, Schema: catalogtest.WideSchema(i, 5)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := scan.Build(context.Background(), st, scan.BuildOptions{Generation: gen, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	blob, err := b.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

// writeRefsBlob writes to path a generation-1 snapshot blob of refs, each
// registered at loc(ref) with a 3-column schema.
func writeRefsBlob(t *testing.T, path string, refs []catalog.TableRef, loc func(catalog.TableRef) string) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	c := catalog.New(st, catalog.Options{})
	for i, ref := range refs {
		if _, _, err := c.Register(context.Background(), ref, catalog.TableSpec{Location: loc(ref), Schema: catalogtest.WideSchema(i, 3)}); err != nil {
			t.Fatal(err)
		}
	}
	built, err := scan.Build(context.Background(), st, scan.BuildOptions{Generation: 1, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	one, err := built.Written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, one, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The discovery binary: UNAVAILABLE and NOT_SERVING until a blob exists,
// then serving; picks up a new blob; keeps serving over a corrupt one; exits
// cleanly on SIGTERM.
func TestDiscoveryBinary(t *testing.T) {
	blob := filepath.Join(t.TempDir(), "catalog.lakesnap")
	d := startDiscovery(t, blob)

	if _, err := d.tableNames(t, "acme", true); status.Code(err) != codes.Unavailable {
		t.Fatalf("before a blob: %v, want UNAVAILABLE", err)
	}
	if got := d.serving(t); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health before a blob = %v, want NOT_SERVING", got)
	}
	if code := httpStatus(t, "http://"+d.http+"/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz before a blob = %d, want 503", code)
	}

	writeBlob(t, blob, 1, "orders")
	waitFor(t, 20*time.Second, "the first snapshot", func() bool { return d.serving(t) == healthpb.HealthCheckResponse_SERVING })
	if names, err := d.tableNames(t, "acme", true); err != nil || fmt.Sprint(names) != "[orders]" {
		t.Fatalf("after the blob: %v, %v", names, err)
	}
	if code := httpStatus(t, "http://"+d.http+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d, want 200", code)
	}

	writeBlob(t, blob, 2, "orders", "returns")
	waitFor(t, 20*time.Second, "the second snapshot", func() bool {
		names, _ := d.tableNames(t, "acme", false)
		return len(names) == 2
	})

	if err := os.WriteFile(blob, []byte("LAKESNAP but corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the corrupt blob to be seen", func() bool {
		return strings.Contains(httpBody(t, "http://"+d.admin+"/status"), "corrupt")
	})
	if names, err := d.tableNames(t, "acme", true); err != nil || len(names) != 2 {
		t.Fatalf("over a corrupt blob: %v, %v; want generation 2 still serving", names, err)
	}
	// The health listener (what the load balancer reaches) shows nothing
	// but /healthz; /status and /metrics live on the admin listener.
	for _, path := range []string{"/status", "/metrics"} {
		if code := httpStatus(t, "http://"+d.http+path); code != http.StatusNotFound {
			t.Errorf("%s on the health listener = %d, want 404", path, code)
		}
	}
	if code := httpStatus(t, "http://"+d.admin+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz on the admin listener = %d, want 200", code)
	}
	metrics := httpBody(t, "http://"+d.admin+"/metrics")
	for _, m := range []string{"lake_discovery_snapshot_generation 2", `lake_discovery_requests_total{code="OK",command="GetTables"}`, "lake_discovery_metadata_io_total", "lake_discovery_last_successful_poll_timestamp_seconds 1.", `lake_discovery_snapshot_loads_total{result="rejected"}`} {
		if !strings.Contains(metrics, m) {
			t.Fatalf("/metrics lacks %q:\n%s", m, metrics)
		}
	}

	if err := d.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := d.proc.Wait(15 * time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0\n%s", code, d.proc.Output())
	}
}

// The discovery binary turns unhealthy when its last successful poll is
// older than -max-staleness (LAKE_MAX_STALENESS): reads of the blob fail
// once it is replaced by a folder, and /healthz answers 503, the gRPC
// health service NOT_SERVING and /status stale, while requests are still
// answered from the last good snapshot. With the blob back, it is healthy
// again.
func TestDiscoveryBinaryStaleness(t *testing.T) {
	blob := filepath.Join(t.TempDir(), "catalog.lakesnap")
	writeBlob(t, blob, 1, "orders")
	d := startDiscovery(t, blob, "LAKE_MAX_STALENESS=1s")

	// health reads every surface and says whether they all agree with
	// want, and what it saw.
	health := func(want bool) (bool, string) {
		wantGRPC, wantCode, wantStale := healthpb.HealthCheckResponse_SERVING, http.StatusOK, `"stale":false`
		if !want {
			wantGRPC, wantCode, wantStale = healthpb.HealthCheckResponse_NOT_SERVING, http.StatusServiceUnavailable, `"stale":true`
		}
		grpcStatus := d.serving(t)
		code, body := httpStatus(t, "http://"+d.http+"/healthz"), httpBody(t, "http://"+d.http+"/healthz")
		st := httpBody(t, "http://"+d.admin+"/status")
		ok := grpcStatus == wantGRPC && code == wantCode && strings.Contains(st, wantStale) && strings.Contains(st, `"max_staleness_seconds":1,`)
		if !want {
			ok = ok && strings.HasPrefix(body, "snapshot stale: no successful poll for ") && strings.Contains(st, "is a directory")
		}
		return ok, fmt.Sprintf("gRPC %v, /healthz %d %q, /status %s", grpcStatus, code, body, st)
	}
	for _, tc := range []struct {
		name        string
		change      func(t *testing.T)
		wantHealthy bool
	}{
		{name: "polls succeed", change: func(*testing.T) {}, wantHealthy: true},
		{name: "reads fail past the bound", change: func(t *testing.T) {
			if err := os.Rename(blob, blob+".good"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(blob, 0o755); err != nil {
				t.Fatal(err)
			}
		}, wantHealthy: false},
		{name: "the blob is back", change: func(t *testing.T) {
			if err := os.Remove(blob); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(blob+".good", blob); err != nil {
				t.Fatal(err)
			}
		}, wantHealthy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(t)
			var saw string
			waitFor(t, 20*time.Second, fmt.Sprintf("every health surface to say healthy=%v", tc.wantHealthy), func() bool {
				var ok bool
				ok, saw = health(tc.wantHealthy)
				return ok
			})
			if names, err := d.tableNames(t, "acme", true); err != nil || fmt.Sprint(names) != "[orders]" {
				t.Fatalf("GetTables: got %v, %v; want [orders] from the serving snapshot (health: %s)", names, err, saw)
			}
		})
	}
}

// countingProxy forwards to an S3 endpoint and records every request: its
// method, path and query, the If-None-Match it named, the bytes it sent,
// the status and the body bytes it was answered with. missing, when set,
// answers the GETs of the paths it reports 404 (a segment not there).
type countingProxy struct {
	url     string
	mu      sync.Mutex
	gets    []proxiedGet
	all     []proxiedGet
	missing func(path string) bool
}

type proxiedGet struct {
	method, path, query string
	ifNoneMatch         string
	sent                int64
	status              int
	bytes               int
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		p.mu.Lock()
		missing := p.missing
		p.mu.Unlock()
		if r.Method == http.MethodGet && missing != nil && missing(r.URL.Path) {
			cw.Header().Set("Content-Type", "application/xml")
			cw.WriteHeader(http.StatusNotFound)
			_, _ = cw.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>injected: not there</Message></Error>`))
		} else {
			rp.ServeHTTP(cw, r)
		}
		g := proxiedGet{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, ifNoneMatch: r.Header.Get("If-None-Match"),
			sent: r.ContentLength, status: cw.status, bytes: cw.n}
		p.mu.Lock()
		if r.Method == http.MethodGet {
			p.gets = append(p.gets, g)
		}
		p.all = append(p.all, g)
		p.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *countingProxy) recorded() []proxiedGet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxiedGet(nil), p.gets...)
}

// requests is every request recorded so far.
func (p *countingProxy) requests() []proxiedGet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxiedGet(nil), p.all...)
}

func (p *countingProxy) setMissing(f func(path string) bool) {
	p.mu.Lock()
	p.missing = f
	p.mu.Unlock()
}

// countingWriter notes the status and counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	status, n int
}

func (w *countingWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += n
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The discovery binary polls S3 (versitygw) with GetObject If-None-Match
// the ETag it serves: while the blob is unchanged every poll is answered
// 304 with no body bytes on the wire, and a new blob is fetched once.
func TestDiscoveryBinaryPollsS3WithIfNoneMatch(t *testing.T) {
	st := newStack(t)
	ctx := context.Background()
	put := func(gen uint64, tables ...string) string {
		t.Helper()
		out, err := st.s3.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &st.bucket, Key: aws.String(key), Body: bytes.NewReader(blobBytes(t, gen, tables...))})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ETag)
	}
	etag1 := put(1, "orders")
	proxy := startCountingProxy(t, st.s3.Endpoint)
	d := startDiscovery(t, "s3://"+st.bucket+"/"+key, "AWS_ENDPOINT_URL_S3="+proxy.url, "LAKE_S3_PATH_STYLE=true", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID="+st.s3.Access, "AWS_SECRET_ACCESS_KEY="+st.s3.Secret)
	waitFor(t, 20*time.Second, "the first snapshot", func() bool { return d.serving(t) == healthpb.HealthCheckResponse_SERVING })
	waitFor(t, 20*time.Second, "five polls after the load", func() bool { return len(proxy.recorded()) >= 6 })

	gets := proxy.recorded()
	if g := gets[0]; g.ifNoneMatch != "" || g.status != http.StatusOK || g.bytes == 0 {
		t.Fatalf("first GET: got If-None-Match %q, %d, %d bytes; want none, 200 and the blob", g.ifNoneMatch, g.status, g.bytes)
	}
	for i, g := range gets[1:] {
		if g.ifNoneMatch != etag1 || g.status != http.StatusNotModified || g.bytes != 0 {
			t.Fatalf("GET %d of the unchanged blob: got If-None-Match %q, %d, %d bytes; want %q, 304, 0 bytes", i+1, g.ifNoneMatch, g.status, g.bytes, etag1)
		}
	}

	before := len(proxy.recorded())
	etag2 := put(2, "orders", "returns")
	waitFor(t, 20*time.Second, "the second snapshot", func() bool {
		names, _ := d.tableNames(t, "acme", false)
		return len(names) == 2
	})
	waitFor(t, 20*time.Second, "a poll of the second blob", func() bool {
		gets := proxy.recorded()
		return gets[len(gets)-1].ifNoneMatch == etag2
	})
	var fetched int
	for _, g := range proxy.recorded()[before:] {
		switch {
		case g.status == http.StatusOK && g.ifNoneMatch == etag1 && g.bytes > 0:
			fetched++
		case g.status == http.StatusNotModified && g.bytes == 0 && (g.ifNoneMatch == etag1 || g.ifNoneMatch == etag2):
		default:
			t.Fatalf("GET around the new blob: got If-None-Match %q, %d, %d bytes; want a 304 with no bytes or one 200 answering %q", g.ifNoneMatch, g.status, g.bytes, etag1)
		}
	}
	if fetched != 1 {
		t.Fatalf("the new blob was fetched %d times, want once", fetched)
	}
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func httpBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key, and returns their paths and a pool trusting it.
func writeSelfSigned(t *testing.T) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "lake-test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

// With -tls-cert and -tls-key discovery serves TLS only.
func TestDiscoveryTLS(t *testing.T) {
	blob := filepath.Join(t.TempDir(), "catalog.lakesnap")
	writeBlob(t, blob, 1, "orders")
	certPath, keyPath, pool := writeSelfSigned(t)
	bin := testenv.Binary(t, "discovery")
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	p := testenv.StartEnv(t, []string{"LAKE_JWT_HS256_SECRET=" + discoverySecret}, bin,
		"-listen", addr, "-http-listen", "", "-admin-listen", "-", "-snapshot", blob, "-tls-cert", certPath, "-tls-key", keyPath)
	p.WaitTCP(t, addr, 30*time.Second)

	tlsClient, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	defer tlsClient.Close()
	d := &discoveryProc{client: tlsClient}
	waitFor(t, 20*time.Second, "a TLS answer", func() bool {
		names, err := d.tableNames(t, "acme", true)
		return err == nil && fmt.Sprint(names) == "[orders]"
	})
	plain, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := (&discoveryProc{client: plain}).tableNames(t, "acme", false); err == nil {
		t.Fatal("a plaintext client was answered by a TLS server")
	}
}

// The discovery binary serves the catalog browser on LAKE_BROWSER_LISTEN:
// the page, and an API that asks discovery with the caller's token, so a
// tenant sees its own namespaces alone and no token gets 401.
func TestDiscoveryBinaryBrowser(t *testing.T) {
	blob := filepath.Join(t.TempDir(), "catalog.lakesnap")
	writeRefsBlob(t, blob, []catalog.TableRef{
		{Tenant: "acme", Namespace: "sales", Name: "orders"},
		{Tenant: "acme", Namespace: "sales", Name: "returns"},
		{Tenant: "acme", Namespace: "web", Name: "clicks"},
		{Tenant: "globex", Namespace: "ops", Name: "jobs"},
	}, func(ref catalog.TableRef) string { return "/d/" + ref.Name })
	web := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	d := startDiscovery(t, blob, "LAKE_BROWSER_LISTEN="+web)
	d.proc.WaitTCP(t, web, 30*time.Second)
	waitFor(t, 20*time.Second, "the snapshot", func() bool { return d.serving(t) == healthpb.HealthCheckResponse_SERVING })

	token := func(tenant string) string {
		tok, err := auth.IssueHS256([]byte(discoverySecret), auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, tc := range []struct {
		name, path, token string
		wantCode          int
		wantType          string
		wantBody          []string
		wantNot           []string
	}{
		{name: "page", path: "/", wantCode: 200, wantType: "text/html", wantBody: []string{"<html"}},
		{name: "config offers no dev tenants", path: "/api/config", wantCode: 200, wantType: "application/json", wantBody: []string{`"dev_tenants":[]`}, wantNot: []string{"acme", "globex"}},
		{name: "no token", path: "/api/namespaces", wantCode: 401, wantType: "application/json", wantBody: []string{`"unauthenticated"`}},
		{name: "bad token", path: "/api/namespaces", token: "not-a-token", wantCode: 401, wantType: "application/json"},
		{name: "acme", path: "/api/namespaces", token: token("acme"), wantCode: 200, wantType: "application/json",
			wantBody: []string{`"tenant":"acme"`, `{"name":"sales","tables":2}`, `{"name":"web","tables":1}`, `"total":2`}, wantNot: []string{"ops", "globex"}},
		{name: "globex", path: "/api/namespaces", token: token("globex"), wantCode: 200, wantType: "application/json",
			wantBody: []string{`"tenant":"globex"`, `{"name":"ops","tables":1}`, `"total":1`}, wantNot: []string{"sales", "web", "acme"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "http://"+web+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.StatusCode; got != tc.wantCode {
				t.Fatalf("got status %d, want %d (body %s)", got, tc.wantCode, body)
			}
			if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, tc.wantType) {
				t.Errorf("got Content-Type %q, want %s", got, tc.wantType)
			}
			for _, want := range tc.wantBody {
				if !strings.Contains(string(body), want) {
					t.Errorf("got body %s, want it to contain %s", body, want)
				}
			}
			for _, not := range tc.wantNot {
				if strings.Contains(string(body), not) {
					t.Errorf("got body %s, want no %s", body, not)
				}
			}
		})
	}
}
