package program_test

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/functions/register/program"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/snapshot"
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
		{name: "the snapshot, default key", env: map[string]string{"LAKE_TABLE": "r", "LAKE_BUCKET": "b"},
			want: program.Config{Table: "r", Snapshot: "s3://b/snapshots/catalog.lakesnap"}},
		{name: "the snapshot, its key, path style", env: map[string]string{"LAKE_TABLE": "r", "LAKE_BUCKET": "b", "LAKE_SNAPSHOT_KEY": "k/blob", "LAKE_S3_PATH_STYLE": "true"},
			want: program.Config{Table: "r", Snapshot: "s3://b/k/blob", S3PathStyle: true}},
		{name: "bad path style", env: map[string]string{"LAKE_TABLE": "r", "LAKE_S3_PATH_STYLE": "yes"}, wantErr: `LAKE_S3_PATH_STYLE "yes": want true or false`},
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
			if err != nil || got != tc.want {
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

// SnapshotDropped reads the published snapshot on a real S3-protocol
// server (versitygw): the manifest and the asked tenant's segment alone,
// its tombstones in retention newest first; none for a tenant the
// snapshot lacks or before any snapshot; a segment that does not match its
// address is an error, never a list.
func TestSnapshotDropped(t *testing.T) {
	t.Parallel()
	srv := testenv.SharedS3(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := now
	st := memstore.New(memstore.Options{})
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
	blobs, err := blobstore.NewS3(srv.Client(), srv.NewBucket(t), "snapshots/catalog.lakesnap", 0)
	if err != nil {
		t.Fatal(err)
	}
	list := program.SnapshotDropped(blobs, func() time.Time { return now.Add(49 * time.Hour) })
	if ds, err := list(ctx, "acme"); err != nil || len(ds) != 0 {
		t.Fatalf("before any snapshot: %v, %v; want none", ds, err)
	}
	built, err := scan.Build(ctx, st, scan.BuildOptions{Generation: 1, CreatedAt: clock})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range built.Written.Entries {
		if err := blobs.PutSegment(ctx, hex.EncodeToString(e.Address[:]), built.Written.Segments[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := blobs.Put(ctx, built.Written.Manifest, blobstore.Condition{}); err != nil {
		t.Fatal(err)
	}
	// At 49 h, orders' retention (dropped at 0 h, 48 h) has ended.
	ds, err := list(ctx, "acme")
	if err != nil || len(ds) != 1 || ds[0].Table != "returns" || ds[0].DroppedBy != "arn:aws:iam::1:user/returns" || ds[0].Version != 2 {
		t.Fatalf("acme's dropped from the snapshot: %+v, %v; want returns alone", ds, err)
	}
	if ds, err := list(ctx, "initech"); err != nil || len(ds) != 0 {
		t.Fatalf("a tenant the snapshot lacks: %v, %v", ds, err)
	}
	// acme's segment damaged in place: an error, not a list.
	for i, e := range built.Written.Entries {
		if e.Tenant == "acme" {
			bad := append([]byte{}, built.Written.Segments[i]...)
			bad[len(bad)/2] ^= 1
			if err := blobs.PutSegment(ctx, hex.EncodeToString(e.Address[:]), bad); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ds, err := list(ctx, "acme"); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("a damaged segment: %v, %v; want ErrCorrupt", ds, err)
	}
}
