package vending

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"
)

// stsServer is a small AssumeRole endpoint speaking STS's Query protocol: it
// parses the form-encoded request, keeps it, and answers AssumeRoleResponse,
// or an ErrorResponse: PackedPolicyTooLarge for a policy longer than
// maxPolicy, or refuse's code when set.
type stsServer struct {
	now       time.Time
	maxPolicy int
	refuse    string

	mu   sync.Mutex
	reqs []url.Values
}

func (s *stsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Authorization") == "" {
		http.Error(w, "want a signed POST", http.StatusBadRequest)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f := r.PostForm
	s.mu.Lock()
	s.reqs = append(s.reqs, f)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	if f.Get("Action") != "AssumeRole" || f.Get("Version") != "2011-06-15" {
		stsError(w, "InvalidAction", "not AssumeRole")
		return
	}
	switch {
	case s.refuse != "":
		stsError(w, s.refuse, "refused by the test")
		return
	case len(f.Get("Policy")) > s.maxPolicy:
		stsError(w, "PackedPolicyTooLarge", "Packed size of the policy and tags exceeds the limit")
		return
	}
	secs, err := strconv.Atoi(f.Get("DurationSeconds"))
	if err != nil {
		stsError(w, "ValidationError", "DurationSeconds")
		return
	}
	esc := func(v string) string {
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(v))
		return b.String()
	}
	fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<AssumeRoleResult>
<AssumedRoleUser><Arn>%s/%s</Arn><AssumedRoleId>AROAEXAMPLE:%s</AssumedRoleId></AssumedRoleUser>
<Credentials><AccessKeyId>ASIAEXAMPLE</AccessKeyId><SecretAccessKey>secret</SecretAccessKey><SessionToken>token</SessionToken><Expiration>%s</Expiration></Credentials>
<PackedPolicySize>%d</PackedPolicySize>
</AssumeRoleResult>
<ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>
</AssumeRoleResponse>`,
		esc(f.Get("RoleArn")), esc(f.Get("RoleSessionName")), esc(f.Get("RoleSessionName")),
		s.now.Add(time.Duration(secs)*time.Second).Format(time.RFC3339), 100*len(f.Get("Policy"))/s.maxPolicy)
}

func stsError(w http.ResponseWriter, code, msg string) {
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>req-2</RequestId></ErrorResponse>`, code, msg)
}

func (s *stsServer) requests() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.reqs...)
}

// startSTS starts s on 127.0.0.1 and returns a real sts.Client pointed at it.
func startSTS(t testing.TB, s *stsServer) *sts.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return sts.New(sts.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		HTTPClient:       srv.Client(),
		RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDLAKE", SecretAccessKey: "lake-secret", Source: "test"}, nil
		}),
	})
}

