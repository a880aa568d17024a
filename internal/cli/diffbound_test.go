package cli_test

import (
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
)

// A candidate schema breaking 3,000 fields at paths through 60 nested
// structs (issue 38 row 5): lake diff prints the first 100 changes, each
// path elided to 256 bytes, and a line counting the rest, and counts every
// change and every breach; lake update lists the 409's first 100 and
// counts the rest; lake diff --from counts the schema's changes whole.
func TestDiffCommandBoundsItsOutput(t *testing.T) {
	t.Parallel()
	const maxOut = 100 << 10
	l := startLocal(t)
	old, new := catalogtest.DeepBreakingSchemas(60, 3000, 1000)
	l.must("register", "--tenant", "acme", "-n", "sales", "-t", "orders", "--location", "s3://lake/orders/", "--schema-json", writeSchemaJSON(t, old), "--compatibility", "backward")
	candidate := writeSchemaJSON(t, new)

	stdout, stderr, code := l.run("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", candidate)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code == 0 || len(stdout) > maxOut || len(lines) != 102 || lines[0] != "acme/sales/orders: 3000 changes from version 1:" ||
		lines[101] != "  … and 2900 more" || !strings.Contains(stderr, "acme/sales/orders: 3000 changes break backward compatibility") {
		t.Fatalf("lake diff: exit %d, %d bytes, %d lines starting %.300q, ending %.300q; stderr %.300q\nwant 102 lines under %d bytes, the count of the rest last",
			code, len(stdout), len(lines), lines[0], lines[len(lines)-1], stderr, maxOut)
	}
	for _, line := range lines[1:101] {
		path, _, _ := strings.Cut(strings.TrimPrefix(line, "  "), ": retyped")
		if len(path) > 256 || !strings.Contains(path, "…") || !strings.HasSuffix(line, "BREAKS backward: the values of one type are not values of the other") {
			t.Fatalf("lake diff line %.400q: want an elided path of at most 256 bytes and the breach", line)
		}
	}

	_, stderr, code = l.run("update", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", candidate)
	lines = strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code == 0 || len(stderr) > maxOut || len(lines) < 102 || lines[0] != "breaking changes:" || lines[101] != "  … and 2900 more" {
		t.Fatalf("lake update: exit %d, stderr of %d bytes, %d lines; want 100 breaking changes and the count of the rest under %d bytes", code, len(stderr), len(lines), maxOut)
	}

	l.must("update", "--tenant", "acme", "-n", "sales", "-t", "orders", "--schema-json", candidate, "--compatibility", "none")
	out := l.must("diff", "--tenant", "acme", "-n", "sales", "-t", "orders", "--from", "1", "--to", "2")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(out) > maxOut || len(lines) != 103 || lines[0] != "acme/sales/orders: 3001 changes from version 1 to 2:" ||
		lines[101] != "  … and 2900 more schema changes (3000 in all)" || lines[102] != `  compatibility: "backward" → "none"` {
		t.Fatalf("lake diff --from 1 --to 2: %d bytes, %d lines, starting %.300q; want 103 lines under %d bytes counting 3001 changes", len(out), len(lines), lines[0], maxOut)
	}
}
