package discovery_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/sqlcatalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// slowRows is a statement whose first row is cheap and whose later rows
// are slow (issue 38, finding 1): row i counts to (i-1)·3,000,000, so the
// first step returns at once and seconds of work come after it.
const slowRows = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 4)
SELECT i, (WITH RECURSIVE m(j) AS (SELECT 0 UNION ALL SELECT j+1 FROM m WHERE j < (i-1)*3000000) SELECT count(*) FROM m) FROM n`

// sqlOutcomes is lake_discovery_sql_statements_total by outcome.
func sqlOutcomes(t testing.TB, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, fam := range families {
		if fam.GetName() != "lake_discovery_sql_statements_total" {
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// gauge is the value of an unlabelled gauge.
func gauge(t testing.TB, reg *prometheus.Registry, metric string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() == metric && len(fam.GetMetric()) == 1 {
			return fam.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", metric)
	return 0
}

// eventually polls cond every 20 ms until it holds or 30 s have passed (a
// bound on a wait, not a measurement).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 30 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A statement whose later rows are slow ends at its budget through Flight
// SQL, as DEADLINE_EXCEEDED, instead of running on to its last row.
func TestSQLBudgetHoldsForEveryRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{SQLLimits: sqlcatalog.Limits{Timeout: 200 * time.Millisecond}})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	_, err := e.client.Execute(as(t, "acme"), slowRows)
	if got := codeOf(err); got != codes.DeadlineExceeded {
		t.Fatalf("Execute: %v (%v), want DEADLINE_EXCEEDED", got, err)
	}
	if got := sqlOutcomes(t, e.reg); got["timeout"] != 1 || got["ok"] != 0 {
		t.Errorf("statements by outcome: %v, want one timeout", got)
	}
}

// A client that leaves stops its statement, whatever row it is on: the
// statement ends as canceled, not as a result nobody reads.
func TestSQLClientCancelStopsTheStatement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{RequestTimeout: time.Hour, SQLLimits: sqlcatalog.Limits{Timeout: time.Hour}})
	e.register("acme", "sales", "orders", wide(1))
	e.publish()
	ctx, cancel := context.WithCancel(as(t, "acme"))
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	if _, err := e.client.Execute(ctx, slowRows); codeOf(err) != codes.Canceled {
		t.Fatalf("Execute: %v, want CANCELED", err)
	}
	var got map[string]float64
	eventually(t, "the statement ended", func() bool {
		got = sqlOutcomes(t, e.reg)
		return len(got) > 0
	})
	if got["canceled"] != 1 {
		t.Errorf("statements by outcome: %v, want one canceled", got)
	}
}

// bigRows is a statement of rows×~400 bytes, distinct per tag.
func bigRows(tag string, rows int) string {
	return fmt.Sprintf("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d) SELECT i, '%s', printf('%%0400d', i) FROM n", rows, tag)
}

// openUnread starts a DoGet of sql's result and reads only its first
// message, as a client that stops reading does; cancel ends it.
func openUnread(t testing.TB, e *env, ctx context.Context, sql string) (func(), error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	info, err := e.client.Execute(ctx, sql)
	if err != nil {
		cancel()
		return nil, err
	}
	rdr, err := e.client.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); rdr.Release() }, nil
}

// One tenant cannot hold more than its share of SQL streams: past the
// cap a statement is refused at once, saying so, and a stream that ends
// gives its place back.
func TestSQLStreamsPerTenantAreCapped(t *testing.T) {
	// Not parallel: its large results must be built within the default SQL budget (5 s).
	e := newEnv(t, discovery.Options{SQLStreamsPerTenant: 2})
	for _, tn := range []string{"acme", "globex"} {
		e.register(tn, "sales", "orders", wide(1))
	}
	e.publish()
	acme := as(t, "acme")
	var cancels []func()
	for i := range 2 {
		cancel, err := openUnread(t, e, acme, bigRows(fmt.Sprint("s", i), 40_000))
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		cancels = append(cancels, cancel)
	}
	_, err := openUnread(t, e, acme, bigRows("s2", 40_000))
	if codeOf(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "at most 2") {
		t.Fatalf("a third stream: %v, want RESOURCE_EXHAUSTED naming the cap", err)
	}
	// Another tenant is not held back by acme's streams.
	if _, err := statement(e, as(t, "globex"), "SELECT 1"); err != nil {
		t.Fatalf("globex: %v", err)
	}
	for _, c := range cancels {
		c()
	}
	eventually(t, "acme's streams given back", func() bool {
		return gauge(t, e.reg, "lake_discovery_sql_streams") == 0
	})
	if _, err := statement(e, acme, bigRows("s3", 5000)); err != nil {
		t.Fatalf("after the streams ended: %v", err)
	}
}

// Results in flight share one budget across tenants: a result the budget
// cannot hold now is refused at once (RESOURCE_EXHAUSTED naming the
// budget), never queued, and the budget comes back when the stream that
// held it ends.
func TestSQLResultsInFlightShareOneBudget(t *testing.T) {
	// Not parallel: its large results must be built within the default SQL budget (5 s).
	const rows = 10_000 // a result of about 4 MiB
	e := newEnv(t, discovery.Options{SQLInFlightBytes: 12 << 20})
	for _, tn := range []string{"acme", "globex"} {
		e.register(tn, "sales", "orders", wide(1))
	}
	e.publish()
	cancel, err := openUnread(t, e, as(t, "acme"), bigRows("a", rows))
	if err != nil {
		t.Fatal(err)
	}
	held := gauge(t, e.reg, "lake_discovery_sql_inflight_bytes")
	if held < 3<<20 {
		t.Fatalf("in flight while acme's result streams: %.0f bytes, want its ~4 MiB", held)
	}
	_, err = statement(e, as(t, "globex"), bigRows("b", 2*rows))
	if codeOf(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "in flight") {
		t.Fatalf("globex while acme holds the budget: %v, want RESOURCE_EXHAUSTED naming results in flight", err)
	}
	if got := sqlOutcomes(t, e.reg); got["busy"] != 1 {
		t.Errorf("statements by outcome: %v, want one busy", got)
	}
	cancel()
	eventually(t, "acme's result given back", func() bool {
		return gauge(t, e.reg, "lake_discovery_sql_inflight_bytes") == 0
	})
	if _, err := statement(e, as(t, "globex"), bigRows("b", rows)); err != nil {
		t.Fatalf("globex after acme's stream ended: %v", err)
	}
}

// cyclicSchema is an Arrow IPC schema message whose struct field lists
// itself as its child (flatbuffers offsets are unsigned 32-bit, so an
// offset that wraps points back): arrow-go's reader recurses into it
// without end.
func cyclicSchema(t testing.TB) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32})}}, nil)
	msg := flight.SerializeSchema(sc, memory.DefaultAllocator)
	if binary.LittleEndian.Uint32(msg) != 0xFFFFFFFF {
		t.Fatal("not an encapsulated message")
	}
	buf := msg[8:]
	table := func(pos flatbuffers.UOffsetT) *flatbuffers.Table { return &flatbuffers.Table{Bytes: buf, Pos: pos} }
	root := table(flatbuffers.GetUOffsetT(buf))
	// Message.header (field 2), Schema.fields (field 1), Field.children (field 5).
	header := table(root.Indirect(root.Pos + flatbuffers.UOffsetT(root.Offset(4+2*2))))
	fields := header.Vector(flatbuffers.UOffsetT(header.Offset(4 + 2*1)))
	field := table(header.Indirect(fields))
	children := field.Vector(flatbuffers.UOffsetT(field.Offset(4 + 2*5)))
	binary.LittleEndian.PutUint32(buf[children:], uint32(field.Pos-children))
	return msg
}

// A segment's schema bytes are outside input to discovery: SQL decodes
// them through the same verification search and describe use, so a
// crafted cyclic schema reads as "no schema" instead of overflowing the
// stack of the whole process.
func TestSQLVerifiesSegmentSchemas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	good := catalogSchemaIPC(t)
	tables := []snapshot.Table{
		{Namespace: "sales", Name: "cyclic", TableType: "TABLE", Location: "s3://b/c", Version: 1, SchemaIPC: cyclicSchema(t)},
		{Namespace: "sales", Name: "orders", TableType: "TABLE", Location: "s3://b/o", Version: 1, SchemaIPC: good},
	}
	e.gen++
	e.put(func(prev []snapshot.Entry) *snapshot.Written {
		w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: e.gen, CreatedAt: time.Now(), Previous: prev})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTenant("acme", tables, nil); err != nil {
			t.Fatal(err)
		}
		written, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return written
	})
	got, err := statement(e, as(t, "acme"), "SELECT table_name, count(*) FROM information_schema.columns GROUP BY table_name ORDER BY table_name")
	if err != nil {
		t.Fatal(err)
	}
	if want := "table_name,count(*)|orders,1"; got != want {
		t.Errorf("columns by table: %q, want %q (the cyclic schema unavailable)", got, want)
	}
}

// catalogSchemaIPC is a one-column schema as registration encodes it.
func catalogSchemaIPC(t testing.TB) []byte {
	t.Helper()
	b := flight.SerializeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), memory.DefaultAllocator)
	if len(b) == 0 {
		t.Fatal(errors.New("empty schema message"))
	}
	return b
}
