package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// DefaultRoleARN is the role an STS stand-in lets callers assume unless its
// RoleARN is changed.
const DefaultRoleARN = "arn:aws:iam::123456789012:role/lake-data-reader"

// STS's limits on AssumeRole's parameters, as its API reference states them.
const (
	stsMinDuration     = 900   // DurationSeconds
	stsMaxDuration     = 43200 // DurationSeconds
	stsMaxPolicy       = 2048  // Policy, characters of plaintext
	stsMaxTags         = 50    // Tags.member.N
	stsMaxTagKey       = 128
	stsMaxTagValue     = 256
	stsDefaultDuration = 3600 // DurationSeconds when absent
)

var (
	roleARNPattern     = regexp.MustCompile(`^arn:aws:iam::(\d{12}):role/(?:[\x21-\x7e]*/)?([\w+=,.@-]{1,64})$`)
	sessionNamePattern = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	externalIDPattern  = regexp.MustCompile(`^[\w+=,.@:/-]+$`) // and 2–1224 long
	tagPattern         = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)
	stsAuthPattern     = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=[^/]+/\d{8}/[a-z0-9-]+/sts/aws4_request, ?SignedHeaders=[^,]+, ?Signature=[0-9a-f]{64}$`)
)

// STS is a stand-in for AWS STS's AssumeRole, speaking its Query protocol
// (a form-encoded POST, Version 2011-06-15, answered in XML) over an
// httptest server, with an IAMS3 behind it to enforce what it grants.
//
// It checks a request as STS would: an Authorization header signed with
// AWS4-HMAC-SHA256 for service "sts" (its shape only: the signature is not
// verified); RoleArn present and an IAM role ARN; RoleSessionName 2–64
// characters of [\w+=,.@-]; DurationSeconds 900–43200 (3600 when absent) and
// at most MaxSessionDuration; Policy at most 2,048 characters and valid JSON;
// at most 50 Tags.member.N with keys of 1–128 and values of up to 256
// characters STS allows, keys unique ignoring case and not starting with
// "aws:"; ExternalId and SourceIdentity in STS's shapes. Refusals are STS's
// ErrorResponse XML: ValidationError, MalformedPolicyDocument,
// PackedPolicyTooLarge (400), AccessDenied (403) for a RoleArn other than
// RoleARN, MissingAuthenticationToken or IncompleteSignature (403) for a
// missing or malformed signature.
//
// Otherwise it makes a versitygw IAM user named after the session
// (RoleSessionName, cut to fit, "-" and a number unique in the test binary),
// tagged with the session tags, attaches the request's Policy as the user's
// inline policy (or RolePolicy when the request has none), creates an access
// key for it, and answers AssumeRoleResponse with that key, Expiration (now
// plus the duration), AssumedRoleUser (arn:aws:sts::<account>:assumed-role/
// <role>/<session>) and PackedPolicySize. The gateway then evaluates that
// inline policy on every S3 request made with the key, so each allow and
// deny is versitygw's.
//
// What it models and what it does not:
//   - The session's permissions are its policy alone. On AWS they are the
//     role's policies intersected with the session policy; here the role is
//     taken to allow at least what the session policy asks, so a session
//     policy is the whole grant. RolePolicy is used only without one.
//   - The answer has no SessionToken: versitygw refuses any
//     X-Amz-Security-Token sent with a long-term (AKIA…) key, and the key is
//     an IAM user's. Clients send none when the token is empty.
//   - Expiration is reported, not enforced: the key works until the IAMS3
//     stops.
//   - PackedPolicySize is a model: the characters of the policy without
//     insignificant whitespace plus those of every tag key and value, as a
//     percentage (rounded up) of PackedPolicyLimit; above 100 the request
//     is refused as PackedPolicyTooLarge. AWS packs (compresses) policy and
//     tags into a binary format it does not document, so this figure is
//     not AWS's, only of the same kind and limit.
//
// Change the exported fields only while no request is in flight (they are
// read by each request). An STS is safe for concurrent use.
type STS struct {
	// URL is the endpoint, for the SDK's BaseEndpoint.
	URL string
	// RoleARN is the one role AssumeRole may assume; another valid role
	// ARN is AccessDenied. Its account is the account of every ARN the
	// answer names. Default DefaultRoleARN.
	RoleARN string
	// RolePolicy is the inline policy a session without a Policy gets.
	// Default "": no policy at all, so the session reads nothing (the
	// gateway's buckets grant an IAM user nothing by ACL).
	RolePolicy string
	// MaxSessionDuration is the role's; a longer DurationSeconds is a
	// ValidationError. Default 12 h.
	MaxSessionDuration time.Duration
	// PackedPolicyLimit is the size the PackedPolicySize model measures
	// against. Default 2,048.
	PackedPolicyLimit int

	iams3 *IAMS3
	iam   *iam.Client

	mu   sync.Mutex
	reqs []AssumeRoleRequest
}

// AssumeRoleRequest is one AssumeRole request the stand-in received, parsed,
// and its outcome.
type AssumeRoleRequest struct {
	RoleARN         string
	RoleSessionName string
	Policy          string // empty when the request had none
	DurationSeconds int    // as sent; 0 when absent
	Tags            []STSTag
	ExternalID      string
	SourceIdentity  string
	Form            map[string][]string // every form field as sent

	// Code is the error code of a refusal, empty when credentials were
	// issued to UserName as AccessKeyID.
	Code        string
	UserName    string
	AccessKeyID string
	// PackedPolicySize is the modelled percentage (see STS).
	PackedPolicySize int
}

// STSTag is a session tag of an AssumeRole request.
type STSTag struct {
	Key, Value string
}

// StartSTS starts an AssumeRole stand-in minting users in iams3's IAM
// service, for tb alone.
func StartSTS(tb testing.TB, iams3 *IAMS3) *STS {
	tb.Helper()
	s := NewSTS(iams3)
	srv := httptest.NewServer(s)
	tb.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// NewSTS returns an AssumeRole stand-in minting users in iams3's IAM
// service, as an http.Handler for the caller to serve (set URL to where it
// is served), for a program outside a test (the benchmark driver);
// StartSTS serves one for a test.
func NewSTS(iams3 *IAMS3) *STS {
	return &STS{
		RoleARN:            DefaultRoleARN,
		MaxSessionDuration: 12 * time.Hour,
		PackedPolicyLimit:  stsMaxPolicy,
		iams3:              iams3,
		iam:                iams3.IAMClient(),
	}
}

// Requests returns a copy of every AssumeRole request received so far, in
// order.
func (s *STS) Requests() []AssumeRoleRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AssumeRoleRequest(nil), s.reqs...)
}

// Count returns the number of AssumeRole requests received so far, refused
// or not.
func (s *STS) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// stsError is a refusal in STS's terms.
type stsError struct {
	status  int
	code    string
	message string
}

func (e *stsError) Error() string { return e.code + ": " + e.message }

func validation(format string, args ...any) *stsError {
	return &stsError{http.StatusBadRequest, "ValidationError", fmt.Sprintf(format, args...)}
}

// ServeHTTP answers one AssumeRole request.
func (s *STS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeSTSError(w, &stsError{http.StatusBadRequest, "InvalidAction", "AssumeRole takes a form-encoded POST"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		writeSTSError(w, &stsError{http.StatusBadRequest, "MalformedQueryString", err.Error()})
		return
	}
	f := r.PostForm
	if f.Get("Action") != "AssumeRole" || f.Get("Version") != "2011-06-15" {
		writeSTSError(w, &stsError{http.StatusBadRequest, "InvalidAction",
			fmt.Sprintf("Could not find operation %s for version %s", f.Get("Action"), f.Get("Version"))})
		return
	}
	req := AssumeRoleRequest{
		RoleARN:         f.Get("RoleArn"),
		RoleSessionName: f.Get("RoleSessionName"),
		Policy:          f.Get("Policy"),
		ExternalID:      f.Get("ExternalId"),
		SourceIdentity:  f.Get("SourceIdentity"),
		Form:            f,
	}
	out, err := s.assume(r.Context(), r.Header.Get("Authorization"), &req)
	if err != nil {
		var se *stsError
		if !errors.As(err, &se) {
			se = &stsError{http.StatusInternalServerError, "InternalFailure", err.Error()}
		}
		req.Code = se.code
		s.record(req)
		writeSTSError(w, se)
		return
	}
	s.record(req)
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write(out)
}

func (s *STS) record(r AssumeRoleRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

// assume checks req, mints its user and returns the answer's XML.
func (s *STS) assume(ctx context.Context, authorization string, req *AssumeRoleRequest) ([]byte, error) {
	switch {
	case authorization == "":
		return nil, &stsError{http.StatusForbidden, "MissingAuthenticationToken", "Request is missing Authentication Token"}
	case !stsAuthPattern.MatchString(authorization):
		return nil, &stsError{http.StatusForbidden, "IncompleteSignature", "Authorization header is not AWS4-HMAC-SHA256 for service sts"}
	}
	role, err := s.checkInput(req)
	if err != nil {
		return nil, err
	}
	if req.RoleARN != s.RoleARN {
		return nil, &stsError{http.StatusForbidden, "AccessDenied", fmt.Sprintf(
			"User: arn:aws:iam::%s:user/lake is not authorized to perform: sts:AssumeRole on resource: %s", role.account, req.RoleARN)}
	}
	duration := req.DurationSeconds
	if duration == 0 {
		duration = stsDefaultDuration
	}
	if time.Duration(duration)*time.Second > s.MaxSessionDuration {
		return nil, validation("The requested DurationSeconds exceeds the MaxSessionDuration set for this role.")
	}
	packed := 0
	if req.Policy != "" || len(req.Tags) > 0 {
		n := 0
		if req.Policy != "" {
			n = compactLength(req.Policy)
		}
		for _, t := range req.Tags {
			n += len(t.Key) + len(t.Value)
		}
		packed = (100*n + s.PackedPolicyLimit - 1) / s.PackedPolicyLimit
		req.PackedPolicySize = packed
		if packed > 100 {
			return nil, &stsError{http.StatusBadRequest, "PackedPolicyTooLarge", fmt.Sprintf(
				"Packed size of the session policy and tags (modelled: %d%% of %d characters) exceeds the limit", packed, s.PackedPolicyLimit)}
		}
	}

	user, key, err := s.mint(ctx, req)
	if err != nil {
		return nil, err
	}
	req.UserName, req.AccessKeyID = user, aws.ToString(key.AccessKeyId)
	return assumeRoleXML(req, role, key, time.Now().Add(time.Duration(duration)*time.Second), packed)
}

type roleName struct{ account, name string }

// checkInput validates req's fields (and fills its duration and tags from
// the form) as STS does, returning the role's account and name.
func (s *STS) checkInput(req *AssumeRoleRequest) (roleName, error) {
	f := req.Form
	if _, ok := f["RoleArn"]; !ok {
		return roleName{}, validation("1 validation error detected: Value null at 'roleArn' failed to satisfy constraint: Member must not be null")
	}
	m := roleARNPattern.FindStringSubmatch(req.RoleARN)
	if m == nil || len(req.RoleARN) < 20 || len(req.RoleARN) > 2048 {
		return roleName{}, validation("%s is invalid", req.RoleARN)
	}
	role := roleName{account: m[1], name: m[2]}
	if _, ok := f["RoleSessionName"]; !ok {
		return roleName{}, validation("1 validation error detected: Value null at 'roleSessionName' failed to satisfy constraint: Member must not be null")
	}
	if !sessionNamePattern.MatchString(req.RoleSessionName) {
		return roleName{}, validation("1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must have length between 2 and 64 and satisfy regular expression pattern: [\\w+=,.@-]*", req.RoleSessionName)
	}
	if v, ok := f["DurationSeconds"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < stsMinDuration || n > stsMaxDuration {
			return roleName{}, validation("1 validation error detected: Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must have value between %d and %d", v[0], stsMinDuration, stsMaxDuration)
		}
		req.DurationSeconds = n
	}
	if _, ok := f["Policy"]; ok {
		if n := utf8.RuneCountInString(req.Policy); n < 1 || n > stsMaxPolicy {
			return roleName{}, validation("1 validation error detected: Value at 'policy' failed to satisfy constraint: Member must have length between 1 and %d (it has %d)", stsMaxPolicy, n)
		}
		if !json.Valid([]byte(req.Policy)) {
			return roleName{}, &stsError{http.StatusBadRequest, "MalformedPolicyDocument", "The policy is not valid JSON"}
		}
	}
	if _, ok := f["ExternalId"]; ok && (len(req.ExternalID) < 2 || len(req.ExternalID) > 1224 || !externalIDPattern.MatchString(req.ExternalID)) {
		return roleName{}, validation("1 validation error detected: Value at 'externalId' failed to satisfy constraint: Member must have length between 2 and 1224 and satisfy regular expression pattern: [\\w+=,.@:\\/-]*")
	}
	if _, ok := f["SourceIdentity"]; ok && (!sessionNamePattern.MatchString(req.SourceIdentity) || strings.HasPrefix(strings.ToLower(req.SourceIdentity), "aws:")) {
		return roleName{}, validation("1 validation error detected: Value at 'sourceIdentity' failed to satisfy constraint: Member must have length between 2 and 64, satisfy regular expression pattern: [\\w+=,.@-]* and not start with aws:")
	}
	tags, err := parseTags(f)
	if err != nil {
		return roleName{}, err
	}
	req.Tags = tags
	return role, nil
}

// parseTags reads Tags.member.N.Key/Value (N from 1, consecutive) and checks
// them against STS's limits.
func parseTags(f map[string][]string) ([]STSTag, error) {
	var tags []STSTag
	seen := map[string]bool{}
	for n := 1; ; n++ {
		key, hasKey := f[fmt.Sprintf("Tags.member.%d.Key", n)]
		value, hasValue := f[fmt.Sprintf("Tags.member.%d.Value", n)]
		if !hasKey && !hasValue {
			break
		}
		if !hasKey {
			return nil, validation("1 validation error detected: Value null at 'tags.%d.member.key' failed to satisfy constraint: Member must not be null", n)
		}
		if !hasValue {
			return nil, validation("1 validation error detected: Value null at 'tags.%d.member.value' failed to satisfy constraint: Member must not be null", n)
		}
		t := STSTag{Key: key[0], Value: value[0]}
		switch k := utf8.RuneCountInString(t.Key); {
		case k < 1 || k > stsMaxTagKey || !tagPattern.MatchString(t.Key):
			return nil, validation("1 validation error detected: Value '%s' at 'tags.%d.member.key' failed to satisfy constraint: Member must have length between 1 and %d and satisfy regular expression pattern: [\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]+", t.Key, n, stsMaxTagKey)
		case utf8.RuneCountInString(t.Value) > stsMaxTagValue || !tagPattern.MatchString(t.Value):
			return nil, validation("1 validation error detected: Value '%s' at 'tags.%d.member.value' failed to satisfy constraint: Member must have length less than or equal to %d and satisfy regular expression pattern: [\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*", t.Value, n, stsMaxTagValue)
		case strings.HasPrefix(strings.ToLower(t.Key), "aws:"):
			return nil, validation("Tag keys cannot start with 'aws:'")
		case seen[strings.ToLower(t.Key)]:
			return nil, validation("Duplicate tag keys found. Please note that Tag keys are case insensitive.")
		}
		seen[strings.ToLower(t.Key)] = true
		tags = append(tags, t)
	}
	if len(tags) > stsMaxTags {
		return nil, validation("1 validation error detected: Value at 'tags' failed to satisfy constraint: Member must have length less than or equal to %d", stsMaxTags)
	}
	return tags, nil
}

// compactLength is the length of policy without insignificant whitespace.
func compactLength(policy string) int {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(policy)); err != nil {
		return len(policy)
	}
	return b.Len()
}

// mint makes the session's IAM user with its inline policy and an access
// key, in the IAMS3's IAM service.
func (s *STS) mint(ctx context.Context, req *AssumeRoleRequest) (string, *iamtypes.AccessKey, error) {
	suffix := "-" + strconv.FormatInt(nextSeq(), 10)
	name := req.RoleSessionName
	if len(name)+len(suffix) > 64 {
		name = name[:64-len(suffix)]
	}
	name += suffix
	var tags []iamtypes.Tag
	for _, t := range req.Tags {
		tags = append(tags, iamtypes.Tag{Key: aws.String(t.Key), Value: aws.String(t.Value)})
	}
	if _, err := s.iam.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String(name), Tags: tags}); err != nil {
		return "", nil, fmt.Errorf("versitygw CreateUser %s: %w", name, err)
	}
	policy := req.Policy
	if policy == "" {
		policy = s.RolePolicy
	}
	if policy != "" {
		_, err := s.iam.PutUserPolicy(ctx, &iam.PutUserPolicyInput{
			UserName: aws.String(name), PolicyName: aws.String("session"), PolicyDocument: aws.String(policy),
		})
		if err != nil {
			return "", nil, fmt.Errorf("versitygw PutUserPolicy %s: %w", name, err)
		}
	}
	out, err := s.iam.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String(name)})
	if err != nil {
		return "", nil, fmt.Errorf("versitygw CreateAccessKey %s: %w", name, err)
	}
	if out.AccessKey == nil {
		return "", nil, fmt.Errorf("versitygw CreateAccessKey %s: no key in the answer", name)
	}
	return name, out.AccessKey, nil
}

type assumeRoleResponse struct {
	XMLName  xml.Name         `xml:"https://sts.amazonaws.com/doc/2011-06-15/ AssumeRoleResponse"`
	Result   assumeRoleResult `xml:"AssumeRoleResult"`
	Metadata struct {
		RequestID string `xml:"RequestId"`
	} `xml:"ResponseMetadata"`
}

type assumeRoleResult struct {
	AssumedRoleUser struct {
		Arn           string
		AssumedRoleID string `xml:"AssumedRoleId"`
	}
	Credentials struct {
		AccessKeyID     string `xml:"AccessKeyId"`
		SecretAccessKey string
		Expiration      string
	}
	PackedPolicySize *int   `xml:",omitempty"`
	SourceIdentity   string `xml:",omitempty"`
}

func assumeRoleXML(req *AssumeRoleRequest, role roleName, key *iamtypes.AccessKey, expires time.Time, packed int) ([]byte, error) {
	var resp assumeRoleResponse
	res := &resp.Result
	res.AssumedRoleUser.Arn = fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", role.account, role.name, req.RoleSessionName)
	res.AssumedRoleUser.AssumedRoleID = "AROA" + strings.ToUpper(shortID(req.RoleARN)) + ":" + req.RoleSessionName
	res.Credentials.AccessKeyID = aws.ToString(key.AccessKeyId)
	res.Credentials.SecretAccessKey = aws.ToString(key.SecretAccessKey)
	res.Credentials.Expiration = expires.UTC().Format(time.RFC3339)
	if req.Policy != "" || len(req.Tags) > 0 {
		res.PackedPolicySize = &packed
	}
	res.SourceIdentity = req.SourceIdentity
	resp.Metadata.RequestID = shortID(req.RoleSessionName + time.Now().String())
	b, err := xml.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}

func writeSTSError(w http.ResponseWriter, e *stsError) {
	typ := "Sender"
	if e.status >= 500 {
		typ = "Receiver"
	}
	var resp struct {
		XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ ErrorResponse"`
		Error   struct {
			Type    string
			Code    string
			Message string
		}
		RequestID string `xml:"RequestId"`
	}
	resp.Error.Type, resp.Error.Code, resp.Error.Message = typ, e.code, e.message
	resp.RequestID = shortID(e.message + time.Now().String())
	b, _ := xml.Marshal(resp)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.status)
	_, _ = w.Write(append([]byte(xml.Header), b...))
}

func shortID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