func TestSTSVendsOverQueryProtocol(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	srv := &stsServer{now: now, maxPolicy: MaxPolicyLength}
	v, err := New(NewSTS(startSTS(t, srv)), NewGuard([]string{"lake-data"}),
		Options{RoleARN: testRole, Duration: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Vend(context.Background(), request("orders", "s3://tenant-data/acme/orders/"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	f := reqs[0]
	policy, _ := SessionPolicy(Location{Bucket: "tenant-data", Prefix: "acme/orders/"})
	want := map[string]string{
		"Action":          "AssumeRole",
		"RoleArn":         testRole,
		"RoleSessionName": SessionName("acme", "sales", "orders"),
		"Policy":          string(policy),
		"DurationSeconds": "3600",
	}
	tags := append(SessionTags("acme", "sales", "orders"), LocationTags(Location{Bucket: "tenant-data", Prefix: "acme/orders/"})...)
	for i, tag := range tags {
		want[fmt.Sprintf("Tags.member.%d.Key", i+1)] = tag.Key
		want[fmt.Sprintf("Tags.member.%d.Value", i+1)] = tag.Value
	}
	for k, w := range want {
		if g := f.Get(k); g != w {
			t.Errorf("%s = %q, want %q", k, g, w)
		}
	}
	for k := range f {
		if _, ok := want[k]; !ok && k != "Version" {
			t.Errorf("unexpected parameter %s = %q", k, f.Get(k))
		}
	}
	c := got.Credentials
	if c.AccessKeyID != "ASIAEXAMPLE" || c.SecretAccessKey != "secret" || c.SessionToken != "token" {
		t.Errorf("credentials = %+v, want ASIAEXAMPLE/secret/token", c)
	}
	if wantExp := now.Add(time.Hour); !c.Expiration.Equal(wantExp) {
		t.Errorf("expiration = %v, want %v", c.Expiration, wantExp)
	}
	if wantSize := 100 * len(policy) / MaxPolicyLength; c.PackedPolicySize != wantSize || wantSize == 0 {
		t.Errorf("PackedPolicySize = %d, want %d (non-zero)", c.PackedPolicySize, wantSize)
	}
}

func TestSTSSendsExternalIDAndSourceIdentity(t *testing.T) {
	srv := &stsServer{now: time.Now(), maxPolicy: MaxPolicyLength}
	s := NewSTS(startSTS(t, srv), WithExternalID("lake-ext"), WithSourceIdentity("alice"))
	if _, err := s.AssumeRole(context.Background(), AssumeInput{RoleARN: testRole, SessionName: "lake-x", Duration: MinDuration}); err != nil {
		t.Fatal(err)
	}
	f := srv.requests()[0]
	if got := f.Get("ExternalId"); got != "lake-ext" {
		t.Errorf("ExternalId = %q, want lake-ext", got)
	}
	if got := f.Get("SourceIdentity"); got != "alice" {
		t.Errorf("SourceIdentity = %q, want alice", got)
	}
	if _, ok := f["Policy"]; ok {
		t.Errorf("Policy sent for an input without one: %q", f.Get("Policy"))
	}
}

func TestSTSErrorsKeepTheirCode(t *testing.T) {
	tests := []struct {
		name      string
		maxPolicy int
		refuse    string
		code      string
		kind      error
	}{
		{name: "policy too large", maxPolicy: 100, code: "PackedPolicyTooLarge", kind: ErrPolicyTooLarge},
		{name: "access denied", maxPolicy: MaxPolicyLength, refuse: "AccessDenied", code: "AccessDenied", kind: ErrAccessDenied},
		{name: "other", maxPolicy: MaxPolicyLength, refuse: "RegionDisabledException", code: "RegionDisabledException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &stsServer{now: time.Now(), maxPolicy: tt.maxPolicy, refuse: tt.refuse}
			v, err := New(NewSTS(startSTS(t, srv)), NewGuard(nil), Options{RoleARN: testRole})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Vend(context.Background(), request("orders", "s3://tenant-data/acme/orders/"))
			var se *STSError
			if !errors.As(err, &se) {
				t.Fatalf("Vend error = %v, want an *STSError", err)
			}
			if se.Code != tt.code || se.RoleARN != testRole {
				t.Errorf("STSError code %q role %q, want %q %q", se.Code, se.RoleARN, tt.code, testRole)
			}
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tt.code {
				t.Errorf("smithy.APIError = %v, want code %s", api, tt.code)
			}
			for _, kind := range []error{ErrPolicyTooLarge, ErrAccessDenied} {
				if got, want := errors.Is(err, kind), kind == tt.kind; got != want {
					t.Errorf("errors.Is(err, %v) = %v, want %v", kind, got, want)
				}
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "vending: ") || strings.Count(msg, "vending:") != 1 {
				t.Errorf("error %q: want one vending: prefix", msg)
			}
			if tt.code == "PackedPolicyTooLarge" {
				var typed *types.PackedPolicyTooLargeException
				if !errors.As(err, &typed) {
					t.Errorf("error %v: want a *types.PackedPolicyTooLargeException in the chain", err)
				}
			}
			if v.Len() != 0 {
				t.Errorf("cached %d after a failure, want 0", v.Len())
			}
		})
	}
}
