// Command cdk is lake's AWS CDK app: `cdk synth` / `cdk deploy` run it.
//
// Context values (cdk deploy -c key=value):
//
//	certificateArn   ACM certificate for TLS listeners on 443 (Flight SQL) and
//	                 8443 (Iceberg REST catalog) (default: TCP 50051 and 8184,
//	                 allowed only with internal=true)
//	internal         true: an internal load balancer, reachable only from the VPC
//	                 (default false: internet-facing, which needs certificateArn)
//	refreshMinutes   safety-net refresh schedule, 1 to 1440 whole minutes
//	                 (default 15); the table's stream triggers refresh on
//	                 every change
//	streamBatchingSeconds
//	                 how long the stream's event source mapping gathers
//	                 changes before it invokes refresh, 0 to 300 seconds
//	                 (default 1; 0: no window)
//	streamBatchSize  most stream records per refresh invocation, 1 to 10000
//	                 (default 100)
//	producerTenant   tenant of the example producer policy (default acme)
//	lambdaDir        folder with register/arm64 and refresh/arm64 bootstraps (default ../../bin/lambda)
//	version          what the discovery image reports as its version (default dev)
//	defaultCompatibility
//	                 compatibility mode of tables registered without one:
//	                 none, backward, forward or full (default: unset, none)
//	tombstoneRetention
//	                 how long a drop can be undone: a duration of at least
//	                 1h, or off (default 168h)
//	historyVersions  versions kept of each table: 1 to 100000, or off
//	                 (default 100)
//	historyMaxAge    versions older than this are no longer kept: a
//	                 duration of at least 1h (default: unset, by count alone)
//	dataBuckets      S3 buckets tenants' tables may live in, comma-separated
//	                 (or a JSON list in cdk.json), at most 19: lake vends
//	                 table-scoped read credentials in these only, through
//	                 the LakeDataReader role (default: none, vending off:
//	                 no reader role, no LAKE_VENDING_* environment)
package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func contextString(app awscdk.App, key, def string) string {
	if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
		return v
	}
	return def
}

// contextBool reads a true/false context value: a string from
// `-c key=value`, or a JSON boolean from cdk.json.
func contextBool(app awscdk.App, key string) (bool, error) {
	switch v := app.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("cdk: context %s=%q: want true or false", key, v)
		}
		return b, nil
	default:
		return false, fmt.Errorf("cdk: context %s=%v: want true or false", key, v)
	}
}

// contextInt reads a whole number in [lo, hi] from the context: a string
// from `-c key=value`, or a JSON number from cdk.json; def when absent.
func contextInt(app awscdk.App, key string, def, lo, hi int) (int, error) {
	n, ok := def, true
	switch v := app.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
	case string:
		if v != "" {
			var err error
			n, err = strconv.Atoi(v)
			ok = err == nil
		}
	case float64:
		n, ok = int(v), v == math.Trunc(v) && math.Abs(v) < 1<<31
	default:
		ok = false
	}
	if !ok || n < lo || n > hi {
		return 0, fmt.Errorf("cdk: context %s=%v: want a whole number from %d to %d",
			key, app.Node().TryGetContext(jsii.String(key)), lo, hi)
	}
	return n, nil
}

// contextList reads a list of names from the context: a comma-separated
// string from `-c key=a,b` (spaces around names trimmed), or a JSON list of
// strings from cdk.json; nil when absent or empty.
func contextList(app awscdk.App, key string) ([]string, error) {
	var names []string
	switch v := app.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
		return nil, nil
	case string:
		if strings.TrimSpace(v) == "" {
			return nil, nil
		}
		names = strings.Split(v, ",")
	case []any:
		for _, e := range v {
			name, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("cdk: context %s=%v: want names separated by commas, or a list of strings", key, v)
			}
			names = append(names, name)
		}
	default:
		return nil, fmt.Errorf("cdk: context %s=%v: want names separated by commas, or a list of strings", key, v)
	}
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return names, nil
}

// propsFromContext reads the stack's settings from the app's context (see
// the package comment).
func propsFromContext(app awscdk.App) (*LakeProps, error) {
	lambdaDir := contextString(app, "lambdaDir", filepath.Join("..", "..", "bin", "lambda"))
	// EventBridge takes up to a year; a day is plenty for a safety net.
	minutes, err := contextInt(app, "refreshMinutes", DefaultRefreshMinutes, 1, 24*60)
	if err != nil {
		return nil, err
	}
	batchingSeconds, err := contextInt(app, "streamBatchingSeconds",
		int(DefaultStreamBatchingWindow/time.Second), 0, int(MaxStreamBatchingWindow/time.Second))
	if err != nil {
		return nil, err
	}
	batchingWindow := time.Duration(batchingSeconds) * time.Second
	if batchingWindow == 0 {
		batchingWindow = -1 // LakeProps: no window
	}
	batchSize, err := contextInt(app, "streamBatchSize", DefaultStreamBatchSize, 1, MaxStreamBatchSize)
	if err != nil {
		return nil, err
	}
	internal, err := contextBool(app, "internal")
	if err != nil {
		return nil, err
	}
	dataBuckets, err := contextList(app, "dataBuckets")
	if err != nil {
		return nil, err
	}
	return &LakeProps{
		RegisterCode:          filepath.Join(lambdaDir, "register", "arm64"),
		RefreshCode:           filepath.Join(lambdaDir, "refresh", "arm64"),
		RepoRoot:              filepath.Join("..", ".."),
		RefreshMinutes:        float64(minutes),
		StreamBatchingWindow:  batchingWindow,
		StreamBatchSize:       batchSize,
		CertificateARN:        contextString(app, "certificateArn", ""),
		Internal:              internal,
		ExampleProducerTenant: contextString(app, "producerTenant", "acme"),
		Version:               contextString(app, "version", "dev"),
		DefaultCompatibility:  contextString(app, "defaultCompatibility", ""),
		TombstoneRetention:    contextString(app, "tombstoneRetention", ""),
		HistoryVersions:       contextString(app, "historyVersions", ""),
		HistoryMaxAge:         contextString(app, "historyMaxAge", ""),
		DataBuckets:           dataBuckets,
	}, nil
}

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	props, err := propsFromContext(app)
	if err == nil {
		err = props.Validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, code := range []string{props.RegisterCode, props.RefreshCode} {
		if _, err := os.Stat(filepath.Join(code, "bootstrap")); err != nil {
			fmt.Fprintf(os.Stderr, "cdk: %s/bootstrap is missing: run `make lambdas` at the repository root first\n", code)
			os.Exit(1)
		}
	}
	props.StackProps = awscdk.StackProps{
		Description: jsii.String("lake: multi-tenant table catalog (registration API, refresh, Flight SQL discovery)"),
	}
	// The CLI names the region (us-east-1 when none is configured) and, with
	// credentials, the account; offline synth leaves the account unresolved.
	if region := os.Getenv("CDK_DEFAULT_REGION"); region != "" {
		props.StackProps.Env = &awscdk.Environment{Region: jsii.String(region)}
		if account := os.Getenv("CDK_DEFAULT_ACCOUNT"); account != "" {
			props.StackProps.Env.Account = jsii.String(account)
		}
	}
	if _, err := NewLakeStack(app, "Lake", props); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	app.Synth(nil)
}
