package sqlcatalog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzSQL feeds any text to the SQL entry point (Engine.Query): it must
// answer a result or an *Error, never panic, and leave the engine as it
// was (read-only): the same four tables afterwards, and none of another
// tenant's names, which the engine does not hold.
func FuzzSQL(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "select * from information_schema.columns where table_name like 'o%'", "SHOW TABLES",
		`DESCRIBE "sales"."orders"`, "SHOW COLUMNS FROM hr.people", "desc acme.hr.people;",
		"ATTACH 'file:globex?mode=memory' AS g", "PRAGMA query_only=0", "SELECT * FROM sqlite_master",
		"DROP TABLE information_schema.tables", "BEGIN; DELETE FROM dual; COMMIT", "SELECT 'globex'",
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT i FROM n", "SELECT load_extension('x')",
		"/* */ -- \n SELECT version()", "SELECT zeroblob(1000000000)", "SELECT printf('%.*c', 100000000, 'x')",
		`SHOW COLUMNS FROM "a""b".[c]`, "SELECT * FROM sales.orders", "VALUES (1), (2)",
	} {
		f.Add(s)
	}
	c, err := NewChecker()
	if err != nil {
		f.Fatal(err)
	}
	defer c.Close()
	e, err := Build(context.Background(), testTenant(), c, Limits{Timeout: 200 * time.Millisecond, MaxRows: 1000, MaxBytes: 1 << 20}, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close()
	f.Fuzz(func(t *testing.T, sql string) {
		res, err := e.Query(context.Background(), sql, nil)
		var se *Error
		switch {
		case err == nil:
			if got := render(res); strings.Contains(got, "globex") && !strings.Contains(sql, "globex") {
				t.Fatalf("%q answered another tenant's name: %s", sql, got)
			}
		case !errors.As(err, &se):
			t.Fatalf("%q: %v is not an *Error", sql, err)
		}
		after, err := e.Query(context.Background(), "SELECT count(*) FROM information_schema.tables", nil)
		if err != nil || render(after) != "count(*)|4" {
			t.Fatalf("after %q: %v %v", sql, after, err)
		}
	})
}
