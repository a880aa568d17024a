package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// SnapshotKey is the object key of the snapshot blob (its manifest).
const SnapshotKey = "snapshots/catalog.lakesnap"

// SegmentsPrefix is the key prefix of the snapshot's tenant segments
// (blobstore.SegmentsSuffix after the blob's key).
const SegmentsPrefix = SnapshotKey + ".segments/"

// SegmentGraceDays is how long a released segment (one no published
// manifest names, tagged lake-segment=released by refresh) is kept before
// the lifecycle rule expires it: longer than any discovery load of an older
// manifest, and than refresh's reconciliation interval (1 day), whose full
// scan stores every live segment again and so heals a segment released by
// a race.
const SegmentGraceDays = 3

// IcebergTablesPrefix is the key prefix of every table's Iceberg metadata
// in the metadata bucket (issue 41): `lake sync` writes a table's under
// IcebergTablesPrefix + <table-uuid> + "/metadata/" (the uuid lower-case
// hex and '-'), the prefix its vended credentials read (the session tag
// lake:meta-prefix).
const IcebergTablesPrefix = "tables/"

// IcebergMetaPrefixShape is the shape every lake:meta-prefix tag has, as an
// IAM pattern: the data-reader role grants by the tag only when it has it,
// so a forged tag cannot name another prefix of the metadata bucket.
const IcebergMetaPrefixShape = IcebergTablesPrefix + "*/metadata/"

// Defaults of LakeProps, and the stream trigger's fixed settings.
const (
	// DefaultRefreshMinutes is the safety-net schedule: the stream
	// triggers refresh on every change; the schedule runs it anyway, for
	// one GetItem of the change counter when nothing changed, a full scan
	// when the counter moved without a stream batch applying it or the
	// reconciliation is due.
	DefaultRefreshMinutes = 15
	// DefaultStreamBatchingWindow is how long the event source mapping
	// gathers stream records before it invokes refresh.
	DefaultStreamBatchingWindow = time.Second
	// DefaultStreamBatchSize is the most stream records one invocation
	// gets.
	DefaultStreamBatchSize = 100
	// MaxStreamBatchingWindow and MaxStreamBatchSize are Lambda's limits
	// for a DynamoDB stream.
	MaxStreamBatchingWindow = 5 * time.Minute
	MaxStreamBatchSize      = 10000

	// streamRetryAttempts is how often a failed batch is retried (each
	// retry after bisecting it) before it goes to the failure queue;
	// throttles are retried without counting.
	streamRetryAttempts = 3
	// streamMaxRecordAge sends older records to the failure queue instead
	// of applying them: well inside the stream's 24-hour retention, so a
	// record is applied or recorded there, never trimmed unseen; long
	// enough that only a refresh outage of hours (throttles are retried
	// until then) records one.
	streamMaxRecordAge = 6 * time.Hour
)

// Discovery's Iceberg REST catalog (the read side, issue 41): the
// container serves it in plain HTTP on IcebergPort (LAKE_ICEBERG_LISTEN);
// the load balancer listens for it with TLS on IcebergTLSPort given a
// certificate, terminating TLS and forwarding TCP to IcebergPort, or, when
// internal without one, with TCP on IcebergPort itself.
const (
	IcebergPort    = 8184
	IcebergTLSPort = 8443
)

// LakeProps configures the stack.
type LakeProps struct {
	awscdk.StackProps
	// RegisterCode and RefreshCode are folders holding each Lambda's
	// bootstrap binary (linux/arm64), e.g. bin/lambda/register/arm64.
	RegisterCode, RefreshCode string
	// RepoRoot is the Docker build context of the discovery image.
	RepoRoot string
	// RefreshMinutes is the refresh Lambda's safety-net schedule in whole
	// minutes; the table's stream triggers it on every change. Default
	// DefaultRefreshMinutes (15).
	RefreshMinutes float64
	// StreamBatchingWindow is how long the stream's event source mapping
	// gathers records before it invokes refresh: whole seconds, at most
	// MaxStreamBatchingWindow. Zero means DefaultStreamBatchingWindow
	// (1 s); a negative value means no window (invoke as soon as records
	// arrive).
	StreamBatchingWindow time.Duration
	// StreamBatchSize is the most stream records one refresh invocation
	// gets, 1 to MaxStreamBatchSize. Zero means DefaultStreamBatchSize
	// (100).
	StreamBatchSize int
	// CertificateARN, when set, gives the load balancer TLS listeners on
	// 443 (Flight SQL) and IcebergTLSPort (8443, the Iceberg REST
	// catalog); otherwise it listens on TCP 50051 and IcebergPort (8184),
	// which NewLakeStack allows only with Internal.
	CertificateARN string
	// Internal makes the load balancer internal (reachable from the VPC and
	// what is connected to it) instead of internet-facing. Without a
	// certificate it is required: bearer tokens never cross the internet in
	// cleartext.
	Internal bool
	// ExampleProducerTenant is the tenant the example producer policy is
	// scoped to: letters, digits, '-', '_', '.' and '~' (see
	// ProducerResourcePath). Default "acme".
	ExampleProducerTenant string
	// MaxTasks bounds discovery autoscaling. Default 4.
	MaxTasks float64
	// Version is what the discovery image reports (GetSqlInfo server
	// version), passed to its build as VERSION. Default "dev".
	Version string
	// DefaultCompatibility is the compatibility mode of tables registered
	// without one (the register function's LAKE_DEFAULT_COMPATIBILITY):
	// none, backward, forward or full. Empty leaves it unset (none).
	DefaultCompatibility string
	// TombstoneRetention, HistoryVersions and HistoryMaxAge are what the
	// catalog keeps of past states (the register function's
	// LAKE_TOMBSTONE_RETENTION, LAKE_HISTORY_VERSIONS and
	// LAKE_HISTORY_MAX_AGE, read by registerapi.MemoryFromEnv): how long a
	// drop can be undone (a duration of at least 1h, such as 168h, or
	// off), how many versions of each table are kept (1 to 100000, or
	// off), and an age bound on them (a duration of at least 1h). Empty
	// leaves each unset: 7 days, 100 versions, no age bound.
	TombstoneRetention, HistoryVersions, HistoryMaxAge string
	// DataBuckets names the S3 buckets tenants' tables may live in, the
	// only buckets lake vends table-scoped read credentials in (issue 40).
	// Given, the stack creates the data-reader role (DataReaderRoleID)
	// that discovery and the register function assume with a session
	// policy and session tags naming one table's location, and gives both
	// the LAKE_VENDING_* environment. Empty (the default) disables vending:
	// no reader role, no vending environment. Each is a bucket name S3
	// would create (validDataBucket), at most MaxDataBuckets of them; lake's
	// own buckets are never read through the role whatever is named here
	// (its permissions boundary denies them).
	DataBuckets []string
}

// DataReaderRoleID is the construct id of the data-reader role.
const DataReaderRoleID = "LakeDataReader"

// DataReaderMaxSession is the longest session of the data-reader role.
// Lake vends for 15 minutes by default (vending's DefaultDuration); a
// request may ask for up to this.
const DataReaderMaxSession = time.Hour

// MaxDataBuckets bounds DataBuckets: each name goes into the reader role's
// trust policy, its permissions boundary (two ARNs) and its own policy. The
// trust policy is the tightest: IAM's default quota is 2,048 characters,
// and with 19 names of 63 characters it takes 1,994
// (TestDataReaderTrustFitsIAMLimit). (It was 20 until the trust allowed
// the lake:meta-bucket and lake:meta-prefix tag keys, issue 41: 20 names
// took 2,060.)
const MaxDataBuckets = 19

