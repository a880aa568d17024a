// Command register is the register Lambda: API Gateway HTTP API events
// (payload 2.0, IAM auth) → the registration API → DynamoDB. The program is
// registerapi.LambdaMain.
//
// Environment:
//
//	LAKE_TABLE   DynamoDB table name (required)
//
// The SDK's standard variables (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, …)
// configure the client. Logs are JSON lines on stdout.
package main

import (
	"context"
	"os"

	"github.com/lake-catalog/lake/internal/registerapi"
)

func main() {
	os.Exit(registerapi.LambdaMain(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
