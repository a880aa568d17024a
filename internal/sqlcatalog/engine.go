package sqlcatalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MaxSQLBytes is the longest SQL text a statement may have.
const MaxSQLBytes = 64 << 10

// Limits bound one statement.
type Limits struct {
	// Timeout is the time budget of one statement. Default DefaultTimeout.
	Timeout time.Duration
	// MaxRows is the most rows a result may have. Default DefaultMaxRows.
	MaxRows int
	// MaxBytes is the most bytes (strings and numbers) a result may hold.
	// Default DefaultMaxBytes.
	MaxBytes int
}

// Defaults of Limits.
const (
	DefaultTimeout = 5 * time.Second
	DefaultMaxRows = 100_000
	// DefaultMaxBytes is sized for a catalog's answers: every column of
	// 100,000 tables' worth of information_schema rows fits, far below a
	// discovery task's memory.
	DefaultMaxBytes = 32 << 20
)

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxRows <= 0 {
		l.MaxRows = DefaultMaxRows
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// Tables are a tenant's registered tables as an engine reads them: Len
// rows, sorted by (Namespace, Name) in byte order, each pair once. Build
// reads each row once, while it runs, and keeps copies of what it needs,
// so an implementation may hand out strings over its own memory (as
// discovery's prepared tenant does, over its segment's Arrow columns).
type Tables interface {
	// Len is how many tables there are.
	Len() int
	// Namespace and Name name table i.
	Namespace(i int) string
	Name(i int) string
	// Type is table i's lake table type ("TABLE" for a plain table).
	Type(i int) string
	// SchemaRef indexes Tenant.Schemas, or is -1 when table i has no
	// schema.
	SchemaRef(i int) int
}

// Tenant is what an Engine is built from: one tenant's tables and their
// distinct schemas.
type Tenant struct {
	// Catalog is the tenant's name: the catalog of every row, and what
	// current_catalog() and current_user() answer.
	Catalog string
	// Version is the server's version, which version() reports.
	Version string
	// Tables are the tenant's tables; nil when it has none.
	Tables Tables
	// Schemas are the distinct schemas Tables.SchemaRef indexes; a nil
	// one reads as no schema.
	Schemas []*arrow.Schema
	// Data reads the rows of the tenant's registered tables for statements
	// that name them (datatable.go); nil refuses such statements
	// (ErrTableData).
	Data Data
}

// ErrorKind tells the failures of a statement apart.
type ErrorKind int

// Kinds of Error.
const (
	// ErrInvalid: malformed SQL (Offset says where), an unknown table,
	// column or function, more than one statement, or text too long.
	ErrInvalid ErrorKind = iota + 1
	// ErrReadOnly: a write, DDL, PRAGMA, ATTACH or transaction.
	ErrReadOnly
	// ErrTableData: a query over a registered table's data (Namespace and
	// Table name it).
	ErrTableData
	// ErrLimit: the result exceeds Limits.MaxRows or MaxBytes.
	ErrLimit
	// ErrTimeout: the statement ran past Limits.Timeout.
	ErrTimeout
	// ErrBusy: the process's Budget for results in flight could not hold
	// the result now; the same statement may succeed shortly.
	ErrBusy
	// ErrData: a registered table's rows could not be read (Err says
	// why: its files, their schema, access to them).
	ErrData
)

// Error is a statement's failure, with a message fit for the client.
type Error struct {
	Kind ErrorKind
	Msg  string
	// Offset is the byte offset in the SQL text the failure is at, or -1.
	Offset int
	// Namespace and Table name the registered table of an ErrTableData.
	Namespace, Table string
	// Err is the failure underneath an ErrData or a data table's ErrLimit.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap is the failure underneath, if any.
func (e *Error) Unwrap() error { return e.Err }

func invalid(format string, args ...any) *Error {
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(format, args...), Offset: -1}
}

// Engine is one tenant's catalog as an in-memory SQLite database, read-only
// once built. It runs one statement at a time; it is safe for concurrent
// use (statements queue, each within its own time budget).
type Engine struct {
	tenant  string
	checker *Checker
	limits  Limits
	mem     memory.Allocator
	tables  map[string][]string // lower-cased table name → "namespace\x00name" of each registration

	sem chan struct{} // held while a statement runs, and by Close
	// handle is the database's sqlite3* (0 once closed), used under sem
	// (and by sqlite3_interrupt, see interruptOnDone).
	handle uintptr
	// auth is the authorizer SQLite calls back (a method value, kept here
	// so that the closure SQLite holds the address of stays alive);
	// denied is what it last refused (set during prepare, read while sem
	// is held).
	auth   func(*libc.TLS, uintptr, int32, uintptr, uintptr, uintptr, uintptr) int32
	denied string
	// out holds what SQLite writes back (a handle, status counters): a
	// field of a heap object, which does not move (see Checker.out).
	out   [2]uintptr
	bytes int64
	// arena is what information_schema's virtual tables and the
	// engine's functions read (columnstable.go).
	arena *arena
	// data are the registered tables mounted for statements that read
	// them (datatable.go), nil without Tenant.Data; mounting is set while
	// one is mounted, when the authorizer lets the engine's own ATTACH
	// and CREATE VIRTUAL TABLE through.
	data     *dataTables
	mounting bool

	closeOnce sync.Once
}

// ddl creates what the engines and the Checker share; the views are
// virtual tables in an engine (engineDDL, columnstable.go) and plain
// tables of the same columns on the Checker (checkerDDL), so a statement
// compiles the same on both.
const ddl = `
ATTACH ':memory:' AS information_schema;
CREATE TABLE main.dual (dummy TEXT NOT NULL);
INSERT INTO main.dual VALUES ('X');
`

var engineDDL, checkerDDL = viewsDDL()

func viewsDDL() (engine, checker string) {
	engine, checker = ddl, ddl
	for k, v := range vtabs {
		name := "information_schema." + vtabNames[k]
		engine += "CREATE VIRTUAL TABLE " + name + " USING " + v.module + ";\n"
		checker += strings.Replace(v.decl, "CREATE TABLE x", "CREATE TABLE "+name, 1) + ";\n"
	}
	return engine, checker
}

// functions are the engine's own SQL functions beside SQLite's: name →
// number of arguments.
var functionNames = []string{"version", "current_catalog", "current_schema", "current_user",
	"current_database", "database", "user", "session_user", "schema"}

// tableTypeName is a table type as information_schema names it: lake's
// TABLE is the ANSI BASE TABLE.
func tableTypeName(t string) string {
	if t == "TABLE" {
		return "BASE TABLE"
	}
	return t
}

// sqlLimits are the sqlite3_limit values of a tenant's connection.
var sqlLimits = []struct{ id, val int }{
	{sqlite3.SQLITE_LIMIT_LENGTH, 1 << 20},
	{sqlite3.SQLITE_LIMIT_SQL_LENGTH, MaxSQLBytes},
	{sqlite3.SQLITE_LIMIT_COLUMN, 200},
	{sqlite3.SQLITE_LIMIT_EXPR_DEPTH, 100},
	{sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, 20},
	{sqlite3.SQLITE_LIMIT_VDBE_OP, 100_000},
	{sqlite3.SQLITE_LIMIT_FUNCTION_ARG, 16},
	{sqlite3.SQLITE_LIMIT_ATTACHED, 1},
	{sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1024},
	{sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 16},
	{sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 1},
}

// errClosed answers a statement on a closed engine.
var errClosed = errors.New("sqlcatalog: the engine is closed")

// Build builds t's engine: an in-memory database of t's rows alone, then
// closed to change (see the package doc). checker compiles statements
// before they run (one per process is enough); limits bound each
// statement; mem allocates results.
//
// The database is opened and built through SQLite's C API, as the
// Checker's is, not through database/sql: its connection is opened
// SQLITE_OPEN_NOMUTEX, since the engine uses it from one goroutine at a
// time (Build, then each statement under sem, then Close), so SQLite
// takes no connection mutex in the calls a statement makes per value
// (modernc's libc emulates that mutex in Go).
func Build(ctx context.Context, t Tenant, checker *Checker, limits Limits, mem memory.Allocator) (_ *Engine, err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	e := &Engine{tenant: t.Catalog, checker: checker, limits: limits.withDefaults(), mem: mem,
		sem: make(chan struct{}, 1)}
	l, err := layoutTenant(ctx, t)
	if err != nil {
		return nil, err
	}
	e.tables = l.index
	tls := libc.NewTLS()
	defer tls.Close()
	if e.arena, err = newArena(tls, l); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if err := e.open(tls); err != nil {
		return nil, err
	}
	if err := e.registerFunctions(tls); err != nil {
		return nil, err
	}
	if err := e.arena.register(tls, e.handle); err != nil {
		return nil, err
	}
	if t.Data != nil {
		if e.data, err = newDataTables(tls, e.handle, t.Data); err != nil {
			return nil, err
		}
	}
	if err := e.exec(tls, engineDDL); err != nil {
		return nil, fmt.Errorf("sqlcatalog: create views: %w", err)
	}
	if err := e.exec(tls, "PRAGMA query_only = 1; PRAGMA trusted_schema = 0"); err != nil {
		return nil, fmt.Errorf("sqlcatalog: query_only: %w", err)
	}
	for _, l := range sqlLimits {
		sqlite3.Xsqlite3_limit(tls, e.handle, int32(l.id), int32(l.val))
	}
	if e.data != nil {
		// The namespaces of mounted tables (the authorizer refuses a
		// statement's own ATTACH all the same).
		sqlite3.Xsqlite3_limit(tls, e.handle, sqlite3.SQLITE_LIMIT_ATTACHED, maxDataSchemas+1)
	}
	e.auth = e.authorize
	if rc := sqlite3.Xsqlite3_set_authorizer(tls, e.handle, cFunction(e.auth), 0); rc != sqlite3.SQLITE_OK {
		return nil, fmt.Errorf("sqlcatalog: authorizer: %s", e.errmsg(tls))
	}
	for _, op := range []int32{sqlite3.SQLITE_DBSTATUS_CACHE_USED, sqlite3.SQLITE_DBSTATUS_SCHEMA_USED, sqlite3.SQLITE_DBSTATUS_LOOKASIDE_USED} {
		e.out = [2]uintptr{}
		if sqlite3.Xsqlite3_db_status(tls, e.handle, op, e.outAddr(0), e.outAddr(1), 0) == sqlite3.SQLITE_OK {
			e.bytes += int64(int32(e.out[0]))
		}
	}
	// The arena and the registration index (see Engine.Bytes).
	e.bytes += int64(e.arena.size)
	for k, v := range e.tables {
		e.bytes += int64(len(k)) + 16
		for _, s := range v {
			e.bytes += int64(len(s)) + 16
		}
	}
	return e, nil
}

// open opens the engine's in-memory database.
func (e *Engine) open(tls *libc.TLS) error {
	name, err := libc.CString(":memory:")
	if err != nil {
		return fmt.Errorf("sqlcatalog: open: %w", err)
	}
	defer libc.Xfree(tls, name)
	rc := sqlite3.Xsqlite3_open_v2(tls, name, e.outAddr(0),
		sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_CREATE|sqlite3.SQLITE_OPEN_MEMORY|sqlite3.SQLITE_OPEN_NOMUTEX, 0)
	e.handle = e.out[0]
	if rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlcatalog: open: %s", libc.GoString(sqlite3.Xsqlite3_errstr(tls, rc)))
	}
	// Errors carry SQLite's extended codes, as modernc's driver asks.
	sqlite3.Xsqlite3_extended_result_codes(tls, e.handle, 1)
	return nil
}

