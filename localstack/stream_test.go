//go:build integration

package localstack_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// onLocalStack reports whether the suite runs against LocalStack (or
// another endpoint with DynamoDB Streams) rather than dynalite, which has
// no streams.
func onLocalStack() bool { return os.Getenv("AWS_ENDPOINT_URL") != "" }

// enableStream turns on a KEYS_ONLY stream on the cloud's table (what the
// CDK stack and the LocalStack init hook do) and returns its ARN.
func (c *cloud) enableStream(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	out, err := c.ddb.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(c.table),
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeKeysOnly}})
	if err != nil {
		t.Fatalf("enable the table's stream: %v", err)
	}
	return aws.ToString(out.TableDescription.LatestStreamArn)
}

// streamRecords reads every record the stream holds (from the start of
// each shard) as the batch Lambda would get.
func (c *cloud) streamRecords(t *testing.T, arn string) events.DynamoDBEvent {
	t.Helper()
	ctx := context.Background()
	sc := dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(c.ddbEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider(c.access, c.secretKey, "")})
	desc, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("describe stream: %v", err)
	}
	var ev events.DynamoDBEvent
	for _, shard := range desc.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard.ShardId,
			ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatalf("shard iterator: %v", err)
		}
		recs, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatalf("get records: %v", err)
		}
		for _, r := range recs.Records {
			keys := map[string]events.DynamoDBAttributeValue{}
			for k, v := range r.Dynamodb.Keys {
				if s, ok := v.(*streamtypes.AttributeValueMemberS); ok {
					keys[k] = events.NewStringAttribute(s.Value)
				}
			}
			ev.Records = append(ev.Records, events.DynamoDBEventRecord{EventID: aws.ToString(r.EventID), EventName: string(r.EventName),
				EventSource: aws.ToString(r.EventSource), EventSourceArn: arn,
				Change: events.DynamoDBStreamRecord{Keys: keys, StreamViewType: string(r.Dynamodb.StreamViewType)}})
		}
	}
	return ev
}

// The stream path end to end: a registration through the register
// function, the stream batch its writes make (read from the real stream on
// LocalStack; dynalite has none, so built as AWS sends it), the refresh
// function applying it incrementally, and discovery serving it from S3.
func TestStreamPath(t *testing.T) {
	t.Parallel()
	c := newCloud(t)
	var arn string
	if onLocalStack() {
		arn = c.enableStream(t)
	}
	reg, fn := c.register(t), c.refresher(t)
	ipc, _ := catalog.EncodeSchema(catalogtest.WideSchema(1, 6))
	registerTable(t, reg, "acme", "sales", "orders", ipc)
	if res := runRefresh(t, fn); res.Outcome != refresh.Published {
		t.Fatalf("first refresh = %+v", res)
	}
	d := c.discovery(t, "")
	d.waitRows(t, "acme", 1)

	registerTable(t, reg, "acme", "sales", "returns", ipc)
	var batch events.DynamoDBEvent
	if onLocalStack() {
		time.Sleep(time.Second) // let the stream catch up with the writes
		batch = c.streamRecords(t, arn)
	} else {
		for _, key := range []string{"tbl/acme/sales/returns", catalog.ChangesKey, catalog.QuotaPrefix + "acme"} {
			batch.Records = append(batch.Records, events.DynamoDBEventRecord{EventID: key, EventName: "INSERT", EventSource: "aws:dynamodb",
				Change: events.DynamoDBStreamRecord{Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(key)}, StreamViewType: "KEYS_ONLY"}})
		}
	}
	out, err := fn.Invoke(context.Background(), batch)
	if err != nil {
		t.Fatalf("refresh with the stream batch: %v", err)
	}
	var res refresh.Result
	if err := json.Unmarshal(out, &res); err != nil || !res.Incremental || res.Scanned || res.Outcome != refresh.Published {
		t.Fatalf("stream batch of %d records = %+v, %v; want an incremental publish", len(batch.Records), res, err)
	}
	d.waitRows(t, "acme", 2)
}
