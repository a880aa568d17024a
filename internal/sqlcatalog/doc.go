// Package sqlcatalog answers read-only SQL over one tenant's catalog: the
// ANSI views information_schema.schemata, .tables and .columns, the
// validation queries SQL tools send (SELECT 1, version(), the current
// catalog, schema and user), and SHOW TABLES, SHOW COLUMNS FROM t and
// DESCRIBE t, which are answered over those views.
//
// # The engine
//
// The SQL is run by SQLite, through modernc.org/sqlite: a maintained,
// complete SQL engine (parser, planner, WHERE, LIKE, ORDER BY, LIMIT,
// DISTINCT, aggregates, joins, subqueries, CTEs) that is pure Go, so the
// discovery binary stays static (CGO_ENABLED=0). Engines and the Checker
// use SQLite's C API as modernc.org/sqlite/lib exposes it, not the
// database/sql driver: it opens each connection SQLITE_OPEN_FULLMUTEX,
// whose mutex (emulated in Go) SQLite would take for every value a
// statement reads, and its virtual tables hand SQLite every value as a
// Go value, copied twice. No SQL is parsed here: the
// only text this package reads itself is the leading keywords of the two
// statement forms SQLite does not have (SHOW …, DESCRIBE/DESC …), with a
// small tokenizer (statements.go) that turns them into a SELECT over the
// views; everything else goes to SQLite as it is.
//
// An Engine is one in-memory SQLite database built for one tenant and one
// snapshot generation (Build), from metadata already in memory (no I/O),
// holding that tenant's rows and nothing else: isolation is by
// construction, since no statement can reach data the database does not
// hold. The tenant's name is in the database only as its own catalog.
// information_schema.schemata, .tables and .columns are virtual tables
// registered on the tenant's own database, over an arena laid out once, at
// Build, from the tenant's Tables (read where the caller keeps them:
// discovery hands over its prepared tenant's Arrow columns) and its column
// descriptions, one per distinct schema (columnstable.go,
// tablestable.go), so building an engine inserts no row into SQLite.
//
// # Read-only and sandboxed
//
// After the build, the connection is closed to change:
//   - PRAGMA query_only is on, so no statement can write;
//   - an authorizer (sqlite3_set_authorizer)
//     allows only SELECT, reads and functions; ATTACH, DETACH, PRAGMA,
//     transactions, savepoints, DDL and DML are denied at prepare time and
//     answered as read-only errors (Error.Kind ErrReadOnly);
//   - load_extension is denied by the authorizer too (extension loading is
//     also off in SQLite's C API by default);
//   - sqlite3_limit bounds the SQL text (MaxSQLBytes), string and blob
//     lengths, expression depth, compound SELECTs, attached databases and
//     the like;
//   - each statement runs under a time budget (Limits.Timeout) that holds
//     for every row: SQLite is interrupted (sqlite3_interrupt) when the
//     budget or the caller's context ends, whichever row it is computing
//     (interrupt.go);
//   - a result has at most Limits.MaxRows rows and Limits.MaxBytes bytes,
//     and is charged while it is built to a Budget of results in flight
//     shared by every engine of the process (budget.go).
//
// Before a statement reaches a tenant's database it is compiled on a
// schema-only twin (Checker, the same tables and functions, no rows, the
// same authorizer and limits, since SQLite carries out some PRAGMAs while
// compiling them): that
// reports the position of a malformed statement (sqlite3_error_offset,
// which the database/sql driver does not expose), refuses more than one
// statement per request, refuses writes (sqlite3_stmt_readonly), and tells
// a query naming a registered table (which SQLite reports as "no such
// table") from one naming nothing.
//
// # Registered tables' rows
//
// Lake is a catalog: a table's data lives at its location and is read by
// the caller's engine. An engine built with Tenant.Data also answers a
// statement naming a registered table (SELECT * FROM sales.orders LIMIT
// 10, what a SQL tool's data tab sends) over that table's rows: the table
// becomes a virtual table of the tenant's own database, whose rows Data
// reads from the table's files (package preview: only the columns used,
// row groups skipped by their statistics, no further than asked, under
// its caps), and the statement is checked, authorized and bounded as
// every other (datatable.go). A result column that is a registered column
// keeps its registered Arrow type (typed.go). Without Data such a query is
// refused with ErrTableData.
package sqlcatalog
