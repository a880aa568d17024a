package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lake-catalog/lake/internal/cli"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

// TestMain lets the test binary run as the lake command itself
// (testenv.Binary), so the tests that need the real process do not build
// one.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Mains{
		"lake": func() int { return cli.Main(os.Args[1:], os.Getenv, os.Stdout, os.Stderr) },
		"refresh": func() int {
			return refresh.LambdaMain(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
		},
	})
}

// lakeEnv is a data folder, the ports one `lake local` process uses, and
// the lake command run in process against it.
type lakeEnv struct {
	t                    *testing.T
	dir                  string
	api, flight, httpAdr string
	proc                 *testenv.Process
}

func newLakeEnv(t *testing.T) *lakeEnv {
	t.Helper()
	e := &lakeEnv{t: t, dir: filepath.Join(t.TempDir(), "data")}
	e.api = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	e.flight = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	e.httpAdr = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	return e
}

// start runs `lake local` as a real process.
func (e *lakeEnv) start(extra ...string) {
	e.t.Helper()
	// Every listener on a port of its own: the Iceberg listener's default
	// (127.0.0.1:8184) is one port for every test running lake at once.
	args := append([]string{"local", "--data-dir", e.dir, "--api-listen", e.api, "--flight-listen", e.flight, "--http-listen", e.httpAdr, "--browser-listen", "-",
		"--iceberg-listen", "127.0.0.1:" + strconv.Itoa(testenv.FreePort(e.t))}, extra...)
	e.proc = testenv.Start(e.t, testenv.Binary(e.t, "lake"), args...)
	e.proc.WaitTCP(e.t, e.api, 60*time.Second)
	e.proc.WaitTCP(e.t, e.flight, 30*time.Second)
}

// stop sends Ctrl-C's signal and wants exit code 0.
func (e *lakeEnv) stop() {
	e.t.Helper()
	if err := e.proc.Signal(syscall.SIGINT); err != nil {
		e.t.Fatal(err)
	}
	if code := e.proc.Wait(20 * time.Second); code != 0 {
		e.t.Fatalf("lake local exited %d after Ctrl-C:\n%s", code, e.proc.Output())
	}
	if out := e.proc.Output(); !strings.Contains(out, "stopping") {
		e.t.Fatalf("lake local did not say it was stopping:\n%s", out)
	}
}

// run runs a lake command in process against this environment and
// returns stdout, or an error holding stderr.
func (e *lakeEnv) run(args ...string) (string, error) {
	e.t.Helper()
	all := append([]string{"--data-dir", e.dir, "--api", "http://" + e.api, "--discovery", e.flight}, args...)
	var out, errOut bytes.Buffer
	f := cli.NewFactory(func(string) string { return "" }, &out, &errOut)
	if code := cli.Run(context.Background(), f, all); code != 0 {
		return out.String(), &cmdError{code: code, stderr: errOut.String()}
	}
	return out.String(), nil
}

func (e *lakeEnv) must(args ...string) string {
	e.t.Helper()
	out, err := e.run(args...)
	if err != nil {
		e.t.Fatalf("lake %s: %v", strings.Join(args, " "), err)
	}
	return out
}

type cmdError struct {
	code   int
	stderr string
}

func (c *cmdError) Error() string { return "exit " + strconv.Itoa(c.code) + ": " + c.stderr }

