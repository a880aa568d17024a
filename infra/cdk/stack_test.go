package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

var (
	buildOnce sync.Once
	lambdaDir string
	buildErr  error
)

// bootstraps lays out, once, a folder like bin/lambda with a placeholder
// bootstrap for each function. The template tests need only the asset
// folders (the asset hash covers their bytes); the real bootstraps are built
// by `make lambdas` and run under the emulator by the functions tests, so
// cross-compiling them for arm64 here would only cost minutes.
func bootstraps(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		lambdaDir, buildErr = os.MkdirTemp("", "lake-cdk-lambda-")
		if buildErr != nil {
			return
		}
		for _, fn := range []string{"register", "refresh"} {
			dir := filepath.Join(lambdaDir, fn, "arm64")
			if buildErr = os.MkdirAll(dir, 0o755); buildErr != nil {
				return
			}
			placeholder := []byte("#!/bin/sh\n# placeholder for the " + fn + " bootstrap in CDK template tests\nexit 1\n")
			if buildErr = os.WriteFile(filepath.Join(dir, "bootstrap"), placeholder, 0o755); buildErr != nil {
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return lambdaDir
}

type synthesized struct {
	stack    awscdk.Stack
	template assertions.Template
	raw      map[string]any
}

func synth(t *testing.T, props LakeProps) synthesized {
	t.Helper()
	dir := bootstraps(t)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	props.RegisterCode = filepath.Join(dir, "register", "arm64")
	props.RefreshCode = filepath.Join(dir, "refresh", "arm64")
	props.RepoRoot = filepath.Join("..", "..")
	props.StackProps.Env = &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")}
	stack, err := NewLakeStack(app, "Lake", &props)
	if err != nil {
		t.Fatal(err)
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	tmpl := assertions.Template_FromStack(stack, nil)
	var raw map[string]any
	b, _ := json.Marshal(tmpl.ToJSON())
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	return synthesized{stack: stack, template: tmpl, raw: raw}
}

func (s synthesized) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.raw["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// statement is one IAM statement, flattened for assertions and the report.
type statement struct {
	Role      string
	Actions   []string
	Resources []string
	// LeadingKeys are the dynamodb:LeadingKeys the statement is limited to
	// (nil: not limited), under the condition operator KeysOp.
	LeadingKeys []string
	KeysOp      string
	// Condition is the whole Condition block as JSON ("" for none).
	Condition string
}

func asStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, asStrings(e)...)
		}
		return out
	case map[string]any:
		b, _ := json.Marshal(x)
		return []string{string(b)}
	}
	return nil
}

// statements lists every IAM policy statement per role logical id.
func (s synthesized) statements() map[string][]statement {
	out := map[string][]statement{}
	for _, pol := range s.resources("AWS::IAM::Policy") {
		p := props(pol)
		for _, role := range asStrings(p["Roles"]) {
			for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				m := st.(map[string]any)
				acts := asStrings(m["Action"])
				sort.Strings(acts)
				st := statement{Role: role, Actions: acts, Resources: asStrings(m["Resource"])}
				if cond, ok := m["Condition"].(map[string]any); ok {
					b, _ := json.Marshal(cond)
					st.Condition = string(b)
					for name, op := range cond {
						if keys, ok := op.(map[string]any)["dynamodb:LeadingKeys"]; ok {
							st.LeadingKeys, st.KeysOp = asStrings(keys), name
						}
					}
				}
				out[role] = append(out[role], st)
			}
		}
	}
	return out
}

func findRole(t *testing.T, all map[string][]statement, want string) []statement {
	t.Helper()
	for role, st := range all {
		if strings.Contains(role, want) {
			return st
		}
	}
	t.Fatalf("no policy for a role like %q (have %v)", want, keys(all))
	return nil
}

func keys[M ~map[string]V, V any](m M) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func actionsOf(st []statement) []string {
	var out []string
	for _, s := range st {
		out = append(out, s.Actions...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestResources(t *testing.T) {
	s := synth(t, LakeProps{Internal: true})
	tm := s.template
	tm.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"Properties": map[string]any{
			"KeySchema":                        []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}},
			"AttributeDefinitions":             []any{map[string]any{"AttributeName": "pk", "AttributeType": "S"}},
			"BillingMode":                      "PAY_PER_REQUEST",
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"StreamSpecification":              map[string]any{"StreamViewType": "KEYS_ONLY"},
			// dynamo.ExpiresAttr: tombstones expire by TTL.
			"TimeToLiveSpecification": map[string]any{"AttributeName": "expires_at", "Enabled": true},
		},
		"DeletionPolicy":      "Retain",
		"UpdateReplacePolicy": "Retain",
	})
	tm.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"VersioningConfiguration":        map[string]any{"Status": "Enabled"},
		"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
		"BucketEncryption":               assertions.Match_ObjectLike(&map[string]any{}),
		"LifecycleConfiguration": map[string]any{"Rules": []any{assertions.Match_ObjectLike(&map[string]any{
			"NoncurrentVersionExpiration": map[string]any{"NoncurrentDays": 7}, "Status": "Enabled",
		}), map[string]any{
			// Released segments (tagged by refresh) expire after the grace
			// period, which outlasts the daily reconciliation.
			"Id": "ReleasedSegments", "Prefix": SegmentsPrefix, "ExpirationInDays": SegmentGraceDays, "Status": "Enabled",
			"TagFilters": []any{map[string]any{"Key": "lake-segment", "Value": "released"}},
		}, map[string]any{
			"Id": "SegmentDeleteMarkers", "Prefix": SegmentsPrefix, "ExpiredObjectDeleteMarker": true, "Status": "Enabled",
		}}},
	})
	// (The tag and the prefix are blobstore.SegmentReleasedTag and
	// blobstore.SegmentsSuffix, pinned by TestSegmentNamesTheStackUses.)
	if SegmentsPrefix != SnapshotKey+".segments/" {
		t.Fatalf("SegmentsPrefix %q", SegmentsPrefix)
	}
	// Discovery is deployed before refresh (the blob format's deploy order).
	for id, fn := range s.resources("AWS::Lambda::Function") {
		if !strings.HasPrefix(id, "Refresh") {
			continue
		}
		deps := fmt.Sprint(fn["DependsOn"])
		if !strings.Contains(deps, "DiscoveryService") {
			t.Errorf("the refresh function depends on %s, want the discovery service", deps)
		}
	}
	tm.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
		})})},
	})
	fns := s.resources("AWS::Lambda::Function")
	if len(fns) != 2 {
		t.Fatalf("%d Lambda functions, want 2 (%v)", len(fns), keys(fns))
	}
	for id, fn := range fns {
		p := props(fn)
		if p["Runtime"] != "provided.al2023" || fmt.Sprint(p["Architectures"]) != "[arm64]" || p["Handler"] != "bootstrap" {
			t.Errorf("%s: runtime %v, architectures %v, handler %v", id, p["Runtime"], p["Architectures"], p["Handler"])
		}
		if strings.HasPrefix(id, "Refresh") && fmt.Sprint(p["ReservedConcurrentExecutions"]) != "1" {
			t.Errorf("refresh reserved concurrency = %v, want 1", p["ReservedConcurrentExecutions"])
		}
		if strings.HasPrefix(id, "Register") {
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			if _, set := vars["LAKE_DEFAULT_COMPATIBILITY"]; set {
				t.Errorf("register has LAKE_DEFAULT_COMPATIBILITY %v without DefaultCompatibility", vars["LAKE_DEFAULT_COMPATIBILITY"])
			}
		}
		if strings.HasPrefix(id, "Refresh") {
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			if fmt.Sprint(p["MemorySize"]) != "1024" || vars["GOMEMLIMIT"] != "900MiB" {
				t.Errorf("refresh memory %v MB with GOMEMLIMIT %v, want 1024 and 900MiB below it", p["MemorySize"], vars["GOMEMLIMIT"])
			}
		}
	}
	tm.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{"ScheduleExpression": "rate(15 minutes)"})
	tm.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), map[string]any{
		"DestinationConfig": map[string]any{"OnFailure": assertions.Match_ObjectLike(&map[string]any{})},
	})
	tm.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "Errors", "Threshold": 1, "ComparisonOperator": "GreaterThanOrEqualToThreshold",
	})
	tm.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), map[string]any{"ProtocolType": "HTTP"})
	routes := s.resources("AWS::ApiGatewayV2::Route")
	var keysSeen []string
	for _, r := range routes {
		p := props(r)
		if p["AuthorizationType"] != "AWS_IAM" {
			t.Errorf("route %v has authorization %v, want AWS_IAM", p["RouteKey"], p["AuthorizationType"])
		}
		keysSeen = append(keysSeen, fmt.Sprint(p["RouteKey"]))
	}
	sort.Strings(keysSeen)
	wantRoutes := []string{
		"DELETE /v1/admin/tenants/{tenant}/allowed-prefixes",
		"DELETE /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}",
		"GET /v1/admin/tenants/{tenant}/settings",
		"GET /v1/tenants/{tenant}/dropped",
		"GET /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}",
		"GET /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/credentials",
		"GET /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/diff",
		"GET /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/preview",
		"GET /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/versions",
		"GET /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/versions/{version}",
		"POST /v1/admin/tenants/{tenant}/allowed-prefixes",
		"POST /v1/tenants/{tenant}/namespaces/{namespace}/tables",
		"POST /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/sync",
		"POST /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/undrop",
		"PUT /v1/admin/tenants/{tenant}/settings",
		"PUT /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}",
	}
	if !slices.Equal(keysSeen, wantRoutes) {
		t.Fatalf("routes = %v, want %v", keysSeen, wantRoutes)
	}
	tm.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Integration"), map[string]any{"PayloadFormatVersion": "2.0"})
	tm.HasResourceProperties(jsii.String("AWS::ECS::TaskDefinition"), map[string]any{
		"RuntimePlatform":         map[string]any{"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"},
		"RequiresCompatibilities": []any{"FARGATE"},
	})
	tm.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::LoadBalancer"), map[string]any{"Type": "network", "Scheme": "internal"})
	tm.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::Listener"), map[string]any{"Port": 50051, "Protocol": "TCP"})
	tm.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::Listener"), map[string]any{"Port": IcebergPort, "Protocol": "TCP"})
	tm.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::TargetGroup"), map[string]any{
		"HealthCheckPath": "/healthz", "HealthCheckPort": "8080", "HealthCheckProtocol": "HTTP",
	})
	tm.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), map[string]any{
		"TargetTrackingScalingPolicyConfiguration": assertions.Match_ObjectLike(&map[string]any{
			"PredefinedMetricSpecification": map[string]any{"PredefinedMetricType": "ECSServiceAverageCPUUtilization"},
		}),
	})
	for id, lg := range s.resources("AWS::Logs::LogGroup") {
		if props(lg)["RetentionInDays"] == nil {
			t.Errorf("log group %s keeps logs forever", id)
		}
	}
	if buses := s.resources("AWS::Events::EventBus"); len(buses) != 1 {
		t.Fatalf("%d event buses, want the change bus", len(buses))
	}
	for id, fn := range s.resources("AWS::Lambda::Function") {
		env, _ := props(fn)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if strings.HasPrefix(id, "Refresh") && !strings.Contains(fmt.Sprint(vars["LAKE_EVENT_BUS"]), "Changes") {
			t.Errorf("refresh's LAKE_EVENT_BUS = %v, want the change bus", vars["LAKE_EVENT_BUS"])
		}
	}
	for _, out := range []string{"ApiUrl", "DiscoveryEndpoint", "IcebergCatalogUri", "SnapshotBucket", "IcebergMetadataBucket", "RegistrationsTable", "ChangeEventBus"} {
		tm.HasOutput(jsii.String(out), map[string]any{})
	}
}

