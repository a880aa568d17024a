package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/cli"
)

// The whole loop through local mode: a drop is listed by lake dropped at
// once (the registration API's list, no refresh between) with who dropped
// it, lake undrop restores it (the newest drop of the name
// without --creation-id), the table is back with its history continued,
// and another tenant lists nothing.
func TestDroppedAndUndropCommands(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema))
	l.must("drop", "--tenant", "acme", "-n", "sales", "-t", "orders")
	// No refresh: the registration API lists the drop as soon as it is made.
	out := l.must("dropped", "--tenant", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAMESPACE  TABLE   VERSION  CREATION ID") || !strings.HasPrefix(lines[1], "sales      orders  2 ") {
		t.Fatalf("dropped printed:\n%s", out)
	}
	id := strings.Fields(lines[1])[3]
	if out := l.must("dropped", "--tenant", "globex"); strings.Contains(out, "orders") {
		t.Fatalf("globex's dropped list shows acme's table:\n%s", out)
	}
	if _, stderr, code := l.run("undrop", "--tenant", "acme", "-n", "sales", "-t", "returns"); code == 0 || !strings.Contains(stderr, "acme/sales/returns: no dropped table of that name in retention") {
		t.Fatalf("undrop of a table never dropped: exit %d, %q", code, stderr)
	}
	if out := l.must("undrop", "--tenant", "acme", "-n", "sales", "-t", "orders"); out != "restored acme/sales/orders (creation id "+id+") at version 3\n" {
		t.Fatalf("undrop printed %q", out)
	}
	if _, stderr, code := l.run("undrop", "--tenant", "acme", "-n", "sales", "-t", "orders", "--creation-id", id); code == 0 || !strings.Contains(stderr, "not") {
		t.Fatalf("a second undrop: exit %d, %q", code, stderr)
	}
	l.refresh()
	if out := l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders"); !strings.Contains(out, "acme/sales/orders  (TABLE, 5 columns)") {
		t.Fatalf("show after undrop:\n%s", out)
	}
	if out := l.must("dropped", "--tenant", "acme"); strings.Contains(out, "orders") {
		t.Fatalf("the restored table is still listed as dropped:\n%s", out)
	}
}

