package vending_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/internal/vending"
)

// The versitygw-enforced suite: credentials vended through a real
// sts.Client, an AssumeRole stand-in that turns the session policy into a
// versitygw IAM user's inline policy, and a versitygw gateway that evaluates
// that policy on every request. Every allow and deny below is versitygw's.

// enforced is one IAMS3, its STS stand-in and a Vendor assuming through it.
type enforced struct {
	gw     *testenv.IAMS3
	sts    *testenv.STS
	vendor *vending.Vendor
}

func startEnforced(t *testing.T) *enforced {
	t.Helper()
	gw := testenv.StartIAMS3(t)
	st := testenv.StartSTS(t, gw)
	client := sts.New(sts.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(st.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIALAKEDEPUTY", "lake-deputy-secret", ""),
	})
	v, err := vending.New(vending.NewSTS(client), vending.NewGuard([]string{"lake-snapshots", "lake-iceberg"}), vending.Options{RoleARN: st.RoleARN})
	if err != nil {
		t.Fatal(err)
	}
	return &enforced{gw: gw, sts: st, vendor: v}
}

// vend vends credentials for tenant's table at location, allowed under
// allowed, and returns an S3 client signing with them.
func (e *enforced) vend(t *testing.T, tenant, table, location, allowed string) (*s3.Client, vending.Vended) {
	t.Helper()
	return e.vendMeta(t, tenant, table, location, allowed, "")
}

// vendMeta is vend with the table's metadata prefix (Request.Metadata).
func (e *enforced) vendMeta(t *testing.T, tenant, table, location, allowed, metadata string) (*s3.Client, vending.Vended) {
	t.Helper()
	a, err := vending.ParseLocation(allowed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.vendor.Vend(context.Background(), vending.Request{
		Who: "alice", Tenant: tenant, Namespace: "sales", Table: table,
		Location: location, Allowed: []vending.Location{a}, Metadata: metadata,
	})
	if err != nil {
		t.Fatalf("vend %s: %v", location, err)
	}
	c := got.Credentials
	return e.gw.ClientFor(c.AccessKeyID, c.SecretAccessKey, c.SessionToken), got
}

func getObject(bucket, key string) func(context.Context, *s3.Client) error {
	return func(ctx context.Context, c *s3.Client) error {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, out.Body)
		out.Body.Close()
		return err
	}
}

func listObjects(bucket, prefix string) func(context.Context, *s3.Client) error {
	return func(ctx context.Context, c *s3.Client) error {
		_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
		return err
	}
}

func putObject(bucket, key string) func(context.Context, *s3.Client) error {
	return func(ctx context.Context, c *s3.Client) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("written")})
		return err
	}
}

func deleteObject(bucket, key string) func(context.Context, *s3.Client) error {
	return func(ctx context.Context, c *s3.Client) error {
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		return err
	}
}

