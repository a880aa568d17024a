package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"
)

func stsClient(s *STS) *sts.Client {
	return sts.New(sts.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIACALLER", "caller-secret", ""),
	})
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func TestSTSRefusesAsSTSWould(t *testing.T) {
	// Refusals never reach the IAM service: none is started.
	s := StartSTS(t, &IAMS3{})
	c := stsClient(s)
	tags := func(n int) []types.Tag {
		var ts []types.Tag
		for i := range n {
			ts = append(ts, types.Tag{Key: aws.String(fmt.Sprintf("k%d", i)), Value: aws.String("v")})
		}
		return ts
	}
	valid := func() *sts.AssumeRoleInput {
		return &sts.AssumeRoleInput{RoleArn: aws.String(DefaultRoleARN), RoleSessionName: aws.String("lake-acme-0123")}
	}
	bigPolicy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/` + strings.Repeat("p", 1900) + `"}]}`
	tests := []struct {
		name string
		edit func(*sts.AssumeRoleInput)
		want string
	}{
		{"role not an IAM role ARN", func(in *sts.AssumeRoleInput) { in.RoleArn = aws.String("arn:aws:iam::123:role/x") }, "ValidationError"},
		{"a user ARN", func(in *sts.AssumeRoleInput) { in.RoleArn = aws.String("arn:aws:iam::123456789012:user/lake") }, "ValidationError"},
		{"another role", func(in *sts.AssumeRoleInput) { in.RoleArn = aws.String("arn:aws:iam::123456789012:role/admin") }, "AccessDenied"},
		{"session name of 1", func(in *sts.AssumeRoleInput) { in.RoleSessionName = aws.String("a") }, "ValidationError"},
		{"session name of 65", func(in *sts.AssumeRoleInput) { in.RoleSessionName = aws.String(strings.Repeat("a", 65)) }, "ValidationError"},
		{"session name with a space", func(in *sts.AssumeRoleInput) { in.RoleSessionName = aws.String("lake acme") }, "ValidationError"},
		{"duration 899", func(in *sts.AssumeRoleInput) { in.DurationSeconds = aws.Int32(899) }, "ValidationError"},
		{"duration 43201", func(in *sts.AssumeRoleInput) { in.DurationSeconds = aws.Int32(43201) }, "ValidationError"},
		{"policy of 2049", func(in *sts.AssumeRoleInput) { in.Policy = aws.String(`"` + strings.Repeat("p", 2047) + `"`) }, "ValidationError"},
		{"policy not JSON", func(in *sts.AssumeRoleInput) { in.Policy = aws.String(`{"Version":`) }, "MalformedPolicyDocument"},
		{"packed policy and tags over 100%", func(in *sts.AssumeRoleInput) {
			in.Policy = aws.String(bigPolicy)
			in.Tags = []types.Tag{{Key: aws.String("lake:prefix"), Value: aws.String(strings.Repeat("p", 256))}}
		}, "PackedPolicyTooLarge"},
		{"tag key aws:", func(in *sts.AssumeRoleInput) {
			in.Tags = []types.Tag{{Key: aws.String("aws:x"), Value: aws.String("v")}}
		}, "ValidationError"},
		{"tag keys equal ignoring case", func(in *sts.AssumeRoleInput) {
			in.Tags = []types.Tag{{Key: aws.String("Lake"), Value: aws.String("a")}, {Key: aws.String("lake"), Value: aws.String("b")}}
		}, "ValidationError"},
		{"tag value of 257", func(in *sts.AssumeRoleInput) {
			in.Tags = []types.Tag{{Key: aws.String("k"), Value: aws.String(strings.Repeat("v", 257))}}
		}, "ValidationError"},
		{"tag value with *", func(in *sts.AssumeRoleInput) { in.Tags = []types.Tag{{Key: aws.String("k"), Value: aws.String("a*")}} }, "ValidationError"},
		{"51 tags", func(in *sts.AssumeRoleInput) { in.Tags = tags(51) }, "ValidationError"},
		{"external id of 1", func(in *sts.AssumeRoleInput) { in.ExternalId = aws.String("x") }, "ValidationError"},
		{"source identity aws:", func(in *sts.AssumeRoleInput) { in.SourceIdentity = aws.String("aws:me") }, "ValidationError"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := valid()
			tc.edit(in)
			n := s.Count()
			_, err := c.AssumeRole(context.Background(), in)
			if got := code(err); got != tc.want {
				t.Fatalf("AssumeRole: %v (code %q), want %s", err, got, tc.want)
			}
			reqs := s.Requests()
			if len(reqs) != n+1 || reqs[n].Code != tc.want {
				t.Fatalf("recorded %d requests, the last %+v, want %d with code %s", len(reqs), reqs[len(reqs)-1], n+1, tc.want)
			}
		})
	}

	// What the SDK would not send: a request without a role, or unsigned.
	raw := []struct {
		name string
		form url.Values
		auth string
		want int
		code string
	}{
		{"no RoleArn", url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleSessionName": {"ab"}},
			"AWS4-HMAC-SHA256 Credential=AKIACALLER/20260101/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=" + strings.Repeat("0", 64),
			http.StatusBadRequest, "ValidationError"},
		{"unsigned", url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {DefaultRoleARN}, "RoleSessionName": {"ab"}},
			"", http.StatusForbidden, "MissingAuthenticationToken"},
		{"signed for s3", url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {DefaultRoleARN}, "RoleSessionName": {"ab"}},
			"AWS4-HMAC-SHA256 Credential=AKIACALLER/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + strings.Repeat("0", 64),
			http.StatusForbidden, "IncompleteSignature"},
	}
	for _, tc := range raw {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(tc.form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			reqs := s.Requests()
			if resp.StatusCode != tc.want || reqs[len(reqs)-1].Code != tc.code {
				t.Fatalf("status %d, recorded code %q, want %d and %s", resp.StatusCode, reqs[len(reqs)-1].Code, tc.want, tc.code)
			}
		})
	}
}

