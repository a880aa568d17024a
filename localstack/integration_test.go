//go:build integration

// The end-to-end suite: register through the register function, refresh
// through a scheduled event, the discovery process loading the blob from S3,
// and a Flight SQL client. It reads only the SDK's standard endpoint
// variables (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3):
// set them (make localstack-test does, for LocalStack) and it uses those
// services; leave them unset and it starts dynalite and versitygw on
// loopback. The functions always run as the real bootstrap binaries under
// the Lambda runtime interface emulator.
package localstack_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	discoveryprogram "github.com/lake-catalog/lake/functions/discovery/program"
	registerprogram "github.com/lake-catalog/lake/functions/register/program"
	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

const (
	snapshotKey = "snapshots/catalog.lakesnap"
	secret      = "integration-secret-0123456789abcdefghij"
)

var seq atomic.Int64

// TestMain shares one dynalite and one versitygw among the tests when no
// endpoint variables are set (each test uses its own table and bucket), and
// lets the test binary run as each program (testenv.Binary): the bootstraps
// and the discovery server are the real programs, compiled once with the
// tests.
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

// cloud is one set of AWS-protocol services and a fresh table and bucket.
type cloud struct {
	ddbEndpoint, s3Endpoint string
	access, secretKey       string
	table, bucket           string
	ddb                     *dynamodb.Client
	s3                      *s3.Client
}

func endpoint(specific string) string {
	if v := os.Getenv(specific); v != "" {
		return v
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

func newCloud(t *testing.T) *cloud {
	t.Helper()
	c := &cloud{ddbEndpoint: endpoint("AWS_ENDPOINT_URL_DYNAMODB"), s3Endpoint: endpoint("AWS_ENDPOINT_URL_S3"), access: "test", secretKey: "test"}
	if v := os.Getenv("AWS_ACCESS_KEY_ID"); v != "" {
		c.access, c.secretKey = v, os.Getenv("AWS_SECRET_ACCESS_KEY")
	}
	if c.ddbEndpoint == "" {
		c.ddbEndpoint = testenv.SharedDynamoDB(t).Endpoint
	}
	if c.s3Endpoint == "" {
		srv := testenv.SharedS3(t)
		c.s3Endpoint, c.access, c.secretKey = srv.Endpoint, srv.Access, srv.Secret
	}
	t.Logf("DynamoDB at %s, S3 at %s", c.ddbEndpoint, c.s3Endpoint)
	creds := credentials.NewStaticCredentialsProvider(c.access, c.secretKey, "")
	c.ddb = dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(c.ddbEndpoint), Credentials: creds}, dynamo.RetryOptions(dynamo.RetryPolicy{}))
	c.s3 = s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(c.s3Endpoint), Credentials: creds, UsePathStyle: true})
	n := seq.Add(1)
	c.table = fmt.Sprintf("lake-it-%d-%d", os.Getpid(), n)
	c.bucket = fmt.Sprintf("lake-it-%d-%d", os.Getpid(), n)
	ctx := context.Background()
	if err := dynamo.CreateTable(ctx, c.ddb, c.table); err != nil {
		t.Fatal(err)
	}
	if _, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(c.bucket)}); err != nil {
		t.Fatal(err)
	}
	return c
}

// env is the functions' environment; s3Endpoint may name a proxy.
func (c *cloud) env(s3Endpoint string, extra ...string) []string {
	if s3Endpoint == "" {
		s3Endpoint = c.s3Endpoint
	}
	return append([]string{
		"LAKE_TABLE=" + c.table, "LAKE_BUCKET=" + c.bucket, "LAKE_SNAPSHOT_KEY=" + snapshotKey,
		"AWS_ENDPOINT_URL_DYNAMODB=" + c.ddbEndpoint, "AWS_ENDPOINT_URL_S3=" + s3Endpoint, "LAKE_S3_PATH_STYLE=true",
		"AWS_ACCESS_KEY_ID=" + c.access, "AWS_SECRET_ACCESS_KEY=" + c.secretKey, "AWS_REGION=us-east-1",
	}, extra...)
}