// outAddr is the address of e.out[i], for SQLite to write through.
func (e *Engine) outAddr(i int) uintptr { return uintptr(unsafe.Pointer(&e.out[i])) }

func (e *Engine) errmsg(tls *libc.TLS) string {
	return libc.GoString(sqlite3.Xsqlite3_errmsg(tls, e.handle))
}

// exec runs sql (statements without results) on the database.
func (e *Engine) exec(tls *libc.TLS, sql string) error {
	z, err := libc.CString(sql)
	if err != nil {
		return err
	}
	defer libc.Xfree(tls, z)
	if rc := sqlite3.Xsqlite3_exec(tls, e.handle, z, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return errors.New(e.errmsg(tls))
	}
	return nil
}

// Bytes is the memory the engine holds: SQLite's page cache, schema and
// lookaside, the arena (tables, column descriptions) and its table index.
func (e *Engine) Bytes() int64 { return e.bytes }

// Close frees the database, once a statement running has ended; later
// statements fail.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		e.sem <- struct{}{}
		defer e.release()
		if e.handle != 0 {
			tls := libc.NewTLS()
			sqlite3.Xsqlite3_close_v2(tls, e.handle)
			e.data.free(tls)
			tls.Close()
			e.handle = 0
		}
		// No connection holds the modules now.
		e.arena.free()
	})
}

