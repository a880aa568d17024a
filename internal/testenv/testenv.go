// Package testenv starts the real servers lake's tests run against (dynalite
// for DynamoDB, and the others the suites need) on loopback, and stops them
// when the test ends.
//
// A server that cannot be started skips the test on a developer machine,
// with the command that installs it, and fails it under CI=true: CI never
// passes by skipping.
package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// Unavailable skips tb with reason, or fails it when CI=true.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("required test server unavailable under CI=true: %s", msg)
	}
	tb.Skipf("%s (run `make tools` to install the test servers)", msg)
}

// RepoRoot returns the repository's top folder: the nearest ancestor of the
// working directory holding tools/npm/package.json.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "npm", "package.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no tools/npm/package.json above the working directory")
		}
		dir = parent
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// chosen below the kernel's ephemeral range (see freePort).
func FreePort(tb testing.TB) int {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	return port
}

// PickPort is FreePort for programs outside tests (the benchmark driver).
func PickPort() (int, error) { return freePort() }

// Ports handed to servers a test starts come from [portLow, portHigh),
// below Linux's default ephemeral range (32768–60999): a port taken from
// that range with 127.0.0.1:0 can be given to another process's outgoing
// connection between our check and the server's bind ("address already in
// use", seen with aws-lambda-rie), while the kernel never assigns a port
// below it to a connection.
const portLow, portHigh = 20000, 32000

func freePort() (int, error) {
	var err error
	for range 100 {
		port := portLow + rand.IntN(portHigh-portLow)
		var l net.Listener
		if l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port in [%d, %d): %w", portLow, portHigh, err)
}

// Process is a server started for a test.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  strings.Builder
}

// Start runs name with args, keeps its output for failure reports, and stops
// it (SIGTERM, then SIGKILL after 5 s) when the test ends.
func Start(tb testing.TB, name string, args ...string) *Process {
	tb.Helper()
	return StartEnv(tb, nil, name, args...)
}

// StartEnv is Start with env added to this process's environment.
func StartEnv(tb testing.TB, env []string, name string, args ...string) *Process {
	tb.Helper()
	p, err := Launch(env, name, args...)
	if err != nil {
		Unavailable(tb, "%v", err)
	}
	tb.Cleanup(func() {
		p.Stop()
		if tb.Failed() {
			tb.Logf("%s output:\n%s", name, p.Output())
		}
	})
	return p
}

// Launch starts name with args and env added to this process's
// environment, in its own process group, keeping its output. The caller
// stops it; tests use Start, which does. Programs outside tests (the
// benchmark driver) use this.
func Launch(env []string, name string, args ...string) (*Process, error) {
	p := &Process{cmd: exec.Command(name, args...), done: make(chan struct{})}
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			if p.out.Len() < 1<<20 {
				p.out.WriteString(sc.Text() + "\n")
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		_ = p.cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output returns what the process printed so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits up to d for the process to exit and returns its exit code, or
// -1 when it is still running.
func (p *Process) Wait(d time.Duration) int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		return -1
	}
}

// Stop ends the process group and waits for it.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the process group at once (SIGKILL) and waits for it: for
// servers that hold only test state, where a graceful stop only costs time.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitTCP waits until addr accepts TCP connections, failing tb when the
// process exits first or timeout passes.
func (p *Process) WaitTCP(tb testing.TB, addr string, timeout time.Duration) {
	tb.Helper()
	if err := p.WaitListening(addr, timeout); err != nil {
		tb.Fatal(err)
	}
}

// WaitListening waits until addr accepts TCP connections; it returns an
// error when the process exits first or timeout passes.
func (p *Process) WaitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("%s exited before listening on %s:\n%s", p.cmd.Path, addr, p.Output())
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %v:\n%s", p.cmd.Path, addr, timeout, p.Output())
}

// DynamoDB is a running dynalite server.
type DynamoDB struct {
	// Endpoint is the server's URL, e.g. http://127.0.0.1:41234.
	Endpoint string
	Process  *Process
}

// StartDynamoDB starts dynalite (npm dynalite@4, pinned in tools/npm) in
// memory on a free loopback port, tables active at once, for tb alone.
// Most tests share one server instead (SharedDynamoDB).
func StartDynamoDB(tb testing.TB) *DynamoDB {
	tb.Helper()
	d, err := launchDynamoDB()
	if err != nil {
		Unavailable(tb, "%v", err)
	}
	tb.Cleanup(func() {
		d.Process.Kill()
		if tb.Failed() {
			tb.Logf("dynalite output:\n%s", d.Process.Output())
		}
	})
	return d
}

func launchDynamoDB() (*DynamoDB, error) {
	bin := os.Getenv("LAKE_DYNALITE")
	if bin == "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, fmt.Errorf("dynalite: %w", err)
		}
		bin = filepath.Join(root, "tools", "npm", "node_modules", ".bin", "dynalite")
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("dynalite not installed at %s", bin)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := Launch(nil, bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := p.WaitListening(addr, 30*time.Second); err != nil {
		p.Kill()
		return nil, err
	}
	return &DynamoDB{Endpoint: "http://" + addr, Process: p}, nil
}

// Client returns a DynamoDB client for the server with static test
// credentials and dynamo.RetryOptions installed.
func (d *DynamoDB) Client(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(d.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, append([]func(*dynamodb.Options){dynamo.RetryOptions(dynamo.RetryPolicy{})}, opts...)...)
}

var seq atomic.Int64

// nextSeq numbers the tables and buckets a test binary creates.
func nextSeq() int64 { return seq.Add(1) }

// NewTable creates a fresh, uniquely named table on the server and returns
// its name.
func (d *DynamoDB) NewTable(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("lake-test-%d", nextSeq())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamo.CreateTable(ctx, d.Client(), name); err != nil {
		tb.Fatalf("create table: %v", err)
	}
	return name
}