func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func TestVersitygwEnforcesVendedCredentials(t *testing.T) {
	e := startEnforced(t)
	ctx := context.Background()
	root := e.gw.Client()
	e.gw.CreateBucket(t, "tenant-data")
	e.gw.CreateBucket(t, "other-data")
	objects := map[string]string{
		"tenant-data/acme/orders/part-0.parquet": "orders 0",
		"tenant-data/acme/orders/part-1.parquet": "orders 1",
		"tenant-data/acme/orders/delete-me":      "the table's own, not to be deleted",
		"tenant-data/acme/orders-archive/x":      "a sibling prefix",
		"tenant-data/acme/ordersx":               "a sibling key",
		"tenant-data/acme/customers/x":           "another table",
		"tenant-data/globex/orders/x":            "another tenant",
		"tenant-data/root.txt":                   "the bucket root",
		"other-data/acme/orders/x":               "the same prefix in another bucket",
	}
	for path, body := range objects {
		bucket, key, _ := strings.Cut(path, "/")
		e.gw.PutObject(t, bucket, key, []byte(body))
	}

	c, got := e.vend(t, "acme", "orders", "s3://tenant-data/acme/orders/", "s3://tenant-data/acme/")
	if got.Credentials.AccessKeyID == "" || got.Credentials.SecretAccessKey == "" {
		t.Fatalf("vended credentials %+v, want an access key and secret", got.Credentials)
	}
	reqs := e.sts.Requests()
	if len(reqs) != 1 || reqs[0].Code != "" {
		t.Fatalf("AssumeRole requests %+v, want one that succeeded", reqs)
	}
	loc, _ := vending.ParseLocation("s3://tenant-data/acme/orders/")
	policy, _ := vending.SessionPolicy(loc)
	if reqs[0].Policy != string(policy) {
		t.Fatalf("the stand-in received policy %s, want SessionPolicy's %s", reqs[0].Policy, policy)
	}
	up, err := e.gw.IAMClient().GetUserPolicy(ctx, &iam.GetUserPolicyInput{UserName: aws.String(reqs[0].UserName), PolicyName: aws.String("session")})
	if err != nil {
		t.Fatalf("versitygw GetUserPolicy of the session's user: %v", err)
	}
	if doc, err := url.QueryUnescape(aws.ToString(up.PolicyDocument)); err != nil || doc != string(policy) {
		t.Fatalf("versitygw keeps policy %s (%v), want the session policy %s", doc, err, policy)
	}
	t.Logf("session user %s, inline policy of %d characters, PackedPolicySize %d%% (modelled)", reqs[0].UserName, len(policy), got.Credentials.PackedPolicySize)

	t.Run("reads the table", func(t *testing.T) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tenant-data"), Key: aws.String("acme/orders/part-1.parquet")})
		if err != nil {
			t.Fatalf("GetObject under the table: %v", err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || string(b) != "orders 1" {
			t.Fatalf("GetObject under the table = %q, %v, want %q", b, err, "orders 1")
		}
		list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("tenant-data"), Prefix: aws.String("acme/orders/")})
		if err != nil {
			t.Fatalf("ListObjectsV2 prefix acme/orders/: %v", err)
		}
		var keys []string
		for _, o := range list.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		want := []string{"acme/orders/delete-me", "acme/orders/part-0.parquet", "acme/orders/part-1.parquet"}
		if !slices.Equal(keys, want) {
			t.Fatalf("ListObjectsV2 prefix acme/orders/ = %q, want %q", keys, want)
		}
	})

	// Each case is denied to the vended credentials and allowed to root,
	// so a denial is the policy's and not a missing object.
	denied := []struct {
		name string
		op   func(context.Context, *s3.Client) error
		root func(context.Context, *s3.Client) error // nil: op itself
	}{
		{name: "get sibling prefix acme/orders-archive/", op: getObject("tenant-data", "acme/orders-archive/x")},
		{name: "get sibling key acme/ordersx", op: getObject("tenant-data", "acme/ordersx")},
		{name: "get another table acme/customers/", op: getObject("tenant-data", "acme/customers/x")},
		{name: "get another tenant globex/orders/", op: getObject("tenant-data", "globex/orders/x")},
		// The SDK sends the key as is. On AWS it would be a literal key
		// under the table's prefix (granted, and absent: NoSuchKey).
		// versitygw's posix backend resolves it as a path: the ARN it
		// authorizes is the cleaned key's (acme/customers/x), which the
		// policy does not grant, and root reads acme/customers/x by it.
		{
			name: "get acme/orders/../customers/x",
			op:   getObject("tenant-data", "acme/orders/../customers/x"),
			root: func(ctx context.Context, c *s3.Client) error {
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tenant-data"), Key: aws.String("acme/orders/../customers/x")})
				if err != nil {
					return err
				}
				defer out.Body.Close()
				b, err := io.ReadAll(out.Body)
				if err == nil && string(b) != objects["tenant-data/acme/customers/x"] {
					err = fmt.Errorf("read %q, want acme/customers/x's %q", b, objects["tenant-data/acme/customers/x"])
				}
				return err
			},
		},
		{name: "get the same prefix in another bucket", op: getObject("other-data", "acme/orders/x")},
		{name: "get the bucket root object", op: getObject("tenant-data", "root.txt")},
		{name: "list prefix acme/", op: listObjects("tenant-data", "acme/")},
		{name: "list prefix empty", op: listObjects("tenant-data", "")},
		{name: "list prefix acme/orders without its slash", op: listObjects("tenant-data", "acme/orders")},
		{name: "put under the table", op: putObject("tenant-data", "acme/orders/part-2.parquet")},
		{
			name: "delete under the table",
			op:   deleteObject("tenant-data", "acme/orders/delete-me"),
			root: func(ctx context.Context, c *s3.Client) error {
				if err := getObject("tenant-data", "acme/orders/delete-me")(ctx, c); err != nil {
					return err // the denied delete removed it
				}
				return deleteObject("tenant-data", "acme/orders/delete-me")(ctx, c)
			},
		},
	}
	denials := 0
	for _, tc := range denied {
		t.Run("denied/"+tc.name, func(t *testing.T) {
			err := tc.op(ctx, c)
			if code := errorCode(err); code != "AccessDenied" {
				t.Fatalf("vended credentials: error %v (code %q), want AccessDenied", err, code)
			}
			denials++
			rootOp := tc.root
			if rootOp == nil {
				rootOp = tc.op
			}
			if err := rootOp(ctx, root); err != nil {
				t.Fatalf("root: %v, want success (so the denial is the policy's)", err)
			}
		})
	}
	t.Logf("%d of %d requests outside the table denied by versitygw", denials, len(denied))
	if denials != len(denied) {
		t.Errorf("%d denials, want %d", denials, len(denied))
	}

	t.Run("root lists what acme/orders without its slash would reveal", func(t *testing.T) {
		list, err := root.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("tenant-data"), Prefix: aws.String("acme/orders")})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range list.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !slices.Contains(keys, "acme/orders-archive/x") || !slices.Contains(keys, "acme/ordersx") {
			t.Fatalf("root's listing of acme/orders = %q, want the siblings in it", keys)
		}
	})

	t.Run("a session token beside the key is refused", func(t *testing.T) {
		// The stand-in answers no SessionToken: versitygw refuses a token
		// sent with a long-term (AKIA…) key, as this pins.
		cr := got.Credentials
		if cr.SessionToken != "" {
			t.Fatalf("vended SessionToken %q, want none from the stand-in", cr.SessionToken)
		}
		withToken := e.gw.ClientFor(cr.AccessKeyID, cr.SecretAccessKey, "a-token-versitygw-never-issued")
		err := getObject("tenant-data", "acme/orders/part-0.parquet")(ctx, withToken)
		if code := errorCode(err); code != "InvalidToken" {
			t.Fatalf("GetObject with a session token beside a user's key: %v (code %q), want InvalidToken", err, code)
		}
	})
}