// The Iceberg metadata bucket (issue 41), vending on or off: versioned
// with old versions expiring as the snapshot bucket's, encrypted, private,
// TLS only, access-logged to the log bucket, retained; the register
// function is told it (LAKE_ICEBERG_METADATA=s3://<bucket>/), discovery
// is not; the output names it. (TestLeastPrivilege has the grants.)
func TestIcebergMetadataBucket(t *testing.T) {
	for _, tt := range []struct {
		name  string
		props LakeProps
	}{
		{"vending off", LakeProps{Internal: true}},
		{"vending on", LakeProps{Internal: true, DataBuckets: testDataBuckets}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := synth(t, tt.props)
			var metaID, logsID string
			buckets := s.resources("AWS::S3::Bucket")
			for id := range buckets {
				switch {
				case strings.HasPrefix(id, "IcebergMetadata"):
					metaID = id
				case strings.HasPrefix(id, "AccessLogs"):
					logsID = id
				}
			}
			if metaID == "" || logsID == "" {
				t.Fatalf("buckets %v, want IcebergMetadata and AccessLogs", keys(buckets))
			}
			b := buckets[metaID]
			if b["DeletionPolicy"] != "Retain" || b["UpdateReplacePolicy"] != "Retain" {
				t.Errorf("metadata bucket DeletionPolicy %v, UpdateReplacePolicy %v, want Retain as the snapshot bucket's", b["DeletionPolicy"], b["UpdateReplacePolicy"])
			}
			got, _ := json.Marshal(map[string]any{
				"BucketEncryption":               props(b)["BucketEncryption"],
				"LifecycleConfiguration":         props(b)["LifecycleConfiguration"],
				"LoggingConfiguration":           props(b)["LoggingConfiguration"],
				"PublicAccessBlockConfiguration": props(b)["PublicAccessBlockConfiguration"],
				"VersioningConfiguration":        props(b)["VersioningConfiguration"],
			})
			want := `{"BucketEncryption":{"ServerSideEncryptionConfiguration":[{"ServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]},` +
				`"LifecycleConfiguration":{"Rules":[{"NoncurrentVersionExpiration":{"NoncurrentDays":7},"Status":"Enabled"}]},` +
				`"LoggingConfiguration":{"DestinationBucketName":{"Ref":"` + logsID + `"},"LogFilePrefix":"iceberg-metadata/"},` +
				`"PublicAccessBlockConfiguration":{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true},` +
				`"VersioningConfiguration":{"Status":"Enabled"}}`
			if string(got) != want {
				t.Errorf("metadata bucket\n%s\nwant\n%s", got, want)
			}
			tls := false
			for _, pol := range s.resources("AWS::S3::BucketPolicy") {
				if b, _ := json.Marshal(props(pol)["Bucket"]); string(b) != `{"Ref":"`+metaID+`"}` {
					continue
				}
				for _, st := range asAny(props(pol)["PolicyDocument"].(map[string]any)["Statement"]) {
					m := st.(map[string]any)
					c, _ := json.Marshal(m["Condition"])
					if m["Effect"] == "Deny" && string(c) == `{"Bool":{"aws:SecureTransport":"false"}}` {
						tls = true
					}
				}
			}
			if !tls {
				t.Error("the metadata bucket's policy does not deny requests without TLS")
			}

			// Register is told the bucket, as s3://<bucket>/; no other
			// function, and not discovery.
			wantEnv := `{"Fn::Join":["",["s3://",{"Ref":"` + metaID + `"},"/"]]}`
			seen := 0
			for id, fn := range s.resources("AWS::Lambda::Function") {
				env, _ := props(fn)["Environment"].(map[string]any)
				vars, _ := env["Variables"].(map[string]any)
				v, set := vars["LAKE_ICEBERG_METADATA"]
				b, _ := json.Marshal(v)
				switch {
				case strings.HasPrefix(id, "Register") && string(b) == wantEnv:
					seen++
				case strings.HasPrefix(id, "Register"):
					t.Errorf("register's LAKE_ICEBERG_METADATA = %s, want %s", b, wantEnv)
				case set:
					t.Errorf("%s has LAKE_ICEBERG_METADATA %s", id, b)
				}
			}
			if seen != 1 {
				t.Errorf("%d register functions told the metadata bucket, want 1", seen)
			}
			defs := s.resources("AWS::ECS::TaskDefinition")
			for _, c := range asAny(props(defs[onlyID(t, defs)])["ContainerDefinitions"]) {
				for _, e := range asAny(c.(map[string]any)["Environment"]) {
					m := e.(map[string]any)
					b, _ := json.Marshal(m["Value"])
					if m["Name"] == "LAKE_ICEBERG_METADATA" || m["Name"] != "LAKE_VENDING_OWN_BUCKETS" && strings.Contains(string(b), metaID) {
						t.Errorf("discovery's %v = %s: discovery serves the metadata from its snapshot", m["Name"], b)
					}
				}
			}
			out, _ := s.raw["Outputs"].(map[string]any)["IcebergMetadataBucket"].(map[string]any)
			if b, _ := json.Marshal(out["Value"]); string(b) != `{"Ref":"`+metaID+`"}` {
				t.Errorf("output IcebergMetadataBucket = %s, want the bucket's name", b)
			}
		})
	}
}

