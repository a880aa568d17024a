// Command hello is the yardstick for Lambda start-up: the smallest
// aws-lambda-go function, built the same way as lake's bootstraps.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, map[string]any) (string, error) { return "hello", nil })
}
