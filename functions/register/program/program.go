// Package program is the register Lambda's program, beside its main: it
// reads the configuration from the environment, builds the DynamoDB client
// once per cold start, and serves the registration API (internal/registerapi)
// to API Gateway HTTP API events. Every route, GET
// /v1/tenants/{tenant}/dropped included, is answered from the catalog in
// DynamoDB (the dropped tables from the tenant's index of them, read with
// Gets: the function's role may not Scan); nothing reads the published
// snapshot.
package program

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/lake-catalog/lake/internal/apierror"
	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/lambdalog"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/tablesync"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Config is the register Lambda's configuration.
type Config struct {
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
	Memory registerapi.Memory
	// Vending is how GET …/credentials vends (LAKE_VENDING_ROLE_ARN,
	// LAKE_VENDING_DURATION, LAKE_VENDING_OWN_BUCKETS,
	// LAKE_VENDING_EVENT_BUS: vending.ConfigFromEnv); without a role it
	// answers 501 vending_not_configured.
	Vending vending.Config
	// IcebergMetadata is where POST …/sync writes tables' Iceberg metadata
	// (LAKE_ICEBERG_METADATA, s3://bucket/); unset: sync answers 501
	// sync_not_configured.
	IcebergMetadata string
	// S3PathStyle is LAKE_S3_PATH_STYLE=true: path-style addressing for
	// S3-compatible servers.
	S3PathStyle bool
}

// DefaultVending is the vending configuration of an environment that sets
// none of its variables: no role (501 vending_not_configured), and events
// put before the answer, as a Lambda may be frozen as soon as it answers.
func DefaultVending() vending.Config {
	c, _ := vending.ConfigFromEnv(func(string) string { return "" })
	c.SyncEvents = true
	return c
}

// ConfigFromEnv reads and validates the register Lambda's environment.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Table: getenv("LAKE_TABLE")}
	if c.Table == "" {
		return c, errors.New("LAKE_TABLE is required: the DynamoDB table of registrations")
	}
	var err error
	if c.Quota, err = QuotaFromEnv(getenv); err != nil {
		return c, err
	}
	if c.Vending, err = vending.ConfigFromEnv(getenv); err != nil {
		return c, err
	}
	c.Vending.SyncEvents = DefaultVending().SyncEvents
	if v := getenv("LAKE_ICEBERG_METADATA"); v != "" {
		bucket, ok := strings.CutPrefix(v, "s3://")
		bucket = strings.TrimSuffix(bucket, "/")
		if !ok || bucket == "" || strings.Contains(bucket, "/") {
			return c, fmt.Errorf("LAKE_ICEBERG_METADATA %q: want s3://bucket/", v)
		}
		c.IcebergMetadata = bucket
	}
	c.S3PathStyle = getenv("LAKE_S3_PATH_STYLE") == "true"
	if c.Memory, err = registerapi.MemoryFromEnv(getenv); err != nil {
		return c, err
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

// Main is the register Lambda's program: it reads the configuration
// from getenv, builds the DynamoDB client once per cold start and serves API
// Gateway HTTP API events (payload 2.0, IAM-authorized) until the runtime
// stops it. It returns a non-zero exit code only when it cannot start. Logs
// are JSON on stdout, with one EMF metrics line per request (Measured).
func Main(ctx context.Context, _ []string, getenv func(string) string, stdout, _ io.Writer) int {
	log := lambdalog.New(stdout)
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		log.Error("register: configuration", slog.String("error", err.Error()))
		return 2
	}
	h, err := NewHandler(ctx, cfg, log, stdout)
	if err != nil {
		log.Error("register: start", slog.String("error", err.Error()))
		return 1
	}
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return 0
}

// NewHandler builds the DynamoDB client for cfg and returns the API Gateway
// handler of the registration API, measured (one EMF line per request on
// metrics: Measured). API Gateway's IAM authorization has already run;
// the log names the IAM caller.
func NewHandler(ctx context.Context, cfg Config, log *slog.Logger, metrics io.Writer) (Handler, error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(awsCfg, dynamo.RetryOptions(dynamo.RetryPolicy{})), dynamo.Options{Table: cfg.Table})
	if err != nil {
		return nil, err
	}
	cat := catalog.New(store, catalog.Options{Quota: cfg.Quota, DefaultCompatibility: cfg.DefaultCompatibility,
		TombstoneRetention: cfg.Memory.TombstoneRetention, HistoryVersions: cfg.Memory.HistoryVersions, HistoryMaxAge: cfg.Memory.HistoryMaxAge})
	door, _, err := vending.Open(cfg.Vending, awsCfg, log)
	if err != nil {
		return nil, err
	}
	// API Gateway's IAM authorization decides who reaches the admin routes
	// (/v1/admin/…): a producer's policy grants its tenant's paths only.
	var syncer registerapi.Syncer
	if cfg.IcebergMetadata != "" {
		meta := s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = cfg.S3PathStyle })
		syncer = &tablesync.Syncer{Catalog: cat, Door: door, Meta: icebergsync.NewS3MetaStore(meta, cfg.IcebergMetadata),
			S3Config: awsCfg, S3PathStyle: cfg.S3PathStyle}
	}
	api, err := registerapi.New(cat, registerapi.Options{Authorize: registerapi.AllowAll(IAMCaller), AuthorizeAdmin: registerapi.AllowAll(IAMCaller),
		Door: door, Sync: syncer, SyncOnWrite: syncer != nil, SyncInline: true, Log: log,
		Preview: registerapi.PreviewOptions{S3Config: awsCfg, S3PathStyle: cfg.S3PathStyle}})
	if err != nil {
		return nil, err
	}
	return Measured(LambdaHandler(api), cat, metrics, time.Now), nil
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
				Body:       string(apierror.JSON(wire.CodeInvalidRequest, "the request could not be read")),
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