// The session tags lake's vending sets (internal/vending's TagTenant …
// TagPrefix): the reader role's trust requires tenant, bucket and prefix,
// and its own policy grants by bucket and prefix.
const (
	tagTenant    = "lake:tenant"
	tagNamespace = "lake:namespace"
	tagTable     = "lake:table"
	tagBucket    = "lake:bucket"
	tagPrefix    = "lake:prefix"
	// Set only for a synced table (optional): the metadata bucket and its
	// table's prefix there, IcebergTablesPrefix + <uuid> + "/metadata/".
	tagMetaBucket = "lake:meta-bucket"
	tagMetaPrefix = "lake:meta-prefix"
)

// validateDataBuckets checks DataBuckets: S3 bucket names, no duplicates,
// at most MaxDataBuckets.
func (p *LakeProps) validateDataBuckets() error {
	if len(p.DataBuckets) > MaxDataBuckets {
		return fmt.Errorf("cdk: dataBuckets: %d buckets, want at most %d", len(p.DataBuckets), MaxDataBuckets)
	}
	seen := map[string]bool{}
	for _, b := range p.DataBuckets {
		if !validDataBucket(b) {
			return fmt.Errorf("cdk: dataBuckets: %q is not an S3 bucket name (3 to 63 lower-case letters, digits, '.' and '-', "+
				"beginning and ending with a letter or digit)", b)
		}
		if seen[b] {
			return fmt.Errorf("cdk: dataBuckets: %q named twice", b)
		}
		seen[b] = true
	}
	return nil
}

// validDataBucket reports whether name follows S3's general-purpose bucket
// naming rules, as internal/vending's validBucket does for a table's
// location (this module does not import lake's): 3–63 lower-case letters,
// digits, "." and "-", beginning and ending with a letter or digit, no
// "..", not an IP address, none of the reserved prefixes and suffixes. So
// no name holds an IAM wildcard or policy variable.
func validDataBucket(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && c != '.' && c != '-' {
			return false
		}
		if !alnum && (i == 0 || i == len(name)-1) {
			return false
		}
	}
	if strings.Contains(name, "..") {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return false
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	for _, s := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(name, s) {
			return false
		}
	}
	return true
}

// validateMemory checks the catalog's memory settings as the register
// function will (registerapi.MemoryFromEnv), so a bad value fails the
// synth, not the function's cold start.
func (p *LakeProps) validateMemory() error {
	duration := func(name, v string, off bool) error {
		if v == "" || off && v == "off" {
			return nil
		}
		if d, err := time.ParseDuration(v); err != nil || d < time.Hour {
			return fmt.Errorf("cdk: %s %q: want a duration of at least 1h (such as 168h)%s", name, v, map[bool]string{true: ", or off"}[off])
		}
		return nil
	}
	if err := duration("tombstoneRetention", p.TombstoneRetention, true); err != nil {
		return err
	}
	if err := duration("historyMaxAge", p.HistoryMaxAge, false); err != nil {
		return err
	}
	if v := p.HistoryVersions; v != "" && v != "off" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 100_000 {
			return fmt.Errorf("cdk: historyVersions %q: want 1 to 100000, or off", v)
		}
	}
	return nil
}

// ErrCleartextInternet is NewLakeStack's answer to a deployment that
// would put discovery's plaintext listener on the internet.
var ErrCleartextInternet = errors.New("cdk: without a certificate, discovery would take bearer tokens in cleartext " +
	"on an internet-facing load balancer: pass -c certificateArn=<ACM certificate ARN> for TLS on 443 and 8443, " +
	"or -c internal=true for an internal load balancer reachable only from the VPC")

// ProducerResourcePath is the execute-api resource path of every route of
// tenant's tables (both routes, any namespace), for ArnForExecuteApi. The
// tenant must need no escaping, neither in a URL path nor in an IAM
// pattern: letters, digits, '-', '_', '.' and '~', and not "." or "..".
// Any other tenant ('*', '?' and '$' are IAM pattern syntax, '/' a path
// separator, and percent-encoded characters reach the request ARN encoded)
// is an error: write that tenant's policy by hand.
func ProducerResourcePath(tenant string) (string, error) {
	if tenant == "" || tenant == "." || tenant == ".." || strings.IndexFunc(tenant, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_.~", r))
	}) >= 0 {
		return "", fmt.Errorf("cdk: producerTenant %q: the example policy takes a tenant of letters, digits, '-', '_', '.' and '~' only "+
			"(a name that needs no escaping in a URL path or an IAM pattern); write the policy of another tenant by hand", tenant)
	}
	return "/v1/tenants/" + tenant + "/*", nil
}

// Validate reports what NewLakeStack would refuse: a plaintext listener
// (Flight SQL's or the Iceberg catalog's) on an internet-facing load
// balancer (ErrCleartextInternet), an example
// producer tenant that ProducerResourcePath refuses, a schedule that is not
// whole minutes, or a stream batching window or batch size out of Lambda's
// range, or data buckets validateDataBuckets refuses.
func (p *LakeProps) Validate() error {
	if p.CertificateARN == "" && !p.Internal {
		return ErrCleartextInternet
	}
	if p.RefreshMinutes < 0 || p.RefreshMinutes != float64(int64(p.RefreshMinutes)) {
		return fmt.Errorf("cdk: refreshMinutes %v: want a whole number of minutes (0: the default)", p.RefreshMinutes)
	}
	if w := p.StreamBatchingWindow; w > MaxStreamBatchingWindow || w > 0 && w%time.Second != 0 {
		return fmt.Errorf("cdk: stream batching window %v: want whole seconds, at most %v", w, MaxStreamBatchingWindow)
	}
	if n := p.StreamBatchSize; n < 0 || n > MaxStreamBatchSize {
		return fmt.Errorf("cdk: stream batch size %d: want 1 to %d", n, MaxStreamBatchSize)
	}
	if p.ExampleProducerTenant != "" {
		if _, err := ProducerResourcePath(p.ExampleProducerTenant); err != nil {
			return err
		}
	}
	switch p.DefaultCompatibility {
	case "", "none", "backward", "forward", "full":
	default:
		return fmt.Errorf("cdk: defaultCompatibility %q: want none, backward, forward or full", p.DefaultCompatibility)
	}
	if err := p.validateDataBuckets(); err != nil {
		return err
	}
	return p.validateMemory()
}

