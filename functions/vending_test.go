package functions_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Objects of the tenants' data bucket on the IAM-enforcing gateway.
const (
	dataBucket   = "tenant-data"
	acmeOrders   = "acme/sales/orders/part-0.parquet"
	acmeReturns  = "acme/sales/returns/x"
	globexOrders = "globex/sales/orders/part-0.parquet"
)

// vendingWorld is a stack whose register Lambda and discovery process vend
// through an STS stand-in onto a versitygw gateway that enforces each
// session policy, with vend events going to a recording EventBridge.
type vendingWorld struct {
	*stack
	gw  *testenv.IAMS3
	sts *testenv.STS
	bus *testenv.EventBridge
	// objects are the data bucket's objects by key.
	objects map[string][]byte
}

// vendingEnv is the environment the CDK stack gives both programs when
// deployed with data buckets, pointed at the stand-ins.
func (w *vendingWorld) vendingEnv() []string {
	return []string{
		"LAKE_VENDING_ROLE_ARN=" + w.sts.RoleARN, "LAKE_VENDING_OWN_BUCKETS=" + w.bucket, "LAKE_VENDING_EVENT_BUS=lake-changes",
		"AWS_ENDPOINT_URL_STS=" + w.sts.URL, "AWS_ENDPOINT_URL_EVENTBRIDGE=" + w.bus.URL,
	}
}

// apiError decodes a registration API error answer.
func apiError(t *testing.T, resp events.APIGatewayV2HTTPResponse) wire.ErrorBody {
	t.Helper()
	var e wire.ErrorResponse
	if err := json.Unmarshal([]byte(resp.Body), &e); err != nil {
		t.Fatalf("error body %q: %v", resp.Body, err)
	}
	return e.Error
}

// apiCredentials asks the register Lambda for tenant's sales.table
// credentials.
func apiCredentials(t *testing.T, reg *testenv.Lambda, tenant, table string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return invokeAPI(t, reg, apiEvent("GET", "/v1/tenants/"+tenant+"/namespaces/sales/tables/"+table+"/credentials", nil))
}

// flightCredentials calls lake.credentials as tenant for sales.table.
func flightCredentials(t *testing.T, d *discoveryProc, tenant, table string) (wire.Credentials, error) {
	t.Helper()
	body, _ := json.Marshal(wire.CredentialsRequest{Namespace: "sales", Table: table})
	stream, err := d.client.Client.DoAction(tenantCtx(t, tenant), &flight.Action{Type: wire.CredentialsActionType, Body: body})
	if err != nil {
		return wire.Credentials{}, err
	}
	r, err := stream.Recv()
	if err != nil {
		return wire.Credentials{}, err
	}
	var c wire.Credentials
	if err := json.Unmarshal(r.Body, &c); err != nil {
		t.Fatalf("lake.credentials result %q: %v", r.Body, err)
	}
	return c, nil
}

// readsOnlyAcmeOrders checks, with c's keys on the gateway, that acme's
// orders object reads back its bytes and every other object is versitygw's
// AccessDenied, and returns how many reads were denied.
func (w *vendingWorld) readsOnlyAcmeOrders(t *testing.T, via string, c wire.Credentials) int {
	t.Helper()
	client := w.gw.ClientFor(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	ctx := context.Background()
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(dataBucket), Key: aws.String(acmeOrders)})
	if err != nil {
		t.Fatalf("%s: GetObject %s with the vended keys: %v", via, acmeOrders, err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || string(got) != string(w.objects[acmeOrders]) {
		t.Fatalf("%s: GetObject %s: got %q, %v; want %q", via, acmeOrders, got, err, w.objects[acmeOrders])
	}
	denied := 0
	for _, k := range []string{acmeReturns, globexOrders} {
		_, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(dataBucket), Key: aws.String(k)})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" {
			t.Fatalf("%s: GetObject %s outside the table: got %v, want AccessDenied", via, k, err)
		}
		denied++
	}
	return denied
}