func TestVersitygwEnforcesLongestLocation(t *testing.T) {
	e := startEnforced(t)
	ctx := context.Background()
	bucket := "lake-longest-" + strings.Repeat("b", 63-len("lake-longest-"))
	head := "s3://" + bucket + "/acme/"
	location := head + strings.Repeat("p", vending.MaxLocationLength-len(head)-1) + "/"
	loc, err := vending.ParseLocation(location)
	if err != nil {
		t.Fatalf("ParseLocation of the longest location: %v", err)
	}
	if len(loc.Bucket) != 63 || len(loc.String()) != vending.MaxLocationLength {
		t.Fatalf("location %s: bucket of %d and %d in all, want 63 and %d", loc, len(loc.Bucket), len(loc.String()), vending.MaxLocationLength)
	}
	e.gw.CreateBucket(t, bucket)
	key := loc.Prefix + "part-0.parquet"
	e.gw.PutObject(t, bucket, key, []byte("longest"))

	c, got := e.vend(t, "acme", "orders", location, "s3://"+bucket+"/acme/")
	reqs := e.sts.Requests()
	if len(reqs) != 1 || reqs[0].Code != "" {
		t.Fatalf("AssumeRole requests %+v, want one that succeeded", reqs)
	}
	if n := len(reqs[0].Policy); n != vending.LongestPolicyLength {
		t.Fatalf("policy of %d characters, want LongestPolicyLength %d", n, vending.LongestPolicyLength)
	}
	up, err := e.gw.IAMClient().GetUserPolicy(ctx, &iam.GetUserPolicyInput{UserName: aws.String(reqs[0].UserName), PolicyName: aws.String("session")})
	if err != nil {
		t.Fatalf("versitygw GetUserPolicy: %v", err)
	}
	// IAM answers the document URL-encoded (RFC 3986), as AWS does.
	if doc, err := url.QueryUnescape(aws.ToString(up.PolicyDocument)); err != nil || doc != reqs[0].Policy {
		t.Fatalf("versitygw keeps policy %s (%v), want the session policy %s", doc, err, reqs[0].Policy)
	}
	t.Logf("longest location: policy of %d characters accepted by versitygw's PutUserPolicy (its quota: 2,048 bytes of inline policy per user), PackedPolicySize %d%% (modelled)",
		len(reqs[0].Policy), got.Credentials.PackedPolicySize)

	// The longest location with the longest metadata prefix (a
	// 63-character bucket of its own) is accepted too and reads both.
	metaBucket := "lake-iceberg-" + strings.Repeat("m", 63-len("lake-iceberg-"))
	metaLoc := "s3://" + metaBucket + "/tables/" + enforcedUUID + "/metadata/"
	e.gw.CreateBucket(t, metaBucket)
	e.gw.PutObject(t, metaBucket, "tables/"+enforcedUUID+"/metadata/v1.metadata.json", []byte("{}"))
	mc, mgot := e.vendMeta(t, "acme", "orders", location, "s3://"+bucket+"/acme/", metaLoc)
	reqs = e.sts.Requests()
	if len(reqs) != 2 || reqs[1].Code != "" {
		t.Fatalf("AssumeRole requests %+v, want a second that succeeded", reqs)
	}
	if n := len(reqs[1].Policy); n != vending.LongestPolicyLengthWithMetadata {
		t.Fatalf("policy with metadata of %d characters, want LongestPolicyLengthWithMetadata %d", n, vending.LongestPolicyLengthWithMetadata)
	}
	t.Logf("longest location and metadata prefix: policy of %d characters, %d tags, PackedPolicySize %d%% (modelled)",
		len(reqs[1].Policy), len(reqs[1].Tags), mgot.Credentials.PackedPolicySize)
	if err := getObject(metaBucket, "tables/"+enforcedUUID+"/metadata/v1.metadata.json")(ctx, mc); err != nil {
		t.Fatalf("GetObject of the metadata at the longest metadata prefix: %v", err)
	}
	if err := getObject(bucket, key)(ctx, mc); err != nil {
		t.Fatalf("GetObject at the longest location with metadata: %v", err)
	}

	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GetObject at the longest location: %v", err)
	}
	b, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(b, []byte("longest")) {
		t.Fatalf("GetObject at the longest location = %q, %v, want %q", b, err, "longest")
	}
}