// The table's stream triggers refresh through one event source mapping:
// from LATEST, the configured batch size and batching window, a failing
// batch bisected and retried 3 times, records older than 6 hours given
// up, both to the failure queue (alarmed); whole-batch results. The
// schedule stays as the safety net.
func TestStreamTrigger(t *testing.T) {
	tests := []struct {
		name          string
		props         LakeProps
		batchSize     int
		windowSeconds int
		schedule      string
	}{
		{"defaults", LakeProps{Internal: true}, 100, 1, "rate(15 minutes)"},
		{"configured", LakeProps{Internal: true, StreamBatchSize: 1000, StreamBatchingWindow: 30 * time.Second, RefreshMinutes: 30}, 1000, 30, "rate(30 minutes)"},
		{"no batching window", LakeProps{Internal: true, StreamBatchingWindow: -1, RefreshMinutes: 1}, 100, 0, "rate(1 minute)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := synth(t, tt.props)
			table := onlyID(t, s.resources("AWS::DynamoDB::Table"))
			queue := onlyID(t, s.resources("AWS::SQS::Queue"))
			var refresh string
			for id := range s.resources("AWS::Lambda::Function") {
				if strings.HasPrefix(id, "Refresh") {
					refresh = id
				}
			}
			mappings := s.resources("AWS::Lambda::EventSourceMapping")
			if len(mappings) != 1 {
				t.Fatalf("got %d event source mappings, want 1", len(mappings))
			}
			got := props(mappings[onlyID(t, mappings)])
			want := map[string]any{
				"EventSourceArn":                 map[string]any{"Fn::GetAtt": []any{table, "StreamArn"}},
				"FunctionName":                   map[string]any{"Ref": refresh},
				"StartingPosition":               "LATEST",
				"BatchSize":                      float64(tt.batchSize),
				"MaximumBatchingWindowInSeconds": float64(tt.windowSeconds),
				"BisectBatchOnFunctionError":     true,
				"MaximumRetryAttempts":           float64(3),
				"MaximumRecordAgeInSeconds":      float64(6 * 3600),
				"DestinationConfig":              map[string]any{"OnFailure": map[string]any{"Destination": map[string]any{"Fn::GetAtt": []any{queue, "Arn"}}}},
			}
			for _, k := range keys(got) {
				if _, ok := want[k]; !ok {
					t.Errorf("mapping sets %s = %v, want it unset (FunctionResponseTypes: no partial batch responses)", k, got[k])
				}
			}
			for _, k := range keys(want) {
				if g, w := fmt.Sprint(got[k]), fmt.Sprint(want[k]); g != w {
					t.Errorf("mapping %s = %s, want %s", k, g, w)
				}
			}
			// The mapping is created only once the role may read the
			// stream: Lambda checks the permissions when it is created.
			deps := asStrings(s.raw["Resources"].(map[string]any)[refresh].(map[string]any)["DependsOn"])
			if !slices.ContainsFunc(deps, func(d string) bool { return strings.HasPrefix(d, "RefreshServiceRoleDefaultPolicy") }) {
				t.Errorf("refresh depends on %v, want its role's policy (the mapping needs the stream permissions when it is created)", deps)
			}
			s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
				"MetricName": "ApproximateNumberOfMessagesVisible", "Namespace": "AWS/SQS", "Threshold": 1,
				"ComparisonOperator": "GreaterThanOrEqualToThreshold",
				"Dimensions":         []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{queue, "QueueName"}}}},
			})
			rules := s.resources("AWS::Events::Rule")
			if len(rules) != 1 {
				t.Fatalf("got %d rules, want 1 schedule", len(rules))
			}
			if got := props(rules[onlyID(t, rules)])["ScheduleExpression"]; got != tt.schedule {
				t.Errorf("schedule %v, want %s", got, tt.schedule)
			}
		})
	}
}

func onlyID[V any](t *testing.T, m map[string]V) string {
	t.Helper()
	if len(m) != 1 {
		t.Fatalf("got %d resources %v, want 1", len(m), keys(m))
	}
	return keys(m)[0]
}

// Discovery polls the blob every 2 s and exposes what it did before: its
// configuration, the signing secret from Secrets Manager, Flight SQL,
// Iceberg REST and health ports to the VPC only (where the load balancer
// is, which has no security group of its own).
func TestDiscoveryTask(t *testing.T) {
	s := synth(t, LakeProps{Internal: true})
	defs := s.resources("AWS::ECS::TaskDefinition")
	containers := asAny(props(defs[onlyID(t, defs)])["ContainerDefinitions"])
	if len(containers) != 1 {
		t.Fatalf("got %d containers, want 1", len(containers))
	}
	c := containers[0].(map[string]any)
	env := map[string]string{}
	for _, e := range asAny(c["Environment"]) {
		m := e.(map[string]any)
		env[fmt.Sprint(m["Name"])] = fmt.Sprint(m["Value"])
	}
	if got := env["LAKE_POLL_INTERVAL"]; got != "2s" {
		t.Errorf("LAKE_POLL_INTERVAL = %q, want 2s", got)
	}
	if got, want := env["LAKE_ICEBERG_LISTEN"], ":8184"; got != want {
		t.Errorf("LAKE_ICEBERG_LISTEN = %q, want %q", got, want)
	}
	if got, want := keys(env), []string{"GOMEMLIMIT", "LAKE_HTTP_LISTEN", "LAKE_ICEBERG_LISTEN", "LAKE_LISTEN", "LAKE_POLL_INTERVAL", "LAKE_SNAPSHOT"}; !slices.Equal(got, want) {
		t.Errorf("environment %v, want exactly %v", got, want)
	}
	var secrets []string
	for _, e := range asAny(c["Secrets"]) {
		secrets = append(secrets, fmt.Sprint(e.(map[string]any)["Name"]))
	}
	if !slices.Equal(secrets, []string{"LAKE_JWT_HS256_SECRET"}) {
		t.Errorf("secrets %v, want only LAKE_JWT_HS256_SECRET", secrets)
	}
	var ports []string
	for _, p := range asAny(c["PortMappings"]) {
		ports = append(ports, fmt.Sprint(p.(map[string]any)["ContainerPort"]))
	}
	if !slices.Equal(ports, []string{"50051", "8080", "8184"}) {
		t.Errorf("container ports %v, want 50051, 8080 and 8184", ports)
	}
	vpc := onlyID(t, s.resources("AWS::EC2::VPC"))
	found := false
	for id, sg := range s.resources("AWS::EC2::SecurityGroup") {
		if !strings.HasPrefix(id, "DiscoverySG") {
			continue
		}
		found = true
		var in []string
		for _, r := range asAny(props(sg)["SecurityGroupIngress"]) {
			m := r.(map[string]any)
			in = append(in, fmt.Sprint(m["FromPort"], "-", m["ToPort"]))
			// From the VPC's own range only: no other source, no IPv6.
			src, _ := json.Marshal(m["CidrIp"])
			if want := `{"Fn::GetAtt":["` + vpc + `","CidrBlock"]}`; string(src) != want || m["IpProtocol"] != "tcp" ||
				m["CidrIpv6"] != nil || m["SourceSecurityGroupId"] != nil || m["SourcePrefixListId"] != nil {
				t.Errorf("discovery admits %v from %s, want tcp from %s only", m["FromPort"], src, want)
			}
		}
		sort.Strings(in)
		if !slices.Equal(in, []string{"50051-50051", "8080-8080", "8184-8184"}) {
			t.Errorf("discovery admits ports %v, want 50051, 8080 and 8184", in)
		}
	}
	if !found {
		t.Error("no DiscoverySG security group")
	}
}

const testCertificate = "arn:aws:acm:eu-west-1:123456789012:certificate/abc"

// No bearer token crosses the internet in cleartext: without a certificate
// the stack is refused unless the load balancer is internal; with one,
// the internet-facing load balancer listens with TLS only, Flight SQL's
// listener and the Iceberg catalog's alike.
func TestNoCleartextListenerOnTheInternet(t *testing.T) {
	_, err := NewLakeStack(awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())}), "Lake", &LakeProps{})
	if !errors.Is(err, ErrCleartextInternet) {
		t.Fatalf("no certificate, not internal: got %v, want ErrCleartextInternet", err)
	}
	for _, way := range []string{"-c certificateArn=", "-c internal=true"} {
		if !strings.Contains(err.Error(), way) {
			t.Errorf("got error %q, want it to name the way out %q", err, way)
		}
	}
	tests := []struct {
		name   string
		props  LakeProps
		scheme string
		// listeners are the listeners' port/protocol, sorted.
		listeners []string
	}{
		{"certificate", LakeProps{CertificateARN: testCertificate, RefreshMinutes: 5}, "internet-facing", []string{"443/TLS", "8443/TLS"}},
		{"internal without certificate", LakeProps{Internal: true}, "internal", []string{"50051/TCP", "8184/TCP"}},
		{"internal with certificate", LakeProps{Internal: true, CertificateARN: testCertificate}, "internal", []string{"443/TLS", "8443/TLS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := synth(t, tt.props)
			s.template.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::LoadBalancer"), map[string]any{"Type": "network", "Scheme": tt.scheme})
			var got []string
			for id, l := range s.resources("AWS::ElasticLoadBalancingV2::Listener") {
				p := props(l)
				got = append(got, fmt.Sprint(p["Port"], "/", p["Protocol"]))
				if p["Protocol"] == "TLS" {
					if certs, _ := json.Marshal(p["Certificates"]); string(certs) != `[{"CertificateArn":"`+testCertificate+`"}]` {
						t.Errorf("listener %s on %v has certificates %s, want %s", id, p["Port"], certs, testCertificate)
					}
				} else if tt.scheme != "internal" {
					t.Errorf("listener %s: %v on %v of an internet-facing load balancer, want TLS", id, p["Protocol"], p["Port"])
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, tt.listeners) {
				t.Errorf("listeners %v, want %v", got, tt.listeners)
			}
			if tt.props.RefreshMinutes == 5 {
				s.template.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{"ScheduleExpression": "rate(5 minutes)"})
			}
		})
	}
}

