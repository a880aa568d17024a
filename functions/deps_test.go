package functions_test

import (
	"os/exec"
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
