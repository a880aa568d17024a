package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/mattn/go-runewidth"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/cli"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

var ordersSchema = arrow.NewSchema([]arrow.Field{
	{Name: "order_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "placed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
}, nil)

// lake is local mode started in process (real RocksDB, registration API,
// refresh and Flight SQL discovery on ports of its own), and the lake
// command run in process against it.
type lake struct {
	t   *testing.T
	dir string
	in  *local.Instance
	env map[string]string
}

func startLocal(t *testing.T) *lake {
	t.Helper()
	return startLocalIn(t, filepath.Join(t.TempDir(), "data"))
}

// startLocalIn starts local mode on the data folder dir.
func startLocalIn(t *testing.T, dir string) *lake {
	t.Helper()
	return startLocalWith(t, local.Config{DataDir: dir})
}

// startLocalWith starts local mode with cfg on loopback ports of its own.
func startLocalWith(t *testing.T, cfg local.Config) *lake {
	t.Helper()
	dir := cfg.DataDir
	cfg.APIListen, cfg.FlightListen, cfg.HTTPListen, cfg.BrowserListen = "127.0.0.1:0", "127.0.0.1:0", "-", "-"
	cfg.RefreshInterval, cfg.Log = time.Hour, slog.New(slog.DiscardHandler)
	in, err := local.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	ep := in.Endpoints()
	return &lake{t: t, dir: dir, in: in, env: map[string]string{
		"LAKE_DATA_DIR": dir, "LAKE_API": ep.API, "LAKE_DISCOVERY": ep.FlightSQL, "LAKE_AS": "alice",
	}}
}

// run runs `lake args…` in process, the endpoints bound from the
// environment as a user's shell would, and returns stdout, stderr and the
// exit code.
func (l *lake) run(args ...string) (stdout, stderr string, code int) {
	l.t.Helper()
	var out, errOut bytes.Buffer
	f := cli.NewFactory(func(k string) string { return l.env[k] }, &out, &errOut)
	code = cli.Run(context.Background(), f, args)
	return out.String(), errOut.String(), code
}

func (l *lake) must(args ...string) string {
	l.t.Helper()
	out, errOut, code := l.run(args...)
	if code != 0 {
		l.t.Fatalf("lake %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func (l *lake) refresh() {
	l.t.Helper()
	if _, err := l.in.Refresh(context.Background()); err != nil {
		l.t.Fatal(err)
	}
}

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

func writeSchemaJSON(t *testing.T, s *arrow.Schema) string {
	t.Helper()
	b, err := schemajson.Format(s)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// register, list, show, drop and token in process against local mode.
func TestCommands(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	pq := filepath.Join(t.TempDir(), "orders", "part-0.parquet")
	writeParquet(t, pq, ordersSchema)

	if got, want := l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--parquet", pq),
		"registered acme/sales/orders (version 1, 5 columns) at "+filepath.Dir(pq)+"\n"; got != want {
		t.Fatalf("register printed %q, want %q", got, want)
	}
	if got := l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--parquet", pq); !strings.HasPrefix(got, "already registered, identical acme/sales/orders (version 1") {
		t.Fatalf("identical re-register printed %q", got)
	}
	if got := l.must("refresh", "--tenant", "acme"); !strings.HasPrefix(got, "refresh: published, generation ") || !strings.HasSuffix(got, ", 1 tables in acme\n") {
		t.Fatalf("refresh printed %q", got)
	}
	out, errOut, code := l.run("list", "--tenant", "acme")
	if want := "NAMESPACE  TABLE   TYPE   COLUMNS\nsales      orders  TABLE  5\n"; code != 0 || out != want {
		t.Fatalf("list printed %q (exit %d, %s), want %q", out, code, errOut, want)
	}
	if errOut != "1 tables in acme\n" {
		t.Fatalf("list stderr %q", errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(l.must("list", "--tenant", "acme", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0]["tenant"] != "acme" || rows[0]["namespace"] != "sales" || rows[0]["name"] != "orders" ||
		rows[0]["table_type"] != "TABLE" || rows[0]["columns"] != 5.0 || len(rows[0]) != 5 {
		t.Fatalf("list --json = %v", rows)
	}
	s, err := schemajson.Parse([]byte(l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders", "--json")))
	if err != nil || !catalog.SchemaEqual(s, ordersSchema) {
		t.Fatalf("show --json = %v, %v; want %v", s, err, ordersSchema)
	}
	// show prints exact types (arrowtype.String), as search and the browser
	// do: decimal128(18, 2), not arrow-go's decimal(18, 2). (The list's
	// child is "element" after the Parquet round trip.)
	if got, want := l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders"), "acme/sales/orders  (TABLE, 5 columns)\n"+
		"  order_id   int64                  not null\n"+
		"  placed_at  timestamp[us, tz=UTC]\n"+
		"  amount     decimal128(18, 2)\n"+
		"  tags       list<element: utf8>\n"+
		"  attrs      map<utf8, utf8>\n"; got != want {
		t.Fatalf("show printed:\n%s\nwant:\n%s", got, want)
	}
	if out, _, _ := l.run("list", "--tenant", "globex"); strings.Contains(out, "orders") {
		t.Fatalf("globex sees acme's table:\n%s", out)
	}
	if got := l.must("drop", "--tenant", "acme", "-n", "sales", "-t", "orders"); got != "dropped acme/sales/orders\n" {
		t.Fatalf("drop printed %q", got)
	}

	tok := strings.TrimSpace(l.must("token", "--tenant", "globex", "--ttl", "2h"))
	secret, err := local.LoadSecret(l.dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if tenant, err := v.Tenant(tok); err != nil || tenant != "globex" {
		t.Fatalf("token validates as %q, %v; want globex", tenant, err)
	}
}

// startWithLegacy starts local mode on a data folder whose store holds,
// before it opens, a registration without a schema for each key
// (tenant/namespace/table) at its location, as one written before schemas
// were stored would be.
func startWithLegacy(t *testing.T, locations map[string]string) *lake {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := rocksdb.Open(filepath.Join(dir, local.MetaDir), rocksdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, loc := range locations {
		legacy, _ := json.Marshal(map[string]any{"location": loc, "table_type": "TABLE", "created_at": "2024-01-01T00:00:00Z", "version": 1})
		if err = st.Put(context.Background(), "tbl/"+key, legacy); err != nil {
			break
		}
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	return startLocalIn(t, dir)
}

// lake backfill in process: a dry run that changes nothing, then --apply,
// then nothing left to do.
func TestBackfillCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	legacyDir := filepath.Join(root, "legacy_events")
	writeParquet(t, filepath.Join(legacyDir, "part-0.parquet"), ordersSchema)
	l := startWithLegacy(t, map[string]string{"acme/legacy/events": legacyDir})
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema))
	l.refresh()

	file := filepath.Join(legacyDir, "part-0.parquet")
	if got, want := l.must("backfill", "--tenant", "acme", "--local-root", root), "would   acme/legacy/events: 5 columns from "+file+"\n"+
		"dry run: 1 of 2 tables lack a schema; 1 can be backfilled, 0 cannot, 0 refused. Run again with --apply.\n"; got != want {
		t.Fatalf("backfill printed %q, want %q", got, want)
	}
	l.refresh()
	if out := l.must("list", "--tenant", "acme", "-n", "legacy"); !strings.Contains(out, "legacy     events  TABLE  ?") {
		t.Fatalf("the dry run changed something:\n%s", out)
	}
	l.env["LAKE_BACKFILL_LOCAL_ROOT"] = root
	if got, want := l.must("backfill", "--tenant", "acme", "--apply"), "updated acme/legacy/events: 5 columns from "+file+"\n"+
		"backfill: 1 updated, 0 changed meanwhile and left alone, 0 failed, 0 refused (of 1 without a schema)\n"; got != want {
		t.Fatalf("backfill --apply printed %q, want %q", got, want)
	}
	l.refresh()
	s, err := schemajson.Parse([]byte(l.must("show", "--tenant", "acme", "-n", "legacy", "-t", "events", "--json")))
	if err != nil || !catalog.SchemaEqual(s, ordersSchema) {
		t.Fatalf("backfilled schema = %v, %v; want %v", s, err, ordersSchema)
	}
	if got, want := l.must("backfill", "--tenant", "acme"), "every one of 2 tables has a schema; nothing to backfill\n"; got != want {
		t.Fatalf("second backfill printed %q, want %q", got, want)
	}
}

// lake backfill reads only inside --local-root and the --allow-prefix
// list (flags, or the environment): a location outside is refused, never
// read, and the run fails; with no allow-list, an s3:// location is
// refused with the flag to set.
func TestBackfillRefusesLocationsOutsideScope(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	inside := filepath.Join(root, "events")
	writeParquet(t, filepath.Join(inside, "part-0.parquet"), ordersSchema)
	writeParquet(t, filepath.Join(outside, "part-0.parquet"), ordersSchema)
	escape := root + "/events/../../" + filepath.Base(outside)
	l := startWithLegacy(t, map[string]string{
		"acme/a/inside": inside, "acme/b/outside": outside, "acme/c/escape": escape, "acme/d/remote": "s3://lake/remote/",
	})
	insideLine := "would   acme/a/inside: 5 columns from " + filepath.Join(inside, "part-0.parquet") + "\n"
	outsideLines := `refused acme/b/outside: "` + outside + `" is outside --local-root ` + root + "\n" +
		`refused acme/c/escape: "` + escape + `" is outside --local-root ` + root + "\n"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		out  string
		code int
		// stderr is "" or what stderr must hold.
		stderr string
	}{
		{"no scope", nil, nil,
			`refused acme/a/inside: "` + inside + `" is a local path and no local root is set: set --local-root (LAKE_BACKFILL_LOCAL_ROOT) to the folder that holds it to read it` + "\n" +
				`refused acme/b/outside: "` + outside + `" is a local path and no local root is set: set --local-root (LAKE_BACKFILL_LOCAL_ROOT) to the folder that holds it to read it` + "\n" +
				`refused acme/c/escape: "` + escape + `" is a local path and no local root is set: set --local-root (LAKE_BACKFILL_LOCAL_ROOT) to the folder that holds it to read it` + "\n" +
				`refused acme/d/remote: "s3://lake/remote/" is on S3 and no s3:// prefix is allowed to tenant acme: set --allow-prefix acme=s3://bucket/prefix/ (LAKE_BACKFILL_ALLOW_PREFIXES) to read it` + "\n" +
				"dry run: 4 of 4 tables lack a schema; 0 can be backfilled, 0 cannot, 4 refused. Run again with --apply.\n", 0, ""},
		{"flags", nil, []string{"--local-root", root, "--allow-prefix", "acme=s3://lake/orders/", "--allow-prefix", "acme=s3://other/"},
			insideLine + outsideLines +
				`refused acme/d/remote: "s3://lake/remote/" is outside every --allow-prefix of tenant acme` + "\n" +
				"dry run: 4 of 4 tables lack a schema; 1 can be backfilled, 0 cannot, 3 refused. Run again with --apply.\n", 0, ""},
		{"environment", map[string]string{"LAKE_BACKFILL_LOCAL_ROOT": root, "LAKE_BACKFILL_ALLOW_PREFIXES": "acme=s3://other/, acme=s3://lake/orders/"}, nil,
			insideLine + outsideLines +
				`refused acme/d/remote: "s3://lake/remote/" is outside every --allow-prefix of tenant acme` + "\n" +
				"dry run: 4 of 4 tables lack a schema; 1 can be backfilled, 0 cannot, 3 refused. Run again with --apply.\n", 0, ""},
		{"apply fails on refused tables", nil, []string{"--local-root", root, "--apply", "-n", "b"},
			`refused acme/b/outside: "` + outside + `" is outside --local-root ` + root + "\n" +
				"backfill: 0 updated, 0 changed meanwhile and left alone, 0 failed, 1 refused (of 1 without a schema)\n", 1, ""},
		{"invalid prefix", nil, []string{"--allow-prefix", "acme=lake/orders/"}, "", 1,
			`lake: backfill: --allow-prefix "acme=lake/orders/": want s3://bucket/ or s3://bucket/key-prefix, without . or .. segments` + "\n"},
		// Issue 24: a prefix is allowed to one tenant. Another tenant's
		// prefix does not admit acme's location there (acme could point a
		// table at globex's files and copy their schema).
		{"another tenant's prefix", nil, []string{"--allow-prefix", "acme=s3://lake/orders/", "--allow-prefix", "globex=s3://lake/remote/"},
			`refused acme/a/inside: "` + inside + `" is a local path and no local root is set: set --local-root (LAKE_BACKFILL_LOCAL_ROOT) to the folder that holds it to read it` + "\n" +
				`refused acme/b/outside: "` + outside + `" is a local path and no local root is set: set --local-root (LAKE_BACKFILL_LOCAL_ROOT) to the folder that holds it to read it` + "\n" +
				`refused acme/c/escape: "` + escape + `" is a local path and no local root is set: set --local-root (LAKE_BACKFILL_LOCAL_ROOT) to the folder that holds it to read it` + "\n" +
				`refused acme/d/remote: "s3://lake/remote/" is outside every --allow-prefix of tenant acme` + "\n" +
				"dry run: 4 of 4 tables lack a schema; 0 can be backfilled, 0 cannot, 4 refused. Run again with --apply.\n", 0, ""},
		{"a prefix for no tenant", nil, []string{"--allow-prefix", "s3://lake/"}, "", 1,
			`lake: backfill: --allow-prefix "s3://lake/": name the tenant it is for: TENANT=s3://bucket/prefix/` + "\n"},
		{"one prefix covering another tenant's", nil, []string{"--allow-prefix", "acme=s3://lake/", "--allow-prefix", "globex=s3://lake/remote/"}, "", 1,
			`lake: backfill: --allow-prefix "acme=s3://lake/" covers globex's "s3://lake/remote/": a tenant's prefix may not reach another's data` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"LAKE_TENANT": "acme"}
			for k, v := range l.env {
				env[k] = v
			}
			for k, v := range tt.env {
				env[k] = v
			}
			var out, errOut bytes.Buffer
			code := cli.Run(context.Background(), cli.NewFactory(func(k string) string { return env[k] }, &out, &errOut), append([]string{"backfill"}, tt.args...))
			if code != tt.code || out.String() != tt.out {
				t.Fatalf("got exit %d, stdout %q (stderr %q), want exit %d, stdout %q", code, out.String(), errOut.String(), tt.code, tt.out)
			}
			if tt.stderr != "" && errOut.String() != tt.stderr {
				t.Fatalf("got stderr %q, want %q", errOut.String(), tt.stderr)
			}
		})
	}
}

// --column-comment stores each comment as the column's REMARKS field
// metadata in the registered schema (other metadata kept), and show prints
// it beside the column.
func TestColumnComments(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema),
		"--column-comment", "order_id=one per order, never reused", "--column-comment", "placed_at=when the customer paid")
	l.refresh()
	s, err := schemajson.Parse([]byte(l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders", "--json")))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range s.Fields() {
		want := ordersSchema.Field(i)
		remarks, has := f.Metadata.GetValue(flightsql.RemarksKey)
		switch f.Name {
		case "order_id":
			if remarks != "one per order, never reused" {
				t.Errorf("order_id REMARKS = %q", remarks)
			}
		case "placed_at":
			if remarks != "when the customer paid" {
				t.Errorf("placed_at REMARKS = %q", remarks)
			}
		default:
			if has {
				t.Errorf("%s got REMARKS %q, want none", f.Name, remarks)
			}
		}
		for j, k := range want.Metadata.Keys() {
			if got, _ := f.Metadata.GetValue(k); got != want.Metadata.Values()[j] {
				t.Errorf("%s metadata %s = %q, want %q kept", f.Name, k, got, want.Metadata.Values()[j])
			}
		}
		if !arrow.TypeEqual(f.Type, want.Type) || f.Nullable != want.Nullable {
			t.Errorf("%s = %s, want %s", f.Name, f, want)
		}
	}
	out := l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders")
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.HasSuffix(lines[1], "not null  -- one per order, never reused") || !strings.HasSuffix(lines[2], "-- when the customer paid") ||
		strings.Index(lines[1], "--") != strings.Index(lines[2], "--") {
		t.Errorf("show printed:\n%s\nwant both comments after the columns, aligned", out)
	}
}

// Every client message is built from the error's kind and the table ref,
// each said once, with no internal package prefix.
func TestMessages(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	schema := writeSchemaJSON(t, ordersSchema)
	other := writeSchemaJSON(t, arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int8}}, nil))
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", schema)
	l.refresh()
	globexToken := strings.TrimSpace(l.must("token", "--tenant", "globex"))
	noAPI := "http://127.0.0.1:1"

	tests := []struct {
		name string
		args []string
		want string // the whole of stderr
	}{
		{"drop a missing table", []string{"drop", "--tenant", "acme", "-n", "sales", "-t", "nope"},
			"lake: acme/sales/nope: table not found\n"},
		{"register differently", []string{"register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://elsewhere/", "--schema-json", other},
			"lake: acme/sales/orders: already registered with a different location, type, schema, description or properties\n"},
		{"invalid table name", []string{"register", "--tenant", "acme", "-n", "sales", "-t", "bad/name", "--schema-json", schema},
			"lake: invalid table name \"bad/name\": contains '/'\n"},
		{"invalid tenant name", []string{"list", "--tenant", "a/b"},
			"lake: invalid tenant name \"a/b\": contains '/'\n"},
		{"no tenant", []string{"drop", "-n", "sales", "-t", "orders"},
			"lake: --tenant (LAKE_TENANT) is required\n"},
		{"show a table discovery does not list", []string{"show", "--tenant", "acme", "-n", "sales", "-t", "nope"},
			"lake: acme/sales/nope: table not found (a new registration appears after the next refresh)\n"},
		{"another tenant's token", []string{"drop", "--tenant", "acme", "-n", "sales", "-t", "orders", "--token", globexToken},
			"lake: acme/sales/orders: not allowed to act on tenant \"acme\"\n"},
		{"an invalid token", []string{"list", "--tenant", "acme", "--token", "not-a-jwt"},
			"lake: tenant acme: missing or invalid token: "},
		{"two schema sources", []string{"register", "--tenant", "acme", "-n", "sales", "-t", "x", "--schema-json", schema, "--schema-ipc", schema},
			"lake: give exactly one of --parquet, --schema-json and --schema-ipc\n"},
		{"comment on a missing column", []string{"register", "--tenant", "acme", "-n", "sales", "-t", "x", "--location", "s3://x/", "--schema-json", schema, "--column-comment", "nope=text"},
			"lake: --column-comment: the schema has no column \"nope\"\n"},
		{"comment without =", []string{"register", "--tenant", "acme", "-n", "sales", "-t", "x", "--location", "s3://x/", "--schema-json", schema, "--column-comment", "order_id"},
			"lake: --column-comment \"order_id\": want column=text\n"},
		{"empty comment", []string{"register", "--tenant", "acme", "-n", "sales", "-t", "x", "--location", "s3://x/", "--schema-json", schema, "--column-comment", "order_id="},
			"lake: --column-comment \"order_id=\": the comment is empty\n"},
		{"a column commented twice", []string{"register", "--tenant", "acme", "-n", "sales", "-t", "x", "--location", "s3://x/", "--schema-json", schema,
			"--column-comment", "order_id=a", "--column-comment", "order_id=b"},
			"lake: --column-comment: column \"order_id\" is named twice\n"},
		{"API unreachable", []string{"drop", "--tenant", "acme", "-n", "sales", "-t", "orders", "--api", noAPI},
			"lake: registration API " + noAPI + ": dial tcp 127.0.0.1:1: connect: connection refused\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, code := l.run(tt.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			if strings.HasSuffix(tt.want, "\n") && got != tt.want || !strings.HasPrefix(got, tt.want) {
				t.Fatalf("stderr\n got %q\nwant %q", got, tt.want)
			}
			if strings.Contains(got, "catalog:") || strings.Contains(got, "registerapi:") || strings.Count(got, "acme/") > 1 {
				t.Fatalf("stderr %q says something twice or leaks an internal prefix", got)
			}
			t.Logf("%s", strings.TrimSpace(got))
		})
	}
}

