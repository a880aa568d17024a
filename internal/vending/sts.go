package vending

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"
)

// ErrAccessDenied is STS's AccessDenied: lake may not assume the role (its
// own configuration, not the caller's fault). errors.Is matches it, and
// ErrPolicyTooLarge for STS's PackedPolicyTooLarge, on an *STSError.
var ErrAccessDenied = errors.New("vending: not allowed to assume the role")

// stsAPI is the one method of aws-sdk-go-v2's *sts.Client that STS calls.
type stsAPI interface {
	AssumeRole(ctx context.Context, in *sts.AssumeRoleInput, optFns ...func(*sts.Options)) (*sts.AssumeRoleOutput, error)
}

// STS serves Vendor's AssumeRole calls with AWS STS (or anything speaking
// its API, through the client's BaseEndpoint). It is safe for concurrent use
// if its client is, as *sts.Client is.
type STS struct {
	client stsAPI
	// ExternalID and SourceIdentity, if not empty, are sent with every
	// AssumeRole (the role's trust policy may require them).
	externalID     string
	sourceIdentity string
}

var _ assumer = (*STS)(nil)

// STSOption configures an STS.
type STSOption func(*STS)

// WithExternalID sends id as AssumeRole's ExternalId.
func WithExternalID(id string) STSOption { return func(s *STS) { s.externalID = id } }

// WithSourceIdentity sends id as AssumeRole's SourceIdentity.
func WithSourceIdentity(id string) STSOption { return func(s *STS) { s.sourceIdentity = id } }

// NewSTS returns an STS calling c, usually an *sts.Client.
func NewSTS(c stsAPI, opts ...STSOption) *STS {
	s := &STS{client: c}
	for _, o := range opts {
		o(s)
	}
	return s
}

// STSError is an AssumeRole that STS refused or that did not reach it. Code
// is STS's error code ("PackedPolicyTooLarge", "AccessDenied", …), empty if
// there was no answer; the SDK's error stays in the chain, so errors.As finds
// its smithy.APIError and its typed exception (*types.PackedPolicyTooLargeException).
// errors.Is matches ErrPolicyTooLarge and ErrAccessDenied by Code.
type STSError struct {
	RoleARN     string
	SessionName string
	Code        string
	Err         error
}

func (e *STSError) Error() string {
	return fmt.Sprintf("vending: sts AssumeRole of %s as %s: %v", e.RoleARN, e.SessionName, e.Err)
}

// Unwrap returns the SDK's error.
func (e *STSError) Unwrap() error { return e.Err }

// Is reports whether e is of the kind target names.
func (e *STSError) Is(target error) bool {
	switch target {
	case ErrPolicyTooLarge:
		return e.Code == "PackedPolicyTooLarge"
	case ErrAccessDenied:
		return e.Code == "AccessDenied"
	}
	return false
}

// AssumeRole calls STS AssumeRole with in's role, session name, policy, tags
// and duration, and returns the credentials, their expiration and the packed
// policy size. Errors are *STSError.
func (s *STS) AssumeRole(ctx context.Context, in AssumeInput) (Credentials, error) {
	req := &sts.AssumeRoleInput{
		RoleArn:         aws.String(in.RoleARN),
		RoleSessionName: aws.String(in.SessionName),
		DurationSeconds: aws.Int32(int32(in.Duration.Seconds())),
	}
	if len(in.Policy) > 0 {
		req.Policy = aws.String(string(in.Policy))
	}
	for _, t := range in.Tags {
		req.Tags = append(req.Tags, types.Tag{Key: aws.String(t.Key), Value: aws.String(t.Value)})
	}
	if s.externalID != "" {
		req.ExternalId = aws.String(s.externalID)
	}
	if s.sourceIdentity != "" {
		req.SourceIdentity = aws.String(s.sourceIdentity)
	}
	out, err := s.client.AssumeRole(ctx, req)
	if err == nil && (out == nil || out.Credentials == nil || out.Credentials.Expiration == nil) {
		err = errors.New("answer without credentials")
	}
	if err != nil {
		e := &STSError{RoleARN: in.RoleARN, SessionName: in.SessionName, Err: err}
		var api smithy.APIError
		if errors.As(err, &api) {
			e.Code = api.ErrorCode()
		}
		return Credentials{}, e
	}
	c := out.Credentials
	creds := Credentials{
		AccessKeyID:     aws.ToString(c.AccessKeyId),
		SecretAccessKey: aws.ToString(c.SecretAccessKey),
		SessionToken:    aws.ToString(c.SessionToken),
		Expiration:      *c.Expiration,
	}
	// STS still answers PackedPolicySize, the one figure about the policy
	// and tags; SessionTokenUtilization, its stated replacement, measures
	// the token instead.
	//lint:ignore SA1019 the packed policy size is what Credentials reports
	if p := out.PackedPolicySize; p != nil {
		creds.PackedPolicySize = int(*p)
	}
	return creds, nil
}