// The register Lambda and the discovery binary vend table-scoped read
// credentials (issue 40) through the real programs: an STS stand-in mints
// a versitygw IAM user carrying the session policy lake sent, and the
// gateway enforces it on every read. Nothing is vended before an operator
// allows the tenant a prefix; then acme's table reads its own files and no
// others, a table registered under another tenant's prefix is refused,
// the allowed prefixes reach discovery through refresh's snapshot, and
// every vend is a "Credentials Vended" event on the bus.
func TestVendingThroughThePrograms(t *testing.T) {
	t.Parallel()
	gw := testenv.StartIAMS3(t)
	w := &vendingWorld{stack: newStack(t), gw: gw, sts: testenv.StartSTS(t, gw), bus: testenv.StartEventBridge(t),
		objects: map[string][]byte{acmeOrders: []byte("PAR1 acme orders"), acmeReturns: []byte("acme returns"), globexOrders: []byte("PAR1 globex orders")}}
	gw.CreateBucket(t, dataBucket)
	for k, b := range w.objects {
		gw.PutObject(t, dataBucket, k, b)
	}
	reg := testenv.StartLambda(t, testenv.Binary(t, "register"), w.env("", "", w.vendingEnv()...)...)

	for i, tbl := range []struct{ tenant, name, location string }{
		{"acme", "orders", "s3://tenant-data/acme/sales/orders/"},
		{"acme", "stolen", "s3://tenant-data/globex/sales/orders/"},
		{"globex", "orders", "s3://tenant-data/globex/sales/orders/"},
	} {
		resp := invokeAPI(t, reg, apiEvent("POST", "/v1/tenants/"+tbl.tenant+"/namespaces/sales/tables",
			map[string]any{"name": tbl.name, "location": tbl.location, "schema": ipcB64(t, i)}))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("register %s/sales/%s: got %d %s, want 201", tbl.tenant, tbl.name, resp.StatusCode, resp.Body)
		}
	}

	// No prefix allowed yet: nothing is vended.
	resp := apiCredentials(t, reg, "acme", "orders")
	if e := apiError(t, resp); resp.StatusCode != http.StatusForbidden || e.Code != wire.CodeLocationNotAllowed || !strings.Contains(e.Message, "not under a prefix allowed") {
		t.Fatalf("credentials before any allowed prefix: got %d %s, want 403 %s saying not under a prefix allowed", resp.StatusCode, resp.Body, wire.CodeLocationNotAllowed)
	}

	allow := invokeAPI(t, reg, apiEvent("POST", "/v1/admin/tenants/acme/allowed-prefixes", wire.AllowPrefixRequest{Prefix: "s3://tenant-data/acme/"}))
	var settings wire.TenantSettings
	if err := json.Unmarshal([]byte(allow.Body), &settings); allow.StatusCode != http.StatusOK || err != nil || !slices.Equal(settings.AllowedPrefixes, []string{"s3://tenant-data/acme/"}) {
		t.Fatalf("allow acme s3://tenant-data/acme/: got %d %s, want 200 listing the prefix", allow.StatusCode, allow.Body)
	}

	denied := 0
	resp = apiCredentials(t, reg, "acme", "orders")
	var creds wire.Credentials
	if err := json.Unmarshal([]byte(resp.Body), &creds); resp.StatusCode != http.StatusOK || err != nil ||
		creds.Access != wire.AccessVended || creds.Location != "s3://tenant-data/acme/sales/orders/" || creds.AccessKeyID == "" {
		t.Fatalf("credentials for acme orders: got %d %s, want 200 vended for s3://tenant-data/acme/sales/orders/", resp.StatusCode, resp.Body)
	}
	denied += w.readsOnlyAcmeOrders(t, "register API", creds)
	resp = apiCredentials(t, reg, "acme", "stolen")
	if e := apiError(t, resp); resp.StatusCode != http.StatusForbidden || e.Code != wire.CodeLocationNotAllowed {
		t.Fatalf("credentials for acme's table under globex's prefix: got %d %s, want 403 %s", resp.StatusCode, resp.Body, wire.CodeLocationNotAllowed)
	}

	// The settings reach discovery through the snapshot refresh publishes.
	if res, err := invokeRefresh(t, w.refresher(t)); err != nil || res.Outcome != refresh.Published {
		t.Fatalf("refresh: got %+v, %v; want published", res, err)
	}
	d := startDiscovery(t, "s3://"+w.bucket+"/"+key, append([]string{"AWS_ENDPOINT_URL_S3=" + w.s3.Endpoint, "LAKE_S3_PATH_STYLE=true",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=" + w.s3.Access, "AWS_SECRET_ACCESS_KEY=" + w.s3.Secret}, w.vendingEnv()...)...)
	waitFor(t, 30*time.Second, "discovery serving the snapshot", func() bool { return d.serving(t) == healthpb.HealthCheckResponse_SERVING })

	fc, err := flightCredentials(t, d, "acme", "orders")
	if err != nil || fc.Access != wire.AccessVended || fc.Location != "s3://tenant-data/acme/sales/orders/" || fc.AccessKeyID == "" {
		t.Fatalf("lake.credentials as acme for sales.orders: got %+v, %v; want vended for s3://tenant-data/acme/sales/orders/", fc, err)
	}
	denied += w.readsOnlyAcmeOrders(t, "lake.credentials", fc)
	for _, c := range []struct{ tenant, table string }{{"globex", "orders"}, {"acme", "stolen"}} {
		if _, err := flightCredentials(t, d, c.tenant, c.table); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "not under a prefix allowed") {
			t.Fatalf("lake.credentials as %s for sales.%s: got %v, want PERMISSION_DENIED not under a prefix allowed", c.tenant, c.table, err)
		}
	}
	t.Logf("%d reads outside the table denied by versitygw (through the register API and lake.credentials)", denied)

	// Every vend is an event: the register Lambda's put before it answered,
	// discovery's from its queue a moment later.
	vendEvents := func() (fromAPI, fromFlight int) {
		for _, e := range w.bus.Entries() {
			var det vending.EventDetail
			if e.DetailType != vending.EventDetailType || e.Source != vending.EventSource || e.EventBusName != "lake-changes" ||
				json.Unmarshal([]byte(e.Detail), &det) != nil || det.Tenant != "acme" || det.Table != "orders" || det.Location != "s3://tenant-data/acme/sales/orders/" {
				continue
			}
			if strings.HasPrefix(det.Who, "flight:acme") {
				fromFlight++
			} else {
				fromAPI++
			}
		}
		return fromAPI, fromFlight
	}
	if fromAPI, _ := vendEvents(); fromAPI < 1 {
		t.Fatalf("no %q event from the register Lambda on the bus: %+v", vending.EventDetailType, w.bus.Entries())
	}
	waitFor(t, 20*time.Second, "discovery's vend event on the bus", func() bool {
		_, fromFlight := vendEvents()
		return fromFlight >= 1
	})

	// Every session policy lake sent names acme's orders prefix alone.
	reqs := w.sts.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d AssumeRole requests, want one from each program", len(reqs))
	}
	for i, r := range reqs {
		if r.Code != "" {
			t.Errorf("AssumeRole %d refused: %s", i, r.Code)
		}
		if bad := outsideTable(t, r.Policy); len(bad) > 0 {
			t.Errorf("AssumeRole %d's session policy names %q outside tenant-data/acme/sales/orders/:\n%s", i, bad, r.Policy)
		}
	}
}

// stringOrList is an IAM policy value: one string, or a list of them.
type stringOrList []string

func (l *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = []string{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// outsideTable returns what a session policy names beyond acme's orders
// table: each resource other than its objects and its bucket, and each
// s3:prefix a listing may take outside the table's prefix.
func outsideTable(t *testing.T, policy string) []string {
	t.Helper()
	var doc struct {
		Statement []struct {
			Resource  stringOrList
			Condition map[string]map[string]stringOrList
		}
	}
	if err := json.Unmarshal([]byte(policy), &doc); err != nil || len(doc.Statement) == 0 {
		t.Fatalf("session policy %q: %v", policy, err)
	}
	var bad []string
	for _, s := range doc.Statement {
		for _, r := range s.Resource {
			if r != "arn:aws:s3:::tenant-data/acme/sales/orders/*" && r != "arn:aws:s3:::tenant-data" {
				bad = append(bad, r)
			}
		}
		for _, c := range s.Condition {
			for _, p := range c["s3:prefix"] {
				if !strings.HasPrefix(p, "acme/sales/orders/") {
					bad = append(bad, p)
				}
			}
		}
	}
	return bad
}
