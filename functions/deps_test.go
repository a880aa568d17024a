package functions_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The discovery program never talks to DynamoDB, and does not even link
// the DynamoDB SDK or the registration API (the catalog browser it serves
// answers errors through internal/apierror for that reason).
func TestDiscoveryLinksNoDynamoDB(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/lake-catalog/lake/functions/discovery").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/aws/aws-sdk-go-v2/service/dynamodb") || pkg == "github.com/lake-catalog/lake/internal/registerapi" ||
			strings.HasPrefix(pkg, "github.com/lake-catalog/lake/pkg/metastore/") {
			t.Errorf("functions/discovery links %s", pkg)
		}
	}
}

// Clients speak lake's protocol through pkg/wire and never import the
// discovery server (STYLE 21): neither the Flight client nor the catalog
// browser depends on internal/discovery, and pkg/wire depends on no server.
func TestClientsDoNotImportDiscovery(t *testing.T) {
	for _, client := range []string{"internal/flightclient", "internal/browser", "pkg/wire"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/lake-catalog/lake/"+client).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			if pkg == "github.com/lake-catalog/lake/internal/discovery" {
				t.Errorf("%s depends on %s", client, pkg)
			}
		}
	}
}

// The import rules of lake's protocol (STYLE 21), each checked with go
// list: a client links no server, pkg/wire (the protocol both sides
// import) imports nothing of internal/, the registration API does not read
// the published snapshot (the read model), and the discovery server imports
// none of its clients.
func TestImportRules(t *testing.T) {
	const lake = "github.com/lake-catalog/lake/"
	servers := []string{lake + "internal/discovery", lake + "internal/registerapi"}
	for _, tc := range []struct {
		pkg string
		// deps: every package pkg links (go list -deps); else only the
		// ones it imports itself.
		deps    bool
		refused func(dep string) bool
		why     string
	}{
		{pkg: "internal/apiclient", deps: true, refused: oneOf(servers...), why: "a client links no server"},
		{pkg: "internal/flightclient", deps: true, refused: oneOf(servers...), why: "a client links no server"},
		{pkg: "internal/browser", deps: true, refused: oneOf(servers...), why: "a client links no server"},
		// The CLI runs local mode, which is the servers in one process:
		// internal/local is its one door to them, so the CLI's own
		// imports name no server.
		{pkg: "internal/cli", refused: oneOf(servers...), why: "the CLI reaches the servers only through local mode"},
		{pkg: "cmd/lake", refused: oneOf(servers...), why: "the CLI reaches the servers only through local mode"},
		{pkg: "pkg/wire", deps: true, refused: func(dep string) bool { return strings.HasPrefix(dep, lake+"internal/") }, why: "the protocol is a leaf"},
		{pkg: "internal/registerapi", deps: true, refused: oneOf(lake+"pkg/snapshot", lake+"internal/blobstore"), why: "the write API does not read the published snapshot"},
		{pkg: "internal/discovery", deps: true, refused: oneOf(lake+"internal/browser", lake+"internal/flightclient", lake+"internal/apiclient"), why: "the server imports no client"},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			format := "{{join .Imports \"\\n\"}}"
			if tc.deps {
				format = "{{join .Deps \"\\n\"}}"
			}
			out, err := exec.Command("go", "list", "-f", format, lake+tc.pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				if tc.refused(dep) {
					t.Errorf("%s depends on %s: %s", tc.pkg, strings.TrimPrefix(dep, lake), tc.why)
				}
			}
		})
	}
}

// oneOf reports whether a package is one of pkgs.
func oneOf(pkgs ...string) func(string) bool {
	return func(dep string) bool { return slices.Contains(pkgs, dep) }
}
