package registerapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/lambdalog"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/wire"
)

// LambdaConfig is the register Lambda's configuration.
type LambdaConfig struct {
	// Table is the DynamoDB table of registrations (LAKE_TABLE, required).
	Table string
	// Quota bounds each tenant (LAKE_TENANT_MAX_TABLES,
	// LAKE_TENANT_MAX_BYTES; unset: catalog's defaults; -1: no limit).
	Quota catalog.Quota
	// DefaultCompatibility is the mode of tables registered without one
	// (LAKE_DEFAULT_COMPATIBILITY: none, backward, forward or full; unset:
	// none).
	DefaultCompatibility schemadiff.Mode
	// Memory is how long drops stay restorable and how many versions of
	// each registration are kept (LAKE_TOMBSTONE_RETENTION,
	// LAKE_HISTORY_VERSIONS).
	Memory Memory
	// Snapshot is the published snapshot GET …/dropped reads
	// (s3://LAKE_BUCKET/LAKE_SNAPSHOT_KEY, the key defaulting as refresh's
	// does); empty without LAKE_BUCKET, when that route answers 501.
	Snapshot string
	// S3PathStyle is LAKE_S3_PATH_STYLE=true: path-style S3 addressing.
	S3PathStyle bool
}

// defaultSnapshotKey is the snapshot's object key when LAKE_SNAPSHOT_KEY is
// unset (refresh.DefaultSnapshotKey, which this package cannot import).
const defaultSnapshotKey = "snapshots/catalog.lakesnap"

// errNoSnapshot is GET …/dropped's error where the Lambda was not told the
// snapshot's bucket.
var errNoSnapshot = &apiError{http.StatusNotImplemented, wire.CodeNotImplemented,
	"this deployment's registration API does not read the snapshot (no LAKE_BUCKET): discovery's lake.dropped action lists dropped tables"}

// Memory is what the catalog keeps of past states: TombstoneRetention and
// HistoryVersions as catalog.Options takes them (0: the default; -1: none).
type Memory struct {
	TombstoneRetention time.Duration
	HistoryVersions    int
	HistoryMaxAge      time.Duration
}

// MemoryFromEnv reads LAKE_TOMBSTONE_RETENTION (a duration of at least 1h,
// such as 168h, or off: a drop is final) and LAKE_HISTORY_VERSIONS (1 to
// 100000, or off: no history kept) and LAKE_HISTORY_MAX_AGE (a duration of
// at least 1h; unset: no age bound); unset takes the catalog's defaults
// (catalog.DefaultTombstoneRetention, catalog.DefaultHistoryVersions).
func MemoryFromEnv(getenv func(string) string) (Memory, error) {
	var m Memory
	if v := getenv("LAKE_TOMBSTONE_RETENTION"); v == "off" {
		m.TombstoneRetention = -1
	} else if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Hour {
			return m, fmt.Errorf("LAKE_TOMBSTONE_RETENTION %q: want a duration of at least 1h (such as 168h), or off", v)
		}
		m.TombstoneRetention = d
	}
	if v := getenv("LAKE_HISTORY_VERSIONS"); v == "off" {
		m.HistoryVersions = -1
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100_000 {
			return m, fmt.Errorf("LAKE_HISTORY_VERSIONS %q: want 1 to 100000, or off", v)
		}
		m.HistoryVersions = n
	}
	if v := getenv("LAKE_HISTORY_MAX_AGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Hour {
			return m, fmt.Errorf("LAKE_HISTORY_MAX_AGE %q: want a duration of at least 1h (such as 8760h)", v)
		}
		m.HistoryMaxAge = d
	}
	return m, nil
}

// LambdaConfigFromEnv reads and validates the register Lambda's environment.
func LambdaConfigFromEnv(getenv func(string) string) (LambdaConfig, error) {
	c := LambdaConfig{Table: getenv("LAKE_TABLE")}
	if c.Table == "" {
		return c, errors.New("LAKE_TABLE is required: the DynamoDB table of registrations")
	}
	var err error
	if c.Quota, err = QuotaFromEnv(getenv); err != nil {
		return c, err
	}
	if c.Memory, err = MemoryFromEnv(getenv); err != nil {
		return c, err
	}
	if bucket := getenv("LAKE_BUCKET"); bucket != "" {
		key := getenv("LAKE_SNAPSHOT_KEY")
		if key == "" {
			key = defaultSnapshotKey
		}
		c.Snapshot = "s3://" + bucket + "/" + key
	}
	if v := getenv("LAKE_S3_PATH_STYLE"); v != "" {
		if c.S3PathStyle, err = strconv.ParseBool(v); err != nil {
			return c, fmt.Errorf("LAKE_S3_PATH_STYLE %q: want true or false", v)
		}
	}
	if v := getenv("LAKE_DEFAULT_COMPATIBILITY"); v != "" {
		if c.DefaultCompatibility, err = schemadiff.ParseMode(v); err != nil {
			return c, fmt.Errorf("LAKE_DEFAULT_COMPATIBILITY %q: want none, backward, forward or full", v)
		}
	}
	return c, nil
}