// The Iceberg REST catalog (issue 41) has its own listener and target
// group: with a certificate, TLS on 8443 (http/1.1 only, the container
// serves no HTTP/2) terminated by the load balancer; without one (internal
// only), TCP on 8184. Either forwards TCP to the container's 8184, its
// targets checked on /healthz, and IcebergCatalogUri names it.
func TestIcebergListener(t *testing.T) {
	tests := []struct {
		name     string
		props    LakeProps
		listener map[string]any
		uri      []any // the parts Fn::Join joins, the DNS name as "DNS"
	}{
		{"certificate", LakeProps{CertificateARN: testCertificate}, map[string]any{
			"Port": 8443, "Protocol": "TLS", "Certificates": []any{map[string]any{"CertificateArn": testCertificate}},
			"SslPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06", "AlpnPolicy": []any{"HTTP1Only"},
		}, []any{"https://", "DNS", ":8443"}},
		{"internal", LakeProps{Internal: true}, map[string]any{"Port": 8184, "Protocol": "TCP"}, []any{"http://", "DNS", ":8184"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := synth(t, tt.props)
			var listener map[string]any
			for _, l := range s.resources("AWS::ElasticLoadBalancingV2::Listener") {
				if p := props(l); fmt.Sprint(p["Port"]) == fmt.Sprint(tt.listener["Port"]) {
					listener = p
				}
			}
			if listener == nil {
				t.Fatalf("no listener on %v", tt.listener["Port"])
			}
			for k, want := range tt.listener {
				if got := listener[k]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("listener %s = %v, want %v", k, got, want)
				}
			}
			actions := asAny(listener["DefaultActions"])
			if len(actions) != 1 {
				t.Fatalf("listener actions %v, want one forward", actions)
			}
			tg, _ := actions[0].(map[string]any)["TargetGroupArn"].(map[string]any)["Ref"].(string)
			groups := s.resources("AWS::ElasticLoadBalancingV2::TargetGroup")
			if len(groups) != 2 || groups[tg] == nil {
				t.Fatalf("listener forwards to %q of target groups %v, want its own of two", tg, keys(groups))
			}
			got := props(groups[tg])
			want := map[string]any{
				"Port": 8184, "Protocol": "TCP", "TargetType": "ip",
				"HealthCheckProtocol": "HTTP", "HealthCheckPort": "8080", "HealthCheckPath": "/healthz",
			}
			for k, w := range want {
				if fmt.Sprint(got[k]) != fmt.Sprint(w) {
					t.Errorf("target group %s = %v, want %v", k, got[k], w)
				}
			}
			// The service registers the container's 8184 with it.
			services := s.resources("AWS::ECS::Service")
			b, _ := json.Marshal(props(services[onlyID(t, services)])["LoadBalancers"])
			if !strings.Contains(string(b), `{"ContainerName":"discovery","ContainerPort":8184,"TargetGroupArn":{"Ref":"`+tg+`"}}`) {
				t.Errorf("service load balancers %s, want discovery:8184 in %s", b, tg)
			}
			out, _ := s.raw["Outputs"].(map[string]any)["IcebergCatalogUri"].(map[string]any)
			join := asAny(asAny(out["Value"].(map[string]any)["Fn::Join"])[1])
			nlb := onlyID(t, s.resources("AWS::ElasticLoadBalancingV2::LoadBalancer"))
			for i, part := range join {
				if b, _ := json.Marshal(part); string(b) == `{"Fn::GetAtt":["`+nlb+`","DNSName"]}` {
					join[i] = "DNS"
				}
			}
			if fmt.Sprint(join) != fmt.Sprint(tt.uri) {
				t.Errorf("IcebergCatalogUri joins %v, want %v", join, tt.uri)
			}
		})
	}
}

// -c internal=true (a string) or "internal": true in cdk.json (a JSON
// boolean) make the load balancer internal; anything else but false is an
// error.
func TestInternalFromContext(t *testing.T) {
	tests := []struct {
		name    string
		context map[string]any
		want    bool
		wantErr bool
	}{
		{"absent", nil, false, false},
		{"-c internal=true", map[string]any{"internal": "true"}, true, false},
		{"-c internal=false", map[string]any{"internal": "false"}, false, false},
		{"cdk.json true", map[string]any{"internal": true}, true, false},
		{"-c internal=yes", map[string]any{"internal": "yes"}, false, true},
		{"a number", map[string]any{"internal": 1}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: &tt.context})
			got, err := propsFromContext(app)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Internal != tt.want {
				t.Fatalf("got Internal %v, want %v", got.Internal, tt.want)
			}
		})
	}
}

// The schedule and the stream trigger read from -c key=value (strings) or
// cdk.json (strings or JSON numbers); out of range, fractional or
// non-numeric values are errors, not silently the default.
func TestScheduleAndStreamFromContext(t *testing.T) {
	tests := []struct {
		name      string
		context   map[string]any
		minutes   float64
		window    time.Duration
		batchSize int
		wantErr   bool
	}{
		{"absent: the defaults", nil, 15, time.Second, 100, false},
		{"-c values", map[string]any{"refreshMinutes": "5", "streamBatchingSeconds": "10", "streamBatchSize": "500"}, 5, 10 * time.Second, 500, false},
		{"cdk.json numbers", map[string]any{"refreshMinutes": 30.0, "streamBatchingSeconds": 300.0, "streamBatchSize": 10000.0}, 30, 5 * time.Minute, 10000, false},
		{"no batching window", map[string]any{"streamBatchingSeconds": "0"}, 15, -1, 100, false},
		{"empty strings: the defaults", map[string]any{"refreshMinutes": "", "streamBatchSize": ""}, 15, time.Second, 100, false},
		{"refreshMinutes 0", map[string]any{"refreshMinutes": "0"}, 0, 0, 0, true},
		{"refreshMinutes fractional", map[string]any{"refreshMinutes": "1.5"}, 0, 0, 0, true},
		{"refreshMinutes fractional number", map[string]any{"refreshMinutes": 1.5}, 0, 0, 0, true},
		{"refreshMinutes over a day", map[string]any{"refreshMinutes": "1441"}, 0, 0, 0, true},
		{"window over 300 s", map[string]any{"streamBatchingSeconds": "301"}, 0, 0, 0, true},
		{"window negative", map[string]any{"streamBatchingSeconds": "-1"}, 0, 0, 0, true},
		{"window with a unit", map[string]any{"streamBatchingSeconds": "1s"}, 0, 0, 0, true},
		{"batch size 0", map[string]any{"streamBatchSize": "0"}, 0, 0, 0, true},
		{"batch size over 10000", map[string]any{"streamBatchSize": "10001"}, 0, 0, 0, true},
		{"batch size a boolean", map[string]any{"streamBatchSize": true}, 0, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.context == nil {
				tt.context = map[string]any{}
			}
			tt.context["internal"] = "true"
			app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: &tt.context})
			got, err := propsFromContext(app)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.RefreshMinutes != tt.minutes || got.StreamBatchingWindow != tt.window || got.StreamBatchSize != tt.batchSize {
				t.Fatalf("got refresh %v min, window %v, batch %d; want %v min, %v, %d",
					got.RefreshMinutes, got.StreamBatchingWindow, got.StreamBatchSize, tt.minutes, tt.window, tt.batchSize)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("Validate() = %v for props read from the context", err)
			}
		})
	}
}