// registerFunctions adds the engine's functions (functionNames), which
// answer from the arena: the tenant's name, the server's version,
// NULL for the current schema.
func (e *Engine) registerFunctions(tls *libc.TLS) error {
	for _, name := range functionNames {
		fn := cFunction(catalogFunction)
		switch name {
		case "version":
			fn = cFunction(versionFunction)
		case "current_schema", "schema":
			fn = cFunction(nullFunction)
		}
		z, err := libc.CString(name)
		if err != nil {
			return fmt.Errorf("sqlcatalog: function %s: %w", name, err)
		}
		rc := sqlite3.Xsqlite3_create_function_v2(tls, e.handle, z, 0, sqlite3.SQLITE_UTF8|sqlite3.SQLITE_DETERMINISTIC, e.arena.p, fn, 0, 0, 0)
		libc.Xfree(tls, z)
		if rc != sqlite3.SQLITE_OK {
			return fmt.Errorf("sqlcatalog: function %s: %s", name, e.errmsg(tls))
		}
	}
	return nil
}

// authorize is the database's authorizer: reads, SELECT and functions
// only (load_extension excepted). It notes what it denies for the error.
func (e *Engine) authorize(_ *libc.TLS, _ uintptr, action int32, _, arg2, _, _ uintptr) int32 {
	if e.mounting {
		return sqlite3.SQLITE_OK
	}
	if denied := refusedC(action, arg2); denied != "" {
		e.denied = denied
		return sqlite3.SQLITE_DENY
	}
	return sqlite3.SQLITE_OK
}

