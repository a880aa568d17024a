package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/lambdalog"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// LambdaConfig is the refresh Lambda's configuration, read from its
// environment by LambdaConfigFromEnv.
type LambdaConfig struct {
	// Table is the DynamoDB table of registrations (LAKE_TABLE, required).
	Table string
	// Blob is where the snapshot blob lives: s3://LAKE_BUCKET/LAKE_SNAPSHOT_KEY.
	Blob string
	// Segments is the number of parallel Scan segments (LAKE_SCAN_SEGMENTS, default 1).
	Segments int
	// PageLimit is the items per Scan page, 0 for DynamoDB's 1 MB pages (LAKE_SCAN_PAGE_LIMIT).
	PageLimit int
	// MaxAttempts is the attempts per DynamoDB call, retries included (LAKE_DYNAMO_MAX_ATTEMPTS, default 10).
	MaxAttempts int
	// S3PathStyle selects path-style S3 addressing (LAKE_S3_PATH_STYLE=true).
	S3PathStyle bool
	// Reconcile is the most time between full scans whatever the change
	// counter says (LAKE_RECONCILE_INTERVAL, default 24h, at least 1m).
	Reconcile time.Duration
	// MaxIncremental is the largest stream batch applied incrementally;
	// a larger one is a full scan (LAKE_MAX_INCREMENTAL, default 1000).
	MaxIncremental int
	// EventBus, when set, is the EventBridge bus each published stream
	// batch's changes are put on (LAKE_EVENT_BUS: a bus name or ARN).
	EventBus string
	// HistoryVersions is how many versions of each registration the
	// register function keeps (LAKE_HISTORY_VERSIONS, as it reads it: 1 to
	// 100000, off is -1; unset, 0, the catalog's default): the purge of a
	// dropped table's orphaned history finds its records by it.
	HistoryVersions int
	// HistoryBudget is the most version records one invocation reads to
	// purge orphaned history (LAKE_HISTORY_BUDGET, 1 to 1000000; unset, 0,
	// DefaultHistoryBudget).
	HistoryBudget int
}

// DefaultSnapshotKey is the blob's object key when LAKE_SNAPSHOT_KEY is unset.
const DefaultSnapshotKey = "snapshots/catalog.lakesnap"

// LambdaConfigFromEnv reads and validates the refresh Lambda's environment.
func LambdaConfigFromEnv(getenv func(string) string) (LambdaConfig, error) {
	c := LambdaConfig{Table: getenv("LAKE_TABLE"), EventBus: getenv("LAKE_EVENT_BUS")}
	bucket, key := getenv("LAKE_BUCKET"), getenv("LAKE_SNAPSHOT_KEY")
	if key == "" {
		key = DefaultSnapshotKey
	}
	if c.Table == "" || bucket == "" {
		return c, errors.New("LAKE_TABLE and LAKE_BUCKET are required: the DynamoDB table of registrations and the bucket of the snapshot blob")
	}
	c.Blob = "s3://" + bucket + "/" + key
	var err error
	if c.Segments, err = intEnv(getenv, "LAKE_SCAN_SEGMENTS", 1, 1, 1024); err != nil {
		return c, err
	}
	if c.PageLimit, err = intEnv(getenv, "LAKE_SCAN_PAGE_LIMIT", 0, 0, 1_000_000); err != nil {
		return c, err
	}
	if c.MaxAttempts, err = intEnv(getenv, "LAKE_DYNAMO_MAX_ATTEMPTS", 10, 1, 100); err != nil {
		return c, err
	}
	if c.MaxIncremental, err = intEnv(getenv, "LAKE_MAX_INCREMENTAL", DefaultMaxIncremental, 1, 1_000_000); err != nil {
		return c, err
	}
	if v := getenv("LAKE_HISTORY_VERSIONS"); v == "off" {
		c.HistoryVersions = -1
	} else if c.HistoryVersions, err = intEnv(getenv, "LAKE_HISTORY_VERSIONS", 0, 1, 100_000); err != nil {
		return c, err
	}
	if c.HistoryBudget, err = intEnv(getenv, "LAKE_HISTORY_BUDGET", 0, 1, 1_000_000); err != nil {
		return c, err
	}
	c.Reconcile = DefaultReconcile
	if v := getenv("LAKE_RECONCILE_INTERVAL"); v != "" {
		if c.Reconcile, err = time.ParseDuration(v); err != nil || c.Reconcile < time.Minute {
			return c, fmt.Errorf("LAKE_RECONCILE_INTERVAL=%q: want a duration of at least 1m, such as 1h", v)
		}
	}
	if v := getenv("LAKE_S3_PATH_STYLE"); v != "" {
		if c.S3PathStyle, err = strconv.ParseBool(v); err != nil {
			return c, fmt.Errorf("LAKE_S3_PATH_STYLE=%q: want true or false", v)
		}
	}
	return c, nil
}

