package program_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lake-catalog/lake/functions/register/program"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/wire"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    program.Config
		wantErr string
	}{
		{name: "table", env: map[string]string{"LAKE_TABLE": "registrations"}, want: program.Config{Table: "registrations"}},
		{name: "no table", env: map[string]string{}, wantErr: "LAKE_TABLE is required"},
		{name: "quotas", env: map[string]string{"LAKE_TABLE": "r", "LAKE_TENANT_MAX_TABLES": "500", "LAKE_TENANT_MAX_SCHEMA_BYTES": "-1"},
			want: program.Config{Table: "r", Quota: catalog.Quota{MaxTables: 500, MaxBytes: -1}}},
		{name: "byte quota", env: map[string]string{"LAKE_TABLE": "r", "LAKE_TENANT_MAX_BYTES": "1000", "LAKE_TENANT_MAX_SCHEMA_BYTES": "-1"},
			want: program.Config{Table: "r", Quota: catalog.Quota{MaxBytes: 1000}}},
		{name: "quota zero", env: map[string]string{"LAKE_TABLE": "r", "LAKE_TENANT_MAX_TABLES": "0"}, wantErr: `LAKE_TENANT_MAX_TABLES "0": want a positive whole number, or -1`},
		{name: "quota not a number", env: map[string]string{"LAKE_TABLE": "r", "LAKE_TENANT_MAX_SCHEMA_BYTES": "32MiB"}, wantErr: `LAKE_TENANT_MAX_SCHEMA_BYTES "32MiB"`},
		{name: "default compatibility", env: map[string]string{"LAKE_TABLE": "r", "LAKE_DEFAULT_COMPATIBILITY": "Backward"},
			want: program.Config{Table: "r", DefaultCompatibility: schemadiff.Backward}},
		{name: "bad default compatibility", env: map[string]string{"LAKE_TABLE": "r", "LAKE_DEFAULT_COMPATIBILITY": "strict"},
			wantErr: `LAKE_DEFAULT_COMPATIBILITY "strict": want none, backward, forward or full`},
		{name: "other variables do not stand in", env: map[string]string{"LAKE_BUCKET": "b"}, wantErr: "LAKE_TABLE is required"},
		// The snapshot is not read: GET …/dropped reads the catalog.
		{name: "the snapshot's variables are not read", env: map[string]string{"LAKE_TABLE": "r", "LAKE_BUCKET": "b", "LAKE_SNAPSHOT_KEY": "k/blob", "LAKE_S3_PATH_STYLE": "yes"},
			want: program.Config{Table: "r"}},
		{name: "vending", env: map[string]string{"LAKE_TABLE": "r", "LAKE_VENDING_ROLE_ARN": "arn:aws:iam::1:role/reader", "LAKE_VENDING_OWN_BUCKETS": "snaps",
			"LAKE_VENDING_EVENT_BUS": "changes", "LAKE_VENDING_DURATION": "1h"},
			want: program.Config{Table: "r", Vending: func() vending.Config {
				c := program.DefaultVending()
				c.RoleARN, c.OwnBuckets, c.EventBus, c.Duration = "arn:aws:iam::1:role/reader", []string{"snaps"}, "changes", time.Hour
				return c
			}()}},
		{name: "bad vending duration", env: map[string]string{"LAKE_TABLE": "r", "LAKE_VENDING_DURATION": "1m"}, wantErr: "LAKE_VENDING_DURATION"},
		{name: "iceberg metadata", env: map[string]string{"LAKE_TABLE": "r", "LAKE_ICEBERG_METADATA": "s3://lake-iceberg/", "LAKE_S3_PATH_STYLE": "true"},
			want: program.Config{Table: "r", IcebergMetadata: "lake-iceberg", S3PathStyle: true}},
		{name: "iceberg metadata not a bucket", env: map[string]string{"LAKE_TABLE": "r", "LAKE_ICEBERG_METADATA": "s3://lake-iceberg/some/prefix/"}, wantErr: "LAKE_ICEBERG_METADATA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := program.ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if tc.want.Vending.RoleARN == "" {
				tc.want.Vending = program.DefaultVending()
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// Main stops a cold start with a bad environment: exit code 2 and one
// JSON line on stdout naming the variable, before any client is built.
func TestMainConfigurationError(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	code := program.Main(t.Context(), nil, func(string) string { return "" }, &stdout, &stderr)
	if code != 2 || !strings.Contains(stdout.String(), `"error":"LAKE_TABLE is required`) {
		t.Fatalf("got exit %d, stdout %q; want exit 2 and a JSON line naming LAKE_TABLE", code, stdout.String())
	}
}

// GET …/dropped through the Lambda's handler lists the catalog's
// tombstones in retention, newest first, with who dropped each, at once
// (no refresh, no snapshot); none for a tenant without drops. (It read the
// published snapshot before: TestSnapshotDropped's assertions on the list
// are kept here; those on the snapshot went with it.)
func TestDroppedFromTheCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := now
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	cat := catalog.New(st, catalog.Options{Now: func() time.Time { return clock }, TombstoneRetention: 48 * time.Hour})
	for _, ref := range []catalog.TableRef{{Tenant: "acme", Namespace: "sales", Name: "orders"}, {Tenant: "acme", Namespace: "sales", Name: "returns"},
		{Tenant: "globex", Namespace: "finance", Name: "ledger"}} {
		if _, _, err := cat.Register(ctx, ref, catalog.TableSpec{Location: "/x", Schema: catalogtest.WideSchema(1, 2)}); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Hour)
		if err := cat.Drop(catalog.WithCaller(ctx, "arn:aws:iam::1:user/"+ref.Name), ref); err != nil {
			t.Fatal(err)
		}
	}
	api, err := registerapi.New(cat, registerapi.Options{Authorize: registerapi.AllowAll(program.IAMCaller)})
	if err != nil {
		t.Fatal(err)
	}
	h := program.LambdaHandler(api)
	list := func(tenant string) wire.DroppedPage {
		t.Helper()
		path := "/v1/tenants/" + tenant + "/dropped"
		resp, err := h(ctx, events.APIGatewayV2HTTPRequest{RawPath: path,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: path}}})
		var page wire.DroppedPage
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(resp.Body), &page) != nil {
			t.Fatalf("GET %s: %d %s, %v", path, resp.StatusCode, resp.Body, err)
		}
		return page
	}
	// At 49 h, orders' retention (dropped at 1 h, 48 h) has ended.
	clock = now.Add(49*time.Hour + 30*time.Minute)
	ds := list("acme").Dropped
	if len(ds) != 1 || ds[0].Table != "returns" || ds[0].DroppedBy != "arn:aws:iam::1:user/returns" || ds[0].Version != 2 {
		t.Fatalf("acme's dropped: %+v; want returns alone", ds)
	}
	if ds := list("initech").Dropped; len(ds) != 0 {
		t.Fatalf("a tenant without drops: %v", ds)
	}
}
