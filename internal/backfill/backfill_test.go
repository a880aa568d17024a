package backfill_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/backfill"
	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

var eventsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

// env is the real registration API over memstore behind httptest, and a
// client of it for tenant acme.
type env struct {
	store *memstore.Store
	api   *apiclient.Client
}

func allowAcme(r *http.Request, tenant string) (string, error) {
	if r.Header.Get("Authorization") != "Bearer acme" || tenant != "acme" {
		return "", registerapi.ErrUnauthenticated
	}
	return "acme", nil
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	h, err := registerapi.New(catalog.New(st, catalog.Options{}), registerapi.Options{Authorize: allowAcme, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := apiclient.New(srv.URL, apiclient.Options{Token: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return &env{store: st, api: c}
}

// legacy stores a registration in the form written before schemas were
// stored, at location.
func (e *env) legacy(t *testing.T, ref catalog.TableRef, location string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"location": location, "table_type": "TABLE", "created_at": "2024-01-01T00:00:00Z", "version": 1})
	if err := e.store.Put(context.Background(), "tbl/"+ref.String(), b); err != nil {
		t.Fatal(err)
	}
}

func (e *env) schemaOf(t *testing.T, ref catalog.TableRef) *arrow.Schema {
	t.Helper()
	got, err := e.api.Get(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.SchemaIPC) == 0 {
		return nil
	}
	s, err := catalog.DecodeSchema(got.SchemaIPC)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

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
	if err := w.Write(array.NewRecordBuilder(memory.DefaultAllocator, s).NewRecordBatch()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func ref(ns, name string) catalog.TableRef {
	return catalog.TableRef{Tenant: "acme", Namespace: ns, Name: name}
}

// fixture: one table with a schema, one legacy table with Parquet files in
// a local folder, one legacy table whose location holds none; both folders
// in the scope's local root.
func fixture(t *testing.T) (*env, []catalog.TableRef, string, backfill.Scope) {
	t.Helper()
	e := newEnv(t)
	ipc, err := catalog.EncodeSchema(eventsSchema)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.api.Register(context.Background(), ref("sales", "orders"), apiclient.Spec{Location: "s3://lake/orders/", TableType: "TABLE", SchemaIPC: ipc}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "events")
	writeParquet(t, filepath.Join(dir, "part-1.parquet"), eventsSchema)
	writeParquet(t, filepath.Join(dir, "part-0.parquet"), eventsSchema)
	e.legacy(t, ref("legacy", "events"), dir)
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	e.legacy(t, ref("legacy", "empty"), empty)
	return e, []catalog.TableRef{ref("legacy", "empty"), ref("legacy", "events"), ref("sales", "orders")}, dir, backfill.Scope{LocalRoot: root}
}

func TestDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	e, refs, dir, scope := fixture(t)
	var out bytes.Buffer
	rep, err := backfill.Run(context.Background(), refs, backfill.Options{API: e.api, Out: &out, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if want := (backfill.Report{Tables: 3, WithoutSchema: 2, Readable: 1, Failed: 1}); rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	for _, want := range []string{
		"skip    acme/legacy/empty: parquetschema: ",
		"would   acme/legacy/events: 3 columns from " + filepath.Join(dir, "part-0.parquet") + "\n",
		"dry run: 2 of 3 tables lack a schema; 1 can be backfilled, 1 cannot, 0 refused. Run again with --apply.\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if s := e.schemaOf(t, ref("legacy", "events")); s != nil {
		t.Fatalf("the dry run stored a schema: %v", s)
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	e, refs, _, scope := fixture(t)
	var out bytes.Buffer
	rep, err := backfill.Run(context.Background(), refs, backfill.Options{API: e.api, Out: &out, Apply: true, Scope: scope})
	if err == nil || !strings.Contains(err.Error(), "1 of 2 tables could not be backfilled") {
		t.Fatalf("err = %v, want one table not backfilled", err)
	}
	if want := (backfill.Report{Tables: 3, WithoutSchema: 2, Readable: 1, Updated: 1, Failed: 1}); rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	if s := e.schemaOf(t, ref("legacy", "events")); s == nil || !catalog.SchemaEqual(s, eventsSchema) {
		t.Fatalf("backfilled schema %v, want %v", s, eventsSchema)
	}
	if !strings.Contains(out.String(), "backfill: 1 updated, 0 changed meanwhile and left alone, 1 failed, 0 refused (of 2 without a schema)\n") {
		t.Fatalf("summary:\n%s", out.String())
	}
	// A second run finds nothing left but the unreadable one.
	out.Reset()
	rep, _ = backfill.Run(context.Background(), refs, backfill.Options{API: e.api, Out: &out, Apply: true, Scope: scope})
	if rep.WithoutSchema != 1 || rep.Updated != 0 {
		t.Fatalf("second run %+v, want only the unreadable table left", rep)
	}
}

// racingAPI runs meanwhile before the first Update: another producer's
// write between backfill's read and its write.
type racingAPI struct {
	*apiclient.Client
	meanwhile func()
}

func (r *racingAPI) Update(ctx context.Context, ref catalog.TableRef, spec apiclient.Spec, opts apiclient.UpdateOptions) (apiclient.Table, error) {
	if r.meanwhile != nil {
		r.meanwhile()
		r.meanwhile = nil
	}
	return r.Client.Update(ctx, ref, spec, opts)
}

// A registration that changed between the read and the write is never
// overwritten: the write is conditional (If-Match on the version read and
// only_if_no_schema) and the table is reported as left alone.
func TestChangedMeanwhileIsLeftAlone(t *testing.T) {
	t.Parallel()
	other := arrow.NewSchema([]arrow.Field{{Name: "producer_wrote_this", Type: arrow.BinaryTypes.String}}, nil)
	otherIPC, err := catalog.EncodeSchema(other)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		meanwhile func(t *testing.T, e *env, r catalog.TableRef)
		want      *arrow.Schema // the schema that must remain; nil: dropped
		code      string
	}{
		{"given a schema by its producer", func(t *testing.T, e *env, r catalog.TableRef) {
			if _, err := e.api.Update(context.Background(), r, apiclient.Spec{SchemaIPC: otherIPC}, apiclient.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, other, "version_mismatch"},
		{"dropped", func(t *testing.T, e *env, r catalog.TableRef) {
			if err := e.api.Drop(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}, nil, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, refs, _, scope := fixture(t)
			target := ref("legacy", "events")
			api := &racingAPI{Client: e.api, meanwhile: func() { tt.meanwhile(t, e, target) }}
			var out bytes.Buffer
			rep, _ := backfill.Run(context.Background(), refs, backfill.Options{API: api, Out: &out, Apply: true, Scope: scope})
			if rep.Left != 1 || rep.Updated != 0 {
				t.Fatalf("report %+v, want the raced table left alone", rep)
			}
			if want := "left    acme/legacy/events: it changed since it was read (" + tt.code + ")\n"; !strings.Contains(out.String(), want) {
				t.Fatalf("output lacks %q:\n%s", want, out.String())
			}
			if tt.want == nil {
				if _, err := e.api.Get(context.Background(), target); !errors.Is(err, catalog.ErrNotFound) {
					t.Fatalf("dropped table: Get = %v, want not found", err)
				}
				return
			}
			if s := e.schemaOf(t, target); s == nil || !catalog.SchemaEqual(s, tt.want) {
				t.Fatalf("schema after the race %v, want the producer's %v", s, tt.want)
			}
		})
	}
}

// The write carries only_if_no_schema even when the version still matches:
// a table given a schema is never replaced. Checked against the real
// handler by sending backfill's own update to a table that has one.
func TestOnlyIfNoSchema(t *testing.T) {
	t.Parallel()
	e, _, _, _ := fixture(t)
	r := ref("sales", "orders")
	got, err := e.api.Get(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	ipc, _ := catalog.EncodeSchema(eventsSchema)
	_, err = e.api.Update(context.Background(), r, apiclient.Spec{SchemaIPC: ipc}, apiclient.UpdateOptions{IfMatch: got.ETag, OnlyIfNoSchema: true})
	if !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("conditional update of a table with a schema = %v, want catalog.ErrConflict", err)
	}
}

// A table dropped between the listing and the read is not counted, and an
// allowed S3 location without an S3 client fails that table only.
func TestDroppedAndS3WithoutClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.legacy(t, ref("lake", "remote"), "s3://bucket/remote/")
	var out bytes.Buffer
	rep, err := backfill.Run(context.Background(), []catalog.TableRef{ref("lake", "gone"), ref("lake", "remote")},
		backfill.Options{API: e.api, Out: &out, S3: func(context.Context) (parquetschema.S3API, error) { return nil, errors.New("no credentials") },
			Scope: backfill.Scope{Tenant: "acme", S3Prefixes: []string{"acme=s3://bucket/"}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tables != 1 || rep.Failed != 1 {
		t.Fatalf("report %+v, want 1 table, 1 failed", rep)
	}
	if want := "skip    acme/lake/remote: no credentials\n"; !strings.Contains(out.String(), want) {
		t.Fatalf("output lacks %q:\n%s", want, out.String())
	}
}

type recorder struct{ events []string }

func (r *recorder) Start(n int) { r.events = append(r.events, "start "+itoa(n)) }
func (r *recorder) Step()       { r.events = append(r.events, "step") }
func (r *recorder) Done()       { r.events = append(r.events, "done") }

func itoa(n int) string { return strings.Repeat("I", n) }

func TestProgressPhases(t *testing.T) {
	t.Parallel()
	e, refs, _, scope := fixture(t)
	var p recorder
	if _, err := backfill.Run(context.Background(), refs, backfill.Options{API: e.api, Progress: &p, Scope: scope}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(p.events, ",")
	if want := "start III,step,step,step,done,start II,step,step,done"; got != want {
		t.Fatalf("progress %s, want %s", got, want)
	}
}

func TestBar(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	b := &backfill.Bar{W: &buf, Now: func() time.Time { return now }, Width: 10}
	b.Start(5)
	for range 5 {
		b.Step()
	}
	b.Done()
	if buf.Len() != 0 {
		t.Fatalf("a 5-step phase drew %q, want nothing (under MinTotal)", buf.String())
	}
	b.Start(20)
	for i := range 20 {
		if i == 10 {
			now = now.Add(time.Second)
		}
		b.Step()
	}
	b.Done()
	if got, want := buf.String(), "\r[..........] 1/20\r[#####.....] 11/20\r[##########] 20/20\n"; got != want {
		t.Fatalf("bar drew %q, want %q", got, want)
	}
}
