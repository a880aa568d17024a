// Package localstack holds lake's LocalStack compose file and its
// endpoint-agnostic integration suite (build tag "integration"). This file's
// check runs everywhere: the compose file parses, pins a tag that needs no
// auth token, runs the services the stream path needs, and its init hook is
// executable and creates the table with a KEYS_ONLY stream.
package localstack_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	ls, ok := doc.Services["localstack"]
	if !ok {
		t.Fatal("no localstack service")
	}
	if ls.Image != "localstack/localstack:4.14.0" {
		t.Fatalf("image %q: pin localstack/localstack:4.14.0 (4.15+ and latest need an auth token)", ls.Image)
	}
	services := strings.Split(ls.Environment["SERVICES"], ",")
	// dynamodbstreams, lambda and sqs: the stream, the event source mapping
	// to refresh and its on-failure queue.
	for _, want := range []string{"dynamodb", "dynamodbstreams", "s3", "lambda", "sqs", "events", "iam", "sts", "logs", "cloudformation"} {
		found := false
		for _, s := range services {
			found = found || strings.TrimSpace(s) == want
		}
		if !found {
			t.Errorf("SERVICES lacks %s", want)
		}
	}
	mounted := false
	for _, v := range ls.Volumes {
		mounted = mounted || strings.HasPrefix(v, "./init/ready.d:/etc/localstack/init/ready.d")
	}
	if !mounted {
		t.Error("the init hooks are not mounted at /etc/localstack/init/ready.d")
	}
	st, err := os.Stat("init/ready.d/01-lake.sh")
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&0o111 == 0 {
		t.Fatalf("init hook mode %v is not executable", st.Mode())
	}
	hook, _ := os.ReadFile("init/ready.d/01-lake.sh")
	for _, want := range []string{"create-table", "AttributeName=pk,AttributeType=S", "s3 mb"} {
		if !strings.Contains(string(hook), want) {
			t.Errorf("init hook lacks %q", want)
		}
	}
	for _, command := range []string{"create-table", "update-table"} {
		spec := streamSpec(t, string(hook), command)
		if spec["StreamEnabled"] != "true" || spec["StreamViewType"] != "KEYS_ONLY" || len(spec) != 2 {
			t.Errorf("%s: stream specification %v, want StreamEnabled=true,StreamViewType=KEYS_ONLY", command, spec)
		}
	}
}

// streamSpec parses the --stream-specification of the hook's awslocal
// dynamodb command (continued lines joined), resolving a "$name" argument
// from the hook's name="…" assignment: StreamEnabled=true,… as a map.
func streamSpec(t *testing.T, hook, command string) map[string]string {
	t.Helper()
	script := strings.ReplaceAll(hook, "\\\n", " ")
	var line string
	for l := range strings.SplitSeq(script, "\n") {
		if strings.Contains(l, "awslocal dynamodb "+command) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("init hook has no awslocal dynamodb %s", command)
	}
	m := regexp.MustCompile(`--stream-specification\s+("[^"]*"|\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("init hook's %s has no --stream-specification: %s", command, line)
	}
	arg := strings.Trim(m[1], `"`)
	if name, ok := strings.CutPrefix(arg, "$"); ok {
		name = strings.Trim(name, "{}")
		a := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `="?([^"\n]*)"?$`).FindStringSubmatch(script)
		if a == nil {
			t.Fatalf("init hook's %s takes the stream specification from $%s, which it never sets", command, name)
		}
		arg = a[1]
	}
	spec := map[string]string{}
	for kv := range strings.SplitSeq(arg, ",") {
		k, v, _ := strings.Cut(kv, "=")
		spec[k] = v
	}
	return spec
}
