package discovery_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// storeRaw stores a registration as JSON under ref's key, bypassing the
// registration checks: a registration written before a limit existed.
func (e *env) storeRaw(ref catalog.TableRef, schemaIPC []byte) {
	e.t.Helper()
	key, err := ref.Key()
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{"location": "/old", "created_at": "2024-01-01T00:00:00Z",
		"schema_ipc": base64.StdEncoding.EncodeToString(schemaIPC)})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.Put(context.Background(), key, b); err != nil {
		e.t.Fatal(err)
	}
}

// longFieldTenant stores, for tenant, tables registrations each with one
// 200,000-byte field name (stored before field names were bounded) and
// publishes them.
func longFieldTenant(e *env, tenant string, tables int) {
	e.t.Helper()
	long := strings.Repeat("a", 200_000)
	for i := range tables {
		s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: long + fmt.Sprint(i), Type: arrow.BinaryTypes.String}}, nil)
		e.storeRaw(catalog.TableRef{Tenant: tenant, Namespace: "ns", Name: fmt.Sprintf("t%d", i)}, flight.SerializeSchema(s, memory.DefaultAllocator))
	}
	e.publish()
}

// The probe: 8 tables with a 200,000-byte field name and the
// column pattern '%a'×511 + '%b' took 32 s of CPU for one search. The
// pattern has too many wildcards: refused before any table is looked at.
func TestSearchRefusesTooManyWildcards(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	longFieldTenant(e, "acme", 8)
	ctx := as(t, "acme")
	probe := strings.Repeat("%a", 511) + "%b"
	_, _, err := e.search(ctx, searchBody(t, "", probe))
	if got := codeOf(err); got != codes.InvalidArgument {
		t.Fatalf("search with %d wildcards: got %v (%v), want INVALID_ARGUMENT", 512, got, err)
	}
	// Within the bound the same tables are searched, in linear time.
	ms, _, err := e.search(ctx, searchBody(t, "", strings.Repeat("%a", 31)+"%7"))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(ms); len(got) != 1 || !strings.HasPrefix(got[0], "ns.t7[aaaa") {
		t.Fatalf("got %d matches, want ns.t7's long column", len(got))
	}
}

// GetTables name patterns like '_%'×240 + 'Q' over long names took 2.8 s:
// refused for their wildcards, in GetFlightInfo and DoGet alike.
func TestGetTablesRefusesTooManyWildcards(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	for i := range 8 {
		e.register("acme", "ns", fmt.Sprintf("%s%d", strings.Repeat("x", 240), i), wide(i))
	}
	e.publish()
	ctx := as(t, "acme")
	pattern := strings.Repeat("_%", 240) + "Q"
	for name, opts := range map[string]*flightsql.GetTablesOpts{
		"table name": {TableNameFilterPattern: &pattern},
		"namespace":  {DbSchemaFilterPattern: &pattern},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := e.tables(ctx, opts)
			if got := codeOf(err); got != codes.InvalidArgument {
				t.Fatalf("got %v (%v), want INVALID_ARGUMENT", got, err)
			}
		})
	}
}

// deepSchema has 60 nested structs with 1,000-byte names and 150 leaves at
// the bottom: each leaf's path is about 61 KB, all 210 paths about 9 MB of
// JSON.
func deepSchema() *arrow.Schema {
	level := func(i int) string { return fmt.Sprintf("%04d", i) + strings.Repeat("n", 996) }
	var leaves []arrow.Field
	for i := range 150 {
		leaves = append(leaves, arrow.Field{Name: level(i), Type: arrow.PrimitiveTypes.Int8})
	}
	typ := arrow.DataType(arrow.StructOf(leaves...))
	for d := 59; d >= 0; d-- {
		typ = arrow.StructOf(arrow.Field{Name: level(d), Type: typ})
	}
	return arrow.NewSchema([]arrow.Field{{Name: "deep", Type: typ}}, nil)
}