func TestSTSMintsVersitygwUsers(t *testing.T) {
	gw := StartIAMS3(t)
	gw.CreateBucket(t, "data")
	gw.PutObject(t, "data", "t/x", []byte("x"))
	s := StartSTS(t, gw)
	c := stsClient(s)
	ctx := context.Background()
	get := func(out *sts.AssumeRoleOutput) error {
		cr := out.Credentials
		_, err := gw.ClientFor(aws.ToString(cr.AccessKeyId), aws.ToString(cr.SecretAccessKey), aws.ToString(cr.SessionToken)).
			GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String("t/x")})
		return err
	}

	before := time.Now()
	out, err := c.AssumeRole(ctx, &sts.AssumeRoleInput{
		RoleArn: aws.String(DefaultRoleARN), RoleSessionName: aws.String("no-policy"), DurationSeconds: aws.Int32(900),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(out.AssumedRoleUser.Arn), "arn:aws:sts::123456789012:assumed-role/lake-data-reader/no-policy"; got != want {
		t.Errorf("AssumedRoleUser.Arn = %q, want %q", got, want)
	}
	if exp := *out.Credentials.Expiration; exp.Before(before.Add(900*time.Second).Truncate(time.Second)) || exp.After(time.Now().Add(900*time.Second)) {
		t.Errorf("Expiration %v, want 900 s after the call", exp)
	}
	if out.Credentials.SessionToken != nil {
		t.Errorf("SessionToken %q, want none (versitygw refuses one with a user's key)", *out.Credentials.SessionToken)
	}
	if err := get(out); code(err) != "AccessDenied" {
		t.Fatalf("GetObject by a session without a policy (RolePolicy empty): %v, want AccessDenied", err)
	}

	s.RolePolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/t/*"}]}`
	out, err = c.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(DefaultRoleARN), RoleSessionName: aws.String("role-policy")})
	if err != nil {
		t.Fatal(err)
	}
	if err := get(out); err != nil {
		t.Fatalf("GetObject granted by RolePolicy: %v", err)
	}

	deny := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/other/*"}]}`
	out, err = c.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(DefaultRoleARN), RoleSessionName: aws.String("session-policy"), Policy: aws.String(deny)})
	if err != nil {
		t.Fatal(err)
	}
	if err := get(out); code(err) != "AccessDenied" {
		t.Fatalf("GetObject outside the session policy: %v, want AccessDenied", err)
	}

	reqs := s.Requests()
	if s.Count() != 3 || len(reqs) != 3 {
		t.Fatalf("Count %d, %d requests, want 3", s.Count(), len(reqs))
	}
	for _, r := range reqs {
		if r.Code != "" || r.UserName == "" || !strings.HasPrefix(r.UserName, r.RoleSessionName+"-") {
			t.Errorf("request %+v, want a user named after its session", r)
		}
	}
	if reqs[0].DurationSeconds != 900 || reqs[2].Policy != deny {
		t.Errorf("recorded %+v, want the duration and policy sent", reqs)
	}
}