// QuotaFromEnv reads LAKE_TENANT_MAX_TABLES and LAKE_TENANT_MAX_BYTES (or,
// when that is unset, its former name LAKE_TENANT_MAX_SCHEMA_BYTES, which
// now bounds whole registrations too): unset takes the catalog's default,
// -1 means no limit, else a positive whole number.
func QuotaFromEnv(getenv func(string) string) (catalog.Quota, error) {
	var q catalog.Quota
	bytesVar := "LAKE_TENANT_MAX_BYTES"
	if getenv(bytesVar) == "" && getenv("LAKE_TENANT_MAX_SCHEMA_BYTES") != "" {
		bytesVar = "LAKE_TENANT_MAX_SCHEMA_BYTES"
	}
	for _, v := range []struct {
		name string
		dst  *int64
	}{{"LAKE_TENANT_MAX_TABLES", &q.MaxTables}, {bytesVar, &q.MaxBytes}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || (n < 1 && n != -1) {
			return q, fmt.Errorf("%s %q: want a positive whole number, or -1 for no limit", v.name, s)
		}
		*v.dst = n
	}
	return q, nil
}

// LambdaMain is the register Lambda's program: it reads the configuration
// from getenv, builds the DynamoDB client once per cold start and serves API
// Gateway HTTP API events (payload 2.0, IAM-authorized) until the runtime
// stops it. It returns a non-zero exit code only when it cannot start. Logs
// are JSON on stdout.
func LambdaMain(ctx context.Context, _ []string, getenv func(string) string, stdout, _ io.Writer) int {
	log := lambdalog.New(stdout)
	cfg, err := LambdaConfigFromEnv(getenv)
	if err != nil {
		log.Error("register: configuration", slog.String("error", err.Error()))
		return 2
	}
	h, err := NewLambda(ctx, cfg, log)
	if err != nil {
		log.Error("register: start", slog.String("error", err.Error()))
		return 1
	}
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return 0
}

// NewLambda builds the DynamoDB client for cfg and returns the API Gateway
// handler of the registration API. API Gateway's IAM authorization has
// already run; the log names the IAM caller.
func NewLambda(ctx context.Context, cfg LambdaConfig, log *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(awsCfg, dynamo.RetryOptions(dynamo.RetryPolicy{})), dynamo.Options{Table: cfg.Table})
	if err != nil {
		return nil, err
	}
	// The dropped tables come from the snapshot: a prefix read of
	// DynamoDB would scan the whole table for one tenant's request.
	dropped := DroppedLister(func(context.Context, string) ([]wire.DroppedTable, error) { return nil, errNoSnapshot })
	if cfg.Snapshot != "" {
		blobs, err := blobstore.Open(ctx, cfg.Snapshot, blobstore.OpenOptions{S3PathStyle: cfg.S3PathStyle, AWSConfig: &awsCfg})
		if err != nil {
			return nil, err
		}
		dropped = SnapshotDropped(blobs, time.Now)
	}
	api, err := New(catalog.New(store, catalog.Options{Quota: cfg.Quota, DefaultCompatibility: cfg.DefaultCompatibility,
		TombstoneRetention: cfg.Memory.TombstoneRetention, HistoryVersions: cfg.Memory.HistoryVersions, HistoryMaxAge: cfg.Memory.HistoryMaxAge}),
		Options{Authorize: AllowAll(IAMCaller), Log: log, Dropped: dropped})
	if err != nil {
		return nil, err
	}
	return LambdaHandler(api), nil
}

// LambdaHandler serves h to API Gateway HTTP API events (payload format
// 2.0). An event that cannot become an HTTP request is answered 400, never
// a Lambda error: a retry would not help.
func LambdaHandler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		resp, err := adapter.ProxyWithContext(ctx, ev)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{
				StatusCode: http.StatusBadRequest,
				Headers:    map[string]string{"Content-Type": "application/json"},
				Body:       string(errorJSON(wire.CodeInvalidRequest, "the request could not be read")),
			}, nil
		}
		return resp, nil
	}
}

// IAMCaller names the IAM principal API Gateway authorized for r (its ARN),
// or "" when the request did not come through API Gateway's IAM auth.
func IAMCaller(r *http.Request) string {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return ""
	}
	return rc.Authorizer.IAM.UserARN
}
