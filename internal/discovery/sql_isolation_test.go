package discovery_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/discovery"
)

// TestSQLTenantIsolation is a property test: whatever SQL a tenant sends —
// generated from templates over every tenant's names, other tenants' names
// in literals and qualified names, ATTACH, PRAGMA, sqlite_master, SHOW and
// DESCRIBE of another tenant's tables, and random mutations of those — no
// answer, rows or error, holds another tenant's name unless the statement
// itself does (an echoed literal). Each tenant's namespaces, tables and
// columns all carry its name, so any leak of them shows.
func TestSQLTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	tenants := []string{"acme", "globex", "initech", "umbrella", "hooli"}
	for _, tn := range tenants {
		schema := arrow.NewSchema([]arrow.Field{
			{Name: tn + "_id", Type: arrow.PrimitiveTypes.Int64},
			{Name: tn + "_secret", Type: arrow.BinaryTypes.String, Nullable: true,
				Metadata: arrow.NewMetadata([]string{"ARROW:FLIGHT:SQL:REMARKS"}, []string{tn + " comment"})},
		}, nil)
		for _, ns := range []string{tn + "_sales", "shared"} {
			for _, tbl := range []string{tn + "_orders", "orders"} {
				e.register(tn, ns, tbl, schema)
			}
		}
	}
	e.publish()

	templates := []string{
		"SELECT * FROM information_schema.tables",
		"SELECT * FROM information_schema.columns",
		"SELECT * FROM information_schema.schemata",
		"SELECT * FROM information_schema.tables WHERE table_catalog = '%[1]s'",
		"SELECT * FROM information_schema.columns WHERE table_schema LIKE '%[1]s%%'",
		"SELECT * FROM %[1]s_sales.%[1]s_orders",
		"SELECT * FROM \"%[1]s\".\"%[1]s_sales\".\"orders\"",
		"SELECT * FROM shared.orders",
		"SELECT '%[1]s' AS echoed",
		"DESCRIBE %[1]s.shared.orders",
		"DESCRIBE %[1]s_sales.%[1]s_orders",
		"SHOW COLUMNS FROM %[1]s_orders",
		"SHOW TABLES",
		"ATTACH 'file:%[1]s?mode=memory&cache=shared' AS %[1]s",
		"ATTACH ':memory:' AS x",
		"PRAGMA database_list",
		"SELECT * FROM pragma_database_list",
		"SELECT * FROM sqlite_master",
		"SELECT * FROM information_schema.sqlite_master",
		"SELECT sql FROM sqlite_schema UNION ALL SELECT sql FROM information_schema.sqlite_schema",
		"SELECT current_catalog(), current_user(), version(), database()",
		"SELECT group_concat(table_name) FROM information_schema.tables WHERE table_name <> '%[1]s_orders'",
		"SELECT * FROM information_schema.tables t JOIN information_schema.columns c USING (table_schema, table_name) WHERE c.column_name LIKE '%[1]s%%'",
		"SELECT count(*) FROM information_schema.columns WHERE column_comment LIKE '%[1]s%%'",
		"WITH x AS (SELECT table_catalog FROM information_schema.tables) SELECT DISTINCT * FROM x",
		"SELECT * FROM %[1]s.information_schema.tables",
		"DROP TABLE information_schema.tables; SELECT '%[1]s'",
		"INSERT INTO information_schema.tables VALUES ('%[1]s', 'a', 'b', 'c')",
		"SELECT load_extension('%[1]s')",
	}
	rng := rand.New(rand.NewPCG(23, 23))
	mutate := func(s string) string {
		b := []byte(s)
		for range rng.IntN(3) {
			if len(b) == 0 {
				break
			}
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b = append(b[:i], b[i+1:]...)
			case 1:
				b[i] = " ;'\".*()%_"[rng.IntN(10)]
			default:
				b = append(b[:i], append([]byte(" UNION SELECT 1 "), b[i:]...)...)
			}
		}
		return string(b)
	}
	queries := 0
	for _, me := range tenants {
		ctx := as(t, me)
		for _, tpl := range templates {
			for _, named := range tenants {
				sql := tpl
				if strings.Contains(tpl, "%[1]s") {
					sql = fmt.Sprintf(tpl, named)
				}
				for _, q := range []string{sql, mutate(sql), mutate(sql)} {
					queries++
					answer, err := statement(e, ctx, q)
					if err != nil {
						answer = err.Error()
					}
					for _, other := range tenants {
						if other == me || strings.Contains(q, other) {
							continue
						}
						if strings.Contains(answer, other) {
							t.Fatalf("tenant %s ran %q and saw tenant %s's name: %s", me, q, other, answer)
						}
					}
					if err == nil && strings.Contains(q, "information_schema.tables") && !strings.Contains(answer, me) &&
						strings.HasPrefix(q, "SELECT * FROM information_schema.tables") && !strings.Contains(q, "WHERE") {
						t.Fatalf("tenant %s ran %q and did not see its own tables: %s", me, q, answer)
					}
				}
			}
		}
	}
	t.Logf("%d statements from %d tenants, no answer held another tenant's name", queries, len(tenants))
}
