package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// tool returns the path of a pinned tool built into ./bin by `make tools`,
// or the path in env when set.
func tool(name, env string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	p := filepath.Join(root, "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not built at %s", name, p)
	}
	return p, nil
}

// S3 is a running S3-protocol server (versitygw, posix backend): it honours
// If-Match and If-None-Match on PutObject and GetObject.
type S3 struct {
	Endpoint       string
	Access, Secret string
	Dir            string
	Process        *Process
}

// StartS3 starts versitygw on a free loopback port over a temp folder, for
// tb alone. Most tests share one server instead (SharedS3).
func StartS3(tb testing.TB) *S3 {
	tb.Helper()
	s, err := launchS3(tb.TempDir())
	if err != nil {
		Unavailable(tb, "%v", err)
	}
	tb.Cleanup(func() {
		s.Process.Kill()
		if tb.Failed() {
			tb.Logf("versitygw output:\n%s", s.Process.Output())
		}
	})
	return s
}

func launchS3(dir string) (*S3, error) {
	bin, err := tool("versitygw", "LAKE_VERSITYGW")
	if err != nil {
		return nil, err
	}
	s := &S3{Access: "lakeaccess", Secret: "lakesecret-for-tests", Dir: dir}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if s.Process, err = Launch(nil, bin, "--access", s.Access, "--secret", s.Secret, "--port", addr, "posix", s.Dir); err != nil {
		return nil, err
	}
	if err := s.Process.WaitListening(addr, 30*time.Second); err != nil {
		s.Process.Kill()
		return nil, err
	}
	s.Endpoint = "http://" + addr
	return s, nil
}

// Client returns a path-style S3 client for the server.
func (s *S3) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(s.Access, s.Secret, ""),
		UsePathStyle: true,
	})
}

// CreateBucket creates a bucket on the server.
func (s *S3) CreateBucket(tb testing.TB, name string) {
	tb.Helper()
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("create bucket %s: %v", name, err)
	}
}

// NewBucket creates a fresh, uniquely named bucket on the server and
// returns its name.
func (s *S3) NewBucket(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("lake-test-%d", nextSeq())
	s.CreateBucket(tb, name)
	return name
}

// Env returns the environment variables that point the AWS SDK at the
// server, as a Lambda under test would get them.
func (s *S3) Env() []string {
	return []string{"AWS_ENDPOINT_URL_S3=" + s.Endpoint, "LAKE_S3_PATH_STYLE=true"}
}

var builds sync.Map // package path → *buildResult

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// BuildLambda builds pkg (e.g. "./functions/refresh", relative to the
// repository root) as a bootstrap binary, once per test binary. It builds
// with the test's own settings (no -trimpath, -ldflags or CGO_ENABLED
// change), so it reuses the packages `go test` already compiled and only
// links. Tests prefer Binary, which re-executes the test binary instead.
func BuildLambda(tb testing.TB, pkg string) string {
	tb.Helper()
	return build(tb, pkg, "bootstrap", nil, "-tags", "lambda.norpc")
}

// BuildRelease builds the Lambda pkg as `make lambdas` builds it for AWS
// (static, stripped, -trimpath), once per test binary: for benchmarks of
// the shipped binary, such as its cold start. It compiles the dependency
// graph anew, so tests use Binary or BuildLambda instead.
func BuildRelease(tb testing.TB, pkg string) string {
	tb.Helper()
	return build(tb, pkg, "bootstrap", []string{"CGO_ENABLED=0"}, "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w")
}

// build runs go build for pkg with env added and flags, once per test
// binary for each combination.
func build(tb testing.TB, pkg, name string, env []string, flags ...string) string {
	tb.Helper()
	v, _ := builds.LoadOrStore(pkg+" "+name+" "+strings.Join(append(env, flags...), " "), &buildResult{})
	br := v.(*buildResult)
	br.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			br.err = err
			return
		}
		dir, err := os.MkdirTemp("", "lake-build-")
		if err != nil {
			br.err = err
			return
		}
		removeAtExit(dir)
		br.path = filepath.Join(dir, name)
		args := append(append([]string{"build"}, flags...), "-o", br.path, pkg)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			br.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if br.err != nil {
		tb.Fatalf("build: %v", br.err)
	}
	return br.path
}

// Lambda is a bootstrap binary running under the AWS Lambda runtime
// interface emulator. The emulator serves one invocation at a time, so
// Invoke serializes.
type Lambda struct {
	URL     string
	Process *Process
	mu      sync.Mutex
}

// StartLambda runs bootstrap under aws-lambda-rie with env added to this
// process's environment (credentials and region for the SDK are set to test
// values unless env sets them).
func StartLambda(tb testing.TB, bootstrap string, env ...string) *Lambda {
	tb.Helper()
	rie, err := tool("aws-lambda-rie", "LAKE_RIE")
	if err != nil {
		Unavailable(tb, "%v", err)
	}
	// A port another process took between FreePort and the emulator's
	// bind makes it exit at once: start it again on other ports.
	var (
		p    *Process
		addr string
	)
	for attempt := 1; ; attempt++ {
		port, apiPort := FreePort(tb), FreePort(tb)
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p = StartEnv(tb, append([]string{
			"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
			"AWS_LAMBDA_FUNCTION_NAME=" + filepath.Base(filepath.Dir(bootstrap)),
		}, env...), rie,
			"--runtime-interface-emulator-address", addr,
			"--runtime-api-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(apiPort)),
			bootstrap)
		err := p.WaitListening(addr, 30*time.Second)
		inUse := strings.Contains(p.Output(), "address already in use")
		switch {
		case inUse && attempt < 3:
			p.Stop()
			continue
		case err != nil:
			tb.Fatal(err)
		case p.Exited() || inUse:
			tb.Fatalf("aws-lambda-rie did not start:\n%s", p.Output())
		}
		break
	}
	return &Lambda{URL: "http://" + addr + "/2015-03-31/functions/function/invocations", Process: p}
}

// FunctionError is what a function returned as its error.
type FunctionError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Invoke sends event (marshalled to JSON) and returns the function's
// response payload, or a *FunctionError when the function returned an error.
func (l *Lambda) Invoke(ctx context.Context, event any) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := json.Marshal(event)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke: emulator answered %d: %s", resp.StatusCode, out)
	}
	var fe FunctionError
	if resp.Header.Get("X-Amz-Function-Error") != "" || (json.Unmarshal(out, &fe) == nil && fe.Message != "" && fe.Type != "") {
		_ = json.Unmarshal(out, &fe)
		return nil, &fe
	}
	return out, nil
}
