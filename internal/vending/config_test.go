package vending_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/wire"
)

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{"LAKE_VENDING_ROLE_ARN": "arn:aws:iam::1:role/r", "LAKE_VENDING_DURATION": "30m",
		"LAKE_VENDING_OWN_BUCKETS": "snaps, logs,", "LAKE_VENDING_EVENT_BUS": "changes"}
	c, err := vending.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil || c.RoleARN != "arn:aws:iam::1:role/r" || c.Duration != 30*time.Minute || strings.Join(c.OwnBuckets, ",") != "snaps,logs" || c.EventBus != "changes" {
		t.Fatalf("ConfigFromEnv = %+v, %v", c, err)
	}
	for _, d := range []string{"5m", "13h", "soon"} {
		env["LAKE_VENDING_DURATION"] = d
		if _, err := vending.ConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "LAKE_VENDING_DURATION") {
			t.Fatalf("duration %q: %v, want an error naming the variable", d, err)
		}
	}
}

// A Door opened from a Config with no role answers s3:// locations with
// ErrNotConfigured and its hint; with a role and an STS endpoint it vends
// through the SDK's STS client, and the credentials read the table's
// objects (versitygw enforcing the session policy) and are recorded on the
// bus.
func TestOpen(t *testing.T) {
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIADEPUTY", "deputy-secret", "")}
	req := vending.TableRequest{Who: "alice", Tenant: "acme", Namespace: "sales", Table: "orders",
		Location: "s3://tenant-data/acme/orders/", Allowed: []string{"s3://tenant-data/acme/"}}
	off, closeOff, err := vending.Open(vending.Config{Hint: "pass --vending-role-arn"}, awsCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOff()
	if _, err := off.Credentials(context.Background(), req); !errors.Is(err, vending.ErrNotConfigured) || !strings.Contains(err.Error(), "--vending-role-arn") {
		t.Fatalf("without a role: %v", err)
	}

	gw := testenv.StartIAMS3(t)
	st := testenv.StartSTS(t, gw)
	bus := testenv.StartEventBridge(t)
	t.Setenv("AWS_ENDPOINT_URL_EVENTBRIDGE", bus.URL)
	gw.CreateBucket(t, "tenant-data")
	gw.PutObject(t, "tenant-data", "acme/orders/part-0.parquet", []byte("rows"))
	// The SDK's endpoint variables reach clients built from the loaded
	// configuration, as in the programs.
	awsCfg, err = config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIADEPUTY", "deputy-secret", "")))
	if err != nil {
		t.Fatal(err)
	}
	door, closeDoor, err := vending.Open(vending.Config{RoleARN: st.RoleARN, STSEndpoint: st.URL, EventBus: "lake-changes", OwnBuckets: []string{"lake-snapshots"}},
		awsCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := door.Credentials(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Access != wire.AccessVended || got.Region != "us-east-1" || st.Count() != 1 {
		t.Fatalf("Credentials = %+v after %d AssumeRole calls", got, st.Count())
	}
	out, err := gw.ClientFor(got.AccessKeyID, got.SecretAccessKey, got.SessionToken).GetObject(context.Background(),
		&s3.GetObjectInput{Bucket: aws.String("tenant-data"), Key: aws.String("acme/orders/part-0.parquet")})
	if err != nil {
		t.Fatalf("read with the vended credentials: %v", err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "rows" {
		t.Fatalf("read %q", b)
	}
	closeDoor()
	if e := bus.Entries(); len(e) != 1 || e[0].DetailType != vending.EventDetailType || !strings.Contains(e[0].Detail, `"location":"s3://tenant-data/acme/orders/"`) {
		t.Fatalf("events = %+v, want one vend event", e)
	}
}
