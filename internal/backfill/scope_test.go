package backfill_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lake-catalog/lake/internal/backfill"
	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// noCredentials is an S3 client factory that fails: a location that
// reached it would say "no credentials", so a refused location that says
// something else was never read.
func noCredentials(context.Context) (parquetschema.S3API, error) {
	return nil, errors.New("no credentials")
}

// A backfill reads a tenant-controlled location only inside its scope:
// every other location is refused (reported as such, never read), and a
// dry run's summary counts it. Local paths are cleaned before the check,
// so ".." cannot climb out of the root, and read through os.Root, so a
// symbolic link inside cannot lead out either.
func TestScopeRefusesLocationsOutside(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	writeParquet(t, filepath.Join(root, "events", "part-0.parquet"), eventsSchema)
	outside := filepath.Join(base, "outside")
	writeParquet(t, filepath.Join(outside, "part-0.parquet"), eventsSchema)
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	inRoot := backfill.Scope{Tenant: "acme", LocalRoot: root}
	onS3 := backfill.Scope{Tenant: "acme", S3Prefixes: []string{"acme=s3://lake/orders/", "acme=s3://other", "globex=s3://lake/globex/"}}
	tests := []struct {
		name     string
		scope    backfill.Scope
		location string
		want     string // the table's line after "<verb> acme/legacy/t: "
	}{
		{"local folder in the root", inRoot, filepath.Join(root, "events"), "would   acme/legacy/t: 3 columns from " + filepath.Join(root, "events", "part-0.parquet")},
		{"local file in the root", inRoot, filepath.Join(root, "events", "part-0.parquet"), "would   acme/legacy/t: 3 columns from " + filepath.Join(root, "events", "part-0.parquet")},
		{"file URL in the root", inRoot, "file://" + filepath.Join(root, "events"), "would   acme/legacy/t: 3 columns"},
		{"dot-dot that stays in the root", inRoot, root + "/events/../events", "would   acme/legacy/t: 3 columns from " + filepath.Join(root, "events", "part-0.parquet")},
		{"the root itself", inRoot, root, "would   acme/legacy/t: 3 columns from " + filepath.Join(root, "events", "part-0.parquet")},
		{"local folder outside the root", inRoot, outside, `refused acme/legacy/t: "` + outside + `" is outside --local-root ` + root},
		{"dot-dot out of the root", inRoot, root + "/../outside", `refused acme/legacy/t: "` + root + `/../outside" is outside --local-root ` + root},
		{"dot-dot through a subfolder", inRoot, root + "/events/../../outside/part-0.parquet", `refused acme/legacy/t: "` + root + `/events/../../outside/part-0.parquet" is outside --local-root ` + root},
		{"file URL outside the root", inRoot, "file://" + outside, `refused acme/legacy/t: "file://` + outside + `" is outside --local-root ` + root},
		{"file URL of another host", inRoot, "file://fileserver" + root, `refused acme/legacy/t: "file://fileserver` + root + `" is a file URL of another host`},
		{"relative path", inRoot, "../outside", `refused acme/legacy/t: "../outside" is outside --local-root ` + root},
		{"symbolic link out of the root", inRoot, filepath.Join(root, "link"), "skip    acme/legacy/t: backfill: " + filepath.Join(root, "link") + ": "},
		{"local path without a root", onS3, filepath.Join(root, "events"), `refused acme/legacy/t: "` + filepath.Join(root, "events") + `" is a local path and no local root is set: set --local-root (LAKE_BACKFILL_LOCAL_ROOT) to the folder that holds it to read it`},
		{"s3 without an allow-list", inRoot, "s3://lake/orders/", `refused acme/legacy/t: "s3://lake/orders/" is on S3 and no s3:// prefix is allowed to tenant acme: set --allow-prefix acme=s3://bucket/prefix/ (LAKE_BACKFILL_ALLOW_PREFIXES) to read it`},
		{"s3 under an allowed prefix", onS3, "s3://lake/orders/2024/", "skip    acme/legacy/t: no credentials"},
		{"s3 in an allowed bucket", onS3, "s3://other/anything/", "skip    acme/legacy/t: no credentials"},
		{"s3a under an allowed prefix", onS3, "s3a://lake/orders/", "skip    acme/legacy/t: no credentials"},
		{"s3 beside an allowed prefix", onS3, "s3://lake/orders-archive/", `refused acme/legacy/t: "s3://lake/orders-archive/" is outside every --allow-prefix of tenant acme`},
		{"s3 above an allowed prefix", onS3, "s3://lake/", `refused acme/legacy/t: "s3://lake/" is outside every --allow-prefix of tenant acme`},
		{"s3 under another tenant's prefix", onS3, "s3://lake/globex/t/", `refused acme/legacy/t: "s3://lake/globex/t/" is outside every --allow-prefix of tenant acme`},
		{"s3 in a bucket an allowed one prefixes", onS3, "s3://otherbucket/x/", `refused acme/legacy/t: "s3://otherbucket/x/" is outside every --allow-prefix of tenant acme`},
		{"s3 with a dot-dot segment", onS3, "s3://lake/orders/../secrets/", `refused acme/legacy/t: "s3://lake/orders/../secrets/" has a . or .. segment`},
		{"s3 without a bucket", onS3, "s3:///orders/", `refused acme/legacy/t: "s3:///orders/" names no bucket`},
		{"another scheme", onS3, "gs://lake/orders/", `refused acme/legacy/t: "gs://lake/orders/" is neither s3:// nor a local path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.legacy(t, ref("legacy", "t"), tt.location)
			var out bytes.Buffer
			rep, err := backfill.Run(context.Background(), []catalog.TableRef{ref("legacy", "t")},
				backfill.Options{API: e.api, Out: &out, S3: noCredentials, Scope: tt.scope})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got %q, want a line starting %q", got, tt.want)

			}
			refused := strings.HasPrefix(tt.want, "refused")
			if got, want := rep.Refused == 1, refused; got != want {
				t.Fatalf("got report %+v, want refused %v", rep, want)
			}
			if refused && !strings.Contains(out.String(), ", 0 cannot, 1 refused. Run again with --apply.\n") {
				t.Fatalf("got summary %q, want the refused table counted", out.String())
			}
		})
	}
}

// A misconfigured scope fails the run before anything is read.
func TestScopeValidate(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		scope backfill.Scope
		want  string // "" when valid
	}{
		{"empty", backfill.Scope{}, ""},
		{"prefixes and a root", backfill.Scope{S3Prefixes: []string{"acme=s3://lake/", "acme=s3://lake/orders", "globex=s3a://x/y/"}, LocalRoot: t.TempDir()}, ""},
		{"prefix for no tenant", backfill.Scope{S3Prefixes: []string{"s3://lake/"}}, `backfill: --allow-prefix "s3://lake/": name the tenant it is for`},
		{"prefix for an invalid tenant", backfill.Scope{S3Prefixes: []string{"a/b=s3://lake/"}}, `backfill: --allow-prefix "a/b=s3://lake/": name the tenant it is for`},
		{"prefix covering another tenant's", backfill.Scope{S3Prefixes: []string{"globex=s3://lake/acme/x/", "acme=s3://lake/acme"}}, `backfill: --allow-prefix "acme=s3://lake/acme" covers globex's "s3://lake/acme/x/"`},
		{"prefix without a scheme", backfill.Scope{S3Prefixes: []string{"acme=lake/orders/"}}, `backfill: --allow-prefix "acme=lake/orders/": want s3://bucket/`},
		{"https prefix", backfill.Scope{S3Prefixes: []string{"acme=https://lake.s3.amazonaws.com/"}}, `backfill: --allow-prefix "acme=https://lake.s3.amazonaws.com/"`},
		{"prefix without a bucket", backfill.Scope{S3Prefixes: []string{"acme=s3:///orders/"}}, `backfill: --allow-prefix "acme=s3:///orders/"`},
		{"prefix with dot-dot", backfill.Scope{S3Prefixes: []string{"acme=s3://lake/orders/../"}}, `backfill: --allow-prefix "acme=s3://lake/orders/../"`},
		{"missing root", backfill.Scope{LocalRoot: filepath.Join(file, "nowhere")}, "backfill: --local-root: "},
		{"root that is a file", backfill.Scope{LocalRoot: file}, "backfill: --local-root: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.scope.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error starting %q", err, tt.want)
			}
			e := newEnv(t)
			e.legacy(t, ref("legacy", "t"), t.TempDir())
			var out bytes.Buffer
			if _, err := backfill.Run(context.Background(), []catalog.TableRef{ref("legacy", "t")}, backfill.Options{API: e.api, Out: &out, Scope: tt.scope}); err == nil || out.Len() != 0 {
				t.Fatalf("Run: got %v and output %q, want the scope's error and no output", err, out.String())
			}
		})
	}
}

