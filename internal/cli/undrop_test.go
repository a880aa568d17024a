package cli_test

import (
	"strings"
	"testing"
)

// The whole loop through local mode: a drop is listed by lake dropped with
// who dropped it, lake undrop restores it (the newest drop of the name
// without --creation-id), the table is back with its history continued,
// and another tenant lists nothing.
func TestDroppedAndUndropCommands(t *testing.T) {
	t.Parallel()
	l := startLocal(t)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, ordersSchema))
	l.must("drop", "--tenant", "acme", "-n", "sales", "-t", "orders")
	l.refresh()
	out := l.must("dropped", "--tenant", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAMESPACE  TABLE   VERSION  CREATION ID") || !strings.HasPrefix(lines[1], "sales      orders  1 ") {
		t.Fatalf("dropped printed:\n%s", out)
	}
	id := strings.Fields(lines[1])[3]
	if out := l.must("dropped", "--tenant", "globex"); strings.Contains(out, "orders") {
		t.Fatalf("globex's dropped list shows acme's table:\n%s", out)
	}
	if _, stderr, code := l.run("undrop", "--tenant", "acme", "-n", "sales", "-t", "returns"); code == 0 || !strings.Contains(stderr, "acme/sales/returns: no dropped table of that name in retention") {
		t.Fatalf("undrop of a table never dropped: exit %d, %q", code, stderr)
	}
	if out := l.must("undrop", "--tenant", "acme", "-n", "sales", "-t", "orders"); out != "restored acme/sales/orders (creation id "+id+") at version 2\n" {
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