func (c *cloud) register(t *testing.T) *testenv.Lambda {
	return testenv.StartLambda(t, testenv.Binary(t, "register"), c.env("")...)
}

func (c *cloud) refresher(t *testing.T, extra ...string) *testenv.Lambda {
	return testenv.StartLambda(t, testenv.Binary(t, "refresh"), c.env("", extra...)...)
}

func registerTable(t *testing.T, fn *testenv.Lambda, tenant, ns, name string, ipc []byte) {
	t.Helper()
	ev := testenv.APIGatewayEvent("POST", "/v1/tenants/"+tenant+"/namespaces/"+ns+"/tables",
		map[string]any{"name": name, "location": "s3://lake/" + name + "/", "schema": base64.StdEncoding.EncodeToString(ipc)},
		"arn:aws:iam::123456789012:role/"+tenant+"-producer")
	out, err := fn.Invoke(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("register %s/%s/%s: %d %s (%v)", tenant, ns, name, resp.StatusCode, resp.Body, err)
	}
}

func runRefresh(t *testing.T, fn *testenv.Lambda) refresh.Result {
	t.Helper()
	out, err := fn.Invoke(context.Background(), testenv.ScheduledEvent())
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	var res refresh.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// discovery is the discovery binary reading the blob from S3.
type discovery struct {
	proc   *testenv.Process
	client *flightsql.Client
	http   string
}

func (c *cloud) discovery(t *testing.T, s3Endpoint string) *discovery {
	t.Helper()
	bin := testenv.Binary(t, "discovery")
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	d := &discovery{http: "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))}
	d.proc = testenv.StartEnv(t, append(c.env(s3Endpoint), "LAKE_JWT_HS256_SECRET="+secret), bin,
		"-listen", addr, "-http-listen", d.http, "-admin-listen", "-", "-snapshot", "s3://"+c.bucket+"/"+snapshotKey, "-poll-interval", "200ms")
	d.proc.WaitTCP(t, addr, 30*time.Second)
	var err error
	if d.client, err = flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.client.Close() })
	return d
}

