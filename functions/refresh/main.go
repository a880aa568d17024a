// Command refresh is the refresh Lambda: on each DynamoDB stream batch it
// applies the changed keys to the snapshot, and on each EventBridge
// scheduled event it scans DynamoDB when needed; it publishes the changed
// tenants' segments and the manifest to S3 when their content changed. The
// program is refresh.LambdaMain.
//
// Environment:
//
//	LAKE_TABLE                DynamoDB table name (required)
//	LAKE_BUCKET               S3 bucket of the snapshot blob (required)
//	LAKE_SNAPSHOT_KEY         object key of the blob (default snapshots/catalog.lakesnap)
//	LAKE_SCAN_SEGMENTS        parallel Scan segments (default 1)
//	LAKE_SCAN_PAGE_LIMIT      items per Scan page (default 0: DynamoDB's 1 MB pages)
//	LAKE_DYNAMO_MAX_ATTEMPTS  attempts per DynamoDB call, retries included (default 10)
//	LAKE_S3_PATH_STYLE        true selects path-style S3 addressing (S3-compatible servers)
//	LAKE_HISTORY_VERSIONS     versions the register function keeps of each table (its value; default 100; off)
//	LAKE_HISTORY_BUDGET       version records read per invocation to purge orphaned history (default 5000)
//	LAKE_RECONCILE_INTERVAL   how often a scheduled run scans in full whatever the change counter says (default 24h, at least 1m)
//	LAKE_MAX_INCREMENTAL      changed keys a stream batch applies; a larger batch is a full scan (default 1000)
//	LAKE_EVENT_BUS            EventBridge bus (name or ARN) the change events are put on (default: none)
//
// The SDK's standard variables (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_S3, …) configure the clients. Logs and metrics (EMF) are
// JSON lines on stdout.
package main

import (
	"context"
	"os"

	"github.com/lake-catalog/lake/internal/refresh"
)

func main() {
	os.Exit(refresh.LambdaMain(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
