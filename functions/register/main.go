// Command register is the register Lambda: API Gateway HTTP API events
// (payload 2.0, IAM auth) → the registration API → DynamoDB.
//
// Environment:
//
//	LAKE_TABLE   DynamoDB table name (required)
//
// The SDK's standard variables (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, …)
// configure the client.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/lake-catalog/lake/internal/lambdalog"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

func main() {
	log := lambdalog.New(os.Stdout)
	if err := run(log); err != nil {
		log.Error("register: start", slog.String("error", err.Error()))
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	table := os.Getenv("LAKE_TABLE")
	if table == "" {
		return fmt.Errorf("LAKE_TABLE is required: the DynamoDB table of registrations")
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(cfg, dynamo.RetryOptions(dynamo.RetryPolicy{})), dynamo.Options{Table: table})
	if err != nil {
		return err
	}
	api := registerapi.New(catalog.New(store, catalog.Options{}), registerapi.Options{
		Caller: registerapi.IAMCaller,
		Log:    log,
	})
	lambda.Start(registerapi.LambdaHandler(api))
	return nil
}