// refusedC is refused for an authorizer's C arguments.
func refusedC(action int32, arg2 uintptr) string {
	name := ""
	if arg2 != 0 {
		name = libc.GoString(arg2)
	}
	return refused(sqlite.AuthorizerActionCode(action), name)
}

// refused is the authorization policy of the engines and the Checker
// alike: "" allows the action (arg2 is the function of an AuthFunction);
// otherwise it names what is refused, for the error.
func refused(action sqlite.AuthorizerActionCode, arg2 string) string {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthRecursive:
		return ""
	case sqlite.AuthFunction:
		if strings.EqualFold(arg2, "load_extension") {
			return "load_extension"
		}
		return ""
	case sqlite.AuthPragma:
		return "PRAGMA"
	case sqlite.AuthAttach:
		return "ATTACH"
	case sqlite.AuthDetach:
		return "DETACH"
	case sqlite.AuthTransaction, sqlite.AuthSavepoint:
		return "transactions"
	default:
		return "writes and DDL"
	}
}

// readOnlyMessage is the answer to a refused statement.
func readOnlyMessage(what string) string {
	return fmt.Sprintf("lake is read-only: %s refused; lake answers SELECT over your tables and information_schema (schemata, tables, columns), SHOW TABLES, SHOW COLUMNS FROM t and DESCRIBE t", what)
}

