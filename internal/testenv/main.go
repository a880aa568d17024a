package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// mainEnv names the program a re-executed test binary runs instead of its
// tests (see Main and Binary).
const mainEnv = "LAKE_TESTENV_MAIN"

// Mains are the programs a test binary can run as, by name. Each returns
// the process exit code.
type Mains map[string]func() int

// harness is the state of the test binary's TestMain: the programs it can
// re-execute as and the servers shared by its tests.
var harness struct {
	mu      sync.Mutex
	active  bool
	mains   Mains
	binDir  string
	servers []*Process
	dirs    []string
	ddb     *DynamoDB
	ddbErr  error
	s3      *S3
	s3Err   error
}

// Main is the body of a package's TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m, testenv.Mains{"lake": lakeMain}) }
//
// When the environment names one of mains (the test binary was started by
// Binary's wrapper), it runs that program and exits with its code, so tests
// run the real programs without building them. Otherwise it runs the tests,
// then stops the servers shared by them (SharedDynamoDB, SharedS3) and
// exits with the tests' code.
func Main(m *testing.M, mains Mains) {
	if name := os.Getenv(mainEnv); name != "" {
		fn, ok := mains[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "testenv: this test binary cannot run as %q (it knows %s)\n", name, knownMains(mains))
			os.Exit(2)
		}
		os.Exit(fn())
	}
	harness.mu.Lock()
	harness.active, harness.mains = true, mains
	harness.mu.Unlock()
	code := m.Run()
	stopShared()
	os.Exit(code)
}

func knownMains(mains Mains) string {
	names := make([]string, 0, len(mains))
	for n := range mains {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "no programs"
	}
	return strings.Join(names, ", ")
}

// stopShared kills the shared servers (they hold only test state) and
// removes their folders.
func stopShared() {
	harness.mu.Lock()
	defer harness.mu.Unlock()
	for _, p := range harness.servers {
		p.Kill()
	}
	for _, d := range harness.dirs {
		_ = os.RemoveAll(d)
	}
	harness.servers, harness.dirs = nil, nil
}

// Binary returns the path of an executable named name that runs this test
// binary as mains[name] (see Main), with the arguments and environment it is
// given. It is a two-line shell script, so it also serves as a Lambda
// bootstrap under aws-lambda-rie: the code run is the code under test,
// compiled once, with the test's own build settings.
func Binary(tb testing.TB, name string) string {
	tb.Helper()
	harness.mu.Lock()
	defer harness.mu.Unlock()
	if !harness.active {
		tb.Fatalf("testenv.Binary(%q) needs testenv.Main in the package's TestMain", name)
	}
	if _, ok := harness.mains[name]; !ok {
		tb.Fatalf("testenv.Binary(%q): TestMain's testenv.Mains has %s", name, knownMains(harness.mains))
	}
	exe, err := os.Executable()
	if err != nil {
		tb.Fatalf("testenv.Binary: %v", err)
	}
	if harness.binDir == "" {
		dir, err := os.MkdirTemp("", "lake-bin-")
		if err != nil {
			tb.Fatalf("testenv.Binary: %v", err)
		}
		harness.binDir = dir
		harness.dirs = append(harness.dirs, dir)
	}
	// One folder per program, so a bootstrap's folder name tells which.
	path := filepath.Join(harness.binDir, name, name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatalf("testenv.Binary: %v", err)
	}
	script := fmt.Sprintf("#!/bin/sh\n%s=%s exec %s \"$@\"\n", mainEnv, name, shellQuote(exe))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		tb.Fatalf("testenv.Binary: %v", err)
	}
	return path
}

// removeAtExit has testenv.Main remove dir after the last test (without
// testenv.Main the folder stays, in the system's temp folder).
func removeAtExit(dir string) {
	harness.mu.Lock()
	defer harness.mu.Unlock()
	harness.dirs = append(harness.dirs, dir)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// SharedDynamoDB returns the test binary's one dynalite server, starting it
// on first use; testenv.Main stops it after the last test. Tests share it
// through their own tables (NewTable), so they may run in parallel. Without
// testenv.Main it starts a server for tb alone.
func SharedDynamoDB(tb testing.TB) *DynamoDB {
	tb.Helper()
	harness.mu.Lock()
	defer harness.mu.Unlock()
	if !harness.active {
		return StartDynamoDB(tb)
	}
	if harness.ddb == nil && harness.ddbErr == nil {
		harness.ddb, harness.ddbErr = launchDynamoDB()
		if harness.ddb != nil {
			harness.servers = append(harness.servers, harness.ddb.Process)
		}
	}
	if harness.ddbErr != nil {
		Unavailable(tb, "%v", harness.ddbErr)
	}
	return harness.ddb
}

// SharedS3 returns the test binary's one versitygw server, starting it on
// first use; testenv.Main stops it after the last test. Tests share it
// through their own buckets (NewBucket). Without testenv.Main it starts a
// server for tb alone.
func SharedS3(tb testing.TB) *S3 {
	tb.Helper()
	harness.mu.Lock()
	defer harness.mu.Unlock()
	if !harness.active {
		return StartS3(tb)
	}
	if harness.s3 == nil && harness.s3Err == nil {
		dir, err := os.MkdirTemp("", "lake-s3-")
		if err != nil {
			harness.s3Err = err
		} else {
			harness.dirs = append(harness.dirs, dir)
			harness.s3, harness.s3Err = launchS3(dir)
			if harness.s3 != nil {
				harness.servers = append(harness.servers, harness.s3.Process)
			}
		}
	}
	if harness.s3Err != nil {
		Unavailable(tb, "%v", harness.s3Err)
	}
	return harness.s3
}
