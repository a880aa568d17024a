package registerapi_test

import (
	"strings"
	"testing"

	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/schemadiff"
)

func TestLambdaConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    registerapi.LambdaConfig
		wantErr string
	}{
		{name: "table", env: map[string]string{"LAKE_TABLE": "registrations"}, want: registerapi.LambdaConfig{Table: "registrations"}},
		{name: "no table", env: map[string]string{}, wantErr: "LAKE_TABLE is required"},
		{name: "quotas", env: map[string]string{"LAKE_TABLE": "r", "LAKE_TENANT_MAX_TABLES": "500", "LAKE_TENANT_MAX_SCHEMA_BYTES": "-1"},
			want: registerapi.LambdaConfig{Table: "r", Quota: catalog.Quota{MaxTables: 500, MaxBytes: -1}}},
		{name: "byte quota", env: map[string]string{"LAKE_TABLE": "r", "LAKE_TENANT_MAX_BYTES": "1000", "LAKE_TENANT_MAX_SCHEMA_BYTES": "-1"},
			want: registerapi.LambdaConfig{Table: "r", Quota: catalog.Quota{MaxBytes: 1000}}},
		{name: "quota zero", env: map[string]string{"LAKE_TABLE": "r", "LAKE_TENANT_MAX_TABLES": "0"}, wantErr: `LAKE_TENANT_MAX_TABLES "0": want a positive whole number, or -1`},
		{name: "quota not a number", env: map[string]string{"LAKE_TABLE": "r", "LAKE_TENANT_MAX_SCHEMA_BYTES": "32MiB"}, wantErr: `LAKE_TENANT_MAX_SCHEMA_BYTES "32MiB"`},
		{name: "default compatibility", env: map[string]string{"LAKE_TABLE": "r", "LAKE_DEFAULT_COMPATIBILITY": "Backward"},
			want: registerapi.LambdaConfig{Table: "r", DefaultCompatibility: schemadiff.Backward}},
		{name: "bad default compatibility", env: map[string]string{"LAKE_TABLE": "r", "LAKE_DEFAULT_COMPATIBILITY": "strict"},
			wantErr: `LAKE_DEFAULT_COMPATIBILITY "strict": want none, backward, forward or full`},
		{name: "other variables do not stand in", env: map[string]string{"LAKE_BUCKET": "b"}, wantErr: "LAKE_TABLE is required"},
		{name: "the snapshot, default key", env: map[string]string{"LAKE_TABLE": "r", "LAKE_BUCKET": "b"},
			want: registerapi.LambdaConfig{Table: "r", Snapshot: "s3://b/snapshots/catalog.lakesnap"}},
		{name: "the snapshot, its key, path style", env: map[string]string{"LAKE_TABLE": "r", "LAKE_BUCKET": "b", "LAKE_SNAPSHOT_KEY": "k/blob", "LAKE_S3_PATH_STYLE": "true"},
			want: registerapi.LambdaConfig{Table: "r", Snapshot: "s3://b/k/blob", S3PathStyle: true}},
		{name: "bad path style", env: map[string]string{"LAKE_TABLE": "r", "LAKE_S3_PATH_STYLE": "yes"}, wantErr: `LAKE_S3_PATH_STYLE "yes": want true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := registerapi.LambdaConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// LambdaMain stops a cold start with a bad environment: exit code 2 and one
// JSON line on stdout naming the variable, before any client is built.
func TestLambdaMainConfigurationError(t *testing.T) {
	var stdout, stderr strings.Builder
	code := registerapi.LambdaMain(t.Context(), nil, func(string) string { return "" }, &stdout, &stderr)
	if code != 2 || !strings.Contains(stdout.String(), `"error":"LAKE_TABLE is required`) {
		t.Fatalf("got exit %d, stdout %q; want exit 2 and a JSON line naming LAKE_TABLE", code, stdout.String())
	}
}
