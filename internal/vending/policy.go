package vending

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxPolicyLength is STS's documented limit on an inline session policy:
// 2,048 characters of plaintext. (STS also limits the packed size of the
// policy and session tags together, which only AssumeRole reports, as
// Credentials.PackedPolicySize.)
const MaxPolicyLength = 2048

// LongestPolicyLength is the measured length of SessionPolicy for the longest
// location ParseLocation accepts (a 63-character bucket and a location of
// MaxLocationLength characters); TestSessionPolicyLongestLocationFits
// pins it.
const LongestPolicyLength = 891

// LongestPolicyLengthWithMetadata is the measured length of
// SessionPolicyWithMetadata for the longest location ParseLocation accepts
// and the longest metadata location ParseMetadataLocation accepts (a
// 63-character bucket of its own); TestSessionPolicyLongestLocationFits pins
// it.
const LongestPolicyLengthWithMetadata = 1340

// ErrPolicyTooLarge is returned by SessionPolicy when the policy would exceed
// MaxPolicyLength; ParseLocation's length limit keeps every location it
// accepts well under it. An *STSError for STS's PackedPolicyTooLarge (policy
// and tags together over the packed limit) matches it too.
var ErrPolicyTooLarge = fmt.Errorf("vending: session policy longer than STS's %d-character limit", MaxPolicyLength)

type policyDocument struct {
	Version   string
	Statement []policyStatement
}

// policyStatement is one statement. Action and Resource are a string or a
// list of strings, as IAM's grammar allows: one value is written as a
// string, to keep the policy short.
type policyStatement struct {
	Effect    string
	Action    any
	Resource  any
	Condition map[string]map[string]string `json:",omitempty"`
}

// oneOrMore is v alone when it has one element, else v.
func oneOrMore(v []string) any {
	if len(v) == 1 {
		return v[0]
	}
	return v
}

// SessionPolicy returns the inline session policy for reading loc and
// nothing else: SessionPolicyWithMetadata without a metadata location.
func SessionPolicy(loc Location) ([]byte, error) {
	return SessionPolicyWithMetadata(loc, Location{})
}

// SessionPolicyWithMetadata returns the inline session policy for reading
// loc and, when meta is not the zero Location, the table's Iceberg metadata
// at meta (ParseMetadataLocation's shape), and nothing else. For each
// location it grants, in the shape Polaris uses: s3:GetObject and
// s3:GetObjectVersion on the objects under the prefix, s3:ListBucket on the
// bucket only for listings whose s3:prefix matches "prefix/*", and
// s3:GetBucketLocation on the bucket. The object reads of both locations
// are one statement, as are the bucket locations; each listing is its own
// statement, so neither prefix may be listed in the other's bucket.
// StringLike's "*" matches the empty string too, so "prefix/*" allows a
// listing of "prefix/" itself, and never the prefix without its "/", which
// would list the names of a sibling ("sales" lists "salesforce/…").
//
// The bytes are compact JSON and the same for the same locations. It
// returns a *LocationError if loc is not valid as ParseLocation would
// return it or meta is neither zero nor valid as ParseMetadataLocation
// would return it, and ErrPolicyTooLarge beyond MaxPolicyLength.
func SessionPolicyWithMetadata(loc, meta Location) ([]byte, error) {
	if err := loc.check(); err != nil {
		return nil, &LocationError{Location: loc.String(), Err: err}
	}
	hasMeta := meta != Location{}
	if hasMeta {
		if err := meta.checkMetadata(); err != nil {
			return nil, &LocationError{Location: meta.String(), Err: err}
		}
	}
	const arn = "arn:aws:s3:::"
	objects := []string{arn + loc.Bucket + "/" + loc.Prefix + "*"}
	buckets := []string{arn + loc.Bucket}
	if hasMeta {
		objects = append(objects, arn+meta.Bucket+"/"+meta.Prefix+"*")
		if meta.Bucket != loc.Bucket {
			buckets = append(buckets, arn+meta.Bucket)
		}
	}
	list := func(l Location) policyStatement {
		return policyStatement{Effect: "Allow", Action: "s3:ListBucket", Resource: arn + l.Bucket,
			Condition: map[string]map[string]string{"StringLike": {"s3:prefix": l.Prefix + "*"}}}
	}
	statements := []policyStatement{
		{Effect: "Allow", Action: []string{"s3:GetObject", "s3:GetObjectVersion"}, Resource: oneOrMore(objects)},
		list(loc),
	}
	if hasMeta {
		statements = append(statements, list(meta))
	}
	statements = append(statements, policyStatement{Effect: "Allow", Action: "s3:GetBucketLocation", Resource: oneOrMore(buckets)})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(policyDocument{Version: "2012-10-17", Statement: statements}); err != nil {
		return nil, fmt.Errorf("vending: encode session policy: %w", err)
	}
	p := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(p) > MaxPolicyLength {
		return nil, fmt.Errorf("%w: %d characters for %s", ErrPolicyTooLarge, len(p), loc)
	}
	return p, nil
}
