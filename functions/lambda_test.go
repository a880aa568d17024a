// Package functions_test runs the real register and refresh bootstrap
// binaries under the AWS Lambda runtime interface emulator, against dynalite
// and versitygw, all started on loopback by the test.
package functions_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	discoveryprogram "github.com/lake-catalog/lake/functions/discovery/program"
	registerprogram "github.com/lake-catalog/lake/functions/register/program"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

const key = "snapshots/catalog.lakesnap"

// TestMain shares one dynalite and one versitygw among the tests (each test
// uses its own table and bucket), and lets the test binary run as each
// program: testenv.Binary gives the bootstrap the emulator starts, so the
// code under test is the real program, compiled once with the tests.
func TestMain(m *testing.M) {
	program := func(main func(context.Context, []string, func(string) string, io.Writer, io.Writer) int) func() int {
		return func() int { return main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr) }
	}
	testenv.Main(m, testenv.Mains{
		"register":  program(registerprogram.Main),
		"refresh":   program(refresh.LambdaMain),
		"discovery": program(discoveryprogram.Main),
	})
}

// stack is a test's own table and bucket on the shared servers.
type stack struct {
	ddb           *testenv.DynamoDB
	s3            *testenv.S3
	table, bucket string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{ddb: testenv.SharedDynamoDB(t), s3: testenv.SharedS3(t)}
	s.table = s.ddb.NewTable(t)
	s.bucket = s.s3.NewBucket(t)
	return s
}

// env is the Lambda environment for this stack; ddb and s3 endpoints may be
// overridden (to put a fault proxy in between).
func (s *stack) env(ddbEndpoint, s3Endpoint string, extra ...string) []string {
	if ddbEndpoint == "" {
		ddbEndpoint = s.ddb.Endpoint
	}
	if s3Endpoint == "" {
		s3Endpoint = s.s3.Endpoint
	}
	return append([]string{
		"LAKE_TABLE=" + s.table, "LAKE_BUCKET=" + s.bucket, "LAKE_SNAPSHOT_KEY=" + key,
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddbEndpoint, "AWS_ENDPOINT_URL_S3=" + s3Endpoint, "LAKE_S3_PATH_STYLE=true",
		"AWS_ACCESS_KEY_ID=" + s.s3.Access, "AWS_SECRET_ACCESS_KEY=" + s.s3.Secret,
	}, extra...)
}

func (s *stack) register(t *testing.T) *testenv.Lambda {
	return testenv.StartLambda(t, testenv.Binary(t, "register"), s.env("", "")...)
}

func (s *stack) refresher(t *testing.T, extra ...string) *testenv.Lambda {
	return testenv.StartLambda(t, testenv.Binary(t, "refresh"), s.env("", "", extra...)...)
}

// publishedBlob is a published blob's header figures and its tables by
// tenant.
type publishedBlob struct {
	Generation uint64
	Counts     catalog.Counts
	tables     map[string][]snapshot.Table
}

// Tenant returns a tenant's tables in order.
func (b publishedBlob) Tenant(tenant string) []snapshot.Table { return b.tables[tenant] }

// blob reads and decodes the published blob, with its ETag.
func (s *stack) blob(t *testing.T) (publishedBlob, string) {
	t.Helper()
	out, err := s.s3.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get blob: %v", err)
	}
	defer out.Body.Close()
	buf, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(buf, snapshot.ReaderOptions{Fetch: func(ctx context.Context, e snapshot.Entry) ([]byte, error) {
		return s.segment(t, e), nil
	}})
	if err != nil {
		t.Fatalf("open blob: %v", err)
	}
	snap := publishedBlob{Generation: r.Header().Generation, Counts: r.Header().Counts, tables: map[string][]snapshot.Table{}}
	for _, e := range r.Entries() {
		seg, err := r.Tenant(context.Background(), e.Tenant)
		if err != nil {
			t.Fatalf("decode blob: %v", err)
		}
		for i := range seg.NumTables() {
			snap.tables[e.Tenant] = append(snap.tables[e.Tenant], seg.Table(i))
		}
		seg.Release()
	}
	return snap, aws.ToString(out.ETag)
}

// segmentKey is the object key of a segment the published manifest names.
func segmentKey(e snapshot.Entry) string {
	return key + blobstore.SegmentsSuffix + hex.EncodeToString(e.Address[:])
}