// columnStarts returns the display-cell offset of each column of line,
// columns being separated by two or more spaces.
func columnStarts(line string) []int {
	var starts []int
	cell, spaces := 0, 0
	for i, r := range line {
		if r == ' ' {
			spaces++
		} else {
			if i == 0 || spaces >= 2 {
				starts = append(starts, cell)
			}
			spaces = 0
		}
		cell += runewidth.RuneWidth(r)
	}
	return starts
}

// CJK names (two cells per character) and names with combining accents
// (zero-width marks) line up in list and show by display width.
func TestWideNamesAlign(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	wide := arrow.NewSchema([]arrow.Field{
		{Name: "注文番号", Type: arrow.PrimitiveTypes.Int64},
		{Name: "Cafe\u0301", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	schema := writeSchemaJSON(t, wide)
	// Names are NFC; q̃ and x̂ have no precomposed form, so their combining
	// marks stay (and take no cell).
	for _, ref := range [][2]string{{"販売", "注文"}, {"sales", "orders"}, {"q\u0303uota", "x\u0302q\u0303"}} {
		l.must("register", "--tenant", "acme", "-n", ref[0], "-t", ref[1], "--location", "s3://lake/x/", "--schema-json", schema)
	}
	l.refresh()
	check := func(what, out string, cols int) {
		t.Helper()
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		var want []int
		for _, line := range lines {
			got := columnStarts(line)
			if len(got) != cols {
				t.Fatalf("%s line %q has columns at %v, want %d columns:\n%s", what, line, got, cols, out)
			}
			if want == nil {
				want = got
			}
			if !equal(got, want) {
				t.Fatalf("%s: line %q has columns at cells %v, want %v:\n%s", what, line, got, want, out)
			}
		}
	}
	out := l.must("list", "--tenant", "acme")
	check("list", out, 4)
	if !strings.Contains(out, "販売") || !strings.Contains(out, "x\u0302q\u0303") {
		t.Fatalf("list lacks the names:\n%s", out)
	}
	show := l.must("show", "--tenant", "acme", "-n", "販売", "-t", "注文")
	_, fields, _ := strings.Cut(show, "\n")
	// Two of the three fields are not null: compare the name and type
	// columns of all three.
	var two []string
	for _, line := range strings.Split(strings.TrimRight(fields, "\n"), "\n") {
		two = append(two, strings.TrimSuffix(strings.TrimRight(line, " "), "not null"))
	}
	check("show", strings.Join(two, "\n"), 2)
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// --discovery picks the transport from the address: a bare loopback
// host:port (and grpc://) reaches local mode's plaintext server, while
// grpc+tls:// and a bare non-loopback host:port speak TLS, which that
// server does not answer; a scheme other than grpc:// or grpc+tls:// is
// refused before any connection.
func TestDiscoveryAddressTransport(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema))
	l.refresh()
	hostport := strings.TrimPrefix(l.env["LAKE_DISCOVERY"], "grpc://")
	_, port, _ := strings.Cut(hostport, ":")
	tests := []struct {
		name      string
		discovery string
		ok        bool
		stderr    string
	}{
		{"bare loopback is plaintext", hostport, true, ""},
		{"bare localhost is plaintext", "localhost:" + port, true, ""},
		{"explicit grpc is plaintext", "grpc://" + hostport, true, ""},
		{"explicit grpc+tls is TLS", "grpc+tls://" + hostport, false, "tls: first record does not look like a TLS handshake"},
		{"other schemes are refused", "http://" + hostport, false,
			`lake: flightclient: discovery address "http://` + hostport + `": scheme "http" is not grpc:// (plaintext) or grpc+tls:// (TLS)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := l.run("list", "--tenant", "acme", "--discovery", tt.discovery)
			if tt.ok {
				if code != 0 || !strings.Contains(out, "sales      orders") {
					t.Fatalf("got exit %d, stdout %q, stderr %q; want the table listed", code, out, errOut)
				}
				return
			}
			if code == 0 || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("got exit %d, stderr %q; want a failure saying %q", code, errOut, tt.stderr)
			}
		})
	}
}

// --allow-prefix and --local-root take their defaults from
// LAKE_BACKFILL_ALLOW_PREFIXES (comma-separated) and
// LAKE_BACKFILL_LOCAL_ROOT; flags override them (--allow-prefix repeated,
// each value kept whole).
func TestBackfillScopeFlagAndEnvBinding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		prefixes []string
		root     string
	}{
		{"defaults", nil, nil, nil, ""},
		{"environment", map[string]string{"LAKE_BACKFILL_ALLOW_PREFIXES": " s3://a/x/, ,s3://b/", "LAKE_BACKFILL_LOCAL_ROOT": "/srv/lake"}, nil,
			[]string{"s3://a/x/", "s3://b/"}, "/srv/lake"},
		{"flags win", map[string]string{"LAKE_BACKFILL_ALLOW_PREFIXES": "s3://a/", "LAKE_BACKFILL_LOCAL_ROOT": "/srv/lake"},
			[]string{"--allow-prefix", "s3://c/", "--allow-prefix", "s3://d/with,comma/", "--local-root", "/data"},
			[]string{"s3://c/", "s3://d/with,comma/"}, "/data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := cli.NewFactory(func(k string) string { return tt.env[k] }, io.Discard, io.Discard)
			var got *cli.BackfillOptions
			cmd := cli.NewCmdBackfill(f, func(_ context.Context, o *cli.BackfillOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.AllowPrefixes, tt.prefixes) || got.LocalRoot != tt.root {
				t.Fatalf("got prefixes %q, root %q; want %q, %q", got.AllowPrefixes, got.LocalRoot, tt.prefixes, tt.root)
			}
		})
	}
}

// Flags take their defaults from the environment and override it; the run
// function sees the bound values (stopped after flag parsing with runF).
func TestFlagAndEnvBinding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		tenant string
		disc   string
		ns     string
	}{
		{"defaults", nil, nil, "", "grpc://127.0.0.1:50051", ""},
		{"environment", map[string]string{"LAKE_TENANT": "acme", "LAKE_DISCOVERY": "grpc+tls://d:443"}, nil, "acme", "grpc+tls://d:443", ""},
		{"flags win", map[string]string{"LAKE_TENANT": "acme"}, []string{"--tenant", "globex", "-n", "sa%"}, "globex", "grpc://127.0.0.1:50051", "sa%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := cli.NewFactory(func(k string) string { return tt.env[k] }, io.Discard, io.Discard)
			var got *cli.ListOptions
			root := cli.NewCmdRoot(f)
			for _, c := range root.Commands() {
				if c.Name() == "list" {
					root.RemoveCommand(c)
				}
			}
			root.AddCommand(cli.NewCmdList(f, func(_ context.Context, o *cli.ListOptions) error { got = o; return nil }))
			root.SetArgs(append([]string{"list"}, tt.args...))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if got.Tenant != tt.tenant || got.Discovery != tt.disc || got.NamespacePattern != tt.ns {
				t.Fatalf("got tenant %q discovery %q namespace %q, want %q %q %q", got.Tenant, got.Discovery, got.NamespacePattern, tt.tenant, tt.disc, tt.ns)
			}
		})
	}
}

// BenchmarkRegisterToDiscoverable measures how long a registration made
// with `lake register` takes to appear in `lake list` without an explicit
// refresh (local mode refreshes after a write's debounce). The
// cmd/lake freshness test only waits for the condition; this is the
// figure.
func BenchmarkRegisterToDiscoverable(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "data")
	in, err := local.Start(context.Background(), local.Config{
		DataDir: dir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "-",
		RefreshInterval: time.Hour, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	ep := in.Endpoints()
	env := map[string]string{"LAKE_DATA_DIR": dir, "LAKE_API": ep.API, "LAKE_DISCOVERY": ep.FlightSQL, "LAKE_TENANT": "acme"}
	run := func(args ...string) (string, int) {
		var out bytes.Buffer
		code := cli.Run(context.Background(), cli.NewFactory(func(k string) string { return env[k] }, &out, io.Discard), args)
		return out.String(), code
	}
	b2, err := schemajson.Format(ordersSchema)
	if err != nil {
		b.Fatal(err)
	}
	schema := filepath.Join(b.TempDir(), "s.json")
	if err := os.WriteFile(schema, b2, 0o644); err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		ns := "fresh" + strings.Repeat("x", i%3) + time.Now().Format("150405.000000000")
		ns = strings.ReplaceAll(ns, ".", "_")
		start := time.Now()
		if _, code := run("register", "-n", ns, "-t", "t", "--location", "s3://x/", "--schema-json", schema); code != 0 {
			b.Fatal("register failed")
		}
		for {
			if out, code := run("list", "-n", ns); code == 0 && strings.Contains(out, ns) {
				break
			}
			if time.Since(start) > time.Minute {
				b.Fatal("not discoverable after a minute")
			}
			time.Sleep(5 * time.Millisecond)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/discoverable")
}

// --compatibility takes the four modes; anything else fails before a
// request, naming them.
func TestRegisterCompatibilityFlag(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	schema := writeSchemaJSON(t, ordersSchema)
	_, stderr, code := l.run("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", schema, "--compatibility", "sideways")
	if code == 0 || !strings.Contains(stderr, `--compatibility "sideways": want none, backward, forward or full`) {
		t.Fatalf("--compatibility sideways: exit %d, stderr %q; want a failure naming the modes", code, stderr)
	}
	if out := l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", schema, "--compatibility", "BACKWARD"); !strings.HasPrefix(out, "registered acme/sales/orders") {
		t.Fatalf("--compatibility BACKWARD: %q", out)
	}
}

// lake register without --compatibility leaves the mode to the
// deployment's default; --compatibility none still says none.
func TestRegisterTakesTheDefaultCompatibility(t *testing.T) {
	t.Parallel()
	l := startLocalWith(t, local.Config{DataDir: filepath.Join(t.TempDir(), "data"), DefaultCompatibility: schemadiff.Forward})
	schema := writeSchemaJSON(t, ordersSchema)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", schema)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "plain", "--location", "s3://lake/plain/", "--schema-json", schema, "--compatibility", "none")
	for table, want := range map[string]string{"orders": "compatibility forward", "plain": "compatibility none"} {
		if out := l.must("update", "--tenant", "acme", "-n", "sales", "-t", table, "--description", "x"); !strings.Contains(out, want+")") {
			t.Errorf("%s: update printed %q, want %s", table, out, want)
		}
	}
}

// lake update checks the schema against the table's mode: a compatible
// update is stored, an incompatible one prints each breaking change and
// changes nothing, and --compatibility none changes it on purpose.
func TestUpdateCommandKeepsCompatibility(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema), "--compatibility", "backward")
	wider := arrow.NewSchema(append(slices.Clone(ordersSchema.Fields()), arrow.Field{Name: "currency", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	if out := l.must("update", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", writeSchemaJSON(t, wider)); out != "updated acme/sales/orders to version 2 (6 columns, compatibility backward)\n" {
		t.Fatalf("compatible update printed %q", out)
	}
	fs := slices.Clone(wider.Fields())
	fs[0].Type = arrow.PrimitiveTypes.Int32 // narrowed
	fs = append(fs, arrow.Field{Name: "region", Type: arrow.BinaryTypes.String})
	breaking := writeSchemaJSON(t, arrow.NewSchema(fs, nil))
	_, stderr, code := l.run("update", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", breaking)
	want := "breaking changes:\n" +
		"  order_id: narrowed from int64 to int32: data written before may not fit the narrower type\n" +
		"  region: added (utf8): a new field must be nullable: data written before it has no value for it\n"
	if code == 0 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "nothing was changed (add --compatibility none to change it anyway)") {
		t.Fatalf("incompatible update: exit %d, stderr:\n%s\nwant it to start with:\n%s", code, stderr, want)
	}
	if out := l.must("update", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", breaking, "--compatibility", "none"); out != "updated acme/sales/orders to version 3 (7 columns, compatibility none)\n" {
		t.Fatalf("update with --compatibility none printed %q", out)
	}
}

// lake diff prints a candidate schema's changes against the registered
// one, marks those the table's mode refuses, and exits non-zero then.
func TestDiffCommand(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema), "--compatibility", "backward")
	if out := l.must("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", writeSchemaJSON(t, ordersSchema)); out != "acme/sales/orders: no changes from version 1\n" {
		t.Fatalf("same schema: %q", out)
	}
	fs := slices.Clone(ordersSchema.Fields())
	fs[0].Type = arrow.PrimitiveTypes.Int32
	fs = append(fs, arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true})
	candidate := writeSchemaJSON(t, arrow.NewSchema(fs, nil))
	stdout, stderr, code := l.run("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", candidate)
	want := "acme/sales/orders: 2 changes from version 1:\n" +
		"  order_id: narrowed from int64 to int32  BREAKS backward: data written before may not fit the narrower type\n" +
		"  note: added (nullable utf8)\n"
	if code == 0 || stdout != want || !strings.Contains(stderr, "acme/sales/orders: 1 change breaks backward compatibility") {
		t.Fatalf("breaking candidate: exit %d\nstdout:\n%s\nstderr: %s\nwant stdout:\n%s", code, stdout, stderr, want)
	}
	if out := l.must("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", candidate, "--compatibility", "forward"); !strings.HasSuffix(out, "compatible under forward\n") {
		t.Fatalf("judged under forward: %q", out)
	}
}

// lake register --protected makes lake drop refuse until lake update
// --unprotect, which keeps the stored schema when given none.
func TestProtectedTableCommands(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema), "--protected", "--compatibility", "full")
	l.refresh()
	if out := l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders"); !strings.Contains(out, "\nrules: compatibility full, protected from drops\n") {
		t.Fatalf("show printed:\n%s\nwant the rules line", out)
	}
	_, stderr, code := l.run("drop", "--tenant", "acme", "-n", "sales", "-t", "orders")
	if code == 0 || !strings.Contains(stderr, "acme/sales/orders: the table is protected; unprotect it first (lake update --unprotect)") {
		t.Fatalf("drop of a protected table: exit %d, stderr %q", code, stderr)
	}
	if out := l.must("update", "--tenant", "acme", "-n", "sales", "-t", "orders", "--unprotect"); out != "updated acme/sales/orders to version 2 (5 columns, compatibility full)\n" {
		t.Fatalf("update --unprotect printed %q", out)
	}
	l.must("drop", "--tenant", "acme", "-n", "sales", "-t", "orders")
}
