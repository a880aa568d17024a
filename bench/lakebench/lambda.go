package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// ---- 4. Lambda start-up ----

func benchLambda(c config, r *report, procs *procSet, d *dynalite) error {
	rie := "bin/aws-lambda-rie"
	if _, err := os.Stat(rie); err != nil {
		return fmt.Errorf("%s missing: run `make tools`", rie)
	}
	dir, err := os.MkdirTemp("", "lakebench-lambda-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	if err := dynamo.CreateTable(ctx, d.client(), "bench-lambda"); err != nil {
		return err
	}
	fns := []struct {
		name, pkg string
		event     any
	}{
		{"hello-world", "./functions/testdata/hello", map[string]any{}},
		{"getitem", "./functions/testdata/getitem", map[string]any{}},
		{"register", "./functions/register", map[string]any{"version": "2.0", "rawPath": "/v1/tenants/acme/namespaces/s/tables/missing",
			"requestContext": map[string]any{"http": map[string]any{"method": "GET", "path": "/v1/tenants/acme/namespaces/s/tables/missing"}}}},
		{"refresh", "./functions/refresh", map[string]any{"detail-type": "Scheduled Event", "source": "aws.events", "detail": map[string]any{}}},
	}
	// A real S3-protocol server, so refresh's first invoke does real work.
	s3Addr, vgw, err := startVersitygw(procs, dir, "bench-lambda")
	if err != nil {
		return err
	}
	defer vgw.Stop()
	r.printf("## 4. Lambda: bootstrap size and first invoke under the runtime interface emulator\n\n")
	// The full run measures the shipped build; the quick run (CI) builds with
	// the tests' settings so it reuses their build cache instead of
	// compiling the dependency graph again.
	buildFlags, buildEnv, how := []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w"}, []string{"CGO_ENABLED=0"},
		"Built like `make lambdas` (static, `-tags lambda.norpc`, `-s -w`), for this machine."
	if c.quick {
		buildFlags, buildEnv, how = nil, nil,
			"Quick mode: built with the tests' settings (plain `go build`, as `make build` and the tests' own builds: no `lambda.norpc`, not stripped), so sizes and times are not the shipped build's."
	}
	r.printf("%s The emulator starts the bootstrap on the first invoke, so the time is init plus one call: register "+
		"reads a missing table (one GetItem); refresh runs a scheduled event on the same table and bucket each time (the "+
		"first run publishes, the others find nothing changed). getitem is the smallest function making register's AWS "+
		"call (`config.LoadDefaultConfig`, a DynamoDB client, one GetItem): the floor for a Go function using the SDK. "+
		"The functions take turns, %d fresh starts each; median. Each bootstrap sees the environment Lambda would give "+
		"it: this machine's other `AWS_*` variables are cleared, since the emulator passes its own environment through "+
		"(an `AWS_CA_BUNDLE` makes `LoadDefaultConfig` parse a certificate bundle at every start). The emulators are plain "+
		"HTTP: on AWS the first call also pays DNS, a TLS handshake and loading the system root certificates.\n\n", how, c.invokes)
	bins := make([]string, len(fns))
	sizes := make([]int64, len(fns))
	for i, fn := range fns {
		bins[i] = filepath.Join(dir, fn.name, "bootstrap")
		build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bins[i], fn.pkg)...)
		build.Env = append(os.Environ(), buildEnv...)
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v %s", fn.pkg, err, out)
		}
		st, err := os.Stat(bins[i])
		if err != nil {
			return err
		}
		sizes[i] = st.Size()
	}
	env := lambdaEnv("AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=testsecret", "AWS_REGION=us-east-1",
		"LAKE_TABLE=bench-lambda", "LAKE_BUCKET=bench-lambda", "AWS_ENDPOINT_URL_DYNAMODB="+d.endpoint,
		"AWS_ENDPOINT_URL_S3=http://"+s3Addr, "LAKE_S3_PATH_STYLE=true")
	times := make([][]float64, len(fns))
	for round := range c.invokes {
		for k := range fns {
			i := (round + k) % len(fns) // each round starts with the next function
			url, p, err := startRIE(procs, env, bins[i])
			if err != nil {
				return err
			}
			body, _ := json.Marshal(fns[i].event)
			t0 := time.Now()
			resp, err := http.Post(url, "application/json", bytes.NewReader(body))
			el := time.Since(t0)
			if err != nil {
				return err
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			p.Stop()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Amz-Function-Error") != "" || bytes.Contains(out, []byte(`"errorType"`)) {
				return fmt.Errorf("%s: first invoke answered %d: %s", fns[i].name, resp.StatusCode, out)
			}
			times[i] = append(times[i], float64(el.Microseconds())/1000)
		}
	}
	r.printf("| function | bootstrap MB | first invoke ms | × hello-world | × getitem |\n|---|---|---|---|---|\n")
	med := make([]float64, len(fns))
	for i := range fns {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
	}
	for i, fn := range fns {
		r.printf("| %s | %.1f | %.1f | %.2f | %.2f |\n", fn.name, float64(sizes[i])/1e6, med[i], med[i]/med[0], med[i]/med[1])
	}
	r.printf("\n")
	reg, ref := med[2]/med[0], med[3]/med[0]
	r.target("register / refresh first invoke ÷ hello-world", "3.45× / 4.26×", "≤ 1.5×", reg <= 1.5 && ref <= 1.5, "%.2f× / %.2f×", reg, ref)
	return nil
}

// startVersitygw serves an S3-protocol server on loopback over a folder
// of dir holding bucket (versitygw's posix layout), and returns its address.
func startVersitygw(procs *procSet, dir, bucket string) (string, *testenv.Process, error) {
	s3Dir := filepath.Join(dir, "s3")
	if err := os.MkdirAll(filepath.Join(s3Dir, bucket), 0o755); err != nil {
		return "", nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	p, err := procs.start(nil, "bin/versitygw", "--access", "test", "--secret", "testsecret", "--port", addr, "posix", s3Dir)
	if err != nil {
		return "", nil, err
	}
	return addr, p, waitTCP(p, addr, 30*time.Second)
}

// startRIE runs bootstrap under the Lambda runtime interface emulator
// (started on its first invoke) and returns the URL that invokes it.
func startRIE(procs *procSet, env []string, bootstrap string) (string, *testenv.Process, error) {
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	p, err := procs.start(env, "bin/aws-lambda-rie", "--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(freePort()), bootstrap)
	if err != nil {
		return "", nil, err
	}
	return "http://" + addr + "/2015-03-31/functions/function/invocations", p, waitTCP(p, addr, 30*time.Second)
}

// lambdaEnv is set plus an empty value for every other AWS_* variable of
// this process's environment: the emulator hands its environment to the
// bootstrap, and a developer's AWS_CA_BUNDLE or AWS_PROFILE would make the
// SDK do work at start that it does not do on Lambda. (The SDK reads an
// empty variable as unset.)
func lambdaEnv(set ...string) []string {
	env := slices.Clone(set)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AWS_") && !slices.ContainsFunc(set, func(s string) bool { return strings.HasPrefix(s, name+"=") }) {
			env = append(env, name+"=")
		}
	}
	return env
}
