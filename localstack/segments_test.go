//go:build integration

package localstack_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// The bucket layout the stack expects, on whatever S3 the suite runs
// against: the snapshot key holds the manifest, each tenant's segment is
// an object under the key's .segments/ prefix, and a change stores the
// changed tenant's new segment and tags the one it replaced
// lake-segment=released (the lifecycle rule's filter) while discovery
// serves the change.
func TestSegmentLayoutInTheBucket(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	reg, fn := c.register(t), c.refresher(t)
	ipc := func(i int) []byte {
		b, err := catalog.EncodeSchema(catalogtest.WideSchema(i, 4))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	registerTable(t, reg, "acme", "sales", "orders", ipc(1))
	registerTable(t, reg, "globex", "ops", "jobs", ipc(2))
	if res := runRefresh(t, fn); res.Outcome != refresh.Published || res.SegmentsWritten != 2 {
		t.Fatalf("first refresh = %+v", res)
	}
	d := c.discovery(t, "")
	d.waitRows(t, "acme", 1)
	first := c.segments(t)
	if len(first) != 2 {
		t.Fatalf("segments after the first refresh: %q, want 2", first)
	}

	registerTable(t, reg, "acme", "sales", "returns", ipc(3))
	if res := runRefresh(t, fn); res.Outcome != refresh.Published || res.SegmentsReleased != 1 {
		t.Fatalf("refresh after acme's change = %+v, want one segment released", res)
	}
	d.waitRows(t, "acme", 2)
	d.waitRows(t, "globex", 1)
	now := c.segments(t)
	if len(now) != 3 {
		t.Fatalf("segments after the change: %q, want 3 (the released one until the lifecycle rule expires it)", now)
	}
	released := 0
	for _, k := range now {
		out, err := c.s3.GetObjectTagging(context.Background(), &s3.GetObjectTaggingInput{Bucket: aws.String(c.bucket), Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		tagged := slices.ContainsFunc(out.TagSet, func(tag s3types.Tag) bool {
			return aws.ToString(tag.Key) == "lake-segment" && aws.ToString(tag.Value) == "released"
		})
		if tagged {
			released++
			if !slices.Contains(first, k) {
				t.Fatalf("the new segment %s is tagged released", k)
			}
		}
	}
	if released != 1 {
		t.Fatalf("%d segments tagged released, want 1 (acme's old one)", released)
	}
}

// segments lists the segment objects beside the snapshot key.
func (c *cloud) segments(t *testing.T) []string {
	t.Helper()
	out, err := c.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(c.bucket), Prefix: aws.String(snapshotKey + ".segments/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		if k := aws.ToString(o.Key); !strings.HasSuffix(k, "/") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