// Against a real S3 server (versitygw): with --apply, the location under
// the allowed prefix is backfilled, the one outside it is refused and
// keeps no schema, and the run fails counting it.
func TestS3AllowList(t *testing.T) {
	t.Parallel()
	srv := testenv.SharedS3(t)
	bucket := "backfill-allow-list"
	srv.CreateBucket(t, bucket)
	c := srv.Client()
	pq := filepath.Join(t.TempDir(), "part-0.parquet")
	writeParquet(t, pq, eventsSchema)
	data, err := os.ReadFile(pq)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"allowed/events/part-0.parquet", "secret/events/part-0.parquet"} {
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t)
	e.legacy(t, ref("legacy", "allowed"), "s3://"+bucket+"/allowed/events/")
	e.legacy(t, ref("legacy", "secret"), "s3://"+bucket+"/secret/events/")
	var out bytes.Buffer
	rep, err := backfill.Run(context.Background(), []catalog.TableRef{ref("legacy", "allowed"), ref("legacy", "secret")}, backfill.Options{
		API: e.api, Out: &out, Apply: true,
		S3:    func(context.Context) (parquetschema.S3API, error) { return c, nil },
		Scope: backfill.Scope{Tenant: "acme", S3Prefixes: []string{"acme=s3://" + bucket + "/allowed/"}},
	})
	if err == nil || err.Error() != "backfill: 1 of 2 tables could not be backfilled" {
		t.Fatalf("got error %v, want the refused table counted", err)
	}
	if want := (backfill.Report{Tables: 2, WithoutSchema: 2, Readable: 1, Updated: 1, Refused: 1}); rep != want {
		t.Fatalf("got report %+v, want %+v", rep, want)
	}
	for _, want := range []string{
		"updated acme/legacy/allowed: 3 columns from s3://" + bucket + "/allowed/events/part-0.parquet\n",
		`refused acme/legacy/secret: "s3://` + bucket + `/secret/events/" is outside every --allow-prefix of tenant acme` + "\n",
		"backfill: 1 updated, 0 changed meanwhile and left alone, 0 failed, 1 refused (of 2 without a schema)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("got output %q, want it to contain %q", out.String(), want)
		}
	}
	if s := e.schemaOf(t, ref("legacy", "allowed")); s == nil || !catalog.SchemaEqual(s, eventsSchema) {
		t.Fatalf("got allowed table's schema %v, want %v", s, eventsSchema)
	}
	if s := e.schemaOf(t, ref("legacy", "secret")); s != nil {
		t.Fatalf("got refused table's schema %v, want none", s)
	}
}