// Validate refuses what Lambda and EventBridge would: a schedule that is
// not whole minutes, a batching window that is not whole seconds or over
// 5 minutes, a batch size over 10,000.
func TestValidateStreamAndSchedule(t *testing.T) {
	tests := []struct {
		name  string
		props LakeProps
		ok    bool
	}{
		{"zero values: the defaults", LakeProps{Internal: true}, true},
		{"limits", LakeProps{Internal: true, RefreshMinutes: 1, StreamBatchingWindow: 5 * time.Minute, StreamBatchSize: 10000}, true},
		{"no window", LakeProps{Internal: true, StreamBatchingWindow: -1}, true},
		{"fractional minutes", LakeProps{Internal: true, RefreshMinutes: 0.5}, false},
		{"negative minutes", LakeProps{Internal: true, RefreshMinutes: -1}, false},
		{"window over 5 minutes", LakeProps{Internal: true, StreamBatchingWindow: 301 * time.Second}, false},
		{"window not whole seconds", LakeProps{Internal: true, StreamBatchingWindow: 1500 * time.Millisecond}, false},
		{"batch size over 10000", LakeProps{Internal: true, StreamBatchSize: 10001}, false},
		{"negative batch size", LakeProps{Internal: true, StreamBatchSize: -1}, false},
		{"default compatibility", LakeProps{Internal: true, DefaultCompatibility: "backward"}, true},
		{"unknown default compatibility", LakeProps{Internal: true, DefaultCompatibility: "strict"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.props.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// testDataBuckets are the data buckets of the tests that turn vending on.
var testDataBuckets = []string{"acme-data", "globex.lake-eu"}

// Least privilege, read off the synthesized template, with vending on (the
// most any role is granted; TestVendingOffByDefault covers it off). The
// report of every statement per role is logged (go test -v).
func TestLeastPrivilege(t *testing.T) {
	s := synth(t, LakeProps{CertificateARN: testCertificate, DataBuckets: testDataBuckets})
	all := s.statements()
	for _, role := range keys(all) {
		for _, st := range all[role] {
			t.Logf("%s: %s", role, shape(st))
		}
	}
	// register, statement by statement: get, put, update and delete the
	// items of registrations, usage, the change counter, tombstones, the
	// index of dropped tables (GET …/dropped), version records and
	// tenants' settings on the table; assume the data-reader role (GET
	// …/credentials) and put its vend events; write, read back and list
	// the tables' Iceberg metadata (a sync) under tables/ of the metadata
	// bucket; nothing of the snapshot.
	register := ownLogsOnly(t, findRole(t, all, "RegisterServiceRole"), "RegisterLogs")
	var registerShape []string
	for _, st := range register {
		registerShape = append(registerShape, shape(st))
	}
	sort.Strings(registerShape)
	if want := []string{
		`[dynamodb:DeleteItem dynamodb:GetItem dynamodb:PutItem dynamodb:UpdateItem] on [table] if {"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["tbl/*","quota/*","meta/changes","dropped/*","droppedidx/*","ver/*","tenant/*","iceberg/*"]}}`,
		`[events:PutEvents] on [change bus]`,
		`[s3:GetObject s3:PutObject] on [metadata tables]`,
		`[s3:ListBucket] on [metadata bucket] if {"StringLike":{"s3:prefix":"tables/*"}}`,
		`[sts:AssumeRole sts:TagSession] on [reader role]`,
	}; !slices.Equal(registerShape, want) {
		t.Fatalf("register statements:\n%s\nwant exactly:\n%s", strings.Join(registerShape, "\n"), strings.Join(want, "\n"))
	}
	// refresh, statement by statement: scan the table; get registrations
	// (a stream batch's changed keys), the markers, and what purging
	// orphaned history reads (version records, usage); put the markers,
	// the usage and a version record written back; delete version records
	// only; read this table's stream only (ListStreams,
	// which has no resource-level permission, on "*"); get/put the
	// snapshot key; send to the failure queue (the function's on-failure
	// destination and the stream mapping's).
	refresh := ownLogsOnly(t, findRole(t, all, "RefreshServiceRole"), "RefreshLogs")
	var gotShape []string
	for _, st := range refresh {
		gotShape = append(gotShape, shape(st))
	}
	sort.Strings(gotShape)
	wantShape := []string{
		`[dynamodb:DeleteItem] on [table] if {"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["ver/*"]}}`,
		`[dynamodb:DescribeStream dynamodb:GetRecords dynamodb:GetShardIterator] on [stream]`,
		`[dynamodb:GetItem] on [table] if {"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["tbl/*","dropped/*","ver/*","quota/*","meta/changes","meta/generation","meta/history-sweep","droppedidx/*","tenant/*","iceberg/*"]}}`,
		`[dynamodb:ListStreams] on [*]`,
		`[dynamodb:PutItem] on [table] if {"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["meta/generation","meta/history-sweep","quota/*","ver/*","droppedidx/*"]}}`,
		`[dynamodb:Scan] on [table]`,
		`[events:PutEvents] on [change bus]`,
		`[s3:GetObject s3:PutObject s3:PutObjectTagging] on [segments]`,
		`[s3:GetObject s3:PutObject] on [snapshot key]`,
		`[sqs:GetQueueAttributes sqs:GetQueueUrl sqs:SendMessage] on [failure queue]`,
	}
	if !slices.Equal(gotShape, wantShape) {
		t.Fatalf("refresh statements:\n%s\nwant exactly:\n%s", strings.Join(gotShape, "\n"), strings.Join(wantShape, "\n"))
	}
	// discovery: read the snapshot key and its segments, assume the
	// data-reader role and nothing else (no wildcard), put vend events.
	task := findRole(t, all, "DiscoveryTaskTaskRole")
	var taskShape []string
	for _, st := range task {
		taskShape = append(taskShape, shape(st))
	}
	sort.Strings(taskShape)
	if want := []string{
		`[events:PutEvents] on [change bus]`,
		`[s3:GetObject] on [snapshot key segments]`,
		`[sts:AssumeRole sts:TagSession] on [reader role]`,
	}; !slices.Equal(taskShape, want) {
		t.Fatalf("discovery task statements:\n%s\nwant exactly:\n%s", strings.Join(taskShape, "\n"), strings.Join(want, "\n"))
	}
	// Only discovery and register may assume a role, and only the reader.
	for _, role := range keys(all) {
		for _, st := range all[role] {
			if !slices.ContainsFunc(st.Actions, func(a string) bool { return strings.HasPrefix(a, "sts:") }) {
				continue
			}
			if !strings.HasPrefix(role, `{"Ref":"DiscoveryTaskTaskRole`) && !strings.HasPrefix(role, `{"Ref":"RegisterServiceRole`) {
				t.Errorf("role %s may %v", role, st.Actions)
			}
			if len(st.Resources) != 1 || !strings.HasPrefix(st.Resources[0], `{"Fn::GetAtt":["`+DataReaderRoleID) {
				t.Errorf("role %s may %v on %v, want the reader role's ARN only", role, st.Actions, st.Resources)
			}
		}
	}
	// The reader itself: by its session tags only (in the metadata bucket
	// by lake:meta-prefix, when it has the shape of one table's), and the
	// buckets' locations (TestDataReaderRole has its trust and boundary).
	var readerShape []string
	for _, st := range findRole(t, all, DataReaderRoleID) {
		readerShape = append(readerShape, shape(st))
	}
	sort.Strings(readerShape)
	if want := []string{
		`[s3:GetBucketLocation] on [data bucket acme-data data bucket globex.lake-eu]`,
		`[s3:GetObject s3:GetObjectVersion] on [tagged metadata prefix] if {"StringLike":{"aws:PrincipalTag/lake:meta-prefix":"tables/*/metadata/"}}`,
		`[s3:GetObject s3:GetObjectVersion] on [tagged prefix]`,
		`[s3:ListBucket] on [metadata bucket] if {"StringLike":{"aws:PrincipalTag/lake:meta-prefix":"tables/*/metadata/","s3:prefix":"${aws:PrincipalTag/lake:meta-prefix}*"}}`,
		`[s3:ListBucket] on [tagged bucket] if {"StringLike":{"s3:prefix":"${aws:PrincipalTag/lake:prefix}*"}}`,
	}; !slices.Equal(readerShape, want) {
		t.Fatalf("reader statements:\n%s\nwant exactly:\n%s", strings.Join(readerShape, "\n"), strings.Join(want, "\n"))
	}
	// The metadata bucket: only the register function (which writes it)
	// and the reader (by its tags) are granted anything of it; discovery
	// serves the metadata from its snapshot. unscopedDataReaders counts the
	// writer's read-back as lake's own, so no other role may write there.
	for _, role := range keys(all) {
		for _, st := range all[role] {
			if !slices.ContainsFunc(st.Resources, func(r string) bool { return strings.Contains(r, `"IcebergMetadata`) }) {
				continue
			}
			if !strings.HasPrefix(role, `{"Ref":"RegisterServiceRole`) && !strings.HasPrefix(role, `{"Ref":"`+DataReaderRoleID) {
				t.Errorf("role %s may %v in the metadata bucket, want only register and the reader", role, st.Actions)
			}
			if slices.Contains(st.Actions, "s3:PutObject") && !strings.HasPrefix(role, `{"Ref":"RegisterServiceRole`) {
				t.Errorf("role %s writes the metadata bucket, want only register", role)
			}
		}
	}
	unscoped := unscopedDataReaders(t, s.raw)
	t.Logf("lake roles that can read tenant data without a session policy: %d %v", len(unscoped), unscoped)
	if len(unscoped) != 0 {
		t.Fatalf("roles %v may read objects outside lake's snapshot bucket by more than the session's lake:bucket and lake:prefix tags", unscoped)
	}
	for role, st := range all {
		if strings.Contains(role, "Discovery") {
			for _, a := range actionsOf(st) {
				if strings.HasPrefix(a, "dynamodb:") {
					t.Fatalf("discovery role %s may %s: discovery must have no DynamoDB access", role, a)
				}
			}
		}
	}
	for role, st := range all {
		for _, a := range actionsOf(st) {
			if a == "dynamodb:*" || a == "s3:*" || a == "*" {
				t.Fatalf("role %s is granted %s", role, a)
			}
		}
	}
}

// shape renders a statement with its resources named by kind (the table,
// its stream, the snapshot key, the failure queue), for exact comparison.
func shape(st statement) string {
	var res []string
	for _, r := range st.Resources {
		switch {
		case strings.Contains(r, `"StreamArn"`) && strings.Contains(r, `"Registrations`):
			res = append(res, "stream")
		case strings.Contains(r, `"Registrations`) && strings.HasSuffix(r, `"Arn"]}`):
			res = append(res, "table")
		case strings.Contains(r, `"Snapshots`) && strings.HasSuffix(r, `"/`+SnapshotKey+`"]]}`):
			res = append(res, "snapshot key")
		case strings.Contains(r, `"Snapshots`) && strings.HasSuffix(r, `"/`+SegmentsPrefix+`*"]]}`):
			res = append(res, "segments")
		case strings.HasPrefix(r, `{"Fn::GetAtt":["Changes`) && strings.HasSuffix(r, `"Arn"]}`):
			res = append(res, "change bus")
		case strings.Contains(r, `"RefreshFailures`) && strings.HasSuffix(r, `"Arn"]}`):
			res = append(res, "failure queue")
		case strings.HasPrefix(r, `{"Fn::GetAtt":["`+DataReaderRoleID) && strings.HasSuffix(r, `"Arn"]}`):
			res = append(res, "reader role")
		case strings.Contains(r, `"IcebergMetadata`) && strings.HasSuffix(r, `"/`+IcebergTablesPrefix+`*"]]}`):
			res = append(res, "metadata tables")
		case strings.Contains(r, `"IcebergMetadata`) && strings.HasSuffix(r, `"/`+IcebergMetaPrefixShape+`*"]]}`):
			res = append(res, "metadata of tables")
		case strings.Contains(r, `"IcebergMetadata`) && strings.HasSuffix(r, `"/`+abacMetaPrefix+`*"]]}`):
			res = append(res, "tagged metadata prefix")
		case strings.HasPrefix(r, `{"Fn::GetAtt":["IcebergMetadata`) && strings.HasSuffix(r, `"Arn"]}`):
			res = append(res, "metadata bucket")
		case strings.HasSuffix(r, `":s3:::`+abacBucket+`/`+abacPrefix+`*"]]}`):
			res = append(res, "tagged prefix")
		case strings.HasSuffix(r, `":s3:::`+abacBucket+`"]]}`):
			res = append(res, "tagged bucket")
		case strings.Contains(r, `":s3:::`) && !strings.Contains(r, "${"):
			_, name, _ := strings.Cut(r, `":s3:::`)
			res = append(res, "data bucket "+strings.TrimSuffix(name, `"]]}`))
		default:
			res = append(res, r)
		}
	}
	out := fmt.Sprintf("%v on %v", st.Actions, res)
	if st.Condition != "" {
		out += " if " + st.Condition
	}
	return out
}

// ownLogsOnly checks a function role's log statements name only its own log
// group, and returns its other statements.
func ownLogsOnly(t *testing.T, st []statement, logGroup string) []statement {
	t.Helper()
	var rest []statement
	for _, s := range st {
		if slices.Equal(s.Actions, []string{"logs:CreateLogStream", "logs:PutLogEvents"}) {
			if len(s.Resources) != 1 || !strings.Contains(s.Resources[0], logGroup) {
				t.Fatalf("log statement on %v, want only %s", s.Resources, logGroup)
			}
			continue
		}
		rest = append(rest, s)
	}
	return rest
}

// cdk-nag's AwsSolutions pack finds no unsuppressed error, and every
// suppression carries a reason, with vending off and on.
func TestCdkNag(t *testing.T) {
	for _, tt := range []struct {
		name  string
		props LakeProps
	}{
		{"vending off", LakeProps{CertificateARN: testCertificate}},
		{"vending on", LakeProps{CertificateARN: testCertificate, DataBuckets: testDataBuckets}},
	} {
		t.Run(tt.name, func(t *testing.T) { cdkNag(t, tt.props) })
	}
}

func cdkNag(t *testing.T, p LakeProps) {
	s := synth(t, p)
	errs := assertions.Annotations_FromStack(s.stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	if len(*errs) > 0 {
		b, _ := json.MarshalIndent(*errs, "", "  ")
		t.Errorf("cdk-nag: %d unsuppressed errors:\n%s", len(*errs), b)
	}
	warns := assertions.Annotations_FromStack(s.stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	t.Logf("cdk-nag: %d errors, %d warnings", len(*errs), len(*warns))
	for _, w := range *warns {
		b, _ := json.Marshal(w)
		t.Logf("cdk-nag warning: %.300s", b)
	}
	for _, r := range s.raw["Resources"].(map[string]any) {
		md, _ := r.(map[string]any)["Metadata"].(map[string]any)
		nag, _ := md["cdk_nag"].(map[string]any)
		for _, rule := range asAny(nag["rules_to_suppress"]) {
			m := rule.(map[string]any)
			if reason, _ := m["reason"].(string); len(reason) < 20 {
				t.Errorf("suppression of %v has no real reason: %q", m["id"], reason)
			}
		}
	}
}

func asAny(v any) []any {
	a, _ := v.([]any)
	return a
}

// DefaultCompatibility reaches the register function's environment, and
// only that function's.
func TestDefaultCompatibilityReachesRegister(t *testing.T) {
	s := synth(t, LakeProps{Internal: true, DefaultCompatibility: "full"})
	seen := 0
	for id, fn := range s.resources("AWS::Lambda::Function") {
		env, _ := props(fn)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		got, set := vars["LAKE_DEFAULT_COMPATIBILITY"]
		switch {
		case strings.HasPrefix(id, "Register") && got == "full":
			seen++
		case strings.HasPrefix(id, "Register"):
			t.Errorf("register's LAKE_DEFAULT_COMPATIBILITY = %v, want full", got)
		case set:
			t.Errorf("%s has LAKE_DEFAULT_COMPATIBILITY %v", id, got)
		}
	}
	if seen != 1 {
		t.Fatalf("%d register functions with the mode, want 1", seen)
	}
}

// The catalog's memory settings reach the register function's environment
// (and no other function's, but LAKE_HISTORY_VERSIONS refresh's too);
// unset ones stay unset (the catalog's defaults); a bad one fails
// Validate, before any synth.
func TestMemorySettingsReachRegister(t *testing.T) {
	s := synth(t, LakeProps{Internal: true, TombstoneRetention: "72h", HistoryVersions: "off"})
	want := map[string]any{"LAKE_TOMBSTONE_RETENTION": "72h", "LAKE_HISTORY_VERSIONS": "off"}
	seen := 0
	for id, fn := range s.resources("AWS::Lambda::Function") {
		env, _ := props(fn)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for _, name := range []string{"LAKE_TOMBSTONE_RETENTION", "LAKE_HISTORY_VERSIONS", "LAKE_HISTORY_MAX_AGE"} {
			got, set := vars[name]
			// Refresh finds a dropped table's orphaned history by the
			// register function's count of versions kept.
			reads := strings.HasPrefix(id, "Register") || strings.HasPrefix(id, "Refresh") && name == "LAKE_HISTORY_VERSIONS"
			switch {
			case reads && got != want[name]:
				t.Errorf("%s's %s = %v, want %v", id, name, got, want[name])
			case !reads && set:
				t.Errorf("%s has %s %v", id, name, got)
			}
		}
		if strings.HasPrefix(id, "Register") {
			seen++
		}
	}
	if seen != 1 {
		t.Fatalf("%d register functions, want 1", seen)
	}
	for _, bad := range []LakeProps{
		{Internal: true, TombstoneRetention: "30m"}, {Internal: true, TombstoneRetention: "a week"},
		{Internal: true, HistoryVersions: "0"}, {Internal: true, HistoryVersions: "100001"},
		{Internal: true, HistoryMaxAge: "off"}, {Internal: true, HistoryMaxAge: "1d"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
	for _, good := range []LakeProps{{Internal: true, TombstoneRetention: "off", HistoryVersions: "100000", HistoryMaxAge: "8760h"}} {
		if err := good.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", good, err)
		}
	}
}

// vendingEnv is every LAKE_VENDING_* variable of the discovery container
// and the register function, by "discovery"/"register" and name, values
// as JSON.
func vendingEnv(t *testing.T, s synthesized) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{"discovery": {}, "register": {}}
	add := func(who, name string, v any) {
		if strings.HasPrefix(name, "LAKE_VENDING_") {
			b, _ := json.Marshal(v)
			out[who][name] = string(b)
		}
	}
	defs := s.resources("AWS::ECS::TaskDefinition")
	for _, c := range asAny(props(defs[onlyID(t, defs)])["ContainerDefinitions"]) {
		for _, e := range asAny(c.(map[string]any)["Environment"]) {
			m := e.(map[string]any)
			add("discovery", fmt.Sprint(m["Name"]), m["Value"])
		}
	}
	for id, fn := range s.resources("AWS::Lambda::Function") {
		env, _ := props(fn)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for name, v := range vars {
			switch {
			case strings.HasPrefix(id, "Register"):
				add("register", name, v)
			case strings.HasPrefix(name, "LAKE_VENDING_"):
				t.Errorf("%s has %s", id, name)
			}
		}
	}
	return out
}

// Without data buckets (the default) lake vends nothing: no reader role,
// no boundary, no output, no LAKE_VENDING_* environment, no sts: or vend
// grant; discovery reads the snapshot and nothing else.
func TestVendingOffByDefault(t *testing.T) {
	s := synth(t, LakeProps{Internal: true})
	for _, typ := range []string{"AWS::IAM::Role", "AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"} {
		for id := range s.resources(typ) {
			if strings.HasPrefix(id, DataReaderRoleID) {
				t.Errorf("%s %s without data buckets", typ, id)
			}
		}
	}
	if _, ok := s.raw["Outputs"].(map[string]any)["DataReaderRole"]; ok {
		t.Error("output DataReaderRole without data buckets")
	}
	env := vendingEnv(t, s)
	if len(env["discovery"]) != 0 || len(env["register"]) != 0 {
		t.Errorf("vending environment %v without data buckets, want none", env)
	}
	all := s.statements()
	for role, st := range all {
		for _, a := range actionsOf(st) {
			if strings.HasPrefix(a, "sts:") {
				t.Errorf("role %s may %s without data buckets", role, a)
			}
		}
	}
	task := findRole(t, all, "DiscoveryTaskTaskRole")
	if len(task) != 1 || shape(task[0]) != "[s3:GetObject] on [snapshot key segments]" {
		t.Fatalf("discovery task statements %v, want s3:GetObject of the snapshot key and its segments only", task)
	}
	register := ownLogsOnly(t, findRole(t, all, "RegisterServiceRole"), "RegisterLogs")
	if got := actionsOf(register); !slices.Equal(got, []string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
		"s3:GetObject", "s3:ListBucket", "s3:PutObject"}) {
		t.Fatalf("register actions %v without data buckets, want its table items and the Iceberg metadata only", got)
	}
}

// With data buckets, the data-reader role: assumed, with tagged sessions,
// by exactly discovery's task role and the register function's role, the
// tags lake:tenant, lake:bucket (a data bucket) and lake:prefix (ending in
// "/") required; sessions of at most an hour; its boundary allows the
// four read actions in the data buckets only and denies every bucket the
// stack creates; its own S3 grants are by the session's tags, but the
// buckets' locations. The vending environment reaches discovery and
// register, and the output names the role.
func TestDataReaderRole(t *testing.T) {
	s := synth(t, LakeProps{Internal: true, DataBuckets: testDataBuckets})
	roles := s.resources("AWS::IAM::Role")
	var readerID string
	for id := range roles {
		if strings.HasPrefix(id, DataReaderRoleID) {
			if readerID != "" {
				t.Fatalf("two reader roles: %s and %s", readerID, id)
			}
			readerID = id
		}
	}
	if readerID == "" {
		t.Fatalf("no %s role among %v", DataReaderRoleID, keys(roles))
	}
	reader := props(roles[readerID])
	if got := fmt.Sprint(reader["MaxSessionDuration"]); got != "3600" {
		t.Errorf("MaxSessionDuration = %s, want 3600 (1 h)", got)
	}

	// Trust: one statement, exactly the two callers, the tag conditions.
	trust := asAny(reader["AssumeRolePolicyDocument"].(map[string]any)["Statement"])
	if len(trust) != 1 {
		t.Fatalf("trust has %d statements, want 1", len(trust))
	}
	st := trust[0].(map[string]any)
	if got := asStrings(st["Action"]); st["Effect"] != "Allow" || !slices.Equal(got, []string{"sts:AssumeRole", "sts:TagSession"}) {
		t.Errorf("trust allows %v (%v), want sts:AssumeRole and sts:TagSession", got, st["Effect"])
	}
	var principals []string
	for _, p := range asAny(st["Principal"].(map[string]any)["AWS"]) {
		att := asStrings(p.(map[string]any)["Fn::GetAtt"])
		if len(att) != 2 || att[1] != "Arn" {
			t.Fatalf("trust principal %v, want a role of the stack", p)
		}
		id, _, _ := strings.Cut(att[0], "Role")
		principals = append(principals, id+"Role")
	}
	sort.Strings(principals)
	if want := []string{"DiscoveryTaskTaskRole", "RegisterServiceRole"}; !slices.Equal(principals, want) || len(st["Principal"].(map[string]any)) != 1 {
		t.Fatalf("trust principals %v (%v), want exactly %v", principals, st["Principal"], want)
	}
	for _, id := range asAny(st["Principal"].(map[string]any)["AWS"]) {
		att := asStrings(id.(map[string]any)["Fn::GetAtt"])
		if _, ok := roles[att[0]]; !ok {
			t.Errorf("trust names %s, not a role of the stack", att[0])
		}
	}
	cond, _ := json.Marshal(st["Condition"])
	want := `{"ForAllValues:StringEquals":{"aws:TagKeys":["lake:tenant","lake:namespace","lake:table","lake:bucket","lake:prefix","lake:meta-bucket","lake:meta-prefix"]},` +
		`"Null":{"aws:RequestTag/lake:bucket":"false","aws:RequestTag/lake:prefix":"false","aws:RequestTag/lake:tenant":"false"},` +
		`"StringEquals":{"aws:RequestTag/lake:bucket":["acme-data","globex.lake-eu"]},` +
		`"StringLike":{"aws:RequestTag/lake:prefix":"?*/"}}`
	if string(cond) != want {
		t.Errorf("trust conditions\n%s\nwant\n%s", cond, want)
	}

	// The boundary: attached, the data buckets' reads, lake's own buckets
	// denied (every bucket of the stack, and its objects).
	ref, _ := reader["PermissionsBoundary"].(map[string]any)["Ref"].(string)
	boundary, ok := s.resources("AWS::IAM::ManagedPolicy")[ref]
	if !ok {
		t.Fatalf("PermissionsBoundary %v, want a managed policy of the stack", reader["PermissionsBoundary"])
	}
	if r := asAny(props(boundary)["Roles"]); len(r) != 0 {
		t.Errorf("the boundary is attached to %v as a permission policy", r)
	}
	var allowShapes []string
	denied := map[string]bool{}
	for _, st := range asAny(props(boundary)["PolicyDocument"].(map[string]any)["Statement"]) {
		m := st.(map[string]any)
		acts := asStrings(m["Action"])
		sort.Strings(acts)
		st := statement{Actions: acts, Resources: asStrings(m["Resource"])}
		if c, ok := m["Condition"]; ok {
			b, _ := json.Marshal(c)
			st.Condition = string(b)
		}
		sh := shape(st)
		switch m["Effect"] {
		case "Allow":
			allowShapes = append(allowShapes, sh)
		case "Deny":
			if !slices.Equal(acts, []string{"s3:*"}) {
				t.Errorf("boundary denies %v, want s3:*", acts)
			}
			for _, r := range asStrings(m["Resource"]) {
				denied[r] = true
			}
		}
	}
	sort.Strings(allowShapes)
	if want := []string{
		`[s3:GetBucketLocation s3:ListBucket] on [data bucket acme-data data bucket globex.lake-eu]`,
		`[s3:GetObject s3:GetObjectVersion] on [data bucket acme-data/* data bucket globex.lake-eu/*]`,
		`[s3:GetObject s3:GetObjectVersion] on [metadata of tables]`,
		`[s3:ListBucket] on [metadata bucket] if {"StringLike":{"s3:prefix":"tables/*/metadata/*"}}`,
	}; !slices.Equal(allowShapes, want) {
		t.Errorf("boundary allows\n%s\nwant exactly\n%s", strings.Join(allowShapes, "\n"), strings.Join(want, "\n"))
	}
	buckets := s.resources("AWS::S3::Bucket")
	if len(buckets) < 3 {
		t.Fatalf("buckets %v, want the snapshot, access-log and metadata buckets", keys(buckets))
	}
	// Every bucket of the stack but the metadata bucket, whose tables'
	// metadata the boundary allows (a deny would void that).
	for _, id := range keys(buckets) {
		arn := `{"Fn::GetAtt":["` + id + `","Arn"]}`
		objects := `{"Fn::Join":["",[` + arn + `,"/*"]]}`
		if strings.HasPrefix(id, "IcebergMetadata") {
			if denied[arn] || denied[objects] {
				t.Errorf("the boundary denies the metadata bucket %s, whose tables' metadata it allows", id)
			}
			continue
		}
		if !denied[arn] || !denied[objects] {
			t.Errorf("the boundary does not deny lake's own bucket %s and its objects (denies %v)", id, keys(denied))
		}
	}

	// Its own policy: S3 by the session's tags, but GetBucketLocation.
	own := s.statements()[`{"Ref":"`+readerID+`"}`]
	if len(own) != 5 {
		t.Fatalf("reader has %d statements, want 5", len(own))
	}
	for _, st := range own {
		if slices.Equal(st.Actions, []string{"s3:GetBucketLocation"}) {
			continue
		}
		if slices.ContainsFunc(st.Resources, func(r string) bool { return strings.Contains(r, `"IcebergMetadata`) }) {
			// The metadata bucket: by lake:meta-prefix, shape-checked.
			shaped := `"aws:PrincipalTag/` + tagMetaPrefix + `":"` + IcebergMetaPrefixShape + `"`
			if !strings.Contains(st.Condition, `{"StringLike":{`) || !strings.Contains(st.Condition, shaped) {
				t.Errorf("reader may %v on %v if %s, want lake:meta-prefix held to %s", st.Actions, st.Resources, st.Condition, IcebergMetaPrefixShape)
			}
			for _, r := range st.Resources {
				if st.Actions[0] != "s3:ListBucket" && !strings.Contains(r, abacMetaPrefix) {
					t.Errorf("reader may %v on %s, not scoped by the session's lake:meta-prefix", st.Actions, r)
				}
			}
			if st.Actions[0] == "s3:ListBucket" && !strings.Contains(st.Condition, `"s3:prefix":"`+abacMetaPrefix+`*"`) {
				t.Errorf("reader lists %v under %s, want s3:prefix scoped by the session's lake:meta-prefix", st.Resources, st.Condition)
			}
			continue
		}
		for _, r := range st.Resources {
			if !strings.Contains(r, abacBucket) || st.Actions[0] != "s3:ListBucket" && !strings.Contains(r, abacPrefix) {
				t.Errorf("reader may %v on %s, not scoped by the session's tags", st.Actions, r)
			}
		}
		if st.Actions[0] == "s3:ListBucket" && !strings.Contains(st.Condition, abacPrefix) {
			t.Errorf("reader lists %v under %s, want s3:prefix scoped by the session's lake:prefix", st.Resources, st.Condition)
		}
	}

	env := vendingEnv(t, s)
	for _, who := range []string{"discovery", "register"} {
		got := env[who]
		if !strings.Contains(got["LAKE_VENDING_ROLE_ARN"], `{"Fn::GetAtt":["`+readerID+`","Arn"]}`) {
			t.Errorf("%s's LAKE_VENDING_ROLE_ARN = %s, want the reader role's ARN", who, got["LAKE_VENDING_ROLE_ARN"])
		}
		if own := got["LAKE_VENDING_OWN_BUCKETS"]; !strings.HasPrefix(own, `{"Fn::Join":[","`) {
			t.Errorf("%s's LAKE_VENDING_OWN_BUCKETS = %s, want lake's buckets joined by commas", who, own)
		} else {
			for _, id := range keys(buckets) {
				if !strings.Contains(own, `{"Ref":"`+id+`"}`) {
					t.Errorf("%s's LAKE_VENDING_OWN_BUCKETS = %s, want bucket %s among them", who, own, id)
				}
			}
		}
		if !strings.Contains(got["LAKE_VENDING_EVENT_BUS"], `{"Ref":"Changes`) {
			t.Errorf("%s's LAKE_VENDING_EVENT_BUS = %s, want the change bus", who, got["LAKE_VENDING_EVENT_BUS"])
		}
		if len(got) != 3 {
			t.Errorf("%s's vending environment %v, want exactly the three", who, keys(got))
		}
	}
	// The reader's trust names the callers' roles, whose policies and
	// environment name the reader: CloudFormation refuses a cycle, which
	// synth does not see.
	if cycle := dependencyCycle(s.raw); cycle != nil {
		t.Errorf("the template's resources depend on each other in a cycle: %v", cycle)
	}
	out, _ := s.raw["Outputs"].(map[string]any)["DataReaderRole"].(map[string]any)
	if b, _ := json.Marshal(out["Value"]); string(b) != `{"Fn::GetAtt":["`+readerID+`","Arn"]}` {
		t.Errorf("output DataReaderRole = %s, want the reader role's ARN", b)
	}
}

// -c dataBuckets=a,b (a string) or "dataBuckets": [...] in cdk.json name
// the data buckets; Validate refuses a name S3 would not create, a
// duplicate, or more than MaxDataBuckets.
func TestDataBucketsFromContext(t *testing.T) {
	tests := []struct {
		name    string
		context any
		want    []string
		valid   bool
	}{
		{"absent", nil, nil, true},
		{"empty", "", nil, true},
		{"-c one", "acme-data", []string{"acme-data"}, true},
		{"-c two, spaced", "acme-data, globex.lake-eu", []string{"acme-data", "globex.lake-eu"}, true},
		{"cdk.json list", []any{"acme-data", "globex.lake-eu"}, []string{"acme-data", "globex.lake-eu"}, true},
		{"an empty name", "acme-data,,b2b", []string{"acme-data", "", "b2b"}, false},
		{"upper case", "Acme-Data", []string{"Acme-Data"}, false},
		{"a wildcard", "acme-*", []string{"acme-*"}, false},
		{"a policy variable", "${aws:username}", []string{"${aws:username}"}, false},
		{"an IP address", "10.0.0.1", []string{"10.0.0.1"}, false},
		{"an ARN", "arn:aws:s3:::acme-data", []string{"arn:aws:s3:::acme-data"}, false},
		{"twice", "acme-data,acme-data", []string{"acme-data", "acme-data"}, false},
		{"too many", strings.Repeat("acme-data,", MaxDataBuckets) + "last-one", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := map[string]any{"internal": "true"}
			if tt.context != nil {
				ctx["dataBuckets"] = tt.context
			}
			app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: &ctx})
			got, err := propsFromContext(app)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !slices.Equal(got.DataBuckets, tt.want) {
				t.Errorf("DataBuckets = %q, want %q", got.DataBuckets, tt.want)
			}
			if err := got.Validate(); (err == nil) != tt.valid {
				t.Errorf("Validate() = %v, want ok %v", err, tt.valid)
			}
		})
	}
	for _, bad := range []any{42, []any{"acme-data", 7}, true} {
		ctx := map[string]any{"internal": "true", "dataBuckets": bad}
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: &ctx})
		if got, err := propsFromContext(app); err == nil {
			t.Errorf("dataBuckets %v: got %q, want an error", bad, got.DataBuckets)
		}
	}
}

