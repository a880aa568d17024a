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

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

// lakeEnv is a data folder and the ports one `lake local` uses.
type lakeEnv struct {
	t                    *testing.T
	bin, dir             string
	api, flight, httpAdr string
	proc                 *testenv.Process
}

func newLakeEnv(t *testing.T) *lakeEnv {
	t.Helper()
	e := &lakeEnv{t: t, bin: testenv.BuildCommand(t, "./cmd/lake"), dir: filepath.Join(t.TempDir(), "data")}
	e.api = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	e.flight = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	e.httpAdr = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	return e
}

func (e *lakeEnv) start(extra ...string) {
	e.t.Helper()
	args := append([]string{"local", "--data-dir", e.dir, "--api-listen", e.api, "--flight-listen", e.flight, "--http-listen", e.httpAdr}, extra...)
	e.proc = testenv.Start(e.t, e.bin, args...)
	e.proc.WaitTCP(e.t, e.api, 60*time.Second)
	e.proc.WaitTCP(e.t, e.flight, 30*time.Second)
}

func (e *lakeEnv) stop() {
	e.t.Helper()
	if err := e.proc.Signal(syscall.SIGINT); err != nil {
		e.t.Fatal(err)
	}
	if code := e.proc.Wait(20 * time.Second); code != 0 {
		e.t.Fatalf("lake local exited %d after Ctrl-C:\n%s", code, e.proc.Output())
	}
}

// run runs a lake command against this environment and returns stdout.
func (e *lakeEnv) run(args ...string) (string, error) {
	e.t.Helper()
	all := append([]string{"--data-dir", e.dir, "--api", "http://" + e.api, "--discovery", e.flight}, args...)
	cmd := exec.Command(e.bin, all...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String(), &cmdError{err: err, stderr: errOut.String()}
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
	err    error
	stderr string
}

func (c *cmdError) Error() string { return c.err.Error() + ": " + c.stderr }

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

// The whole CLI against local mode: start, register from a Parquet file,
// list, show, stop, start again, list again, backfill a legacy
// registration (dry run, then for real).
func TestCLIEndToEnd(t *testing.T) {
	e := newLakeEnv(t)
	e.start("--no-demo")
	pq := filepath.Join(t.TempDir(), "orders", "part-0.parquet")
	writeParquet(t, pq, ordersSchema)

	out := e.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--parquet", pq)
	if !strings.Contains(out, "registered acme/sales/orders (version 1, 5 columns)") {
		t.Fatalf("register printed %q", out)
	}
	if out := e.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--parquet", pq); !strings.Contains(out, "already registered, identical") {
		t.Fatalf("identical re-register printed %q", out)
	}
	if _, err := e.run("register", "--tenant", "acme", "-n", "sales", "-t", "bad/name", "--parquet", pq); err == nil || !strings.Contains(err.Error(), "contains '/'") {
		t.Fatalf("bad name: %v", err)
	}
	e.must("refresh", "--tenant", "acme")
	if out := e.must("list", "--tenant", "acme"); !strings.Contains(out, "sales      orders  TABLE  5") {
		t.Fatalf("list printed:\n%s", out)
	}
	if s := showSchema(t, e, "sales", "orders"); !catalog.SchemaEqual(s, ordersSchema) {
		t.Fatalf("show = %v, want %v", s, ordersSchema)
	}
	if out := e.must("list", "--tenant", "globex"); strings.Contains(out, "orders") {
		t.Fatalf("globex sees acme's table:\n%s", out)
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
	if _, err := e.run("show", "--tenant", "acme", "-n", "legacy", "-t", "events"); err == nil || !strings.Contains(err.Error(), "no stored schema") {
		t.Fatalf("show of a legacy table: %v", err)
	}
	out = e.must("backfill", "--tenant", "acme")
	if !strings.Contains(out, "would   acme/legacy/events: 5 columns") || !strings.Contains(out, "dry run: 1 of 2 tables lack a schema") {
		t.Fatalf("backfill dry run printed:\n%s", out)
	}
	e.must("refresh", "--tenant", "acme")
	if out := e.must("list", "--tenant", "acme"); !strings.Contains(out, "legacy     events  TABLE  ?") {
		t.Fatalf("the dry run changed something:\n%s", out)
	}
	out = e.must("backfill", "--tenant", "acme", "--apply")
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
	if out := e.must("drop", "--tenant", "acme", "-n", "sales", "-t", "orders"); !strings.Contains(out, "dropped acme/sales/orders") {
		t.Fatalf("drop printed %q", out)
	}
	e.stop()
}

// The demo catalog is registered on first start, and a new registration is
// discoverable within 3 s without an explicit refresh.
func TestLocalDemoAndFreshness(t *testing.T) {
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
	registered := time.Now()
	for {
		if out, err := e.run("list", "--tenant", "acme", "-n", "fresh"); err == nil && strings.Contains(out, "arrivals") {
			break
		}
		if time.Since(registered) > 3*time.Second {
			t.Fatal("the registration was not discoverable within 3 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.stop()
}

// `lake refresh --function` invokes the deployed refresh Lambda: here the
// real bootstrap under the runtime interface emulator, whose invoke path is
// the SDK's for a function named "function".
func TestRefreshFunctionOnAWS(t *testing.T) {
	ddb := testenv.StartDynamoDB(t)
	s3srv := testenv.StartS3(t)
	table := ddb.NewTable(t)
	s3srv.CreateBucket(t, "snapshots")
	fn := testenv.StartLambda(t, testenv.BuildLambda(t, "./functions/refresh"),
		"LAKE_TABLE="+table, "LAKE_BUCKET=snapshots", "AWS_ENDPOINT_URL_DYNAMODB="+ddb.Endpoint,
		"AWS_ENDPOINT_URL_S3="+s3srv.Endpoint, "LAKE_S3_PATH_STYLE=true",
		"AWS_ACCESS_KEY_ID="+s3srv.Access, "AWS_SECRET_ACCESS_KEY="+s3srv.Secret)
	lambdaEndpoint := strings.TrimSuffix(fn.URL, "/2015-03-31/functions/function/invocations")
	cmd := exec.Command(testenv.BuildCommand(t, "./cmd/lake"), "refresh", "--function", "function")
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL_LAMBDA="+lambdaEndpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_CONFIG_FILE=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refresh: published, generation 1, 0 tables") {
		t.Fatalf("lake refresh --function: %v\n%s", err, out)
	}
}
