// Package localstack holds lake's LocalStack compose file and its
// endpoint-agnostic integration suite (build tag "integration"). This file's
// check runs everywhere: the compose file parses, pins a tag that needs no
// auth token, and its init hook is executable.
package localstack_test

import (
	"os"
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
	for _, want := range []string{"dynamodb", "s3", "lambda", "events", "iam", "sts", "logs", "cloudformation"} {
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
}
