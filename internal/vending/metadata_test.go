package vending

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/wire"
)

// metaLocation is a table's metadata prefix in lake's metadata bucket,
// which newTestVendor's Guard counts among lake's own ("lake-data").
const metaLocation = "s3://lake-data/tables/" + testUUID + "/metadata/"

func TestParseMetadataLocation(t *testing.T) {
	tests := []struct {
		in   string
		want error // nil: accepted
	}{
		{metaLocation, nil},
		{strings.TrimSuffix(metaLocation, "/"), nil},
		{longestMetadataLocation(), nil},
		{"s3://lake-data/tables/" + strings.ToUpper(testUUID) + "/metadata/", ErrMetadataShape},
		{"s3://lake-data/tables/" + strings.ReplaceAll(testUUID, "-", "") + "/metadata/", ErrMetadataShape},
		{"s3://lake-data/tables/{" + testUUID + "}/metadata/", ErrCharacter},
		{"s3://lake-data/tables/" + testUUID + ".x/metadata/", ErrMetadataShape},
		{"s3://lake-data/tables/" + testUUID[:35] + "g/metadata/", ErrMetadataShape},
		{"s3://lake-data/tables/" + testUUID + "/", ErrMetadataShape},
		{"s3://lake-data/tables/" + testUUID + "/data/", ErrMetadataShape},
		{"s3://lake-data/tables/" + testUUID + "/metadata/x/", ErrMetadataShape},
		{"s3://lake-data/x/tables/" + testUUID + "/metadata/", ErrMetadataShape},
		{"s3://lake-data/tables/", ErrMetadataShape},
		{"s3://lake-data/", ErrEmptyPrefix},
		{"s3://lake-data/tables/*/metadata/", ErrWildcard},
		{"s3://lake-data/tables/../metadata/", ErrDotSegment},
		{"file:///var/lake/iceberg/tables/" + testUUID + "/metadata/", ErrScheme},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMetadataLocation(tt.in)
			if tt.want == nil {
				if err != nil || got.Prefix != "tables/"+testUUID+"/metadata/" {
					t.Fatalf("ParseMetadataLocation(%q) = %+v, %v, want the table's metadata prefix", tt.in, got, err)
				}
				return
			}
			var le *LocationError
			if !errors.Is(err, tt.want) || !errors.As(err, &le) || le.Location != tt.in {
				t.Fatalf("ParseMetadataLocation(%q) error = %v, want *LocationError %v naming it", tt.in, err, tt.want)
			}
		})
	}
}

func TestSyncedMetadata(t *testing.T) {
	tests := []struct {
		name, file, uuid, want string
	}{
		{"a synced table", metaLocation + "v3.metadata.json", testUUID, metaLocation},
		{"another table's uuid", metaLocation + "v3.metadata.json", "1" + testUUID[1:], ""},
		{"a file below the metadata prefix", metaLocation + "x/v3.metadata.json", testUUID, ""},
		{"the prefix itself", metaLocation, testUUID, ""},
		{"a local metadata file", "file:///var/lake/iceberg/tables/" + testUUID + "/metadata/v3.metadata.json", testUUID, ""},
		{"another shape", "s3://lake-data/tables/" + testUUID + "/v3.metadata.json", testUUID, ""},
		{"an upper-case uuid", "s3://lake-data/tables/" + strings.ToUpper(testUUID) + "/metadata/v3.metadata.json", strings.ToUpper(testUUID), ""},
		{"no uuid asked", metaLocation + "v3.metadata.json", "", ""},
		{"empty", "", testUUID, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SyncedMetadata(tt.file, tt.uuid); got != tt.want {
				t.Fatalf("SyncedMetadata(%q, %q) = %q, want %q", tt.file, tt.uuid, got, tt.want)
			}
		})
	}
}

func TestMetadataTags(t *testing.T) {
	meta := mustLocation(t, longestMetadataLocation())
	got := MetadataTags(meta)
	want := []Tag{{Key: "lake:meta-bucket", Value: meta.Bucket}, {Key: "lake:meta-prefix", Value: "tables/" + testUUID + "/metadata/"}}
	if !slices.Equal(got, want) {
		t.Fatalf("MetadataTags = %v, want %v", got, want)
	}
	for _, tag := range got {
		if !tagKeyRE.MatchString(tag.Key) || !tagValueRE.MatchString(tag.Value) {
			t.Fatalf("tag %q=%q breaks STS's tag rules", tag.Key, tag.Value)
		}
	}
}

func metaRequest(table, location, metadata string) Request {
	r := request(table, location)
	r.Metadata = metadata
	return r
}

func TestVendWithMetadata(t *testing.T) {
	v, a, _, rec := newTestVendor(t, Options{})
	got, err := v.Vend(context.Background(), metaRequest("orders", "s3://tenant-data/acme/orders/", metaLocation))
	if err != nil {
		t.Fatalf("Vend with metadata in lake's own bucket, outside the allowed prefixes: %v", err)
	}
	loc, meta := mustLocation(t, "s3://tenant-data/acme/orders/"), mustLocation(t, metaLocation)
	if got.Location != loc || got.Metadata != meta {
		t.Fatalf("Vend = %+v, want location %v and metadata %v", got, loc, meta)
	}
	in := a.calls[0]
	wantPolicy, _ := SessionPolicyWithMetadata(loc, meta)
	if string(in.Policy) != string(wantPolicy) || !strings.Contains(string(in.Policy), "lake-data/tables/"+testUUID+"/metadata/*") {
		t.Fatalf("AssumeInput.Policy = %s, want %s", in.Policy, wantPolicy)
	}
	wantTags := append(SessionTags("acme", "sales", "orders"), Tag{TagBucket, "tenant-data"}, Tag{TagPrefix, "acme/orders/"},
		Tag{TagMetaBucket, "lake-data"}, Tag{TagMetaPrefix, "tables/" + testUUID + "/metadata/"})
	if !slices.Equal(in.Tags, wantTags) {
		t.Fatalf("AssumeInput.Tags = %v, want %v", in.Tags, wantTags)
	}
	if len(rec.vends) != 1 || rec.vends[0].Metadata != meta {
		t.Fatalf("observed %+v, want one vend naming the metadata", rec.vends)
	}

	// Without metadata: no metadata grant and no metadata tags.
	if _, err := v.Vend(context.Background(), request("orders", "s3://tenant-data/acme/orders/")); err != nil {
		t.Fatal(err)
	}
	if in := a.calls[1]; strings.Contains(string(in.Policy), "tables/") || len(in.Tags) != 5 {
		t.Fatalf("without metadata: AssumeInput = %+v, want no metadata grant or tags", in)
	}
}