// enforcedUUID and enforcedOtherUUID are two tables' UUIDs
// (icebergrest.TableUUID's shape).
const (
	enforcedUUID      = "6f0c8a52-3d1e-5b7a-9c4f-2e8d1a0b7c63"
	enforcedOtherUUID = "9a3b7c1d-5e2f-5a4b-8c6d-0e1f2a3b4c5d"
)

func TestVersitygwEnforcesMetadataPrefix(t *testing.T) {
	e := startEnforced(t)
	ctx := context.Background()
	root := e.gw.Client()
	e.gw.CreateBucket(t, "tenant-data")
	e.gw.CreateBucket(t, "lake-iceberg") // lake's metadata store: one of its own buckets
	mine := "tables/" + enforcedUUID + "/metadata/"
	objects := map[string]string{
		"tenant-data/acme/orders/part-0.parquet":                   "orders 0",
		"lake-iceberg/" + mine + "v1.metadata.json":                `{"format-version":2}`,
		"lake-iceberg/" + mine + "snap-1.avro":                     "manifest list",
		"lake-iceberg/" + mine + "m-0.avro":                        "manifest",
		"lake-iceberg/tables/" + enforcedOtherUUID + "/metadata/x": "a sibling table's metadata",
		"lake-iceberg/tables/" + enforcedUUID + "/data/x":          "beside the metadata prefix",
		"lake-iceberg/root.txt":                                    "the bucket root",
	}
	for path, body := range objects {
		bucket, key, _ := strings.Cut(path, "/")
		e.gw.PutObject(t, bucket, key, []byte(body))
	}

	// The data location alone in lake's bucket is still refused.
	if _, err := e.vendor.Vend(ctx, vending.Request{Tenant: "acme", Namespace: "sales", Table: "orders",
		Location: "s3://lake-iceberg/" + mine, Allowed: []vending.Location{{Bucket: "lake-iceberg", Prefix: "tables/"}}}); !errors.Is(err, vending.ErrOwnBucket) {
		t.Fatalf("vend of lake's metadata bucket as a table's location: %v, want %v", err, vending.ErrOwnBucket)
	}

	c, got := e.vendMeta(t, "acme", "orders", "s3://tenant-data/acme/orders/", "s3://tenant-data/acme/", "s3://lake-iceberg/"+mine)
	if got.Metadata.String() != "s3://lake-iceberg/"+mine {
		t.Fatalf("vended metadata %v, want s3://lake-iceberg/%s", got.Metadata, mine)
	}
	reqs := e.sts.Requests()
	if len(reqs) != 1 || reqs[0].Code != "" || !strings.Contains(reqs[0].Policy, "arn:aws:s3:::lake-iceberg/"+mine+"*") {
		t.Fatalf("AssumeRole requests %+v, want one that succeeded with the metadata grant", reqs)
	}
	var tags []string
	for _, tag := range reqs[0].Tags {
		tags = append(tags, tag.Key+"="+tag.Value)
	}
	if !slices.Contains(tags, "lake:meta-bucket=lake-iceberg") || !slices.Contains(tags, "lake:meta-prefix="+mine) {
		t.Fatalf("session tags %q, want lake:meta-bucket and lake:meta-prefix", tags)
	}

	t.Run("reads the metadata and the data", func(t *testing.T) {
		for _, key := range []string{mine + "v1.metadata.json", mine + "snap-1.avro", mine + "m-0.avro"} {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lake-iceberg"), Key: aws.String(key)})
			if err != nil {
				t.Fatalf("GetObject %s: %v", key, err)
			}
			b, err := io.ReadAll(out.Body)
			out.Body.Close()
			if want := objects["lake-iceberg/"+key]; err != nil || string(b) != want {
				t.Fatalf("GetObject %s = %q, %v, want %q", key, b, err, want)
			}
		}
		list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lake-iceberg"), Prefix: aws.String(mine)})
		if err != nil {
			t.Fatalf("ListObjectsV2 prefix %s: %v", mine, err)
		}
		if len(list.Contents) != 3 {
			t.Fatalf("ListObjectsV2 prefix %s: %d objects, want 3", mine, len(list.Contents))
		}
		if err := getObject("tenant-data", "acme/orders/part-0.parquet")(ctx, c); err != nil {
			t.Fatalf("GetObject of the table's data: %v", err)
		}
	})

	for _, tc := range []struct {
		name string
		op   func(context.Context, *s3.Client) error
	}{
		{"get a sibling table's metadata", getObject("lake-iceberg", "tables/"+enforcedOtherUUID+"/metadata/x")},
		{"get beside the metadata prefix", getObject("lake-iceberg", "tables/"+enforcedUUID+"/data/x")},
		{"get the bucket root", getObject("lake-iceberg", "root.txt")},
		{"list tables/", listObjects("lake-iceberg", "tables/")},
		{"list the bucket", listObjects("lake-iceberg", "")},
		{"list the data prefix in the metadata bucket", listObjects("lake-iceberg", "acme/orders/")},
		{"list the metadata prefix in the data bucket", listObjects("tenant-data", mine)},
		{"put under the metadata prefix", putObject("lake-iceberg", mine+"v2.metadata.json")},
	} {
		t.Run("denied/"+tc.name, func(t *testing.T) {
			if code := errorCode(tc.op(ctx, c)); code != "AccessDenied" {
				t.Fatalf("vended credentials: code %q, want AccessDenied", code)
			}
			if err := tc.op(ctx, root); err != nil {
				t.Fatalf("root: %v, want success (so the denial is the policy's)", err)
			}
		})
	}
}
