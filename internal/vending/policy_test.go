package vending

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSessionPolicy(t *testing.T) {
	loc, err := ParseLocation("s3://bucket/sales/orders/")
	if err != nil {
		t.Fatal(err)
	}
	got, err := SessionPolicy(loc)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Version":"2012-10-17","Statement":[` +
		`{"Sid":"ReadTableObjects","Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::bucket/sales/orders/*"]},` +
		`{"Sid":"ListTablePrefix","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::bucket"],"Condition":{"StringLike":{"s3:prefix":["sales/orders/","sales/orders/*"]}}},` +
		`{"Sid":"LocateBucket","Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::bucket"]}]}`
	if string(got) != want {
		t.Fatalf("SessionPolicy =\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Fatalf("SessionPolicy is not valid JSON: %s", got)
	}
	again, _ := SessionPolicy(loc)
	if !bytes.Equal(got, again) {
		t.Fatalf("SessionPolicy is not deterministic")
	}
}

func TestSessionPolicyLongestLocationFits(t *testing.T) {
	loc, err := ParseLocation(longestLocation())
	if err != nil {
		t.Fatal(err)
	}
	p, err := SessionPolicy(loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("session policy for the longest accepted location (%d chars): %d chars of %d", MaxLocationLength, len(p), MaxPolicyLength)
	if len(p) != LongestPolicyLength {
		t.Fatalf("policy for the longest location is %d chars, LongestPolicyLength (documented) says %d", len(p), LongestPolicyLength)
	}
	if limit := MaxPolicyLength * 3 / 4; len(p) > limit {
		t.Fatalf("policy for the longest location is %d chars, want at most %d (a quarter below STS's %d)", len(p), limit, MaxPolicyLength)
	}
}

func TestSessionPolicyRefusesInvalid(t *testing.T) {
	tests := []struct {
		name string
		loc  Location
		want error
	}{
		{"empty prefix", Location{Bucket: "bucket"}, ErrEmptyPrefix},
		{"wildcard", Location{Bucket: "bucket", Prefix: "a*/"}, ErrWildcard},
		{"no trailing slash", Location{Bucket: "bucket", Prefix: "a"}, ErrPrefixSlash},
		{"too long", Location{Bucket: "bucket", Prefix: strings.Repeat("a", MaxLocationLength) + "/"}, ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := SessionPolicy(tt.loc); !errors.Is(err, tt.want) {
				t.Fatalf("SessionPolicy(%+v) error = %v, want %v", tt.loc, err, tt.want)
			}
		})
	}
}
