package vending

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const testUUID = "0b1e2f3a-4c5d-5e6f-8a9b-0c1d2e3f4a5b"

func TestSessionPolicy(t *testing.T) {
	loc, err := ParseLocation("s3://bucket/sales/orders/")
	if err != nil {
		t.Fatal(err)
	}
	meta, err := ParseMetadataLocation("s3://lake-iceberg/tables/" + testUUID + "/metadata/")
	if err != nil {
		t.Fatal(err)
	}
	sameBucket, err := ParseMetadataLocation("s3://bucket/tables/" + testUUID + "/metadata/")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		meta Location
		want string
	}{
		{"data only", Location{}, `{"Version":"2012-10-17","Statement":[` +
			`{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::bucket/sales/orders/*"},` +
			`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bucket","Condition":{"StringLike":{"s3:prefix":"sales/orders/*"}}},` +
			`{"Effect":"Allow","Action":"s3:GetBucketLocation","Resource":"arn:aws:s3:::bucket"}]}`},
		{"with metadata", meta, `{"Version":"2012-10-17","Statement":[` +
			`{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::bucket/sales/orders/*","arn:aws:s3:::lake-iceberg/tables/` + testUUID + `/metadata/*"]},` +
			`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bucket","Condition":{"StringLike":{"s3:prefix":"sales/orders/*"}}},` +
			`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::lake-iceberg","Condition":{"StringLike":{"s3:prefix":"tables/` + testUUID + `/metadata/*"}}},` +
			`{"Effect":"Allow","Action":"s3:GetBucketLocation","Resource":["arn:aws:s3:::bucket","arn:aws:s3:::lake-iceberg"]}]}`},
		{"metadata in the data's bucket", sameBucket, `{"Version":"2012-10-17","Statement":[` +
			`{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::bucket/sales/orders/*","arn:aws:s3:::bucket/tables/` + testUUID + `/metadata/*"]},` +
			`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bucket","Condition":{"StringLike":{"s3:prefix":"sales/orders/*"}}},` +
			`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bucket","Condition":{"StringLike":{"s3:prefix":"tables/` + testUUID + `/metadata/*"}}},` +
			`{"Effect":"Allow","Action":"s3:GetBucketLocation","Resource":"arn:aws:s3:::bucket"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SessionPolicyWithMetadata(loc, tt.meta)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("SessionPolicyWithMetadata =\n%s\nwant\n%s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Fatalf("policy is not valid JSON: %s", got)
			}
			again, _ := SessionPolicyWithMetadata(loc, tt.meta)
			if !bytes.Equal(got, again) {
				t.Fatalf("SessionPolicyWithMetadata is not deterministic")
			}
		})
	}
	plain, _ := SessionPolicy(loc)
	if string(plain) != tests[0].want {
		t.Fatalf("SessionPolicy = %s, want SessionPolicyWithMetadata without metadata %s", plain, tests[0].want)
	}
}

// longestMetadataLocation is the longest metadata location
// ParseMetadataLocation accepts: a 63-character bucket.
func longestMetadataLocation() string {
	return "s3://" + strings.Repeat("m", 63) + "/tables/" + testUUID + "/metadata/"
}

func TestSessionPolicyLongestLocationFits(t *testing.T) {
	loc, err := ParseLocation(longestLocation())
	if err != nil {
		t.Fatal(err)
	}
	meta, err := ParseMetadataLocation(longestMetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		meta Location
		want int
	}{
		{"LongestPolicyLength", Location{}, LongestPolicyLength},
		{"LongestPolicyLengthWithMetadata", meta, LongestPolicyLengthWithMetadata},
	} {
		p, err := SessionPolicyWithMetadata(loc, tt.meta)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: session policy for the longest accepted location (%d chars): %d chars of %d", tt.name, MaxLocationLength, len(p), MaxPolicyLength)
		if len(p) != tt.want {
			t.Fatalf("policy for the longest location is %d chars, %s (documented) says %d", len(p), tt.name, tt.want)
		}
		if limit := MaxPolicyLength * 3 / 4; len(p) > limit {
			t.Fatalf("policy for the longest location is %d chars, want at most %d (a quarter below STS's %d)", len(p), limit, MaxPolicyLength)
		}
	}
}

func TestSessionPolicyRefusesInvalid(t *testing.T) {
	valid := Location{Bucket: "bucket", Prefix: "a/"}
	tests := []struct {
		name      string
		loc, meta Location
		want      error
	}{
		{"empty prefix", Location{Bucket: "bucket"}, Location{}, ErrEmptyPrefix},
		{"wildcard", Location{Bucket: "bucket", Prefix: "a*/"}, Location{}, ErrWildcard},
		{"no trailing slash", Location{Bucket: "bucket", Prefix: "a"}, Location{}, ErrPrefixSlash},
		{"too long", Location{Bucket: "bucket", Prefix: strings.Repeat("a", MaxLocationLength) + "/"}, Location{}, ErrTooLong},
		{"metadata of another shape", valid, Location{Bucket: "lake-iceberg", Prefix: "tables/"}, ErrMetadataShape},
		{"metadata with a wildcard", valid, Location{Bucket: "lake-iceberg", Prefix: "tables/*/metadata/"}, ErrWildcard},
		{"metadata without a prefix", valid, Location{Bucket: "lake-iceberg"}, ErrEmptyPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SessionPolicyWithMetadata(tt.loc, tt.meta)
			var le *LocationError
			if !errors.Is(err, tt.want) || !errors.As(err, &le) {
				t.Fatalf("SessionPolicyWithMetadata(%+v, %+v) error = %v, want *LocationError %v", tt.loc, tt.meta, err, tt.want)
			}
		})
	}
}
