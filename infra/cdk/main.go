// Command cdk is lake's AWS CDK app: `cdk synth` / `cdk deploy` run it.
//
// Context values (cdk deploy -c key=value):
//
//	certificateArn   ACM certificate for a TLS listener on 443 (default: TCP 50051)
//	refreshMinutes   refresh schedule in minutes (default 1)
//	producerTenant   tenant of the example producer policy (default acme)
//	lambdaDir        folder with register/arm64 and refresh/arm64 bootstraps (default ../../bin/lambda)
//	version          what the discovery image reports as its version (default dev)
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func contextString(app awscdk.App, key, def string) string {
	if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
		return v
	}
	return def
}

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	lambdaDir := contextString(app, "lambdaDir", filepath.Join("..", "..", "bin", "lambda"))
	minutes, err := strconv.ParseFloat(contextString(app, "refreshMinutes", "1"), 64)
	if err != nil || minutes < 1 {
		fmt.Fprintln(os.Stderr, "cdk: context refreshMinutes must be a whole number of minutes ≥ 1")
		os.Exit(1)
	}
	for _, fn := range []string{"register", "refresh"} {
		if _, err := os.Stat(filepath.Join(lambdaDir, fn, "arm64", "bootstrap")); err != nil {
			fmt.Fprintf(os.Stderr, "cdk: %s/%s/arm64/bootstrap is missing: run `make lambdas` at the repository root first\n", lambdaDir, fn)
			os.Exit(1)
		}
	}
	stackProps := awscdk.StackProps{
		Description: jsii.String("lake: multi-tenant table catalog (registration API, refresh, Flight SQL discovery)"),
	}
	// The CLI names the region (us-east-1 when none is configured) and, with
	// credentials, the account; offline synth leaves the account unresolved.
	if region := os.Getenv("CDK_DEFAULT_REGION"); region != "" {
		stackProps.Env = &awscdk.Environment{Region: jsii.String(region)}
		if account := os.Getenv("CDK_DEFAULT_ACCOUNT"); account != "" {
			stackProps.Env.Account = jsii.String(account)
		}
	}
	NewLakeStack(app, "Lake", &LakeProps{
		StackProps:            stackProps,
		RegisterCode:          filepath.Join(lambdaDir, "register", "arm64"),
		RefreshCode:           filepath.Join(lambdaDir, "refresh", "arm64"),
		RepoRoot:              filepath.Join("..", ".."),
		RefreshMinutes:        minutes,
		CertificateARN:        contextString(app, "certificateArn", ""),
		ExampleProducerTenant: contextString(app, "producerTenant", "acme"),
		Version:               contextString(app, "version", "dev"),
	})
	app.Synth(nil)
}
