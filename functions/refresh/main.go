// Command refresh is the refresh Lambda: on each EventBridge scheduled event
// it scans DynamoDB once, builds the snapshot and publishes the blob to S3
// when its content changed.
//
// Environment:
//
//	LAKE_TABLE          DynamoDB table name (required)
//	LAKE_BUCKET         S3 bucket of the snapshot blob (required)
//	LAKE_SNAPSHOT_KEY   object key of the blob (default snapshots/catalog.lakesnap)
//	LAKE_SCAN_SEGMENTS  parallel Scan segments (default 1)
//	LAKE_SCAN_PAGE_LIMIT  items per Scan page (default 0: DynamoDB's 1 MB pages)
//	LAKE_DYNAMO_MAX_ATTEMPTS  attempts per DynamoDB call, retries included (default 10)
//
// The SDK's standard variables (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_S3, …) configure the clients; LAKE_S3_PATH_STYLE=true
// selects path-style S3 addressing for S3-compatible servers.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/lambdalog"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

func main() {
	log := lambdalog.New(os.Stderr)
	if err := run(log); err != nil {
		log.Error("refresh: start", slog.String("error", err.Error()))
		os.Exit(1)
	}
}

type settings struct {
	table, bucket, key string
	segments           int
	pageLimit          int
	maxAttempts        int
	pathStyle          bool
}

// intEnv reads a whole number from name within [lo, hi], or def when unset.
func intEnv(name string, def, lo, hi int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want a whole number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

func load() (settings, error) {
	s := settings{
		table:  os.Getenv("LAKE_TABLE"),
		bucket: os.Getenv("LAKE_BUCKET"),
		key:    os.Getenv("LAKE_SNAPSHOT_KEY"),
	}
	if s.key == "" {
		s.key = "snapshots/catalog.lakesnap"
	}
	if s.table == "" || s.bucket == "" {
		return s, fmt.Errorf("LAKE_TABLE and LAKE_BUCKET are required")
	}
	var err error
	if s.segments, err = intEnv("LAKE_SCAN_SEGMENTS", 1, 1, 1024); err != nil {
		return s, err
	}
	if s.pageLimit, err = intEnv("LAKE_SCAN_PAGE_LIMIT", 0, 0, 1_000_000); err != nil {
		return s, err
	}
	if s.maxAttempts, err = intEnv("LAKE_DYNAMO_MAX_ATTEMPTS", 10, 1, 100); err != nil {
		return s, err
	}
	s.pathStyle = os.Getenv("LAKE_S3_PATH_STYLE") == "true"
	return s, nil
}

func run(log *slog.Logger) error {
	s, err := load()
	if err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(cfg, dynamo.RetryOptions(dynamo.RetryPolicy{MaxAttempts: s.maxAttempts})),
		dynamo.Options{Table: s.table, Segments: s.segments, PageLimit: int32(s.pageLimit)})
	if err != nil {
		return err
	}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = s.pathStyle })
	blobs, err := blobstore.NewS3(s3c, s.bucket, s.key, 0)
	if err != nil {
		return err
	}
	p := &refresh.Publisher{Store: store, Blobs: blobs}
	lambda.Start(func(ctx context.Context, _ events.CloudWatchEvent) (refresh.Result, error) {
		res, err := p.Run(ctx)
		if err != nil {
			// Returned so the invocation fails: the alarm and the on-failure
			// destination see it, and the next schedule retries.
			log.ErrorContext(ctx, "refresh failed", slog.String("error", err.Error()))
			return res, err
		}
		res.Log(ctx, log, blobs.Location())
		if err := res.WriteEMF(os.Stdout, "lake", time.Now()); err != nil {
			log.WarnContext(ctx, "refresh: metrics line", slog.String("error", err.Error()))
		}
		return res, nil
	})
	return nil
}