// One match's JSON must fit the client's 4 MiB receive limit: a table whose
// matching columns would take more is answered with the columns that fit
// and columns_truncated (issue 24: the browser answered 502).
func TestSearchMatchFitsTheReceiveLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	s := deepSchema()
	e.storeRaw(catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: "deep"}, flight.SerializeSchema(s, memory.DefaultAllocator))
	e.register("acme", "ns", "plain", wide(1))
	e.publish()

	stream, err := e.client.Client.DoAction(as(t, "acme"), &flight.Action{Type: wire.SearchActionType, Body: []byte(searchBody(t, "deep", "%n"))})
	if err != nil {
		t.Fatal(err)
	}
	var bodies [][]byte
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		bodies = append(bodies, r.Body)
	}
	if len(bodies) != 1 {
		t.Fatalf("got %d results, want one match", len(bodies))
	}
	var m struct {
		Table            string              `json:"table"`
		Columns          []wire.SearchColumn `json:"columns"`
		ColumnsTruncated bool                `json:"columns_truncated"`
	}
	if err := json.Unmarshal(bodies[0], &m); err != nil {
		t.Fatal(err)
	}
	if m.Table != "deep" || !m.ColumnsTruncated || len(m.Columns) == 0 || len(m.Columns) >= 210 {
		t.Fatalf("got table %q with %d columns, columns_truncated %v; want deep with some of its 210 and true", m.Table, len(m.Columns), m.ColumnsTruncated)
	}
	if len(bodies[0]) > 1<<20 {
		t.Fatalf("match of %d bytes, want at most 1 MiB", len(bodies[0]))
	}
}

// BenchmarkSearchPathological: the issue-24 probes. A tenant of 8 tables
// each with one 200,000-byte field name (stored before field names were
// bounded), searched with the column pattern '%a'×511 + '%b' (32 s of CPU
// per search before wildcards were bounded; now refused) and with
// '%a'×31 + '%b', the most wildcards still accepted; and GetTables with
// the name pattern '_%'×240 + 'Q' over 4,000 240-byte table names. One
// call at a time.
func BenchmarkSearchPathological(b *testing.B) {
	search := func(b *testing.B, e *env, pattern string) func() error {
		ctx := as(b, "acme")
		return func() error {
			_, _, err := e.search(ctx, searchBody(b, "", pattern))
			if codeOf(err) == codes.InvalidArgument {
				return nil // refused: that is the answer
			}
			return err
		}
	}
	b.Run("search_probe_512_wildcards", func(b *testing.B) {
		e := newEnv(b, discovery.Options{})
		longFieldTenant(e, "acme", 8)
		measure(b, 1, search(b, e, strings.Repeat("%a", 511)+"%b"))
	})
	b.Run("search_32_wildcards", func(b *testing.B) {
		e := newEnv(b, discovery.Options{})
		longFieldTenant(e, "acme", 8)
		measure(b, 1, search(b, e, strings.Repeat("%a", 31)+"%b"))
	})
	b.Run("gettables_probe_240_wildcards", func(b *testing.B) {
		e := newEnv(b, discovery.Options{})
		now := time.Now()
		reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "/x", Schema: wide(1)}, now)
		if err != nil {
			b.Fatal(err)
		}
		var res []scan.Registered
		for i := range 4000 {
			res = append(res, scan.Registered{Registration: reg,
				Ref: catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: fmt.Sprintf("%s%04d", strings.Repeat("x", 236), i)}})
		}
		e.load(res)
		ctx := as(b, "acme")
		pattern := strings.Repeat("_%", 240) + "Q"
		measure(b, 1, func() error {
			_, err := drain(ctx, e.client, &flightsql.GetTablesOpts{TableNameFilterPattern: &pattern})
			if codeOf(err) == codes.InvalidArgument {
				return nil
			}
			return err
		})
	})
}

// A search's matches together stay within wire.MaxSearchBytes: 20 tables whose
// matches take about 1 MiB each end after 16 with the truncation marker.
func TestSearchBoundsTheWholeAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	ipc := flight.SerializeSchema(deepSchema(), memory.DefaultAllocator)
	for i := range 20 {
		e.storeRaw(catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: fmt.Sprintf("deep%02d", i)}, ipc)
	}
	e.publish()
	ms, trunc, err := e.search(as(t, "acme"), searchBody(t, "", "%n"))
	if err != nil {
		t.Fatal(err)
	}
	if trunc == nil || trunc.Limit != len(ms) || len(ms) == 0 || len(ms) >= 20 {
		t.Fatalf("got %d matches, truncation %+v; want fewer than 20 and a marker counting them", len(ms), trunc)
	}
	total := 0
	for _, m := range ms {
		b, _ := json.Marshal(m)
		total += len(b)
	}
	if total > wire.MaxSearchBytes {
		t.Fatalf("matches of %d bytes, limit %d", total, wire.MaxSearchBytes)
	}
}
