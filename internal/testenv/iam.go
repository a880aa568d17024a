package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// IAMS3 is a versitygw S3 gateway (posix backend) whose accounts and
// identity policies live in a standalone versitygw IAM service: two
// processes, the IAM service holding every user, inline policy and access
// key, and the gateway asking it over a unix socket for each request's
// signing key and for its identity-policy decision. Root (S3.Access,
// S3.Secret, the same in both) bypasses policy; an IAM user made through the
// IAM Query API (IAMClient) reads and writes exactly what its inline user
// policies allow (s3:GetObject on object ARNs, s3:ListBucket on the bucket
// ARN with conditions such as StringLike on s3:prefix, …), since the buckets,
// made by root, carry no ACL grant and no bucket policy.
//
// versitygw limits the inline policies of one user to 2,048 bytes in all
// (MaxInlinePolicyBytesPerUser, as AWS IAM's quota, though AWS does not count
// whitespace), and refuses an X-Amz-Security-Token sent with a long-term
// (AKIA…) access key as InvalidToken.
type IAMS3 struct {
	// S3 is the gateway: its Endpoint, root keys, posix folder and
	// process, and the root client and bucket helpers.
	S3
	// IAMEndpoint is the IAM Query API (CreateUser, PutUserPolicy,
	// CreateAccessKey, …), signed with the root keys for service "iam" in
	// us-east-1.
	IAMEndpoint string
	// IAMDir is the IAM service's file-backed store.
	IAMDir string
	// Socket is the IAM service's private endpoint the gateway calls.
	Socket string
	// IAM is the IAM service's process.
	IAM     *Process
	sockDir string // the socket's folder, removed by Close
}

// StartIAMS3 starts the standalone IAM service and a gateway backed by it on
// free loopback ports over temp folders, for tb alone, and kills both when
// tb ends (printing their output if tb failed). As StartS3 does, it skips
// tb (Unavailable: fails it under CI=true) when bin/versitygw is not built or
// does not start.
func StartIAMS3(tb testing.TB) *IAMS3 {
	tb.Helper()
	s, err := LaunchIAMS3(tb.TempDir())
	if s != nil {
		tb.Cleanup(func() {
			if tb.Failed() {
				for _, p := range []struct {
					name string
					p    *Process
				}{{"versitygw gateway", s.Process}, {"versitygw iam", s.IAM}} {
					if p.p != nil {
						tb.Logf("%s output:\n%s", p.name, p.p.Output())
					}
				}
			}
			s.Close()
		})
	}
	if err != nil {
		Unavailable(tb, "%v", err)
	}
	return s
}

// LaunchIAMS3 starts the IAM service and the gateway with their data under
// root (which must exist), for a program outside a test (the benchmark
// driver); StartIAMS3 is the tests' form. On an error the returned IAMS3,
// when not nil, holds what started: Close it. Close stops both.
func LaunchIAMS3(root string) (*IAMS3, error) {
	bin, err := tool("versitygw", "LAKE_VERSITYGW")
	if err != nil {
		return nil, err
	}
	// A unix socket path must stay under 108 bytes: a folder of its own
	// under the system temp folder, not root (a test's is named after it).
	sockDir, err := os.MkdirTemp("", "lake-iam-")
	if err != nil {
		return nil, err
	}
	s := &IAMS3{
		S3:      S3{Access: "lakeroot", Secret: "lakeroot-secret-for-tests", Dir: filepath.Join(root, "s3")},
		IAMDir:  filepath.Join(root, "iam"),
		Socket:  filepath.Join(sockDir, "iam.sock"),
		sockDir: sockDir,
	}
	for _, d := range []string{s.Dir, s.IAMDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return s, err
		}
	}
	iamAddr, err := s.launch(bin, &s.IAM, func(addr string) []string {
		return []string{"--port", addr, "--access", s.Access, "--secret", s.Secret,
			"iam", "--dir", s.IAMDir, "--private-ports", s.Socket}
	})
	if err != nil {
		return s, fmt.Errorf("versitygw iam: %w", err)
	}
	s.IAMEndpoint = "http://" + iamAddr
	if err := waitFile(s.IAM, s.Socket, 30*time.Second); err != nil {
		return s, fmt.Errorf("versitygw iam: %w", err)
	}
	gwAddr, err := s.launch(bin, &s.Process, func(addr string) []string {
		return []string{"--port", addr, "--access", s.Access, "--secret", s.Secret,
			"--iam-standalone-endpoint", s.Socket, "posix", s.Dir}
	})
	if err != nil {
		return s, fmt.Errorf("versitygw gateway: %w", err)
	}
	s.Endpoint = "http://" + gwAddr
	return s, nil
}

// Close stops the gateway and the IAM service and removes the socket's
// folder.
func (s *IAMS3) Close() {
	for _, p := range []*Process{s.Process, s.IAM} {
		if p != nil {
			p.Kill()
		}
	}
	if s.sockDir != "" {
		os.RemoveAll(s.sockDir)
	}
}

// launch starts bin with the arguments args gives for a free loopback
// address, stores the process in *p and waits until it listens; a port
// another process took in between (the server exits with "address already
// in use") is retried on another port.
func (s *IAMS3) launch(bin string, p **Process, args func(addr string) []string) (string, error) {
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return "", err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if *p, err = Launch(nil, bin, args(addr)...); err != nil {
			return "", err
		}
		err = (*p).WaitListening(addr, 30*time.Second)
		if err != nil && attempt < 3 && strings.Contains((*p).Output(), "address already in use") {
			(*p).Kill()
			continue
		}
		return addr, err
	}
}

// waitFile waits until path exists (a socket the process creates), or the
// process exits, or timeout passes.
func waitFile(p *Process, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("exited before creating %s:\n%s", path, p.Output())
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("did not create %s within %v", path, timeout)
}

// ClientFor returns a path-style S3 client for the gateway signing with
// the given credentials; sessionToken, when not empty, is sent as
// X-Amz-Security-Token (which versitygw refuses with a long-term key).
func (s *IAMS3) ClientFor(access, secret, sessionToken string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, sessionToken),
		UsePathStyle: true,
	})
}

// IAMClient returns an IAM client for the IAM service, signed with the root
// keys.
func (s *IAMS3) IAMClient() *iam.Client {
	return iam.New(iam.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.IAMEndpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(s.Access, s.Secret, ""),
	})
}

// PutObject writes body at bucket/key as root, failing tb on error.
func (s *IAMS3) PutObject(tb testing.TB, bucket, key string, body []byte) {
	tb.Helper()
	_, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	})
	if err != nil {
		tb.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
}