var ordersSchema = arrow.NewSchema([]arrow.Field{
	{Name: "order_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "placed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
}, nil)

// writeParquet writes an empty Parquet file of schema s at path.
func writeParquet(t *testing.T, path string, s *arrow.Schema) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(s, f, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	rec := array.NewRecordBuilder(memory.DefaultAllocator, s).NewRecordBatch()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func showSchema(t *testing.T, e *lakeEnv, ns, table string) *arrow.Schema {
	t.Helper()
	out := e.must("show", "--tenant", "acme", "-n", ns, "-t", table, "--json")
	s, err := schemajson.Parse([]byte(out))
	if err != nil {
		t.Fatalf("show --json printed %q: %v", out, err)
	}
	return s
}

// The real `lake local` process: start, register from a Parquet file, stop
// with Ctrl-C (exit 0), write a legacy registration while stopped, start
// again (the data is kept), backfill the legacy registration (dry run,
// then for real). The commands run in process; internal/cli tests each in
// detail.
func TestLocalRestartKeepsDataAndBackfill(t *testing.T) {
	t.Parallel()
	e := newLakeEnv(t)
	e.start("--no-demo")
	pq := filepath.Join(t.TempDir(), "orders", "part-0.parquet")
	writeParquet(t, pq, ordersSchema)

	out := e.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--parquet", pq)
	if !strings.Contains(out, "registered acme/sales/orders (version 1, 5 columns)") {
		t.Fatalf("register printed %q", out)
	}
	e.must("refresh", "--tenant", "acme")
	if out := e.must("list", "--tenant", "acme"); !strings.Contains(out, "sales      orders  TABLE  5") {
		t.Fatalf("list printed:\n%s", out)
	}
	e.stop()

	// A legacy registration written while stopped, with Parquet files at its
	// location.
	legacyDir := filepath.Join(t.TempDir(), "legacy_events")
	writeParquet(t, filepath.Join(legacyDir, "part-0.parquet"), ordersSchema)
	st, err := rocksdb.Open(filepath.Join(e.dir, "meta"), rocksdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	legacy, _ := json.Marshal(map[string]any{"location": legacyDir, "table_type": "TABLE", "created_at": "2024-01-01T00:00:00Z", "version": 1})
	if err := st.Put(context.Background(), "tbl/acme/legacy/events", legacy); err != nil {
		t.Fatal(err)
	}
	st.Close()

	e.start("--no-demo")
	out = e.must("list", "--tenant", "acme")
	if !strings.Contains(out, "sales      orders  TABLE  5") || !strings.Contains(out, "legacy     events  TABLE  ?") {
		t.Fatalf("list after restart:\n%s", out)
	}
	if _, err := e.run("show", "--tenant", "acme", "-n", "legacy", "-t", "events"); err == nil ||
		err.(*cmdError).stderr != "lake: acme/legacy/events: no stored schema; `lake backfill` can add it from its Parquet files\n" {
		t.Fatalf("show of a legacy table: %v", err)
	}
	root := filepath.Dir(legacyDir)
	out = e.must("backfill", "--tenant", "acme", "--local-root", root)
	if !strings.Contains(out, "would   acme/legacy/events: 5 columns") || !strings.Contains(out, "dry run: 1 of 2 tables lack a schema") {
		t.Fatalf("backfill dry run printed:\n%s", out)
	}
	e.must("refresh", "--tenant", "acme")
	if out := e.must("list", "--tenant", "acme"); !strings.Contains(out, "legacy     events  TABLE  ?") {
		t.Fatalf("the dry run changed something:\n%s", out)
	}
	out = e.must("backfill", "--tenant", "acme", "--local-root", root, "--apply")
	if !strings.Contains(out, "updated acme/legacy/events: 5 columns") || !strings.Contains(out, "backfill: 1 updated") {
		t.Fatalf("backfill --apply printed:\n%s", out)
	}
	e.must("refresh", "--tenant", "acme")
	if s := showSchema(t, e, "legacy", "events"); !catalog.SchemaEqual(s, ordersSchema) {
		t.Fatalf("backfilled schema = %v", s)
	}
	if out := e.must("backfill", "--tenant", "acme"); !strings.Contains(out, "nothing to backfill") {
		t.Fatalf("second backfill printed:\n%s", out)
	}
	e.stop()
}

// The demo catalog is registered on first start, and a new registration
// becomes discoverable without an explicit refresh (a write schedules
// one). The wait is generous (30 s) so a loaded machine does not fail it;
// how long it takes is measured by BenchmarkRegisterToDiscoverable in
// internal/cli, not asserted here.
func TestLocalDemoAndFreshness(t *testing.T) {
	t.Parallel()
	e := newLakeEnv(t)
	e.start()
	out := e.must("list", "--tenant", "acme")
	for _, want := range []string{"sales      orders", "reference  every_type", "marketing  campaign_events"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo catalog list lacks %q:\n%s", want, out)
		}
	}
	schemaFile := filepath.Join(t.TempDir(), "s.json")
	js, _ := schemajson.Format(ordersSchema)
	if err := os.WriteFile(schemaFile, js, 0o644); err != nil {
		t.Fatal(err)
	}
	e.must("register", "--tenant", "acme", "-n", "fresh", "-t", "arrivals", "--location", "s3://lake/fresh/", "--schema-json", schemaFile)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if out, err := e.run("list", "--tenant", "acme", "-n", "fresh"); err == nil && strings.Contains(out, "arrivals") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registration never became discoverable without an explicit refresh (waited 30 s)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.stop()
}

// `lake refresh --function` invokes the deployed refresh Lambda: here the
// real bootstrap under the runtime interface emulator, whose invoke path is
// the SDK's for a function named "function". lake runs as a real process,
// since the AWS SDK reads its endpoint and credentials from the
// environment.
func TestRefreshFunctionOnAWS(t *testing.T) {
	t.Parallel()
	ddb := testenv.SharedDynamoDB(t)
	s3srv := testenv.SharedS3(t)
	table := ddb.NewTable(t)
	bucket := s3srv.NewBucket(t)
	fn := testenv.StartLambda(t, testenv.Binary(t, "refresh"),
		"LAKE_TABLE="+table, "LAKE_BUCKET="+bucket, "AWS_ENDPOINT_URL_DYNAMODB="+ddb.Endpoint,
		"AWS_ENDPOINT_URL_S3="+s3srv.Endpoint, "LAKE_S3_PATH_STYLE=true",
		"AWS_ACCESS_KEY_ID="+s3srv.Access, "AWS_SECRET_ACCESS_KEY="+s3srv.Secret)
	lambdaEndpoint := strings.TrimSuffix(fn.URL, "/2015-03-31/functions/function/invocations")
	cmd := exec.Command(testenv.Binary(t, "lake"), "refresh", "--function", "function")
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL_LAMBDA="+lambdaEndpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_CONFIG_FILE=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refresh: published, generation 1, 0 tables") {
		t.Fatalf("lake refresh --function: %v\n%s", err, out)
	}
}

// `lake quota recompute --dynamodb-table` counts a deployment's usage again
// in whole registrations (issue 24, finding 2): against dynalite, with the
// SDK's endpoint variables, as an operator would run it after upgrading.
func TestQuotaRecomputeOnAWS(t *testing.T) {
	t.Parallel()
	ddb := testenv.SharedDynamoDB(t)
	table := ddb.NewTable(t)
	st, err := dynamo.New(ddb.Client(), dynamo.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: "t"}
	if _, _, err := catalog.New(st, catalog.Options{}).Register(ctx, r, catalog.TableSpec{Location: "s3://lake/t/", Schema: catalogtest.WideSchema(1, 3), Description: strings.Repeat("d", 4096)}); err != nil {
		t.Fatal(err)
	}
	// What an older register Lambda left: schema bytes alone.
	if err := st.Put(ctx, catalog.QuotaPrefix+"acme", []byte(`{"tables":1,"schema_bytes":5}`)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testenv.Binary(t, "lake"), "quota", "recompute", "--dynamodb-table", table)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL_DYNAMODB="+ddb.Endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_CONFIG_FILE=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "quota recompute: 1 tenants counted, 1 changed\n" {
		t.Fatalf("lake quota recompute: %v\n%s", err, out)
	}
	key, _ := r.Key()
	raw, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// The registration and its version record.
	held := int64(len(key) + len(raw))
	versions, err := st.ScanPrefix(ctx, catalog.VersionPrefix)
	if err != nil || len(versions) != 1 {
		t.Fatalf("version records %v, %v; want one", versions, err)
	}
	held += int64(len(catalog.VersionPrefix) + len(versions[0].Key) + len(versions[0].Value))
	u, err := catalog.New(st, catalog.Options{}).Usage(ctx, "acme")
	if want := (catalog.Usage{Tables: 1, Bytes: held}); err != nil || u != want {
		t.Fatalf("usage = %+v, %v; want %+v", u, err, want)
	}
	if ok, err := catalog.UsageCounted(ctx, st); !ok || err != nil {
		t.Fatalf("UsageCounted = %v, %v; want true", ok, err)
	}
}
