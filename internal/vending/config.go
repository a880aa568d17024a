package vending

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// Config is how a program vends: the data-reader role, the credentials'
// duration, lake's own buckets and the bus vend events go to. The
// register Lambda and discovery read it from the environment
// (ConfigFromEnv, the variables the CDK stack sets); local mode from its
// flags.
type Config struct {
	// RoleARN is the data-reader role (LAKE_VENDING_ROLE_ARN); "" vends
	// nothing: s3:// locations answer ErrNotConfigured.
	RoleARN string
	// Duration of vended credentials (LAKE_VENDING_DURATION, a Go
	// duration from 15m to 12h; the role's maximum session duration
	// bounds it too); 0 means DefaultDuration.
	Duration time.Duration
	// OwnBuckets are lake's own buckets, never vended for
	// (LAKE_VENDING_OWN_BUCKETS, comma-separated).
	OwnBuckets []string
	// EventBus, when set, gets an EventBridge event for every vend
	// (LAKE_VENDING_EVENT_BUS).
	EventBus string
	// STSEndpoint, when set, is the STS endpoint (local mode's
	// --sts-endpoint; elsewhere the SDK's AWS_ENDPOINT_URL_STS).
	STSEndpoint string
	// DataRoot is local mode's --data-root (Door.DataRoot).
	DataRoot string
	// Hint ends the answer where vending is not configured.
	Hint string
	// SyncEvents puts each vend event before the vend answers (a Lambda:
	// NewSyncEventObserver) instead of from a queue.
	SyncEvents bool
}

// ConfigFromEnv reads LAKE_VENDING_ROLE_ARN, LAKE_VENDING_DURATION,
// LAKE_VENDING_OWN_BUCKETS and LAKE_VENDING_EVENT_BUS.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{RoleARN: strings.TrimSpace(getenv("LAKE_VENDING_ROLE_ARN")), EventBus: strings.TrimSpace(getenv("LAKE_VENDING_EVENT_BUS")),
		Hint: "this deployment has no data-reader role: deploy with data buckets (cdk context dataBuckets)"}
	if v := getenv("LAKE_VENDING_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < MinDuration || d > MaxDuration {
			return c, fmt.Errorf("LAKE_VENDING_DURATION %q: want a duration from %v to %v", v, MinDuration, MaxDuration)
		}
		c.Duration = d
	}
	for b := range strings.SplitSeq(getenv("LAKE_VENDING_OWN_BUCKETS"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			c.OwnBuckets = append(c.OwnBuckets, b)
		}
	}
	return c, nil
}

// Open builds the Door c describes, with AWS clients from awsCfg (STS for
// AssumeRole, EventBridge for vend events when c.EventBus is set): vends
// are logged on log and, with a bus, put on it. close stops the event
// observer (putting what it holds). Without a role the Door still answers
// local paths under DataRoot, and ErrNotConfigured (with c.Hint) for s3://.
func Open(c Config, awsCfg aws.Config, log *slog.Logger) (door *Door, close func(), err error) {
	if log == nil {
		log = slog.Default()
	}
	door = &Door{DataRoot: c.DataRoot, Region: awsCfg.Region, Hint: c.Hint}
	close = func() {}
	if c.RoleARN == "" {
		return door, close, nil
	}
	client := sts.NewFromConfig(awsCfg, func(o *sts.Options) {
		if c.STSEndpoint != "" {
			o.BaseEndpoint = aws.String(c.STSEndpoint)
		}
	})
	obs := Observer(LogObserver{Log: log})
	if c.EventBus != "" {
		newObserver := NewEventObserver
		if c.SyncEvents {
			newObserver = NewSyncEventObserver
		}
		ev := newObserver(eventbridge.NewFromConfig(awsCfg), c.EventBus, log)
		obs, close = Observers(obs, ev), ev.Close
	}
	v, err := New(NewSTS(client), NewGuard(c.OwnBuckets), Options{RoleARN: c.RoleARN, Duration: c.Duration, Observer: obs})
	if err != nil {
		close()
		return nil, func() {}, err
	}
	door.Vendor = v
	return door, close, nil
}