// A trust policy holds 2,048 characters (IAM's default quota, whitespace
// not counted): the reader's, with MaxDataBuckets of the longest names and
// role ARNs of the length CloudFormation names them (up to 64 characters
// of name), fits.
func TestDataReaderTrustFitsIAMLimit(t *testing.T) {
	var buckets []string
	for i := range MaxDataBuckets {
		buckets = append(buckets, fmt.Sprintf("%02d", i)+strings.Repeat("b", 61))
	}
	s := synth(t, LakeProps{Internal: true, DataBuckets: buckets})
	for id, r := range s.resources("AWS::IAM::Role") {
		if !strings.HasPrefix(id, DataReaderRoleID) {
			continue
		}
		b, _ := json.Marshal(props(r)["AssumeRolePolicyDocument"])
		arn := `"arn:aws:iam::123456789012:role/` + strings.Repeat("r", 64) + `"`
		doc := regexp.MustCompile(`\{"Fn::GetAtt":\["[A-Za-z0-9]+","Arn"\]\}`).ReplaceAllString(string(b), arn)
		if strings.Contains(doc, "Fn::") {
			t.Fatalf("unresolved trust policy %s", doc)
		}
		t.Logf("trust policy with %d data buckets: %d characters", len(buckets), len(doc))
		if len(doc) > 2048 {
			t.Fatalf("trust policy of %d characters with %d data buckets, over IAM's 2,048", len(doc), len(buckets))
		}
		return
	}
	t.Fatal("no reader role")
}

