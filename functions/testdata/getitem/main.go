// Command getitem is the second yardstick for Lambda start-up: the smallest
// function that makes register's AWS call (config.LoadDefaultConfig, a
// DynamoDB client, one strongly consistent GetItem on LAKE_TABLE), built the
// same way as lake's bootstraps. Beside it, register's and refresh's first
// invokes show what lake adds to what any Go function using the SDK pays.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	client, table := dynamodb.NewFromConfig(cfg), os.Getenv("LAKE_TABLE")
	lambda.Start(func(ctx context.Context, _ map[string]any) (bool, error) {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(table),
			Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "tbl/acme/s/missing"}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return false, err
		}
		return out.Item != nil, nil
	})
}