// intEnv reads a whole number from name within [lo, hi], or def when unset.
func intEnv(getenv func(string) string, name string, def, lo, hi int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want a whole number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

// LambdaMain is the refresh Lambda's program: it reads the configuration
// from getenv, builds the DynamoDB and S3 clients once per cold start and
// serves EventBridge scheduled events until the runtime stops it. It
// returns a non-zero exit code only when it cannot start. Logs are JSON on
// stdout, with the EMF metrics line of each run.
func LambdaMain(ctx context.Context, _ []string, getenv func(string) string, stdout, _ io.Writer) int {
	log := lambdalog.New(stdout)
	cfg, err := LambdaConfigFromEnv(getenv)
	if err != nil {
		log.Error("refresh: configuration", slog.String("error", err.Error()))
		return 2
	}
	h, err := NewLambdaHandler(ctx, cfg, log, stdout)
	if err != nil {
		log.Error("refresh: start", slog.String("error", err.Error()))
		return 1
	}
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return 0
}

// NewLambdaHandler builds the clients for cfg and returns the handler of
// the refresh Lambda's events: an EventBridge scheduled event runs Run (one
// read of the change counter when nothing changed), a DynamoDB Streams
// batch runs Apply with the batch's changed keys (registrations,
// tombstones, tables' Iceberg states and tenant settings are applied; the
// stream must therefore carry iceberg/ keys too; other keys, the counter's
// and the quotas', are ignored by it). Every run is logged (one
// JSON line) and measured (one EMF line on metrics). A failed run, or an
// event that is neither, returns an error so the invocation fails: for a
// stream batch the event source mapping retries and bisects it, then sends
// it to the on-failure queue; the schedule's next run retries a scheduled
// one. A malformed event publishes nothing. The version records
// DynamoDB's TTL leaves unreachable are purged (Publisher.History, a
// catalog keeping cfg.HistoryVersions, within cfg.HistoryBudget): a
// batch's gone tombstones', and all of them at a run that scans once a
// reconciliation interval.
func NewLambdaHandler(ctx context.Context, cfg LambdaConfig, log *slog.Logger, metrics io.Writer) (func(context.Context, json.RawMessage) (Result, error), error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(awsCfg, dynamo.RetryOptions(dynamo.RetryPolicy{MaxAttempts: cfg.MaxAttempts})),
		dynamo.Options{Table: cfg.Table, Segments: cfg.Segments, PageLimit: int32(cfg.PageLimit)})
	if err != nil {
		return nil, err
	}
	blobs, err := blobstore.Open(ctx, cfg.Blob, blobstore.OpenOptions{S3PathStyle: cfg.S3PathStyle, AWSConfig: &awsCfg})
	if err != nil {
		return nil, err
	}
	p := &Publisher{Store: store, Blobs: blobs, Reconcile: cfg.Reconcile, MaxIncremental: cfg.MaxIncremental,
		History: catalog.New(store, catalog.Options{HistoryVersions: cfg.HistoryVersions}), HistoryBudget: cfg.HistoryBudget,
		HistoryVersions: cfg.HistoryVersions}
	if cfg.EventBus != "" {
		p.Events = &EventBridge{Client: eventbridge.NewFromConfig(awsCfg), Bus: cfg.EventBus}
	}
	return func(ctx context.Context, event json.RawMessage) (Result, error) {
		keys, stream, err := ParseEvent(event)
		if err != nil {
			log.ErrorContext(ctx, "refresh: malformed event", slog.String("error", err.Error()))
			return Result{}, err
		}
		if stream {
			return p.logged(ctx, log, metrics, func(ctx context.Context) (Result, error) { return p.Apply(ctx, keys) })
		}
		return p.RunLogged(ctx, log, metrics)
	}, nil
}

// ParseEvent tells the refresh Lambda's two events apart: a DynamoDB
// Streams batch (stream true, with the partition keys of its records, in
// order) or an EventBridge scheduled event (stream false). Anything else,
// and a stream record without a string partition key, is an error.
func ParseEvent(raw json.RawMessage) (keys []string, stream bool, err error) {
	var probe struct {
		Records    []json.RawMessage `json:"Records"`
		Source     string            `json:"source"`
		DetailType string            `json:"detail-type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, false, fmt.Errorf("refresh: event is not a JSON object: %w", err)
	}
	switch {
	case probe.Records != nil:
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, true, fmt.Errorf("refresh: stream event: %w", err)
		}
		for i, r := range ev.Records {
			if r.EventSource != "aws:dynamodb" {
				return nil, true, fmt.Errorf("refresh: stream record %d comes from %q, not aws:dynamodb", i, r.EventSource)
			}
			pk, ok := r.Change.Keys[dynamo.KeyAttr]
			if !ok || pk.DataType() != events.DataTypeString || pk.String() == "" {
				return nil, true, fmt.Errorf("refresh: stream record %d (%s) has no string key %q", i, r.EventID, dynamo.KeyAttr)
			}
			keys = append(keys, pk.String())
		}
		if len(keys) == 0 {
			return nil, true, errors.New("refresh: stream event without records")
		}
		return keys, true, nil
	case probe.Source == "aws.events" && probe.DetailType == "Scheduled Event":
		return nil, false, nil
	}
	return nil, false, errors.New("refresh: neither a DynamoDB Streams batch nor an EventBridge scheduled event")
}

// RunLogged runs once and reports the run: one JSON log line and one EMF
// metrics line on metrics when it succeeds, one error line when it fails
// (the error is returned too, not only logged, so the caller can fail).
func (p *Publisher) RunLogged(ctx context.Context, log *slog.Logger, metrics io.Writer) (Result, error) {
	return p.logged(ctx, log, metrics, p.Run)
}

func (p *Publisher) logged(ctx context.Context, log *slog.Logger, metrics io.Writer, run func(context.Context) (Result, error)) (Result, error) {
	res, err := run(ctx)
	if err != nil {
		log.ErrorContext(ctx, "refresh failed", slog.String("error", err.Error()), slog.String("blob", p.Blobs.Location()))
		return res, err
	}
	res.Log(ctx, log, p.Blobs.Location())
	if err := res.WriteEMF(metrics, "lake", time.Now()); err != nil {
		log.WarnContext(ctx, "refresh: metrics line", slog.String("error", err.Error()))
	}
	return res, nil
}