// acquire takes the engine for one statement, or gives up with ctx.
func (e *Engine) acquire(ctx context.Context) error {
	select {
	case e.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) release() { <-e.sem }

// Query runs one statement (see the package doc for what is answered) and
// returns its result, or an *Error (or the context's error when ctx ends
// before the statement's budget does). The statement's budget
// (Limits.Timeout) and ctx hold for every row: SQLite is interrupted when
// either ends, whichever row it is computing. r, when not nil, is charged
// for the memory the result holds while it is collected (the caller
// releases it); a charge the budget refuses ends the statement with
// ErrBusy.
func (e *Engine) Query(ctx context.Context, text string, r *Reservation) (*Result, error) {
	if len(text) > MaxSQLBytes {
		return nil, invalid("sql: statement of %d bytes, at most %d", len(text), MaxSQLBytes)
	}
	if strings.ContainsRune(text, 0) {
		return nil, invalid("sql: the statement holds a NUL byte")
	}
	query, args, err := rewrite(text, e.tenant, e.tables)
	if err != nil {
		return nil, err
	}
	// A statement naming a registered table is run over its rows when the
	// engine has Data (datatable.go): first names the first such table.
	var first *Error
	if err := e.checker.check(query, e.tables); err != nil {
		if e.data == nil || !errors.As(err, &first) || first.Kind != ErrTableData {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.limits.Timeout)
	defer cancel()
	if err := e.acquire(ctx); err != nil {
		return nil, e.ctxError(ctx, err)
	}
	defer e.release()
	if e.handle == 0 {
		return nil, errClosed
	}
	if first != nil {
		return e.queryData(ctx, query, args, r, first)
	}
	e.denied = ""
	res, err := e.run(ctx, query, args, r)
	if err != nil {
		return nil, e.classify(ctx, err)
	}
	return res, nil
}

// run runs the statement (stmt.go) and collects its result, interrupted
// when ctx ends.
func (e *Engine) run(ctx context.Context, query string, args []any, r *Reservation) (*Result, error) {
	stop := e.interruptOnDone(ctx)
	defer stop()
	tls := libc.NewTLS()
	defer tls.Close()
	s, err := prepare(tls, e.handle, query, args)
	defer s.finalize()
	if err != nil {
		return nil, err
	}
	return e.collect(ctx, s, r)
}

// classify turns a failure of SQLite into an *Error.
func (e *Engine) classify(ctx context.Context, err error) error {
	var se *Error
	if errors.As(err, &se) {
		return se
	}
	if ctx.Err() != nil {
		return e.ctxError(ctx, ctx.Err())
	}
	var le interface{ Code() int }
	// SQLite answers a denial with SQLITE_AUTH, or SQLITE_ERROR for a
	// function ("not authorized to use function"); the authorizer noted it.
	if e.denied != "" || errors.As(err, &le) && le.Code()&0xff == sqlite3.SQLITE_AUTH {
		what := e.denied
		if what == "" {
			what = "the statement"
		}
		return &Error{Kind: ErrReadOnly, Msg: readOnlyMessage(what), Offset: -1}
	}
	if errors.As(err, &le) && le.Code()&0xff == sqlite3.SQLITE_READONLY {
		return &Error{Kind: ErrReadOnly, Msg: readOnlyMessage("writes"), Offset: -1}
	}
	return invalid("sql: %v", err)
}

func (e *Engine) ctxError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Kind: ErrTimeout, Msg: fmt.Sprintf("sql: the statement ran past its budget of %s", e.limits.Timeout), Offset: -1}
	}
	return err
}

// EffectiveTimeout is the time budget l gives a statement (its Timeout,
// or DefaultTimeout).
func EffectiveTimeout(l Limits) time.Duration { return l.withDefaults().Timeout }

// EffectiveMaxBytes is the result cap l gives a statement (its MaxBytes,
// or DefaultMaxBytes).
func EffectiveMaxBytes(l Limits) int { return l.withDefaults().MaxBytes }