func as(t *testing.T, tenant string) context.Context {
	tok, err := auth.IssueHS256([]byte(secret), auth.TokenClaims{Tenant: tenant, TTL: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

func (d *discovery) tables(ctx context.Context, opts *flightsql.GetTablesOpts) ([]flightclient.TableRow, error) {
	return flightclient.GetTables(ctx, d.client, opts)
}

// waitRows polls until the tenant sees want tables (a bound against hangs).
func (d *discovery) waitRows(t *testing.T, tenant string, want int) []flightclient.TableRow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows, err := d.tables(as(t, tenant), &flightsql.GetTablesOpts{})
		if err == nil && len(rows) == want {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant %s: %d tables (%v), want %d\n%s", tenant, len(rows), err, want, d.proc.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func strp(s string) *string { return &s }

// The whole path, with the exact schema, and tenants kept apart end to end.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	reg, ref := c.register(t), c.refresher(t)
	rich := catalogtest.RichSchema()
	richIPC, _ := catalog.EncodeSchema(rich)
	otherIPC, _ := catalog.EncodeSchema(catalogtest.WideSchema(1, 8))
	registerTable(t, reg, "acme", "sales", "orders", richIPC)
	registerTable(t, reg, "globex", "sales", "orders", otherIPC)
	registerTable(t, reg, "globex", "secret", "payroll", otherIPC)
	if res := runRefresh(t, ref); res.Outcome != refresh.Published || res.Counts.Tables != 3 {
		t.Fatalf("refresh = %+v", res)
	}
	d := c.discovery(t, "")
	d.waitRows(t, "acme", 1)

	rows, err := d.tables(as(t, "acme"), &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil || len(rows) != 1 || rows[0].Catalog != "acme" || rows[0].Name != "orders" {
		t.Fatalf("acme sees %+v, %v", rows, err)
	}
	got, err := flight.DeserializeSchema(rows[0].Schema, nil)
	if err != nil || !catalog.SchemaEqual(got, rich) {
		t.Fatalf("schema through the whole path = %v, %v", got, err)
	}
	for _, opts := range []*flightsql.GetTablesOpts{
		{Catalog: strp("globex"), IncludeSchema: true},
		{DbSchemaFilterPattern: strp("secret")},
		{TableNameFilterPattern: strp("payroll")},
		{Catalog: strp("%")},
	} {
		rows, err := d.tables(as(t, "acme"), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Catalog != "acme" {
				t.Fatalf("acme saw %+v with %v", r, opts)
			}
		}
	}
	if rows := d.waitRows(t, "globex", 2); rows[0].Catalog != "globex" {
		t.Fatalf("globex sees %+v", rows)
	}
	if rows := d.waitRows(t, "initech", 0); len(rows) != 0 {
		t.Fatalf("a tenant with no tables sees %+v", rows)
	}
}

// A registration written before schemas were stored (the historical JSON
// shape, straight into DynamoDB) is listed without schemas and refused with
// them.
func TestLegacyRegistration(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	legacy := `{"location":"s3://acme-lake/sales/orders/","table_type":"TABLE","created_at":"2024-03-01T12:00:00Z","version":3,"format":"parquet"}`
	_, err := c.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "tbl/acme/sales/orders"}, "val": &types.AttributeValueMemberB{Value: []byte(legacy)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res := runRefresh(t, c.refresher(t)); res.Counts.SchemaUnavailable != 1 {
		t.Fatalf("refresh = %+v, want one table without a schema", res)
	}
	d := c.discovery(t, "")
	d.waitRows(t, "acme", 1)
	_, err = d.tables(as(t, "acme"), &flightsql.GetTablesOpts{IncludeSchema: true})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("include_schema over a legacy table: %v, want FAILED_PRECONDITION", err)
	}
}

// The refresh's scan pages through the table, strongly consistent, and
// sees every registration.
func TestPaginatedScan(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	reg := c.register(t)
	for i := range 7 {
		ipc, _ := catalog.EncodeSchema(catalogtest.WideSchema(i, 5))
		registerTable(t, reg, "acme", "ns", fmt.Sprintf("t%d", i), ipc)
	}
	res := runRefresh(t, c.refresher(t, "LAKE_SCAN_PAGE_LIMIT=2"))
	if res.Scan.Pages < 3 || res.Counts.Tables != 7 {
		t.Fatalf("refresh read %d pages and %d tables, want ≥ 3 pages and 7 tables", res.Scan.Pages, res.Counts.Tables)
	}
	t.Logf("scan: %+v", res.Scan)
}

// Discovery keeps serving while S3 is unreachable and picks up the next
// blob when it is back.
func TestS3Outage(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	reg, ref := c.register(t), c.refresher(t)
	ipc, _ := catalog.EncodeSchema(catalogtest.WideSchema(1, 4))
	registerTable(t, reg, "acme", "sales", "orders", ipc)
	runRefresh(t, ref)

	var down atomic.Bool
	proxy := testenv.StartFaultProxy(t, c.s3Endpoint, func(op string, n int) *testenv.Fault {
		if down.Load() {
			return &testenv.Fault{Status: 503, ContentType: "application/xml", Body: `<Error><Code>ServiceUnavailable</Code><Message>injected outage</Message></Error>`}
		}
		return nil
	})
	d := c.discovery(t, proxy.URL)
	d.waitRows(t, "acme", 1)

	down.Store(true)
	calls := proxy.Calls("GET")
	registerTable(t, reg, "acme", "sales", "returns", ipc)
	if res := runRefresh(t, ref); res.Outcome != refresh.Published {
		t.Fatalf("refresh = %+v", res)
	}
	deadline := time.Now().Add(30 * time.Second)
	for proxy.Calls("GET") < calls+3 {
		if time.Now().After(deadline) {
			t.Fatal("discovery stopped polling")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rows, err := d.tables(as(t, "acme"), &flightsql.GetTablesOpts{}); err != nil || len(rows) != 1 {
		t.Fatalf("during the outage: %v, %v; want the last snapshot (1 table)", rows, err)
	}
	down.Store(false)
	d.waitRows(t, "acme", 2)
}