func TestVendMetadataIsInTheCacheKey(t *testing.T) {
	v, a, _, _ := newTestVendor(t, Options{})
	ctx := context.Background()
	other := "s3://lake-data/tables/" + "1" + testUUID[1:] + "/metadata/"
	for i, r := range []Request{
		request("orders", "s3://tenant-data/acme/orders/"),
		metaRequest("orders", "s3://tenant-data/acme/orders/", metaLocation),
		metaRequest("orders", "s3://tenant-data/acme/orders/", other),
		metaRequest("orders", "s3://tenant-data/acme/orders/", metaLocation),                          // cached
		metaRequest("orders", "s3://tenant-data/acme/orders/", strings.TrimSuffix(metaLocation, "/")), // the same, canonical
		request("orders", "s3://tenant-data/acme/orders/"),                                            // cached
	} {
		got, err := v.Vend(ctx, r)
		if err != nil {
			t.Fatalf("vend %d: %v", i, err)
		}
		if want := []string{"AK1", "AK2", "AK3", "AK2", "AK2", "AK1"}[i]; got.Credentials.AccessKeyID != want {
			t.Fatalf("vend %d (%q): key %s, want %s", i, r.Metadata, got.Credentials.AccessKeyID, want)
		}
	}
	if a.count() != 3 {
		t.Fatalf("AssumeRole calls = %d, want 3", a.count())
	}
}

func TestVendMetadataRefusals(t *testing.T) {
	v, a, _, rec := newTestVendor(t, Options{})
	for _, tt := range []struct {
		name               string
		location, metadata string
		want               error
	}{
		{"another shape in lake's bucket", "s3://tenant-data/acme/orders/", "s3://lake-data/snapshots/", ErrMetadataShape},
		{"a whole tables/ prefix", "s3://tenant-data/acme/orders/", "s3://lake-data/tables/", ErrMetadataShape},
		{"an upper-case uuid", "s3://tenant-data/acme/orders/", "s3://lake-data/tables/" + strings.ToUpper(testUUID) + "/metadata/", ErrMetadataShape},
		{"a local metadata path", "s3://tenant-data/acme/orders/", "file:///var/lake/tables/" + testUUID + "/metadata/", ErrScheme},
		{"a bucket S3 would not name", "s3://tenant-data/acme/orders/", "s3://Lake/tables/" + testUUID + "/metadata/", ErrBucket},
		// The metadata exemption does not open lake's buckets for the data.
		{"data in lake's own bucket", "s3://lake-data/tables/" + testUUID + "/metadata/", metaLocation, ErrOwnBucket},
		{"data outside the allowed prefixes", "s3://tenant-data/globex/orders/", metaLocation, ErrNotAllowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Vend(context.Background(), metaRequest("orders", tt.location, tt.metadata))
			if !errors.Is(err, tt.want) || Code(err) != wire.CodeLocationNotAllowed {
				t.Fatalf("Vend error = %v (code %s), want %v, %s", err, Code(err), tt.want, wire.CodeLocationNotAllowed)
			}
			if errors.Is(tt.want, ErrMetadataShape) {
				var le *LocationError
				if !errors.As(err, &le) || le.Location != tt.metadata {
					t.Fatalf("Vend error = %#v, want a *LocationError naming the metadata location", err)
				}
			}
		})
	}
	if a.count() != 0 || len(rec.vends) != 0 {
		t.Fatalf("AssumeRole calls = %d, observed %d, want none", a.count(), len(rec.vends))
	}
}

func TestDoorPassesMetadata(t *testing.T) {
	v, a, _, _ := newTestVendor(t, Options{})
	d := &Door{Vendor: v}
	r := tableRequest("s3://tenant-data/acme/orders/", "s3://tenant-data/acme/")
	r.Metadata = metaLocation
	if _, err := d.Credentials(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if a.count() != 1 || !strings.Contains(string(a.calls[0].Policy), "arn:aws:s3:::lake-data/tables/"+testUUID+"/metadata/*") {
		t.Fatalf("AssumeRole calls %+v, want one granting the metadata prefix", a.calls)
	}

	root := t.TempDir()
	local := tableRequest("file://" + root + "/acme/orders/")
	local.Metadata = metaLocation
	got, err := (&Door{DataRoot: root}).Credentials(context.Background(), local)
	if err != nil || got.Access != wire.AccessPath {
		t.Fatalf("local path with metadata: %+v, %v, want the path as its access", got, err)
	}

	bad := tableRequest("s3://tenant-data/acme/orders/", "s3://tenant-data/acme/")
	bad.Metadata = "s3://lake-data/tables/"
	if _, err := (&Door{}).Credentials(context.Background(), bad); !errors.Is(err, ErrMetadataShape) {
		t.Fatalf("unconfigured Door with a bad metadata prefix: %v, want %v", err, ErrMetadataShape)
	}
}
