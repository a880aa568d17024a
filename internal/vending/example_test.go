package vending_test

import (
	"errors"
	"fmt"

	"github.com/lake-catalog/lake/internal/vending"
)

func ExampleParseLocation() {
	loc, err := vending.ParseLocation("s3://tenant-data/acme/orders")
	fmt.Println(loc.Bucket, loc.Prefix, loc, err)
	_, err = vending.ParseLocation("s3://tenant-data/acme/../globex/")
	fmt.Println(err)
	// Output:
	// tenant-data acme/orders/ s3://tenant-data/acme/orders/ <nil>
	// vending: location "s3://tenant-data/acme/../globex/": prefix has a "." or ".." segment
}

func ExampleSessionPolicy() {
	loc, _ := vending.ParseLocation("s3://bkt/t/")
	p, _ := vending.SessionPolicy(loc)
	fmt.Println(string(p))
	// Output:
	// {"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::bkt/t/*"},{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt","Condition":{"StringLike":{"s3:prefix":"t/*"}}},{"Effect":"Allow","Action":"s3:GetBucketLocation","Resource":"arn:aws:s3:::bkt"}]}
}

func ExampleSessionPolicyWithMetadata() {
	loc, _ := vending.ParseLocation("s3://bkt/t/")
	meta, err := vending.ParseMetadataLocation("s3://lake-meta/tables/0b1e2f3a-4c5d-5e6f-8a9b-0c1d2e3f4a5b/metadata/")
	fmt.Println(err)
	p, _ := vending.SessionPolicyWithMetadata(loc, meta)
	fmt.Println(string(p))
	_, err = vending.ParseMetadataLocation("s3://lake-meta/snapshots/")
	fmt.Println(errors.Is(err, vending.ErrMetadataShape))
	// Output:
	// <nil>
	// {"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::bkt/t/*","arn:aws:s3:::lake-meta/tables/0b1e2f3a-4c5d-5e6f-8a9b-0c1d2e3f4a5b/metadata/*"]},{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt","Condition":{"StringLike":{"s3:prefix":"t/*"}}},{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::lake-meta","Condition":{"StringLike":{"s3:prefix":"tables/0b1e2f3a-4c5d-5e6f-8a9b-0c1d2e3f4a5b/metadata/*"}}},{"Effect":"Allow","Action":"s3:GetBucketLocation","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::lake-meta"]}]}
	// true
}

func ExampleGuard_Check() {
	g := vending.NewGuard([]string{"lake-data"})
	allowed := []vending.Location{{Bucket: "tenant-data", Prefix: "sales/"}}
	loc, err := g.Check("acme", allowed, "s3://tenant-data/sales/orders/")
	fmt.Println(loc, err)
	_, err = g.Check("acme", allowed, "s3://tenant-data/salesforce/")
	fmt.Println(errors.Is(err, vending.ErrNotAllowed), err)
	_, err = g.Check("acme", allowed, "s3://tenant-data/sales/*/")
	fmt.Println(errors.Is(err, vending.ErrInvalidLocation), err)
	// Output:
	// s3://tenant-data/sales/orders/ <nil>
	// true vending: tenant "acme": location "s3://tenant-data/salesforce/": location is not under a prefix allowed for the tenant
	// true vending: tenant "acme": location "s3://tenant-data/sales/*/": location is not a valid table location: prefix has an IAM wildcard ("*" or "?")
}

func ExampleSessionName() {
	fmt.Println(vending.SessionName("acme", "sales", "orders"))
	fmt.Println(vending.SessionTags("acme", "sales", "orders"))
	// Output:
	// lake-acme-1ffd794eb2ae42b0
	// [{lake:tenant acme} {lake:namespace sales} {lake:table orders}]
}
