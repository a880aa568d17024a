package preview_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/apache/arrow-go/v18/parquet"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/preview"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/internal/vending"
)

// splitFiles lists with one Files and reads with another: a listing that
// succeeds, so that the read itself meets the policy.
type splitFiles struct {
	lister, reader icebergsync.Files
}

func (s splitFiles) List(ctx context.Context, visit func(icebergsync.Object) error) error {
	return s.lister.List(ctx, visit)
}

func (s splitFiles) ReadAt(ctx context.Context, o icebergsync.Object, p []byte, off int64) error {
	return s.reader.ReadAt(ctx, o, p, off)
}

func (s splitFiles) Location(key string) string { return s.reader.Location(key) }

// A preview through table A's vended credentials reads A's rows over the
// S3 protocol, fetching no more than the footer and the first row group's
// asked column chunks; through the same credentials a neighbour table's
// files are denied, by versitygw's evaluation of the session policy, and
// the denial surfaces with no rows.
func TestVendedPreviewOverS3(t *testing.T) {
	ctx := context.Background()
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
	door := &vending.Door{Vendor: v, Region: "us-east-1"}
	gw.CreateBucket(t, "tenant-data")
	orders := writeFile(t, "", "", schema, 10_000, rowsFrom(0, 30_000, 0), parquet.WithDataPageSize(32<<10))
	customers := writeFile(t, "", "", schema, 100, rowsFrom(1_000_000, 300, 0))
	gw.PutObject(t, "tenant-data", "acme/orders/part-0.parquet", orders)
	gw.PutObject(t, "tenant-data", "acme/customers/part-0.parquet", customers)

	access, err := door.Credentials(ctx, vending.TableRequest{Who: "alice", Tenant: "acme", Namespace: "sales", Table: "orders",
		Location: "s3://tenant-data/acme/orders/", Allowed: []string{"s3://tenant-data/acme/"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(gw.Endpoint)}
	files, err := preview.FilesFor(access, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, stats, err := read(t, files, preview.Request{Columns: []int{0, 1}, Limit: 100}, preview.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 100 || ids[0] != 0 || ids[99] != 99 {
		t.Fatalf("got %d rows, want ids 0..99", len(ids))
	}
	bound := footerAndFirstChunks(t, orders, 0, 1)
	if stats.BytesRead > bound {
		t.Fatalf("got %d bytes read, want at most %d (the footer and the first row group's asked chunks)", stats.BytesRead, bound)
	}
	t.Logf("LIMIT 100 over S3: %d bytes read of a %d-byte file (bound %d)", stats.BytesRead, len(orders), bound)

	// The neighbour through A's credentials: its listing is denied, and
	// so is a read of its file when the listing comes from elsewhere.
	neighbour := access
	neighbour.Location = "s3://tenant-data/acme/customers/"
	theirs, err := preview.FilesFor(neighbour, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	rootList := icebergsync.NewS3Files(gw.Client(), "tenant-data", "acme/customers/")
	for _, c := range []struct {
		name  string
		files icebergsync.Files
	}{
		{"list", theirs},
		{"read", splitFiles{lister: rootList, reader: theirs}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, _, stats, err := read(t, c.files, preview.Request{Limit: 100}, preview.Limits{})
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != "AccessDenied" {
				t.Fatalf("got %v, want AccessDenied", err)
			}
			if len(ids) != 0 || stats.Rows != 0 || stats.BytesRead != 0 {
				t.Fatalf("got %d rows, %+v; want none and no bytes", len(ids), stats)
			}
			t.Logf("denied: %v", err)
		})
	}
}
