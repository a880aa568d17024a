package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/browser"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
)

// manyTables is how many tables acme's "many" namespace holds, more than
// one page.
const manyTables = 250

// bigTenant has bigTables tables in its namespace "wide", for the paging
// test.
const (
	bigTenant = "bigco"
	bigTables = 10000
)

// env is the one local instance the package's tests share: its browser's
// URL and a dev token per tenant.
var env struct {
	in     *local.Instance
	base   string
	tokens map[string]string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lake-browser-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		if err := start(filepath.Join(dir, "data")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer env.in.Close()
		return m.Run()
	}()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// richWithComment is catalogtest.RichSchema plus a column with a Flight
// SQL comment.
func richWithComment() *arrow.Schema {
	s := catalogtest.RichSchema()
	md := s.Metadata()
	fs := append(s.Fields(), arrow.Field{Name: "commented", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
		Metadata: arrow.NewMetadata([]string{browser.RemarksKey}, []string{"the customer's id"})})
	return arrow.NewSchema(fs, &md)
}

// start seeds a data folder (acme: a rich nested table, a legacy table
// without a schema, manyTables small tables, a customer_id column; globex:
// a table of its own) and starts local mode on it.
// nested.rich's registration has a description and properties.
const richDescription = "Every Arrow type, nested.\nOne row per test."

var richProperties = map[string]string{"owner": "data-eng", "tier": "gold"}

func start(dir string) error {
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// NoSync: the seed is written once and closed before local mode opens it.
	st, err := rocksdb.Open(filepath.Join(dir, local.MetaDir), rocksdb.Options{NoSync: true})
	if err != nil {
		return err
	}
	cat := catalog.New(st, catalog.Options{})
	small := func(col string) *arrow.Schema {
		return arrow.NewSchema([]arrow.Field{{Name: col, Type: arrow.PrimitiveTypes.Int64}}, nil)
	}
	regs := map[catalog.TableRef]*arrow.Schema{
		{Tenant: "acme", Namespace: "nested", Name: "rich"}:           richWithComment(),
		{Tenant: "acme", Namespace: "sales", Name: "orders"}:          small("customer_id"),
		{Tenant: "globex", Namespace: "secret", Name: "globex_only"}:  small("globex_col"),
		{Tenant: "globex", Namespace: "sales", Name: "globex_orders"}: small("customer_id"),
	}
	for i := range manyTables {
		regs[catalog.TableRef{Tenant: "acme", Namespace: "many", Name: fmt.Sprintf("t%04d", i)}] = small("id")
	}
	for i := range bigTables {
		regs[catalog.TableRef{Tenant: bigTenant, Namespace: "wide", Name: fmt.Sprintf("w%05d", i)}] = small("id")
	}
	// acme's sales.orders lies under local mode's data root, in a Parquet
	// file of its final schema (after the updates below): its Preview tab
	// shows rows. Every other table is in s3://b/, which local mode may
	// not read.
	dataRoot := filepath.Join(filepath.Dir(dir), "data-root")
	ordersDir := filepath.Join(dataRoot, "acme", "sales", "orders")
	if err := writeOrders(filepath.Join(ordersDir, "part-00000.parquet")); err != nil {
		st.Close()
		return err
	}
	for ref, s := range regs {
		spec := catalog.TableSpec{Location: "s3://b/" + ref.Name + "/", Schema: s}
		if ref.Name == "rich" {
			spec.Description, spec.Properties = richDescription, richProperties
		}
		if ref.Tenant == "acme" && ref.Name == "orders" {
			spec.Location = "file://" + ordersDir + "/"
		}
		if _, _, err = cat.Register(ctx, ref, spec); err != nil {
			break
		}
	}
	// sales.orders has a history: two updates by two callers.
	orders := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	for i, u := range []struct {
		by   string
		spec catalog.TableSpec
	}{
		{"arn:aws:iam::123456789012:role/acme-producer", catalog.TableSpec{Schema: arrow.NewSchema([]arrow.Field{{Name: "customer_id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "placed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}}, nil)}},
		{"arn:aws:iam::123456789012:user/alice", catalog.TableSpec{Description: "one row per order", Schema: arrow.NewSchema([]arrow.Field{{Name: "customer_id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "placed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
			{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true}}, nil)}},
	} {
		if err != nil {
			break
		}
		if _, err = cat.Update(catalog.WithCaller(ctx, u.by), orders, u.spec, catalog.UpdateOptions{}); err != nil {
			err = fmt.Errorf("update %d of sales.orders: %w", i+1, err)
		}
	}
	if err == nil {
		legacy, _ := json.Marshal(map[string]any{"location": "s3://b/events/", "table_type": "TABLE", "created_at": "2024-01-01T00:00:00Z", "version": 1})
		err = st.Put(ctx, "tbl/acme/legacy/events", legacy)
	}
	st.Close()
	if err != nil {
		return err
	}
	env.in, err = local.Start(ctx, local.Config{
		DataDir: dir, APIListen: "127.0.0.1:0", FlightListen: "127.0.0.1:0", HTTPListen: "-", BrowserListen: "127.0.0.1:0",
		RefreshInterval: time.Hour, DataRoot: dataRoot, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	env.base = strings.TrimSuffix(env.in.Endpoints().Browser, "/")
	env.tokens = map[string]string{}
	for _, t := range append(local.DevTenants(), bigTenant) {
		if env.tokens[t], err = env.in.Token(t, time.Hour); err != nil {
			return err
		}
	}
	return nil
}

// get fetches path with token (none when empty) and returns the status,
// the content type and the body.
func get(t testing.TB, method, path, token string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, env.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if method == http.MethodPost {
		req.Header.Set("Origin", env.base) // as the page sends (local mode's guard)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// getJSON fetches path as tenant and decodes the answer into v, wanting
// status want.
func getJSON(t testing.TB, path, tenant string, want int, v any) {
	t.Helper()
	code, ctype, b := get(t, http.MethodGet, path, env.tokens[tenant])
	if code != want {
		t.Fatalf("GET %s: got %d %s, want %d", path, code, b, want)
	}
	if ctype != "application/json" {
		t.Fatalf("GET %s: got content type %q, want application/json", path, ctype)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
}

func TestNamespaces(t *testing.T) {
	var got browser.NamespacesAnswer
	getJSON(t, "/api/namespaces", "acme", http.StatusOK, &got)
	want := []browser.Namespace{{Name: "legacy", Tables: 1}, {Name: "many", Tables: manyTables}, {Name: "nested", Tables: 1}, {Name: "sales", Tables: 1}}
	if got.Tenant != "acme" || got.Total != 4 || !slices.Equal(got.Namespaces, want) {
		t.Fatalf("got %+v, want tenant acme, total 4, %v", got, want)
	}
	getJSON(t, "/api/namespaces?offset=1&limit=2", "acme", http.StatusOK, &got)
	if !slices.Equal(got.Namespaces, want[1:3]) || got.Total != 4 || got.Offset != 1 || got.Limit != 2 {
		t.Fatalf("page: got %+v, want %v of 4", got, want[1:3])
	}
}

// Tables page through a 250-table namespace: pages of the asked size, in
// order, the last one short, past the end empty.
func TestTablesPaging(t *testing.T) {
	tests := []struct {
		query          string
		wantFirst      string
		wantLen, total int
	}{
		{"?namespace=many", "t0000", browser.DefaultLimit, manyTables},
		{"?namespace=many&offset=100&limit=100", "t0100", 100, manyTables},
		{"?namespace=many&offset=200&limit=100", "t0200", 50, manyTables},
		{"?namespace=many&offset=500", "", 0, manyTables},
		{"?namespace=many&limit=500", "t0000", manyTables, manyTables},
		{"?limit=2", "events", 2, manyTables + 3},
		{"?namespace=nope", "", 0, 0},
		{"?namespace=m%25", "", 0, 0}, // a literal name, not a pattern
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var got browser.TablesAnswer
			getJSON(t, "/api/tables"+tt.query, "acme", http.StatusOK, &got)
			first := ""
			if len(got.Tables) > 0 {
				first = got.Tables[0].Name
			}
			if first != tt.wantFirst || len(got.Tables) != tt.wantLen || got.Total != tt.total {
				t.Fatalf("got first %q, %d rows of %d, want %q, %d of %d", first, len(got.Tables), got.Total, tt.wantFirst, tt.wantLen, tt.total)
			}
		})
	}
}

// The table list carries each table's column count (-1 without a schema)
// and description.
func TestTableListColumnsAndDescriptions(t *testing.T) {
	var got browser.TablesAnswer
	getJSON(t, "/api/tables?limit=3", "acme", http.StatusOK, &got)
	want := []browser.TableRow{
		{Namespace: "legacy", Name: "events", Type: "TABLE", Columns: -1},
		{Namespace: "many", Name: "t0000", Type: "TABLE", Columns: 1},
		{Namespace: "many", Name: "t0001", Type: "TABLE", Columns: 1},
	}
	if !slices.Equal(got.Tables, want) {
		t.Fatalf("got %+v, want %+v", got.Tables, want)
	}
	getJSON(t, "/api/tables?namespace=nested", "acme", http.StatusOK, &got)
	want = []browser.TableRow{{Namespace: "nested", Name: "rich", Type: "TABLE", Columns: len(richWithComment().Fields()), Description: richDescription}}
	if !slices.Equal(got.Tables, want) {
		t.Fatalf("got %+v, want %+v", got.Tables, want)
	}
}

func TestBadRequests(t *testing.T) {
	for _, path := range []string{
		"/api/tables?limit=0", "/api/tables?limit=501", "/api/tables?namespace=", "/api/tables?offset=-1", "/api/namespaces?limit=x",
		"/api/table?namespace=sales", "/api/search", "/api/search?table=%5C",
	} {
		t.Run(path, func(t *testing.T) {
			var got struct {
				Error struct{ Code, Message string }
			}
			getJSON(t, path, "acme", http.StatusBadRequest, &got)
			if got.Error.Code != "invalid" || got.Error.Message == "" {
				t.Fatalf("got %+v, want code invalid and a message", got)
			}
		})
	}
}

// find returns the field named name among fs.
func find(t testing.TB, fs []browser.Field, name string) browser.Field {
	t.Helper()
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no field %q among %v", name, fs)
	return browser.Field{}
}

func TestTableSchemaTree(t *testing.T) {
	var got browser.TableAnswer
	getJSON(t, "/api/table?namespace=nested&name=rich", "acme", http.StatusOK, &got)
	if got.Legacy || got.Schema == nil || got.Tenant != "acme" || got.Type != "TABLE" {
		t.Fatalf("got %+v, want a table with a schema", got)
	}
	t.Run("description", func(t *testing.T) {
		if got.DescribeError != "" {
			t.Fatalf("got describe error %q, want none", got.DescribeError)
		}
		if got.CreatedAt == nil || got.UpdatedAt == nil || got.CreatedAt.IsZero() || got.UpdatedAt.Before(*got.CreatedAt) {
			t.Errorf("got created_at %v, updated_at %v, want both, updated not before created", got.CreatedAt, got.UpdatedAt)
		}
		tests := []struct{ name, got, want string }{
			{"description", got.Description, richDescription},
			{"properties", fmt.Sprint(got.Properties), fmt.Sprint(richProperties)},
			{"location", got.Location, "s3://b/rich/"},
			{"version", fmt.Sprint(got.Version), "1"},
		}
		for _, tt := range tests {
			if tt.got != tt.want {
				t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
			}
		}
	})
	if got, want := len(got.Schema.Fields), len(richWithComment().Fields()); got != want {
		t.Fatalf("got %d fields, want %d", got, want)
	}
	if got, want := got.Schema.Metadata["owner"], "data-eng"; got != want {
		t.Fatalf("got schema metadata owner %q, want %q", got, want)
	}
	fs := got.Schema.Fields
	tests := []struct {
		name string
		path []string
		kind string
		want func(f browser.Field) bool
	}{
		{"struct nested twice", []string{"struct", "nested", "deep", "item"}, "date32", func(f browser.Field) bool { return f.Nullable }},
		{"struct child not null", []string{"struct", "a"}, "int64", func(f browser.Field) bool { return !f.Nullable }},
		{"list item", []string{"list", "item"}, "int32", nil},
		{"list of non-null items", []string{"list_non_null_items", "item"}, "utf8", func(f browser.Field) bool { return !f.Nullable }},
		{"map key", []string{"map", "key"}, "utf8", nil},
		{"map value", []string{"map", "value"}, "int64", nil},
		{"dense union", []string{"dense_union", "s"}, "utf8", nil},
		{"sparse union", []string{"sparse_union", "b"}, "bool", nil},
		{"dictionary values", []string{"dictionary_utf8", "values"}, "utf8", nil},
		{"dictionary indices", []string{"dictionary_ordered", "indices"}, "int8", nil},
		{"not nullable column", []string{"int64"}, "int64", func(f browser.Field) bool { return !f.Nullable && f.Children == nil }},
		{"comment", []string{"commented"}, "int64", func(f browser.Field) bool { return f.Comment == "the customer's id" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f browser.Field
			level := fs
			for _, name := range tt.path {
				f = find(t, level, name)
				level = f.Children
			}
			if f.Kind != tt.kind {
				t.Fatalf("%s: got kind %q, want %q", strings.Join(tt.path, "."), f.Kind, tt.kind)
			}
			if tt.want != nil && !tt.want(f) {
				t.Fatalf("%s: got %+v", strings.Join(tt.path, "."), f)
			}
		})
	}
	// Every type is shown exactly, parameters and children included.
	exact := []struct {
		path []string
		want string
	}{
		{[]string{"decimal128"}, "decimal128(38, 10)"},
		{[]string{"decimal256"}, "decimal256(76, -5)"},
		{[]string{"ts_us_utc"}, "timestamp[us, tz=UTC]"},
		{[]string{"ts_ns_tz"}, "timestamp[ns, tz=America/New_York]"},
		{[]string{"ts_ms"}, "timestamp[ms]"},
		{[]string{"fixed_size_binary"}, "fixed_size_binary[16]"},
		{[]string{"duration_ms"}, "duration[ms]"},
		{[]string{"time64_us"}, "time64[us]"},
		{[]string{"dictionary_utf8"}, "dictionary<values=utf8, indices=int32>"},
		{[]string{"dictionary_ordered"}, "dictionary<values=large_utf8, indices=int8, ordered>"},
		{[]string{"dictionary_ordered", "indices"}, "int8"},
		{[]string{"list"}, "list<item: int32>"},
		{[]string{"list_non_null_items"}, "list<item: utf8 not null>"},
		{[]string{"fixed_size_list"}, "fixed_size_list<item: float32>[3]"},
		{[]string{"struct"}, "struct<a: int64 not null, b: utf8, nested: struct<deep: list<item: date32>>>"},
		{[]string{"struct", "nested"}, "struct<deep: list<item: date32>>"},
		{[]string{"struct", "nested", "deep"}, "list<item: date32>"},
		{[]string{"map"}, "map<utf8, int64>"},
		{[]string{"map", "value"}, "int64"},
		{[]string{"dense_union"}, "dense_union<i: int32=0, s: utf8=5>"},
		{[]string{"run_end_encoded"}, "run_end_encoded<run_ends: int32, values: utf8>"},
	}
	for _, tt := range exact {
		t.Run("type "+strings.Join(tt.path, "."), func(t *testing.T) {
			var f browser.Field
			level := fs
			for _, name := range tt.path {
				f = find(t, level, name)
				level = f.Children
			}
			if f.Type != tt.want {
				t.Fatalf("got type %q, want %q", f.Type, tt.want)
			}
		})
	}
	if f := find(t, fs, "decimal128"); f.Kind != "decimal128" {
		t.Fatalf("decimal128: got kind %q, want decimal128", f.Kind)
	}
	// Field metadata is kept whole, Unicode keys included.
	var withMD *browser.Field
	for i := range fs {
		if fs[i].Metadata["unit"] == "ms" {
			withMD = &fs[i]
		}
	}
	if withMD == nil || withMD.Metadata["ключ"] != "значение" || withMD.Metadata["comment"] != "field comment" {
		t.Fatalf("got field with metadata %+v, want unit, comment and ключ", withMD)
	}
}

func TestTableLegacyAndNotFound(t *testing.T) {
	var got browser.TableAnswer
	getJSON(t, "/api/table?namespace=legacy&name=events", "acme", http.StatusOK, &got)
	if !got.Legacy || got.Schema != nil || !strings.Contains(got.Fix, "lake backfill") {
		t.Fatalf("got %+v, want legacy with a lake backfill fix", got)
	}
	if got.Location != "s3://b/events/" || got.Version != 1 || got.Description != "" || got.Properties != nil || got.DescribeError != "" {
		t.Fatalf("got location %q, version %d, description %q, properties %v, describe error %q, want the legacy location and version alone",
			got.Location, got.Version, got.Description, got.Properties, got.DescribeError)
	}
	for _, q := range []string{"namespace=nested&name=nope", "namespace=nested&name=ric_", "namespace=secret&name=globex_only"} {
		t.Run(q, func(t *testing.T) {
			var e struct{ Error struct{ Code string } }
			getJSON(t, "/api/table?"+q, "acme", http.StatusNotFound, &e)
			if e.Error.Code != "not_found" {
				t.Fatalf("got code %q, want not_found", e.Error.Code)
			}
		})
	}
}

func TestSearch(t *testing.T) {
	tests := []struct {
		query, tenant string
		want          []string // namespace.table
	}{
		{"column=customer_id", "acme", []string{"sales.orders"}},
		{"column=customer_id", "globex", []string{"sales.globex_orders"}},
		{"table=ric%25", "acme", []string{"nested.rich"}},
		{"table=%25only", "acme", nil},
		{"column=globex%25", "acme", nil},
		{"column=deep", "acme", []string{"nested.rich"}},
	}
	for _, tt := range tests {
		t.Run(tt.tenant+" "+tt.query, func(t *testing.T) {
			var got browser.SearchAnswer
			getJSON(t, "/api/search?"+tt.query, tt.tenant, http.StatusOK, &got)
			var names []string
			for _, m := range got.Matches {
				names = append(names, m.Namespace+"."+m.Table)
			}
			if !slices.Equal(names, tt.want) {
				t.Fatalf("got %v, want %v", names, tt.want)
			}
		})
	}
}

func TestSnapshot(t *testing.T) {
	var got browser.SnapshotAnswer
	getJSON(t, "/api/snapshot", "acme", http.StatusOK, &got)
	if got.Generation < 1 || got.Tables != manyTables+3 || got.CreatedAt == nil || got.AgeSeconds == nil || *got.AgeSeconds < 0 || *got.AgeSeconds > 600 {
		t.Fatalf("got %+v, want generation ≥ 1, %d tables, a creation time and age", got, manyTables+3)
	}
}

// A globex token never sees acme's tables, whichever endpoint it asks.
func TestTenantIsolation(t *testing.T) {
	check := func(t *testing.T, path string) {
		t.Helper()
		code, _, b := get(t, http.MethodGet, path, env.tokens["globex"])
		switch {
		case code == http.StatusNotFound && strings.Contains(string(b), `"not_found"`):
			return // the same answer as for a name no tenant has
		case code != http.StatusOK:
			t.Fatalf("GET %s: got %d %s", path, code, b)
		}
		for _, acme := range []string{"acme", "rich", "t0001", "events", "nested", "legacy", `"many"`} {
			if strings.Contains(string(b), acme) {
				t.Fatalf("GET %s as globex: got %s, which names %s", path, b, acme)
			}
		}
	}
	for _, path := range []string{
		"/api/namespaces", "/api/tables", "/api/tables?namespace=nested", "/api/tables?namespace=many&limit=500",
		"/api/table?namespace=nested&name=rich", "/api/table?namespace=legacy&name=events",
		"/api/search?table=%25", "/api/search?column=%25", "/api/search?table=rich", "/api/snapshot",
	} {
		t.Run(path, func(t *testing.T) { check(t, path) })
	}
	var snap browser.SnapshotAnswer
	getJSON(t, "/api/snapshot", "globex", http.StatusOK, &snap)
	if snap.Tables != 2 {
		t.Fatalf("got globex tables %d, want 2", snap.Tables)
	}
}

func TestUnauthenticated(t *testing.T) {
	foreign, err := auth.IssueHS256([]byte(strings.Repeat("x", 32)), auth.TokenClaims{Tenant: "acme", TTL: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/namespaces", "/api/tables", "/api/table?namespace=nested&name=rich", "/api/search?table=%25", "/api/snapshot"} {
		for _, tok := range []string{"", "not-a-jwt", env.tokens["acme"] + "x", foreign} {
			t.Run(fmt.Sprintf("%s token %.10q", path, tok), func(t *testing.T) {
				code, ctype, b := get(t, http.MethodGet, path, tok)
				if code != http.StatusUnauthorized || ctype != "application/json" || !strings.Contains(string(b), `"unauthenticated"`) {
					t.Fatalf("got %d %q %s, want 401 application/json unauthenticated", code, ctype, b)
				}
			})
		}
	}
}

func TestDevTokens(t *testing.T) {
	var cfg struct {
		DevTenants []string `json:"dev_tenants"`
	}
	getJSON(t, "/api/config", "", http.StatusOK, &cfg)
	if want := local.DevTenants(); !slices.Equal(cfg.DevTenants, want) {
		t.Fatalf("got dev tenants %v, want %v", cfg.DevTenants, want)
	}
	code, _, b := get(t, http.MethodPost, "/api/dev-token?tenant=globex", "")
	var tok struct{ Tenant, Token string }
	if err := json.Unmarshal(b, &tok); code != http.StatusOK || err != nil || tok.Tenant != "globex" {
		t.Fatalf("got %d %s, want a globex token", code, b)
	}
	// The minted token sees globex's tables.
	env.tokens["minted"] = tok.Token
	var got browser.TablesAnswer
	getJSON(t, "/api/tables", "minted", http.StatusOK, &got)
	if got.Tenant != "globex" || got.Total != 2 {
		t.Fatalf("got %+v, want globex's 2 tables", got)
	}
	for _, q := range []string{"tenant=initech", "tenant="} {
		if code, _, b := get(t, http.MethodPost, "/api/dev-token?"+url.PathEscape(q), ""); code != http.StatusBadRequest {
			t.Fatalf("POST dev-token %s: got %d %s, want 400", q, code, b)
		}
	}
	if code, _, b := get(t, http.MethodGet, "/api/dev-token?tenant=acme", ""); code != http.StatusNotFound {
		t.Fatalf("GET dev-token: got %d %s, want 404 (POST only)", code, b)
	}
}

func TestAssets(t *testing.T) {
	tests := []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script src="browser.js"`},
		{"/browser.js", "text/javascript; charset=utf-8", "/api/namespaces"},
		{"/browser.css", "text/css; charset=utf-8", "--accent"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, ctype, b := get(t, http.MethodGet, tt.path, "")
			if code != http.StatusOK || ctype != tt.ctype || !strings.Contains(string(b), tt.contains) {
				t.Fatalf("got %d %q, want 200 %q containing %q", code, ctype, tt.ctype, tt.contains)
			}
			if strings.Contains(string(b), "http://") || strings.Contains(string(b), "https://") {
				t.Fatalf("%s names an external URL", tt.path)
			}
		})
	}
	if code, ctype, _ := get(t, http.MethodGet, "/api/nope", ""); code != http.StatusNotFound || ctype != "application/json" {
		t.Fatalf("GET /api/nope: got %d %q, want 404 application/json", code, ctype)
	}
}

// GET /api/history: the table's versions newest first, each with who made
// it and what it changed from the one before; the tenant is the token's,
// so another tenant asking for the same names is answered its own (none).
func TestHistory(t *testing.T) {
	var h browser.HistoryAnswer
	getJSON(t, "/api/history?namespace=sales&name=orders", "acme", http.StatusOK, &h)
	if !h.Available || len(h.Versions) != 3 {
		t.Fatalf("history %+v", h)
	}
	v3, v2, v1 := h.Versions[0], h.Versions[1], h.Versions[2]
	if v3.Version != 3 || v3.Op != "update" || v3.By != "arn:aws:iam::123456789012:user/alice" || v3.Columns != 3 ||
		len(v3.Changes) != 2 || v3.Changes[0] != "amount: added (nullable decimal128(18, 2))" || !strings.HasPrefix(v3.Changes[1], `description: "" → "`) {
		t.Fatalf("v3 %+v", v3)
	}
	if v2.Version != 2 || v2.By != "arn:aws:iam::123456789012:role/acme-producer" || fmt.Sprint(v2.Changes) != "[placed_at: added (nullable timestamp[us, tz=UTC])]" {
		t.Fatalf("v2 %+v", v2)
	}
	if v1.Version != 1 || v1.Op != "create" || v1.Columns != 1 || len(v1.Changes) != 0 {
		t.Fatalf("v1 %+v", v1)
	}
	var other map[string]any
	getJSON(t, "/api/history?namespace=sales&name=orders", "globex", http.StatusNotFound, &other)
	getJSON(t, "/api/history?namespace=sales", "acme", http.StatusBadRequest, &other)
	if code, _, _ := get(t, http.MethodGet, "/api/history?namespace=sales&name=orders", ""); code != http.StatusUnauthorized {
		t.Fatalf("history without a token: %d, want 401", code)
	}
}
