package functions_test

import (
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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/flightclient"
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
	tok, err := auth.IssueHS256([]byte(discoverySecret), "", tenant, "", "", time.Hour, time.Now())
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
	st := memstore.New(memstore.Options{})
	c := catalog.New(st, catalog.Options{})
	for i, name := range tables {
		ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: name}
		if _, _, err := c.Register(context.Background(), ref, catalog.TableSpec{Location: "/d/" + name, Schema: catalogtest.WideSchema(i, 5)}); err != nil {
			t.Fatal(err)
		}
	}
	snap, _, err := catalog.Refresh(context.Background(), st, gen, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	blob, err := catalog.EncodeBlob(snap)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
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
	for _, m := range []string{"lake_discovery_snapshot_generation 2", `lake_discovery_requests_total{code="OK",command="GetTables"}`, "lake_discovery_metadata_io_total", `lake_discovery_snapshot_loads_total{result="rejected"}`} {
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
		"-listen", addr, "-http-listen", "", "-snapshot", blob, "-tls-cert", certPath, "-tls-key", keyPath)
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