// dependencyCycle returns a cycle of the template's resources (by Ref,
// Fn::GetAtt and DependsOn), or nil.
func dependencyCycle(raw map[string]any) []string {
	resources := raw["Resources"].(map[string]any)
	edges := map[string][]string{}
	var walk func(from string, v any)
	walk = func(from string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["Ref"].(string); ok && resources[ref] != nil {
				edges[from] = append(edges[from], ref)
			}
			if att := asStrings(x["Fn::GetAtt"]); len(att) > 0 && resources[att[0]] != nil {
				edges[from] = append(edges[from], att[0])
			}
			for _, e := range x {
				walk(from, e)
			}
		case []any:
			for _, e := range x {
				walk(from, e)
			}
		}
	}
	for id, r := range resources {
		walk(id, r.(map[string]any)["Properties"])
		edges[id] = append(edges[id], asStrings(r.(map[string]any)["DependsOn"])...)
	}
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch state[id] {
		case open:
			i := slices.Index(path, id)
			return append(slices.Clone(path[i:]), id)
		case done:
			return nil
		}
		state[id] = open
		path = append(path, id)
		for _, next := range edges[id] {
			if c := visit(next); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		return nil
	}
	for _, id := range keys(resources) {
		if c := visit(id); c != nil {
			return c
		}
	}
	return nil
}
