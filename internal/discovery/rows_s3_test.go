package discovery_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// A statement over a table's rows on S3 reads them with the table's vended
// credentials: an STS stand-in mints a versitygw IAM user carrying the
// session policy lake sent, and the gateway enforces it on every read.
// acme's table answers its rows and the session policy names its prefix
// alone; a table of acme's located under globex's prefix, and globex's own
// table before globex is allowed any prefix, are refused by the guard
// (PERMISSION_DENIED) before any credentials exist.
func TestRowsThroughVendedCredentials(t *testing.T) {
	t.Parallel()
	gw := testenv.StartIAMS3(t)
	st := testenv.StartSTS(t, gw)
	v, err := vending.New(vending.NewSTS(sts.New(sts.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(st.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIALAKEDEPUTY", "lake-deputy-secret", ""),
	})), vending.NewGuard([]string{"lake-snapshots"}), vending.Options{RoleARN: st.RoleARN})
	if err != nil {
		t.Fatal(err)
	}
	gw.CreateBucket(t, "tenant-data")
	dir := t.TempDir()
	for _, f := range []struct{ key, prefix string }{
		{"acme/sales/orders/part-0.parquet", "acme"},
		{"globex/sales/orders/part-0.parquet", "globex"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(f.key, "/", "_"))
		writeOrders(t, path, f.prefix, 1, 20, 10)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		gw.PutObject(t, "tenant-data", f.key, b)
	}
	e := newEnv(t, discovery.Options{Door: &vending.Door{Vendor: v, Region: "us-east-1"},
		Rows: discovery.RowsOptions{S3Config: aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(gw.Endpoint)}, S3PathStyle: true}})
	for _, r := range []struct{ tenant, name, loc string }{
		{"acme", "orders", "s3://tenant-data/acme/sales/orders/"},
		{"acme", "borrowed", "s3://tenant-data/globex/sales/orders/"},
		{"globex", "orders", "s3://tenant-data/globex/sales/orders/"},
	} {
		e.registerSpec(r.tenant, "sales", r.name, catalog.TableSpec{Location: r.loc, Schema: ordersSchema})
	}
	if _, err := e.cat.UpdateTenantSettings(context.Background(), "acme", "ops", func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = []string{"s3://tenant-data/acme/"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.publish()

	expectAnswer(t, func(s string) (string, error) { return statement(e, as(t, "acme"), s) },
		"SELECT count(*), min(note), max(id) FROM sales.orders", "count(*),min(note),max(id)|20,acme-1,20")
	reqs := st.Requests()
	if len(reqs) != 1 || reqs[0].Code != "" {
		t.Fatalf("AssumeRole requests %+v, want one that succeeded", reqs)
	}
	if !strings.Contains(reqs[0].Policy, "tenant-data/acme/sales/orders/") || strings.Contains(reqs[0].Policy, "globex") {
		t.Fatalf("session policy %s, want acme's orders prefix alone", reqs[0].Policy)
	}
	for _, c := range []struct{ tenant, sql string }{
		{"acme", "SELECT * FROM sales.borrowed LIMIT 1"},
		{"globex", "SELECT * FROM sales.orders LIMIT 1"},
	} {
		_, err := statement(e, as(t, c.tenant), c.sql)
		if codeOf(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "not under a prefix allowed") {
			t.Errorf("%s: %s = %v, want PERMISSION_DENIED naming the allowed prefixes", c.tenant, c.sql, err)
		}
	}
	if n := len(st.Requests()); n != 1 {
		t.Errorf("%d AssumeRole requests, want no more for refused tables", n)
	}
}
