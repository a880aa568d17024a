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
const LongestPolicyLength = 1163

// ErrPolicyTooLarge is returned by SessionPolicy when the policy would exceed
// MaxPolicyLength; ParseLocation's length limit keeps every location it
// accepts well under it. An *STSError for STS's PackedPolicyTooLarge (policy
// and tags together over the packed limit) matches it too.
var ErrPolicyTooLarge = fmt.Errorf("vending: session policy longer than STS's %d-character limit", MaxPolicyLength)

type policyDocument struct {
	Version   string
	Statement []policyStatement
}

type policyStatement struct {
	Sid       string
	Effect    string
	Action    []string
	Resource  []string
	Condition map[string]map[string][]string `json:",omitempty"`
}

// SessionPolicy returns the inline session policy for reading loc and
// nothing else, in the shape Polaris uses: s3:GetObject and
// s3:GetObjectVersion on the objects under the prefix, s3:ListBucket on the
// bucket only for listings whose s3:prefix is under the prefix, and
// s3:GetBucketLocation. The listing condition names "prefix/" and
// "prefix/*", never the prefix without its "/", which would list the names of
// a sibling ("sales" lists "salesforce/…").
//
// The bytes are compact JSON and the same for the same Location. It returns a
// *LocationError if loc is not valid as ParseLocation would return it, and
// ErrPolicyTooLarge beyond MaxPolicyLength.
func SessionPolicy(loc Location) ([]byte, error) {
	if err := loc.check(); err != nil {
		return nil, &LocationError{Location: loc.String(), Err: err}
	}
	bucketARN := "arn:aws:s3:::" + loc.Bucket
	doc := policyDocument{
		Version: "2012-10-17",
		Statement: []policyStatement{
			{
				Sid:      "ReadTableObjects",
				Effect:   "Allow",
				Action:   []string{"s3:GetObject", "s3:GetObjectVersion"},
				Resource: []string{bucketARN + "/" + loc.Prefix + "*"},
			},
			{
				Sid:      "ListTablePrefix",
				Effect:   "Allow",
				Action:   []string{"s3:ListBucket"},
				Resource: []string{bucketARN},
				Condition: map[string]map[string][]string{
					"StringLike": {"s3:prefix": {loc.Prefix, loc.Prefix + "*"}},
				},
			},
			{
				Sid:      "LocateBucket",
				Effect:   "Allow",
				Action:   []string{"s3:GetBucketLocation"},
				Resource: []string{bucketARN},
			},
		},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("vending: encode session policy: %w", err)
	}
	p := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(p) > MaxPolicyLength {
		return nil, fmt.Errorf("%w: %d characters for %s", ErrPolicyTooLarge, len(p), loc)
	}
	return p, nil
}
