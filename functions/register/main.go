// Command register is the register Lambda: API Gateway HTTP API events
// (payload 2.0, IAM auth) → the registration API → DynamoDB. The program is
// program.Main (functions/register/program).
//
// Environment (README, Configuration):
//
//	LAKE_TABLE                  DynamoDB table name (required)
//	LAKE_DEFAULT_COMPATIBILITY  mode of tables registered without one (default none)
//	LAKE_TOMBSTONE_RETENTION    how long a drop stays restorable (default 168h; off)
//	LAKE_HISTORY_VERSIONS       versions kept of each table (default 100; off)
//	LAKE_HISTORY_MAX_AGE        age past which versions are not kept (default unset)
//	LAKE_TENANT_MAX_TABLES      tables per tenant (default 10000; -1: no limit)
//	LAKE_TENANT_MAX_BYTES       registration bytes per tenant (default 33554432; -1: no limit)
//
// The SDK's standard variables (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, …)
// configures the client. Logs are JSON lines on stdout.
package main

import (
	"context"
	"os"

	"github.com/lake-catalog/lake/functions/register/program"
)

func main() {
	os.Exit(program.Main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