// The catalog's memory through the CLI, as the transcript: register
// under backward, update compatibly, an incompatible update refused with
// its breaking path, history with who did each step, diff of two
// versions, show of an old version.
func TestHistoryDiffAndShowVersionCommands(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	v1 := arrow.NewSchema([]arrow.Field{{Name: "order_id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	v2 := arrow.NewSchema([]arrow.Field{{Name: "order_id", Type: arrow.PrimitiveTypes.Int64}, {Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	v3 := arrow.NewSchema([]arrow.Field{{Name: "order_id", Type: arrow.PrimitiveTypes.Int16}, {Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, v1), "--compatibility", "backward")
	l.must("update", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", writeSchemaJSON(t, v2), "--description", "one row per order", "--as", "bob")
	if _, stderr, code := l.run("update", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", writeSchemaJSON(t, v3)); code == 0 || !strings.Contains(stderr, "order_id") {
		t.Fatalf("incompatible update: exit %d, %q; want refused naming order_id", code, stderr)
	}
	out := l.must("history", "--tenant", "acme", "-n", "sales", "-t", "orders")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "2        update  bob ") || !strings.HasPrefix(lines[2], "1        create  alice ") {
		t.Fatalf("history printed:\n%s", out)
	}
	out = l.must("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--from", "1", "--to", "2")
	for _, want := range []string{"3 changes from version 1 to 2", "order_id", "note", `description: "" → "one row per order"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("diff --from 1 --to 2 printed:\n%s\nwant %q", out, want)
		}
	}
	if out := l.must("show", "--tenant", "acme", "-n", "sales", "-t", "orders", "--version", "1"); !strings.Contains(out, "at version 1: create by") || !strings.Contains(out, "order_id  int32") || strings.Contains(out, "note") {
		t.Fatalf("show --version 1 printed:\n%s", out)
	}
	if _, stderr, code := l.run("show", "--tenant", "acme", "-n", "sales", "-t", "orders", "--version", "7"); code == 0 || !strings.Contains(stderr, "not kept") {
		t.Fatalf("show --version 7: exit %d, %q", code, stderr)
	}
	if _, stderr, code := l.run("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--to", "2"); code == 0 || !strings.Contains(stderr, "--to only with --from") {
		t.Fatalf("diff --to alone: exit %d, %q", code, stderr)
	}
	if _, stderr, code := l.run("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", writeSchemaJSON(t, v2), "--json"); code == 0 || !strings.Contains(stderr, "go with --from") {
		t.Fatalf("diff --json without --from: exit %d, %q", code, stderr)
	}
	// --json prints the API's answer; a dropped table's versions are named
	// by its creation id, the drop its newest.
	var d struct {
		From, To      int64
		SchemaChanges []struct{ Path, Change string } `json:"schema_changes"`
	}
	if err := json.Unmarshal([]byte(l.must("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--from", "1", "--to", "2", "--json")), &d); err != nil ||
		d.From != 1 || d.To != 2 || len(d.SchemaChanges) != 2 || d.SchemaChanges[0].Path != "order_id" || d.SchemaChanges[0].Change != "promoted" {
		t.Fatalf("diff --json: %+v, %v", d, err)
	}
	l.must("drop", "--tenant", "acme", "-n", "sales", "-t", "orders", "--as", "carol")
	l.refresh()
	id := strings.Fields(strings.Split(strings.TrimSpace(l.must("dropped", "--tenant", "acme")), "\n")[1])[3]
	out = l.must("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--from", "2", "--creation-id", id)
	if !strings.Contains(out, "no changes from version 2 to 3") {
		t.Fatalf("diff of the dropped registration from 2 to its drop:\n%s", out)
	}
	out = l.must("history", "--tenant", "acme", "-n", "sales", "-t", "orders", "--creation-id", id)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[1], "3        drop    carol ") {
		t.Fatalf("history of the dropped registration:\n%s", out)
	}
}

// lake changes prints the feed in order with who made each change and the
// cursor to go on from; --since that cursor prints only what came after;
// --follow prints a change published while it waits.
func TestChangesCommand(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	s := writeSchemaJSON(t, ordersSchema)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", s)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "returns", "--location", "s3://lake/returns/", "--schema-json", s)
	l.must("drop", "--tenant", "acme", "-n", "sales", "-t", "returns", "--as", "bob")
	l.refresh()
	out, stderr, code := l.run("changes", "--tenant", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// returns' latest change is its drop: the feed holds each table's latest.
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "create  sales.orders  version 1  by alice") || !strings.Contains(lines[1], "drop    sales.returns  version 2  by bob") {
		t.Fatalf("changes: exit %d\n%s\n%s", code, out, stderr)
	}
	cursor := strings.TrimSpace(stderr[strings.LastIndex(stderr, "--since ")+len("--since "):])
	if !strings.HasPrefix(stderr, "2 changes in acme") || cursor == "" {
		t.Fatalf("changes stderr %q", stderr)
	}
	if out := l.must("changes", "--tenant", "acme", "--since", cursor); out != "" {
		t.Fatalf("changes --since the last cursor printed %q", out)
	}
	if out := l.must("changes", "--tenant", "globex"); out != "" {
		t.Fatalf("globex's changes: %q", out)
	}
	if _, stderr, code := l.run("changes", "--tenant", "acme", "--since", "forged"); code == 0 || !strings.Contains(stderr, "since is not a cursor") {
		t.Fatalf("a forged cursor: exit %d, %q", code, stderr)
	}

	// --follow, stopped by its context once the new change is printed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var fout, ferr syncBuffer
	done := make(chan int)
	go func() {
		f := cli.NewFactory(func(k string) string { return l.env[k] }, &fout, &ferr)
		done <- cli.Run(ctx, f, []string{"changes", "--tenant", "acme", "--since", cursor, "--follow", "--interval", "100ms"})
	}()
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "refunds", "--location", "s3://lake/refunds/", "--schema-json", s)
	l.refresh()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(fout.String(), "create  sales.refunds  version 1") {
		if time.Now().After(deadline) {
			t.Fatalf("--follow did not print the new change: %q %q", fout.String(), ferr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("--follow stopped with exit %d: %s", code, ferr.String())
	}
}

// syncBuffer is a bytes.Buffer safe to write and read from two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