// NewLakeStack builds the whole deployment: DynamoDB (with a stream), S3,
// the register and refresh Lambdas, the stream's event source mapping and
// the safety-net schedule, the HTTP API, and discovery on Fargate behind a
// Network Load Balancer, each allowed exactly what it needs. It refuses
// what Validate refuses, before building anything.
func NewLakeStack(scope constructs.Construct, id string, props *LakeProps) (awscdk.Stack, error) {
	if err := props.Validate(); err != nil {
		return nil, err
	}
	if props.ExampleProducerTenant == "" {
		props.ExampleProducerTenant = "acme"
	}
	producerPath, err := ProducerResourcePath(props.ExampleProducerTenant)
	if err != nil {
		return nil, err
	}
	stack := awscdk.NewStack(scope, &id, &props.StackProps)
	if props.RefreshMinutes <= 0 {
		props.RefreshMinutes = DefaultRefreshMinutes
	}
	if props.StreamBatchingWindow == 0 {
		props.StreamBatchingWindow = DefaultStreamBatchingWindow
	}
	if props.StreamBatchSize == 0 {
		props.StreamBatchSize = DefaultStreamBatchSize
	}
	if props.Version == "" {
		props.Version = "dev"
	}
	if props.MaxTasks <= 0 {
		props.MaxTasks = 4
	}
	s := jsii.String
	// nag suppresses one cdk-nag rule on c (and its children) with a reason.
	nag := func(c constructs.IConstruct, id, reason string, appliesTo ...any) {
		sup := &cdknag.NagPackSuppression{Id: s(id), Reason: s(reason)}
		if len(appliesTo) > 0 {
			sup.AppliesTo = &appliesTo
		}
		cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{sup}, jsii.Bool(true))
	}

	// Registrations: pk (S) → val (B). On demand, PITR, kept on deletion.
	// Its stream carries keys only: refresh re-reads every changed key
	// with a strongly consistent GetItem and never trusts a stream image,
	// so images would only make stream records bigger.
	table := awsdynamodb.NewTable(stack, s("Registrations"), &awsdynamodb.TableProps{
		Stream:       awsdynamodb.StreamViewType_KEYS_ONLY,
		PartitionKey: &awsdynamodb.Attribute{Name: s("pk"), Type: awsdynamodb.AttributeType_STRING},
		// A drop's tombstone carries expires_at (Unix seconds, the end of
		// its retention): DynamoDB deletes it after that (refresh already
		// leaves an expired one out of the snapshot).
		TimeToLiveAttribute:              s("expires_at"),
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)},
		Encryption:                       awsdynamodb.TableEncryption_AWS_MANAGED,
		RemovalPolicy:                    awscdk.RemovalPolicy_RETAIN,
		DeletionProtection:               jsii.Bool(true),
	})

	// Snapshot bucket: versioned, encrypted, private, TLS only, old
	// versions expire. Access logs go to a log bucket.
	logs := awss3.NewBucket(stack, s("AccessLogs"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_OBJECT_WRITER,
		LifecycleRules:    &[]*awss3.LifecycleRule{{Expiration: awscdk.Duration_Days(jsii.Number(90))}},
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
	bucket := awss3.NewBucket(stack, s("Snapshots"), &awss3.BucketProps{
		Versioned:              jsii.Bool(true),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		ServerAccessLogsBucket: logs,
		ServerAccessLogsPrefix: s("snapshots/"),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(7)),
		}, {
			// Segments no manifest names any more (refresh tags them).
			Id:         s("ReleasedSegments"),
			Prefix:     s(SegmentsPrefix),
			TagFilters: &map[string]any{"lake-segment": "released"},
			Expiration: awscdk.Duration_Days(jsii.Number(SegmentGraceDays)),
			Enabled:    jsii.Bool(true),
		}, {
			Id:                        s("SegmentDeleteMarkers"),
			Prefix:                    s(SegmentsPrefix),
			ExpiredObjectDeleteMarker: jsii.Bool(true),
			Enabled:                   jsii.Bool(true),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	// Iceberg metadata (issue 41): `lake sync` (the register function)
	// writes each table's under IcebergTablesPrefix; engines read a
	// table's with its vended credentials (the data-reader role, by the
	// session's lake:meta-prefix tag). Discovery serves the metadata from
	// its snapshot and reads nothing here. Versioned, encrypted, private,
	// TLS only, access-logged and retained as the snapshot bucket is.
	metadata := awss3.NewBucket(stack, s("IcebergMetadata"), &awss3.BucketProps{
		Versioned:              jsii.Bool(true),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		ServerAccessLogsBucket: logs,
		ServerAccessLogsPrefix: s("iceberg-metadata/"),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(7)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})

	lambdaLogs := func(name string) awslogs.LogGroup {
		return awslogs.NewLogGroup(stack, s(name+"Logs"), &awslogs.LogGroupProps{
			Retention:     awslogs.RetentionDays_ONE_MONTH,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
	}
	// Each function's role may write its own log group and nothing more
	// than the statements added below (no AWS managed policy).
	lambdaRole := func(name string, lg awslogs.LogGroup) awsiam.Role {
		role := awsiam.NewRole(stack, s(name+"ServiceRole"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(s("lambda.amazonaws.com"), nil),
			Description: s("lake " + name + " Lambda"),
		})
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       s("OwnLogs"),
			Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
			Resources: jsii.Strings(*lg.LogGroupArn() + ":*"),
		}))
		nag(role, "AwsSolutions-IAM5", "Log streams are created at run time; the wildcard covers only the streams of the function's own log group.",
			map[string]any{"regex": "/^Resource::<" + name + "Logs[0-9A-F]+\\.Arn>:\\*$/g"})
		return role
	}
	newFunction := func(name, code string, env map[string]*string) awslambda.Function {
		lg := lambdaLogs(name)
		return awslambda.NewFunction(stack, s(name), &awslambda.FunctionProps{
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: awslambda.Architecture_ARM_64(),
			Handler:      s("bootstrap"),
			Code:         awslambda.Code_FromAsset(s(code), nil),
			MemorySize:   jsii.Number(512),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(60)),
			Environment:  &env,
			LogGroup:     lg,
			Role:         lambdaRole(name, lg),
		})
	}

	// register: Get/Put/Update/Delete items on the table, nothing else, and
	// only items whose key is a registration (tbl/…), a tenant's usage
	// (quota/…), the change counter (meta/changes), a tombstone
	// (dropped/…), an item of a tenant's index of dropped tables
	// (droppedidx/…, what GET …/dropped reads with Gets, never a scan), a
	// version record (ver/…), a tenant's settings (tenant/…, the
	// prefixes lake may vend under, written through an admin route) or a
	// table's Iceberg state (iceberg/…, written by a sync, deleted by a
	// drop). It reads nothing of the snapshot. A sync writes the table's
	// Iceberg metadata into the metadata bucket (LAKE_ICEBERG_METADATA).
	registerEnv := map[string]*string{
		"LAKE_TABLE":            table.TableName(),
		"LAKE_ICEBERG_METADATA": s("s3://" + *metadata.BucketName() + "/"),
	}
	for name, v := range map[string]string{"LAKE_DEFAULT_COMPATIBILITY": props.DefaultCompatibility, "LAKE_TOMBSTONE_RETENTION": props.TombstoneRetention,
		"LAKE_HISTORY_VERSIONS": props.HistoryVersions, "LAKE_HISTORY_MAX_AGE": props.HistoryMaxAge} {
		if v != "" {
			registerEnv[name] = s(v)
		}
	}
	register := newFunction("Register", props.RegisterCode, registerEnv)
	register.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("RegistrationItems"),
		Actions:   jsii.Strings("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
		Resources: jsii.Strings(*table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []string{"tbl/*", "quota/*", "meta/changes", "dropped/*", "droppedidx/*", "ver/*", "tenant/*", "iceberg/*"},
		}},
	}))
	// A sync writes, reads back and lists the tables' Iceberg metadata
	// under IcebergTablesPrefix, and nothing else of the bucket.
	register.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("IcebergMetadataObjects"),
		Actions:   jsii.Strings("s3:GetObject", "s3:PutObject"),
		Resources: &[]*string{metadata.ArnForObjects(s(IcebergTablesPrefix + "*"))},
	}))
	register.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        s("ListIcebergMetadata"),
		Actions:    jsii.Strings("s3:ListBucket"),
		Resources:  &[]*string{metadata.BucketArn()},
		Conditions: &map[string]any{"StringLike": map[string]any{"s3:prefix": IcebergTablesPrefix + "*"}},
	}))
	nag(register.Role(), "AwsSolutions-IAM5", "A sync writes each table's Iceberg metadata under tables/<table-uuid>/metadata/ in lake's own metadata bucket, "+
		"tables created at run time: the statement names that one prefix.",
		map[string]any{"regex": "/^Resource::<IcebergMetadata[0-9A-F]+\\.Arn>\\/tables\\/\\*$/g"})

	// refresh: triggered by the table's stream and, as a safety net, by a
	// schedule. Scan the table; get registrations and the change markers;
	// raise the generation marker; read the stream; Get/Put (Head is
	// GetObject) the snapshot key; delete the version records DynamoDB's
	// TTL leaves unreachable when it deletes their tombstone.
	failures := awssqs.NewQueue(stack, s("RefreshFailures"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	// Change events: refresh puts each published stream batch's changes on
	// this bus (source lake.catalog, detail-type "Table Changed", the
	// tenant in the detail, so a subscriber's rule filters its own). Refresh
	// rather than an EventBridge Pipe from the stream: the stream carries
	// keys only, and refresh has just read each changed registration and
	// knows the change is in the published snapshot.
	changes := awsevents.NewEventBus(stack, s("Changes"), &awsevents.EventBusProps{})
	refreshLogs := lambdaLogs("Refresh")
	refreshEnv := map[string]*string{
		"LAKE_TABLE": table.TableName(), "LAKE_BUCKET": bucket.BucketName(), "LAKE_SNAPSHOT_KEY": s(SnapshotKey),
		"LAKE_EVENT_BUS": changes.EventBusName(),
		// The Go runtime collects harder near the function's memory
		// instead of letting garbage reach it (README: memory at scale).
		"GOMEMLIMIT": s("900MiB"),
	}
	// The purge of a dropped table's orphaned history finds its records
	// by the register function's count of versions kept.
	if props.HistoryVersions != "" {
		refreshEnv["LAKE_HISTORY_VERSIONS"] = s(props.HistoryVersions)
	}
	refresh := awslambda.NewFunction(stack, s("Refresh"), &awslambda.FunctionProps{
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      s("bootstrap"),
		Code:                         awslambda.Code_FromAsset(s(props.RefreshCode), nil),
		MemorySize:                   jsii.Number(1024),
		Timeout:                      awscdk.Duration_Minutes(jsii.Number(5)),
		Environment:                  &refreshEnv,
		LogGroup:                     refreshLogs,
		Role:                         lambdaRole("Refresh", refreshLogs),
		ReservedConcurrentExecutions: jsii.Number(1),
		OnFailure:                    awslambdadestinations.NewSqsDestination(failures),
		RetryAttempts:                jsii.Number(0),
	})
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("ScanRegistrations"),
		Actions:   jsii.Strings("dynamodb:Scan"),
		Resources: jsii.Strings(*table.TableArn()),
	}))
	// Reads: each registration a stream batch names (re-read, never taken
	// from the stream), the change counter (read before deciding to scan),
	// the last published generation and, to purge orphaned history, the
	// version records, the tenants' usage and the last sweep's time, and
	// the tenants' index of dropped tables (the sweep adds the drops it
	// lacks), and the tenants' settings (the prefixes lake may vend under).
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("ReadItems"),
		Actions:   jsii.Strings("dynamodb:GetItem"),
		Resources: jsii.Strings(*table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []string{"tbl/*", "dropped/*", "ver/*", "quota/*", "meta/changes", "meta/generation", "meta/history-sweep", "droppedidx/*", "tenant/*", "iceberg/*"},
		}},
	}))
	// What refresh writes: the last published generation (raised with a
	// conditional put) and, purging orphaned history, the time of the last
	// sweep, the tenants' usage (the bytes the records held, given back
	// with a conditional put), a record written back when an undrop
	// landed during its purge, and an index item of dropped tables that
	// lacked a drop in retention (a conditional put).
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("WriteItems"),
		Actions:   jsii.Strings("dynamodb:PutItem"),
		Resources: jsii.Strings(*table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []string{"meta/generation", "meta/history-sweep", "quota/*", "ver/*", "droppedidx/*"},
		}},
	}))
	// The one kind of item refresh deletes: a version record nothing
	// reaches any more (its tombstone gone with DynamoDB's TTL), with a
	// delete conditioned on the bytes read.
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("PurgeOrphanedHistory"),
		Actions:   jsii.Strings("dynamodb:DeleteItem"),
		Resources: jsii.Strings(*table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []string{"ver/*"},
		}},
	}))
	// What the event source mapping does with the function's role: read
	// this table's stream only. dynamodb:ListStreams supports no
	// resource-level permission (the Service Authorization Reference lists
	// no resource type for it), so a statement naming the stream ARN would
	// never match it: it gets a statement of its own on "*", as AWS's
	// AWSLambdaDynamoDBExecutionRole and the CDK's GrantStreamRead do. It
	// returns stream ARNs and table names of the account, reading no data.
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("ReadStream"),
		Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"),
		Resources: jsii.Strings(*table.TableStreamArn()),
	}))
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("ListStreams"),
		Actions:   jsii.Strings("dynamodb:ListStreams"),
		Resources: jsii.Strings("*"),
	}))
	nag(refresh.Role(), "AwsSolutions-IAM5", "dynamodb:ListStreams, which the stream's event source mapping needs, supports no resource-level permission; it lists stream ARNs and reads no data. Every other refresh action names its resource.", "Resource::*")
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("SnapshotObject"),
		Actions:   jsii.Strings("s3:GetObject", "s3:PutObject"),
		Resources: &[]*string{bucket.ArnForObjects(s(SnapshotKey))},
	}))
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("PutChangeEvents"),
		Actions:   jsii.Strings("events:PutEvents"),
		Resources: &[]*string{changes.EventBusArn()},
	}))
	// The segments beside it: read a changed tenant's, store new ones, tag
	// the released ones for the lifecycle rule.
	refresh.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("SnapshotSegments"),
		Actions:   jsii.Strings("s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"),
		Resources: &[]*string{bucket.ArnForObjects(s(SegmentsPrefix + "*"))},
	}))
	nag(refresh.Role(), "AwsSolutions-IAM5", "The segments are immutable objects named by their SHA-256, created as the catalog changes: the statement names their one prefix.",
		map[string]any{"regex": "/^Resource::<Snapshots[0-9A-F]+\\.Arn>\\/snapshots\\/catalog\\.lakesnap\\.segments\\/\\*$/g"})
	// Every change: a batch of changed keys, gathered for the batching
	// window, from the first record after the mapping exists (what came
	// before it is the schedule's). A failing batch is halved and retried;
	// what still fails, or is older than streamMaxRecordAge, is recorded
	// in the failure queue (an alarm below) and left to a full refresh: a
	// scheduled run that finds the change counter moved, at the latest the
	// reconciliation scan. A batch succeeds or fails as a whole (no
	// partial batch responses).
	batchingWindow := props.StreamBatchingWindow
	if batchingWindow < 0 {
		batchingWindow = 0
	}
	refresh.AddEventSourceMapping(s("RegistrationChanges"), &awslambda.EventSourceMappingOptions{
		EventSourceArn:          table.TableStreamArn(),
		StartingPosition:        awslambda.StartingPosition_LATEST,
		BatchSize:               jsii.Number(props.StreamBatchSize),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(batchingWindow.Seconds())),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(streamRetryAttempts),
		MaxRecordAge:            awscdk.Duration_Seconds(jsii.Number(streamMaxRecordAge.Seconds())),
		OnFailure:               awslambdaeventsources.NewSqsDlq(failures),
		ReportBatchItemFailures: jsii.Bool(false),
	})
	// The safety net: with nothing changed, one GetItem of the counter.
	awsevents.NewRule(stack, s("RefreshSchedule"), &awsevents.RuleProps{
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(props.RefreshMinutes))),
		Targets:  &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(refresh, &awseventstargets.LambdaFunctionProps{RetryAttempts: jsii.Number(0)})},
	})
	awscloudwatch.NewAlarm(stack, s("RefreshErrors"), &awscloudwatch.AlarmProps{
		AlarmDescription:   s("The refresh Lambda failed: the snapshot blob is not being updated."),
		Metric:             refresh.MetricErrors(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5))}),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})

	awscloudwatch.NewAlarm(stack, s("RefreshFailuresQueued"), &awscloudwatch.AlarmProps{
		AlarmDescription: s("A refresh run or stream batch was given up and recorded in the RefreshFailures queue: " +
			"its changes may wait for the next full scan, at the latest the reconciliation (LAKE_RECONCILE_INTERVAL)."),
		Metric:             failures.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5))}),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})

	// The registration API: HTTP API, IAM authorization, payload 2.0.
	accessLogs := awslogs.NewLogGroup(stack, s("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_ONE_MONTH, RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	api := awsapigatewayv2.NewHttpApi(stack, s("RegistrationApi"), &awsapigatewayv2.HttpApiProps{
		Description:        s("lake registration API (IAM auth)"),
		CreateDefaultStage: jsii.Bool(false),
	})
	stage := awsapigatewayv2.NewHttpStage(stack, s("DefaultStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    api,
		AutoDeploy: jsii.Bool(true),
		Throttle:   &awsapigatewayv2.ThrottleSettings{RateLimit: jsii.Number(100), BurstLimit: jsii.Number(200)},
	})
	stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: accessLogs.LogGroupArn(),
		Format: s(`{"requestId":"$context.requestId","ip":"$context.identity.sourceIp","caller":"$context.identity.userArn",` +
			`"method":"$context.httpMethod","path":"$context.path","status":"$context.status","latency":"$context.responseLatency"}`),
	})
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(s("RegisterIntegration"), register, &awsapigatewayv2integrations.HttpLambdaIntegrationProps{
		PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
	})
	iamAuth := awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	const tables = "/v1/tenants/{tenant}/namespaces/{namespace}/tables"
	for _, r := range []struct {
		path    string
		methods []awsapigatewayv2.HttpMethod
	}{
		{tables, []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST}},
		{tables + "/{table}", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET, awsapigatewayv2.HttpMethod_PUT, awsapigatewayv2.HttpMethod_DELETE}},
		{tables + "/{table}/undrop", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST}},
		{tables + "/{table}/versions", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET}},
		{tables + "/{table}/versions/{version}", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET}},
		{tables + "/{table}/diff", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET}},
		{"/v1/tenants/{tenant}/dropped", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET}},
		// Table-scoped read credentials (issue 40): 501 without vending.
		{tables + "/{table}/credentials", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET}},
		// A table's first rows (issue 42), read through the same Door as
		// its credentials: 501 without vending.
		{tables + "/{table}/preview", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET}},
		// A table's files into Iceberg metadata (issue 41): 501 until the
		// register function syncs.
		{tables + "/{table}/sync", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST}},
		// An operator's tenant settings (the prefixes lake may vend
		// under): outside /v1/tenants/, so no tenant's policy (such as the
		// example producer policy) reaches them, and the register function
		// authorizes them apart from tenants' credentials.
		{"/v1/admin/tenants/{tenant}/settings", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET, awsapigatewayv2.HttpMethod_PUT}},
		{"/v1/admin/tenants/{tenant}/allowed-prefixes", []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST, awsapigatewayv2.HttpMethod_DELETE}},
	} {
		api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        s(r.path),
			Methods:     &r.methods,
			Integration: integration,
			Authorizer:  iamAuth,
		})
	}
	// An example producer policy: one tenant's routes, nothing else. The
	// ARN is apiId/<stage>/<method><path>: any stage, any method, the
	// tenant's paths.
	producer := awsiam.NewManagedPolicy(stack, s("ExampleProducerPolicy"), &awsiam.ManagedPolicyProps{
		Description: s("Example: lets a producer register, read, update and drop tables of one tenant only."),
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       s("OneTenantsRoutes"),
			Actions:   jsii.Strings("execute-api:Invoke"),
			Resources: &[]*string{api.ArnForExecuteApi(s("*"), s(producerPath), s("*"))},
		})},
	})

	// Discovery: Fargate (arm64) behind an NLB. No DynamoDB access at all.
	vpc := awsec2.NewVpc(stack, s("Vpc"), &awsec2.VpcProps{
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name: s("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24),
		}},
		FlowLogs: &map[string]*awsec2.FlowLogOptions{"all": {TrafficType: awsec2.FlowLogTrafficType_REJECT}},
	})
	cluster := awsecs.NewCluster(stack, s("Cluster"), &awsecs.ClusterProps{
		Vpc:                 vpc,
		ContainerInsightsV2: awsecs.ContainerInsights_ENABLED,
	})
	secret := awssecretsmanager.NewSecret(stack, s("TokenSecret"), &awssecretsmanager.SecretProps{
		Description: s("HS256 secret that signs lake discovery bearer tokens"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength: jsii.Number(64), ExcludePunctuation: jsii.Bool(true),
		},
	})
	taskDef := awsecs.NewFargateTaskDefinition(stack, s("DiscoveryTask"), &awsecs.FargateTaskDefinitionProps{
		Cpu:            jsii.Number(512),
		MemoryLimitMiB: jsii.Number(1024),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
	})
	taskDef.AddToTaskRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("ReadSnapshot"),
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: &[]*string{bucket.ArnForObjects(s(SnapshotKey)), bucket.ArnForObjects(s(SegmentsPrefix + "*"))},
	}))
	discoveryEnv := map[string]*string{
		"LAKE_SNAPSHOT":      s("s3://" + *bucket.BucketName() + "/" + SnapshotKey),
		"LAKE_LISTEN":        s(":50051"),
		"LAKE_HTTP_LISTEN":   s(":8080"),
		"LAKE_POLL_INTERVAL": s("2s"),
		// The Go runtime collects before the task's 1,024 MiB limit.
		"GOMEMLIMIT": s("900MiB"),
		// The Iceberg REST catalog, in plain HTTP inside the task: the
		// load balancer terminates TLS.
		"LAKE_ICEBERG_LISTEN": s(":" + strconv.Itoa(IcebergPort)),
	}
	// Vending (issue 40), only with data buckets: discovery and the
	// register function may assume the data-reader role (with the tags
	// its trust requires) and put the vend audit events on the change bus
	// (source lake.catalog, detail-type "Credentials Vended"); both are
	// told the role, lake's own buckets (which the guard refuses before
	// any AssumeRole) and the bus.
	var reader awsiam.Role
	if len(props.DataBuckets) > 0 {
		// Every bucket the stack creates is lake's own; the reader reads
		// the metadata bucket by its lake:meta-prefix tag only, and no
		// other of them.
		own := []awss3.IBucket{bucket, logs, metadata}
		reader = newDataReader(stack, props.DataBuckets, []awsiam.IRole{taskDef.TaskRole(), register.Role()}, []awss3.IBucket{bucket, logs}, metadata, nag)
		for _, grant := range []func(awsiam.PolicyStatement){taskDef.AddToTaskRolePolicy, func(st awsiam.PolicyStatement) { register.AddToRolePolicy(st) }} {
			grant(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       s("AssumeDataReader"),
				Actions:   jsii.Strings("sts:AssumeRole", "sts:TagSession"),
				Resources: &[]*string{reader.RoleArn()},
			}))
			grant(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       s("PutVendEvents"),
				Actions:   jsii.Strings("events:PutEvents"),
				Resources: &[]*string{changes.EventBusArn()},
			}))
		}
		ownNames := make([]*string, len(own))
		for i, b := range own {
			ownNames[i] = b.BucketName()
		}
		for name, v := range map[string]*string{
			"LAKE_VENDING_ROLE_ARN":    reader.RoleArn(),
			"LAKE_VENDING_OWN_BUCKETS": awscdk.Fn_Join(s(","), &ownNames),
			"LAKE_VENDING_EVENT_BUS":   changes.EventBusName(),
		} {
			discoveryEnv[name] = v
			register.AddEnvironment(s(name), v, nil)
		}
	}
	discoveryLogs := awslogs.NewLogGroup(stack, s("DiscoveryLogs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_ONE_MONTH, RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	taskDef.AddContainer(s("discovery"), &awsecs.ContainerDefinitionOptions{
		Image: awsecs.ContainerImage_FromAsset(s(props.RepoRoot), &awsecs.AssetImageProps{
			File:      s("functions/discovery/Dockerfile"),
			Platform:  awsecrassets.Platform_LINUX_ARM64(),
			BuildArgs: &map[string]*string{"VERSION": s(props.Version)},
			// The build needs the Go module's sources only.
			Exclude: jsii.Strings("*", "!go.mod", "!go.sum", "!pkg", "!internal", "!functions", "!cmd", "!.dockerignore"),
		}),
		Environment: &discoveryEnv,
		Secrets:     &map[string]awsecs.Secret{"LAKE_JWT_HS256_SECRET": awsecs.Secret_FromSecretsManager(secret, nil)},
		Logging:     awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{StreamPrefix: s("discovery"), LogGroup: discoveryLogs}),
		PortMappings: &[]*awsecs.PortMapping{
			{ContainerPort: jsii.Number(50051)}, {ContainerPort: jsii.Number(8080)}, {ContainerPort: jsii.Number(IcebergPort)},
		},
		ReadonlyRootFilesystem: jsii.Bool(true),
		User:                   s("65532"),
	})
	serviceSG := awsec2.NewSecurityGroup(stack, s("DiscoverySG"), &awsec2.SecurityGroupProps{
		Vpc: vpc, Description: s("discovery tasks: Flight SQL, Iceberg REST and health from inside the VPC (the load balancer)"), AllowAllOutbound: jsii.Bool(true),
	})
	serviceSG.AddIngressRule(awsec2.Peer_Ipv4(vpc.VpcCidrBlock()), awsec2.Port_Tcp(jsii.Number(50051)), s("Flight SQL from the load balancer"), nil)
	serviceSG.AddIngressRule(awsec2.Peer_Ipv4(vpc.VpcCidrBlock()), awsec2.Port_Tcp(jsii.Number(IcebergPort)), s("Iceberg REST catalog from the load balancer"), nil)
	serviceSG.AddIngressRule(awsec2.Peer_Ipv4(vpc.VpcCidrBlock()), awsec2.Port_Tcp(jsii.Number(8080)), s("health checks from the load balancer"), nil)
	service := awsecs.NewFargateService(stack, s("Discovery"), &awsecs.FargateServiceProps{
		Cluster:              cluster,
		TaskDefinition:       taskDef,
		DesiredCount:         jsii.Number(1),
		AssignPublicIp:       jsii.Bool(true), // no NAT gateway: tasks reach ECR and S3 directly
		SecurityGroups:       &[]awsec2.ISecurityGroup{serviceSG},
		CircuitBreaker:       &awsecs.DeploymentCircuitBreaker{Rollback: jsii.Bool(true)},
		MinHealthyPercent:    jsii.Number(100),
		EnableExecuteCommand: jsii.Bool(false),
	})
	// Deploy discovery before refresh (pkg/snapshot: the deploy order): a
	// discovery of the previous release rejects the blob format this
	// refresh writes, so the refresh function's update waits for the
	// service's deployment to finish.
	refresh.Node().AddDependency(service)
	scaling := service.AutoScaleTaskCount(&awsapplicationautoscaling.EnableScalingProps{MinCapacity: jsii.Number(1), MaxCapacity: jsii.Number(props.MaxTasks)})
	scaling.ScaleOnCpuUtilization(s("Cpu"), &awsecs.CpuUtilizationScalingProps{TargetUtilizationPercent: jsii.Number(60)})

	nlbLogs := logs
	// Internet-facing only with TLS, or internal (ErrCleartextInternet).
	// The VPC has public subnets only; an internal load balancer in them
	// still has private addresses only.
	nlb := awselasticloadbalancingv2.NewNetworkLoadBalancer(stack, s("DiscoveryNlb"), &awselasticloadbalancingv2.NetworkLoadBalancerProps{
		Vpc: vpc, InternetFacing: jsii.Bool(!props.Internal),
		VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PUBLIC},
	})
	nlb.LogAccessLogs(nlbLogs, s("nlb"))
	var cert awscertificatemanager.ICertificate
	if props.CertificateARN != "" {
		cert = awscertificatemanager.Certificate_FromCertificateArn(stack, s("Certificate"), s(props.CertificateARN))
	}
	// listen gives the load balancer a listener for one of discovery's
	// container ports: with the certificate, TLS on tlsPort (the load
	// balancer terminates TLS, negotiating alpn, and forwards TCP to the
	// port); without one (internal only: Validate), TCP on the port
	// itself. Its own target group is checked on /healthz (8080): it turns
	// 503 when the snapshot goes stale, and discovery does not start when
	// any of its listeners cannot listen, so a healthy /healthz means the
	// port is served too (the Iceberg port's own GET /v1/config answers
	// 401 without a token).
	listen := func(id, targetID string, tlsPort, port float64, alpn awselasticloadbalancingv2.AlpnPolicy) awselasticloadbalancingv2.NetworkListener {
		var listener awselasticloadbalancingv2.NetworkListener
		if cert != nil {
			listener = nlb.AddListener(s(id+"Tls"), &awselasticloadbalancingv2.BaseNetworkListenerProps{
				Port: jsii.Number(tlsPort), Protocol: awselasticloadbalancingv2.Protocol_TLS,
				Certificates: &[]awselasticloadbalancingv2.IListenerCertificate{awselasticloadbalancingv2.ListenerCertificate_FromCertificateManager(cert)},
				SslPolicy:    awselasticloadbalancingv2.SslPolicy_RECOMMENDED_TLS,
				AlpnPolicy:   alpn,
			})
		} else {
			listener = nlb.AddListener(s(id), &awselasticloadbalancingv2.BaseNetworkListenerProps{
				Port: jsii.Number(port), Protocol: awselasticloadbalancingv2.Protocol_TCP,
			})
		}
		listener.AddTargets(s(targetID), &awselasticloadbalancingv2.AddNetworkTargetsProps{
			Port:     jsii.Number(port),
			Protocol: awselasticloadbalancingv2.Protocol_TCP,
			Targets:  &[]awselasticloadbalancingv2.INetworkLoadBalancerTarget{service.LoadBalancerTarget(&awsecs.LoadBalancerTargetOptions{ContainerName: s("discovery"), ContainerPort: jsii.Number(port)})},
			HealthCheck: &awselasticloadbalancingv2.HealthCheck{
				Protocol: awselasticloadbalancingv2.Protocol_HTTP, Port: s("8080"), Path: s("/healthz"),
				Interval: awscdk.Duration_Seconds(jsii.Number(10)),
			},
			DeregistrationDelay: awscdk.Duration_Seconds(jsii.Number(30)),
		})
		return listener
	}
	listen("FlightSql", "Discovery", 443, 50051, awselasticloadbalancingv2.AlpnPolicy_HTTP2_ONLY)
	// The Iceberg port serves HTTP/1.1 only (no h2c behind the load
	// balancer), so its TLS listener offers http/1.1 alone.
	listen("Iceberg", "DiscoveryIceberg", IcebergTLSPort, IcebergPort, awselasticloadbalancingv2.AlpnPolicy_HTTP1_ONLY)
	icebergURI := awscdk.Fn_Join(s(""), &[]*string{s("http://"), nlb.LoadBalancerDnsName(), s(":" + strconv.Itoa(IcebergPort))})
	if cert != nil {
		icebergURI = awscdk.Fn_Join(s(""), &[]*string{s("https://"), nlb.LoadBalancerDnsName(), s(":" + strconv.Itoa(IcebergTLSPort))})
	}

	nag(failures, "AwsSolutions-SQS3", "This queue is the refresh Lambda's on-failure destination (scheduled runs and stream batches), a dead-letter queue itself; a DLQ of it would add nothing.")
	nag(producer, "AwsSolutions-IAM5", "The example policy scopes a producer to one tenant: the wildcards cover that tenant's namespaces and tables, the stage and the method, never another tenant's path.")
	nag(secret, "AwsSolutions-SMG4", "Rotating the token-signing secret invalidates every issued token; rotate it deliberately (put-secret-value, then restart the service) as the README describes.")
	nag(taskDef, "AwsSolutions-ECS2", "The environment holds only non-secret configuration (snapshot location, ports, poll interval, the data-reader role's ARN, lake's own bucket names, the change bus); the signing secret is injected from Secrets Manager.")
	nag(taskDef, "AwsSolutions-IAM5", "ecr:GetAuthorizationToken, which pulling the image needs, cannot be scoped to a resource.", "Resource::*")
	nag(taskDef, "AwsSolutions-IAM5", "The snapshot's segments are immutable objects named by their SHA-256: the statement reads their one prefix.",
		map[string]any{"regex": "/^Resource::<Snapshots[0-9A-F]+\\.Arn>\\/snapshots\\/catalog\\.lakesnap\\.segments\\/\\*$/g"})

	out := func(name string, v *string, desc string) {
		awscdk.NewCfnOutput(stack, s(name), &awscdk.CfnOutputProps{Value: v, Description: s(desc)})
	}
	out("ApiUrl", stage.Url(), "registration API base URL (SigV4, service execute-api)")
	out("DiscoveryEndpoint", nlb.LoadBalancerDnsName(), "Flight SQL endpoint (the load balancer's DNS name)")
	out("IcebergCatalogUri", icebergURI, "Iceberg REST catalog uri (warehouse: the tenant; the discovery bearer tokens); with a certificate, "+
		"use your certificate's name (a CNAME to DiscoveryEndpoint) as its host")
	out("SnapshotBucket", bucket.BucketName(), "S3 bucket of the snapshot blob")
	out("IcebergMetadataBucket", metadata.BucketName(), "S3 bucket of the tables' Iceberg metadata (tables/<table-uuid>/metadata/), written by lake sync")
	out("ChangeEventBus", changes.EventBusName(), "EventBridge bus of table change events (source lake.catalog, detail-type Table Changed)")
	out("RegistrationsTable", table.TableName(), "DynamoDB table of registrations")
	out("TokenSecretArn", secret.SecretArn(), "Secrets Manager secret that signs discovery tokens (HS256)")
	out("ExampleProducerPolicyArn", producer.ManagedPolicyArn(), "attach to a producer role to scope it to one tenant")
	if reader != nil {
		out("DataReaderRole", reader.RoleArn(), "role lake assumes to vend table-scoped read credentials in the data buckets")
	}
	return stack, nil
}

