package refresh_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/lambdalog"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

func TestLambdaConfigFromEnv(t *testing.T) {
	t.Parallel()
	base := map[string]string{"LAKE_TABLE": "registrations", "LAKE_BUCKET": "snapshots"}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    refresh.LambdaConfig
		wantErr string
	}{
		{name: "defaults", env: base, want: refresh.LambdaConfig{Table: "registrations", Blob: "s3://snapshots/snapshots/catalog.lakesnap", Segments: 1, MaxAttempts: 10, Reconcile: 24 * time.Hour, MaxIncremental: 1000}},
		{name: "everything", env: map[string]string{"LAKE_TABLE": "t", "LAKE_BUCKET": "b", "LAKE_SNAPSHOT_KEY": "k/blob", "LAKE_SCAN_SEGMENTS": "4",
			"LAKE_SCAN_PAGE_LIMIT": "2", "LAKE_DYNAMO_MAX_ATTEMPTS": "3", "LAKE_S3_PATH_STYLE": "true", "LAKE_RECONCILE_INTERVAL": "15m", "LAKE_MAX_INCREMENTAL": "50",
			"LAKE_HISTORY_VERSIONS": "20", "LAKE_HISTORY_BUDGET": "300"},
			want: refresh.LambdaConfig{Table: "t", Blob: "s3://b/k/blob", Segments: 4, PageLimit: 2, MaxAttempts: 3, S3PathStyle: true, Reconcile: 15 * time.Minute, MaxIncremental: 50,
				HistoryVersions: 20, HistoryBudget: 300}},
		{name: "history off", env: with(base, "LAKE_HISTORY_VERSIONS", "off"),
			want: refresh.LambdaConfig{Table: "registrations", Blob: "s3://snapshots/snapshots/catalog.lakesnap", Segments: 1, MaxAttempts: 10, Reconcile: 24 * time.Hour, MaxIncremental: 1000, HistoryVersions: -1}},
		{name: "history versions zero", env: with(base, "LAKE_HISTORY_VERSIONS", "0"), wantErr: `LAKE_HISTORY_VERSIONS="0": want a whole number from 1 to 100000`},
		{name: "history budget zero", env: with(base, "LAKE_HISTORY_BUDGET", "0"), wantErr: `LAKE_HISTORY_BUDGET="0": want a whole number from 1 to 1000000`},
		{name: "reconcile too often", env: with(base, "LAKE_RECONCILE_INTERVAL", "10s"), wantErr: `LAKE_RECONCILE_INTERVAL="10s": want a duration of at least 1m`},
		{name: "no table", env: map[string]string{"LAKE_BUCKET": "b"}, wantErr: "LAKE_TABLE and LAKE_BUCKET are required"},
		{name: "no bucket", env: map[string]string{"LAKE_TABLE": "t"}, wantErr: "LAKE_TABLE and LAKE_BUCKET are required"},
		{name: "segments zero", env: with(base, "LAKE_SCAN_SEGMENTS", "0"), wantErr: `LAKE_SCAN_SEGMENTS="0": want a whole number from 1 to 1024`},
		{name: "segments word", env: with(base, "LAKE_SCAN_SEGMENTS", "four"), wantErr: `LAKE_SCAN_SEGMENTS="four"`},
		{name: "page limit negative", env: with(base, "LAKE_SCAN_PAGE_LIMIT", "-1"), wantErr: "LAKE_SCAN_PAGE_LIMIT"},
		{name: "attempts too many", env: with(base, "LAKE_DYNAMO_MAX_ATTEMPTS", "1000"), wantErr: "from 1 to 100"},
		{name: "path style not a bool", env: with(base, "LAKE_S3_PATH_STYLE", "yes"), wantErr: `LAKE_S3_PATH_STYLE="yes": want true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := refresh.LambdaConfigFromEnv(func(k string) string { return tc.env[k] })
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

func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		if a != k {
			out[a] = b
		}
	}
	return out
}

// A run logs one JSON line and writes one EMF line; a failed run logs the
// error and returns it.
func TestRunLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	if _, _, err := catalog.New(store, catalog.Options{}).Register(ctx, ref, catalog.TableSpec{Location: "s3://lake/o/", Schema: catalogtest.WideSchema(1, 3)}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	log := lambdalog.New(&out)
	p := &refresh.Publisher{Store: store, Blobs: blobstore.NewFile(filepath.Join(t.TempDir(), "catalog.lakesnap"))}
	res, err := p.RunLogged(ctx, log, &out)
	if err != nil || res.Outcome != refresh.Published {
		t.Fatalf("RunLogged = %+v, %v; want published", res, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want a log line and an EMF line:\n%s", len(lines), out.String())
	}
	var logLine map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &logLine); err != nil || logLine["msg"] != "refresh" || logLine["outcome"] != "published" || logLine["tables"] != float64(1) {
		t.Fatalf("log line = %s (%v)", lines[0], err)
	}
	var emf map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &emf); err != nil || emf["_aws"] == nil || emf["Published"] != float64(1) {
		t.Fatalf("EMF line = %s (%v)", lines[1], err)
	}

	out.Reset()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunLogged(ctx, log, &out); err == nil {
		t.Fatal("a run over a closed store succeeded")
	}
	if !strings.Contains(out.String(), `"msg":"refresh failed"`) || strings.Contains(out.String(), "CloudWatchMetrics") {
		t.Fatalf("a failed run logged:\n%s\nwant one error line and no metrics", out.String())
	}
}

// LambdaMain stops a cold start with a bad environment: exit code 2 and one
// JSON line on stdout (the stream both Lambdas log to) naming the variable.
func TestLambdaMainConfigurationError(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	env := map[string]string{"LAKE_TABLE": "t", "LAKE_BUCKET": "b", "LAKE_SCAN_SEGMENTS": "0"}
	code := refresh.LambdaMain(t.Context(), nil, func(k string) string { return env[k] }, &stdout, &stderr)
	if code != 2 || !strings.Contains(stdout.String(), `LAKE_SCAN_SEGMENTS=\"0\"`) || stderr.Len() != 0 {
		t.Fatalf("got exit %d, stdout %q, stderr %q; want exit 2 and one JSON line on stdout naming LAKE_SCAN_SEGMENTS", code, stdout.String(), stderr.String())
	}
}