// segment reads a segment object the published manifest names.
func (s *stack) segment(t *testing.T, e snapshot.Entry) []byte {
	t.Helper()
	out, err := s.s3.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(segmentKey(e))})
	if err != nil {
		t.Fatalf("get the segment of %s: %v", e.Tenant, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// apiEvent is an API Gateway HTTP API event from the acme producer role.
func apiEvent(method, path string, body any) events.APIGatewayV2HTTPRequest {
	return testenv.APIGatewayEvent(method, path, body, "arn:aws:iam::123456789012:role/acme-producer")
}

func invokeAPI(t *testing.T, fn *testenv.Lambda, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	out, err := fn.Invoke(context.Background(), ev)
	if err != nil {
		t.Fatalf("invoke register: %v", err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("register response %s: %v", out, err)
	}
	return resp
}

func registerTable(t *testing.T, fn *testenv.Lambda, tenant, name string, schema any) {
	t.Helper()
	resp := invokeAPI(t, fn, apiEvent("POST", "/v1/tenants/"+tenant+"/namespaces/sales/tables",
		map[string]any{"name": name, "location": "s3://lake/" + tenant + "/" + name + "/", "schema": schema}))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register %s/%s: %d %s", tenant, name, resp.StatusCode, resp.Body)
	}
}

func ipcB64(t *testing.T, i int) string {
	t.Helper()
	b, err := catalog.EncodeSchema(catalogtest.WideSchema(i, 6))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// invokeRefresh invokes the refresh function with a scheduled event.
func invokeRefresh(t testing.TB, fn *testenv.Lambda) (refresh.Result, error) {
	t.Helper()
	return invokeWith(t, fn, testenv.ScheduledEvent())
}

// Register through an API Gateway event, refresh through a scheduled event,
// read the blob from S3: the table is there with its exact schema.
func TestRegisterRefreshPublish(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg, ref := s.register(t), s.refresher(t)
	rich := catalogtest.RichSchema()
	richIPC, _ := catalog.EncodeSchema(rich)
	registerTable(t, reg, "acme", "orders", base64.StdEncoding.EncodeToString(richIPC))

	// The bad-input path answers 4xx through the adapter too.
	bad := invokeAPI(t, reg, apiEvent("POST", "/v1/tenants/acme/namespaces/sales/tables", map[string]any{"name": "x/y"}))
	if bad.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad name through API Gateway: %d %s", bad.StatusCode, bad.Body)
	}
	got := invokeAPI(t, reg, apiEvent("GET", "/v1/tenants/acme/namespaces/sales/tables/orders", nil))
	if got.StatusCode != http.StatusOK {
		t.Fatalf("get: %d %s", got.StatusCode, got.Body)
	}

	res, err := invokeRefresh(t, ref)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if res.Outcome != refresh.Published || res.Generation != 1 || res.Counts.Tables != 1 {
		t.Fatalf("refresh result = %+v", res)
	}
	snap, _ := s.blob(t)
	var tbl *snapshot.Table
	for i, t := range snap.Tenant("acme") {
		if t.Namespace == "sales" && t.Name == "orders" {
			tbl = &snap.Tenant("acme")[i]
		}
	}
	if tbl == nil {
		t.Fatal("registered table missing from the blob")
	}
	schema, err := catalog.DecodeSchema(tbl.SchemaIPC)
	if err != nil || !catalog.SchemaEqual(schema, rich) {
		t.Fatalf("schema in the blob = %v, %v; want the registered one", schema, err)
	}
	if !strings.Contains(reg.Process.Output(), "arn:aws:iam::123456789012:role/acme-producer") {
		t.Fatalf("the register log does not name the caller:\n%s", reg.Process.Output())
	}
	if !strings.Contains(ref.Process.Output(), `"CloudWatchMetrics"`) || !strings.Contains(ref.Process.Output(), `"msg":"refresh"`) {
		t.Fatalf("the refresh log lacks its structured line or EMF metrics:\n%s", ref.Process.Output())
	}
}

// S3 PUT failing: the previous blob is untouched and the function fails.
func TestRefreshS3PutFailureKeepsPreviousBlob(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg := s.register(t)
	registerTable(t, reg, "acme", "t1", ipcB64(t, 1))
	if _, err := invokeRefresh(t, s.refresher(t)); err != nil {
		t.Fatal(err)
	}
	before, etag := s.blob(t)

	registerTable(t, reg, "acme", "t2", ipcB64(t, 2))
	proxy := testenv.StartFaultProxy(t, s.s3.Endpoint, func(op string, n int) *testenv.Fault {
		if op == "PUT" {
			return &testenv.S3InternalError
		}
		return nil
	})
	failing := testenv.StartLambda(t, testenv.Binary(t, "refresh"), s.env("", proxy.URL)...)
	_, err := invokeRefresh(t, failing)
	var fe *testenv.FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("refresh with S3 PUT failing: %v, want a function error", err)
	}
	after, etag2 := s.blob(t)
	if etag2 != etag || after.Generation != before.Generation || after.Counts.Tables != 1 {
		t.Fatalf("blob changed after a failed refresh: generation %d → %d, tables %d", before.Generation, after.Generation, after.Counts.Tables)
	}
	if proxy.Calls("PUT") < 1 {
		t.Fatal("the refresh never tried to PUT")
	}
}

// DynamoDB failing on the second scan page publishes nothing; throttling
// alone is retried and the refresh publishes.
func TestRefreshScanFaults(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	reg := s.register(t)
	for i := range 5 {
		registerTable(t, reg, "acme", fmt.Sprintf("t%d", i), ipcB64(t, i))
	}
	pages := []string{"LAKE_SCAN_PAGE_LIMIT=2", "LAKE_DYNAMO_MAX_ATTEMPTS=3"}

	failing := testenv.StartFaultProxy(t, s.ddb.Endpoint, func(op string, n int) *testenv.Fault {
		if op == "Scan" && n >= 2 {
			return &testenv.InternalError
		}
		return nil
	})
	fn := testenv.StartLambda(t, testenv.Binary(t, "refresh"), s.env(failing.URL, "", pages...)...)
	if _, err := invokeRefresh(t, fn); err == nil {
		t.Fatal("refresh with a failing second page succeeded")
	}
	if _, err := s.s3.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}); err == nil {
		t.Fatal("a blob was published from a failed scan")
	}

	throttling := testenv.StartFaultProxy(t, s.ddb.Endpoint, func(op string, n int) *testenv.Fault {
		if op == "Scan" && (n == 2 || n == 4) {
			return &testenv.Throttled
		}
		return nil
	})
	fn = testenv.StartLambda(t, testenv.Binary(t, "refresh"), s.env(throttling.URL, "", pages...)...)
	res, err := invokeRefresh(t, fn)
	if err != nil {
		t.Fatalf("refresh under throttling: %v", err)
	}
	if res.Outcome != refresh.Published || res.Counts.Tables != 5 || res.Scan.Pages < 3 {
		t.Fatalf("refresh under throttling = %+v, want 5 tables published over ≥ 3 pages", res)
	}
	// The run's scan and, after it, the sweep of orphaned history (a scan
	// of its own): every Scan call is one of their pages or a retry.
	if calls := throttling.Calls("Scan"); calls != res.Scan.Pages+res.HistorySweepPages+2 {
		t.Fatalf("%d Scan calls for %d pages and %d of the history sweep, want 2 retries", calls, res.Scan.Pages, res.HistorySweepPages)
	}
}