// nagFunc suppresses one cdk-nag rule on a construct (and its children)
// with a reason, for the findings named by appliesTo if any.
type nagFunc func(c constructs.IConstruct, id, reason string, appliesTo ...any)

// newDataReader creates the data-reader role (DataReaderRoleID), the one
// role through which lake reads tenants' table data: it vends its
// sessions, each with a session policy and session tags naming one
// table's location (internal/vending).
//
//   - Trust: only callers (discovery's task role, the register
//     function's role) may assume it and tag the session, and only with
//     the lake:tenant, lake:bucket and lake:prefix tags present, the
//     bucket one of dataBuckets, the prefix ending in "/", and no tag keys
//     but lake's seven (lake:meta-bucket and lake:meta-prefix are
//     optional: a synced table's vend carries them).
//   - Its own policy is attribute-based: objects and listings under
//     ${aws:PrincipalTag/lake:bucket}/${aws:PrincipalTag/lake:prefix}
//     only, so a session reads no more than its tags name even without a
//     session policy; s3:GetBucketLocation on the data buckets. In the
//     metadata bucket, objects and listings under
//     ${aws:PrincipalTag/lake:meta-prefix} only, and only when that tag
//     has the shape IcebergMetaPrefixShape (one table's metadata).
//   - Its permissions boundary allows those four actions on the data
//     buckets and the reads of tables' metadata in the metadata bucket
//     only, and denies every S3 action on denied (every other bucket the
//     stack creates), so no session, whatever its tags, reads lake's
//     snapshot or logs, anything of the metadata bucket but tables'
//     metadata, or a bucket that is not a data bucket.
//   - Sessions last at most DataReaderMaxSession.
func newDataReader(stack awscdk.Stack, dataBuckets []string, callers []awsiam.IRole, denied []awss3.IBucket, metadata awss3.IBucket, nag nagFunc) awsiam.Role {
	s := jsii.String
	s3ARN := func(rest string) *string { return s("arn:" + *stack.Partition() + ":s3:::" + rest) }
	var bucketARNs, objectARNs []*string
	var objectFindings []any // cdk-nag's names of objectARNs
	for _, b := range dataBuckets {
		bucketARNs = append(bucketARNs, s3ARN(b))
		objectARNs = append(objectARNs, s3ARN(b+"/*"))
		objectFindings = append(objectFindings, "Resource::arn:<AWS::Partition>:s3:::"+b+"/*")
	}
	var deniedARNs []*string
	for _, b := range denied {
		deniedARNs = append(deniedARNs, b.BucketArn(), b.ArnForObjects(s("*")))
	}
	metaObjects := IcebergMetaPrefixShape + "*"
	boundary := awsiam.NewManagedPolicy(stack, s(DataReaderRoleID+"Boundary"), &awsiam.ManagedPolicyProps{
		Description: s("Permissions boundary of lake's data-reader role: reads in the data buckets and of tables' Iceberg metadata, never elsewhere in lake's own buckets."),
		Statements: &[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       s("DataObjects"),
				Actions:   jsii.Strings("s3:GetObject", "s3:GetObjectVersion"),
				Resources: &objectARNs,
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       s("DataBuckets"),
				Actions:   jsii.Strings("s3:ListBucket", "s3:GetBucketLocation"),
				Resources: &bucketARNs,
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       s("IcebergMetadataObjects"),
				Actions:   jsii.Strings("s3:GetObject", "s3:GetObjectVersion"),
				Resources: &[]*string{metadata.ArnForObjects(s(metaObjects))},
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:        s("IcebergMetadataBucket"),
				Actions:    jsii.Strings("s3:ListBucket"),
				Resources:  &[]*string{metadata.BucketArn()},
				Conditions: &map[string]any{"StringLike": map[string]any{"s3:prefix": metaObjects}},
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       s("NeverLakesOwnBuckets"),
				Effect:    awsiam.Effect_DENY,
				Actions:   jsii.Strings("s3:*"),
				Resources: &deniedARNs,
			}),
		},
	})
	principals := make([]awsiam.IPrincipal, len(callers))
	for i, r := range callers {
		principals[i] = awsiam.NewArnPrincipal(r.RoleArn())
	}
	nag(boundary, "AwsSolutions-IAM5", "The boundary is the outer bound of the data-reader role, which grants nothing itself: the objects of the data buckets the operator named; "+
		"the role's own policy narrows reads to the session's lake:bucket and lake:prefix tags, and each session's policy to one table's prefix; "+
		"in lake's metadata bucket, the objects of tables/*/metadata/ (tables' Iceberg metadata), which the role's policy narrows to the session's lake:meta-prefix tag.",
		append(objectFindings, map[string]any{"regex": "/^Resource::<IcebergMetadata[0-9A-F]+\\.Arn>\\/tables\\/\\*\\/metadata\\/\\*$/g"})...)
	reader := awsiam.NewRole(stack, s(DataReaderRoleID), &awsiam.RoleProps{
		Description:         s("lake data reader: table-scoped read credentials vended by discovery and register (session policy and lake:* session tags)"),
		AssumedBy:           principals[0], // replaced below
		MaxSessionDuration:  awscdk.Duration_Seconds(jsii.Number(DataReaderMaxSession.Seconds())),
		PermissionsBoundary: boundary,
	})
	// The trust policy is one statement naming every caller: a
	// CompositePrincipal would repeat the conditions, with the list of
	// data buckets, in a statement per caller, and a trust policy holds
	// 2,048 characters by default.
	trust := awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        s("LakeVendsTaggedSessions"),
			Actions:    jsii.Strings("sts:AssumeRole", "sts:TagSession"),
			Principals: &principals,
			Conditions: &map[string]any{
				"Null": map[string]any{
					"aws:RequestTag/" + tagTenant: "false",
					"aws:RequestTag/" + tagBucket: "false",
					"aws:RequestTag/" + tagPrefix: "false",
				},
				"StringEquals": map[string]any{"aws:RequestTag/" + tagBucket: dataBuckets},
				// A prefix ends in "/", so the grant of prefix* never
				// reaches a sibling ("sales" would reach "salesforce/").
				"StringLike": map[string]any{"aws:RequestTag/" + tagPrefix: "?*/"},
				// lake:meta-bucket and lake:meta-prefix are optional (a
				// synced table's); the reader's grant by lake:meta-prefix
				// checks its shape itself.
				"ForAllValues:StringEquals": map[string]any{
					"aws:TagKeys": []string{tagTenant, tagNamespace, tagTable, tagBucket, tagPrefix, tagMetaBucket, tagMetaPrefix},
				},
			},
		}),
	}})
	reader.Node().DefaultChild().(awsiam.CfnRole).SetAssumeRolePolicyDocument(trust)
	const bucketVar, prefixVar = "${aws:PrincipalTag/" + tagBucket + "}", "${aws:PrincipalTag/" + tagPrefix + "}"
	reader.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("ReadTaggedPrefix"),
		Actions:   jsii.Strings("s3:GetObject", "s3:GetObjectVersion"),
		Resources: &[]*string{s3ARN(bucketVar + "/" + prefixVar + "*")},
	}))
	nag(reader, "AwsSolutions-IAM5", "Attribute-based: a session reads only the objects under the prefix its lake:prefix tag names in the bucket its lake:bucket tag names, "+
		"tags the trust policy requires (the bucket one of the data buckets) and the boundary bounds; the trailing wildcard is the table's objects under its prefix.",
		"Resource::arn:<AWS::Partition>:s3:::<aws:PrincipalTag/"+tagBucket+">/<aws:PrincipalTag/"+tagPrefix+">*")
	reader.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        s("ListTaggedPrefix"),
		Actions:    jsii.Strings("s3:ListBucket"),
		Resources:  &[]*string{s3ARN(bucketVar)},
		Conditions: &map[string]any{"StringLike": map[string]any{"s3:prefix": prefixVar + "*"}},
	}))
	// A synced table's Iceberg metadata: by the lake:meta-prefix tag, and
	// only when it has the shape of one table's metadata prefix, so a tag
	// naming "tables/" or "" reads no other table's. (Without the tag the
	// variable does not resolve and neither statement matches.)
	const metaPrefixVar = "${aws:PrincipalTag/" + tagMetaPrefix + "}"
	metaShape := map[string]any{"aws:PrincipalTag/" + tagMetaPrefix: IcebergMetaPrefixShape}
	reader.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        s("ReadTaggedMetadata"),
		Actions:    jsii.Strings("s3:GetObject", "s3:GetObjectVersion"),
		Resources:  &[]*string{metadata.ArnForObjects(s(metaPrefixVar + "*"))},
		Conditions: &map[string]any{"StringLike": metaShape},
	}))
	metaList := map[string]any{"s3:prefix": metaPrefixVar + "*"}
	for k, v := range metaShape {
		metaList[k] = v
	}
	reader.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        s("ListTaggedMetadata"),
		Actions:    jsii.Strings("s3:ListBucket"),
		Resources:  &[]*string{metadata.BucketArn()},
		Conditions: &map[string]any{"StringLike": metaList},
	}))
	nag(reader, "AwsSolutions-IAM5", "Attribute-based: a session reads only the Iceberg metadata under the prefix its lake:meta-prefix tag names in lake's metadata bucket, "+
		"and only when the tag has the shape tables/*/metadata/ (one table's); the trailing wildcard is that table's metadata files.",
		map[string]any{"regex": "/^Resource::<IcebergMetadata[0-9A-F]+\\.Arn>\\/<aws:PrincipalTag\\/lake:meta-prefix>\\*$/g"})
	reader.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("LocateDataBuckets"),
		Actions:   jsii.Strings("s3:GetBucketLocation"),
		Resources: &bucketARNs,
	}))
	return reader
}