// Two refreshes racing: both read the current blob before either writes (a
// proxy holds each PUT until both have arrived), exactly one publishes, the
// other is superseded, the blob holds the newer generation, and a run with
// nothing changed publishes nothing.
func TestRefreshRace(t *testing.T) {
	t.Parallel()
	s, a, b := racingRefreshers(t)

	var wg sync.WaitGroup
	results := make([]refresh.Result, 2)
	errs := make([]error, 2)
	for i, fn := range []*testenv.Lambda{a, b} {
		wg.Go(func() { results[i], errs[i] = invokeRefresh(t, fn) })
	}
	wg.Wait()
	outcomes := map[refresh.Outcome]int{}
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("racing refresh %d: %v", i, errs[i])
		}
		outcomes[results[i].Outcome]++
	}
	if outcomes[refresh.Published] != 1 || outcomes[refresh.Superseded] != 1 {
		t.Fatalf("racing outcomes %v, want one published and one superseded", outcomes)
	}
	snap, etag := s.blob(t)
	if snap.Generation != 2 || snap.Counts.Tables != 2 {
		t.Fatalf("blob after the race: generation %d with %d tables, want 2 and 2", snap.Generation, snap.Counts.Tables)
	}

	res, err := invokeRefresh(t, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, etag2 := s.blob(t); res.Outcome != refresh.Unchanged || res.Generation != 2 || etag2 != etag {
		t.Fatalf("refresh with no change = %+v (etag %s → %s), want unchanged", res, etag, etag2)
	}
}

// racingRefreshers is a stack with table "first" published and "second"
// registered since, and two refresh functions whose PUTs a barrier holds
// until both have arrived.
func racingRefreshers(t *testing.T) (s *stack, a, b *testenv.Lambda) {
	t.Helper()
	s = newStack(t)
	reg := s.register(t)
	registerTable(t, reg, "acme", "first", ipcB64(t, 1))
	if _, err := invokeRefresh(t, s.refresher(t)); err != nil {
		t.Fatal(err)
	}
	registerTable(t, reg, "acme", "second", ipcB64(t, 2))
	barrier := putBarrier(t, s.s3.Endpoint)
	bootstrap := testenv.Binary(t, "refresh")
	return s, testenv.StartLambda(t, bootstrap, s.env("", barrier.URL)...), testenv.StartLambda(t, bootstrap, s.env("", barrier.URL)...)
}

// putBarrier is an S3 proxy that holds the first two PUTs until both have
// arrived, so two refreshes race for the same conditional write.
func putBarrier(t *testing.T, endpoint string) *testenv.FaultProxy {
	var arrived sync.WaitGroup
	arrived.Add(2)
	return testenv.StartFaultProxy(t, endpoint, func(op string, n int) *testenv.Fault {
		if op == "PUT" && n <= 2 {
			arrived.Done()
			waitTimeout(&arrived, 30*time.Second)
		}
		return nil
	})
}

// waitTimeout waits for wg, or gives up after d so a broken race cannot
// hang the suite.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
