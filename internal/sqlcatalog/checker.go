package sqlcatalog

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Checker compiles statements on a database with the engines' tables and
// functions and no rows, through SQLite's C API as modernc.org/sqlite/lib
// exposes it, for what the database/sql driver does not tell: where a
// statement fails (sqlite3_error_offset), whether text follows the first
// statement (the prepare's tail) and whether the statement writes
// (sqlite3_stmt_readonly). It holds no tenant's data, so one Checker
// serves every tenant; it is safe for concurrent use (statements are
// compiled one at a time, in microseconds).
//
// It compiles under the engines' authorizer (refused) and sqlite3_limit
// values (sqlLimits), since compiling is not harmless: SQLite carries out
// some PRAGMAs while it compiles them (temp_store_directory,
// soft_heap_limit and hard_heap_limit among them, which are process-wide),
// and the authorizer is what stops them before they act.
type Checker struct {
	mu  sync.Mutex
	tls *libc.TLS
	db  uintptr
	// out holds what SQLite writes back (a handle, a statement, a tail):
	// it is passed by address, so it lives on the Go heap (a field of a
	// heap object), which does not move, unlike a goroutine's stack.
	out *[2]uintptr
	// auth is the authorizer SQLite calls back (a method value, kept here
	// so that the closure SQLite holds the address of stays alive);
	// denied is what it last refused (set and read under mu).
	auth   func(*libc.TLS, uintptr, int32, uintptr, uintptr, uintptr, uintptr) int32
	denied string
}

// outAddr is the address of c.out[i], for SQLite to write through.
func (c *Checker) outAddr(i int) uintptr {
	return uintptr(unsafe.Pointer(&c.out[i]))
}

// nullFunction stands for the engines' functions on the Checker, which
// only compiles statements and never runs them.
func nullFunction(tls *libc.TLS, ctx uintptr, _ int32, _ uintptr) {
	sqlite3.Xsqlite3_result_null(tls, ctx)
}

// cFunction is the address SQLite's C API takes for a Go function: a Go
// func value is a pointer to its code pointer, or to a closure's code
// pointer and captured values (golang.org/s/go11func), and modernc's
// transpiled C calls such a pointer back as that Go function. The func
// value must stay reachable while SQLite holds the address.
func cFunction[F any](f F) uintptr {
	return *(*uintptr)(unsafe.Pointer(&struct{ f F }{f}))
}

// authorize is the Checker's authorizer: the engines' policy (refused).
func (c *Checker) authorize(_ *libc.TLS, _ uintptr, action int32, _, arg2, _, _ uintptr) int32 {
	if denied := refusedC(action, arg2); denied != "" {
		c.denied = denied
		return sqlite3.SQLITE_DENY
	}
	return sqlite3.SQLITE_OK
}

// NewChecker opens the Checker's database. Close frees it.
func NewChecker() (*Checker, error) {
	c := &Checker{tls: libc.NewTLS(), out: new([2]uintptr)}
	name, err := libc.CString(":memory:")
	if err != nil {
		c.tls.Close()
		return nil, fmt.Errorf("sqlcatalog: checker: %w", err)
	}
	defer libc.Xfree(c.tls, name)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, c.outAddr(0), sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_CREATE|sqlite3.SQLITE_OPEN_MEMORY, 0)
	c.db = c.out[0]
	if rc != sqlite3.SQLITE_OK {
		c.Close()
		return nil, fmt.Errorf("sqlcatalog: checker: open: code %d", rc)
	}
	if err := c.exec(checkerDDL); err != nil {
		c.Close()
		return nil, err
	}
	for _, l := range sqlLimits {
		sqlite3.Xsqlite3_limit(c.tls, c.db, int32(l.id), int32(l.val))
	}
	c.auth = c.authorize
	if rc := sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, cFunction(c.auth), 0); rc != sqlite3.SQLITE_OK {
		c.Close()
		return nil, fmt.Errorf("sqlcatalog: checker: authorizer: %s", c.errmsg())
	}
	fn := cFunction(nullFunction)
	for _, f := range functionNames {
		z, err := libc.CString(f)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("sqlcatalog: checker: %w", err)
		}
		rc := sqlite3.Xsqlite3_create_function_v2(c.tls, c.db, z, 0, sqlite3.SQLITE_UTF8, 0, fn, 0, 0, 0)
		libc.Xfree(c.tls, z)
		if rc != sqlite3.SQLITE_OK {
			c.Close()
			return nil, fmt.Errorf("sqlcatalog: checker: function %s: %s", f, c.errmsg())
		}
	}
	return c, nil
}

// Close frees the Checker's database.
func (c *Checker) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db != 0 {
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
		c.db = 0
	}
	if c.tls != nil {
		c.tls.Close()
		c.tls = nil
	}
}

func (c *Checker) errmsg() string { return libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db)) }

func (c *Checker) exec(sql string) error {
	z, err := libc.CString(sql)
	if err != nil {
		return fmt.Errorf("sqlcatalog: checker: %w", err)
	}
	defer libc.Xfree(c.tls, z)
	if rc := sqlite3.Xsqlite3_exec(c.tls, c.db, z, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlcatalog: checker: %s", c.errmsg())
	}
	return nil
}

// compiled is what compiling the first statement of a text tells.
type compiled struct {
	empty    bool   // no statement at all (white space and comments)
	errMsg   string // SQLite's message when it does not compile
	errAt    int    // byte offset of the failure, or -1
	tail     int    // byte offset where the first statement ends
	readOnly bool
}

// compiler compiles statements on one database: the Checker's, or an
// engine's own when a statement reads registered tables (its data tables
// are on the engine alone, datatable.go). out is where SQLite writes back
// (a heap object, see Checker.out); denied is the database's authorizer's
// note of what it refused.
type compiler struct {
	tls    *libc.TLS
	db     uintptr
	out    *[2]uintptr
	denied *string
}

// compile compiles the first statement of text.
func (c compiler) compile(text string) (compiled, error) {
	z, err := libc.CString(text)
	if err != nil {
		return compiled{}, fmt.Errorf("sqlcatalog: checker: %w", err)
	}
	defer libc.Xfree(c.tls, z)
	c.out[0], c.out[1] = 0, 0
	rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, z, int32(len(text)), uintptr(unsafe.Pointer(&c.out[0])), uintptr(unsafe.Pointer(&c.out[1])))
	stmt, tail := c.out[0], c.out[1]
	if rc != sqlite3.SQLITE_OK {
		return compiled{errMsg: libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db)), errAt: int(sqlite3.Xsqlite3_error_offset(c.tls, c.db))}, nil
	}
	r := compiled{tail: int(tail - z), errAt: -1}
	if stmt == 0 {
		r.empty = true
		return r, nil
	}
	r.readOnly = sqlite3.Xsqlite3_stmt_readonly(c.tls, stmt) != 0
	sqlite3.Xsqlite3_finalize(c.tls, stmt)
	return r, nil
}

// check compiles text (one statement, read-only) and returns nil or the
// *Error saying what is wrong. tables indexes the tenant's registrations,
// so that a query naming one is told apart.
func (c *Checker) check(text string, tables map[string][]string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db == 0 {
		return fmt.Errorf("sqlcatalog: checker closed")
	}
	return compiler{tls: c.tls, db: c.db, out: c.out, denied: &c.denied}.check(text, tables)
}

// check is Checker.check on c's database.
func (c compiler) check(text string, tables map[string][]string) error {
	*c.denied = ""
	first, err := c.compile(text)
	switch {
	case err != nil:
		return err
	case *c.denied != "":
		return &Error{Kind: ErrReadOnly, Msg: readOnlyMessage(*c.denied), Offset: -1}
	case first.errMsg != "":
		return failure(text, first.errMsg, first.errAt, tables)
	case first.empty:
		return invalid("sql: the request holds no statement")
	}
	if rest := text[first.tail:]; strings.TrimSpace(rest) != "" {
		second, err := c.compile(rest)
		if err != nil {
			return err
		}
		*c.denied = "" // the second statement is refused whatever it is
		if !second.empty || second.errMsg != "" {
			return &Error{Kind: ErrInvalid, Offset: first.tail,
				Msg: "sql: one statement per request" + position(text, first.tail)}
		}
	}
	if !first.readOnly {
		return &Error{Kind: ErrReadOnly, Msg: readOnlyMessage("writes and DDL"), Offset: -1}
	}
	return nil
}

// position describes a byte offset of text as " at line L, column C", or
// "" when off is -1.
func position(text string, off int) string {
	if off < 0 || off > len(text) {
		return ""
	}
	line := 1 + strings.Count(text[:off], "\n")
	col := 1 + utf8.RuneCountInString(text[strings.LastIndexByte(text[:off], '\n')+1:off])
	return fmt.Sprintf(" at line %d, column %d", line, col)
}

// failure turns SQLite's message for a statement that does not compile
// into an *Error. SQLite names a table it cannot resolve only in its
// message ("no such table: [schema.]name"); when that name is one of the
// tenant's registrations, the query is over a table's data.
func failure(text, msg string, at int, tables map[string][]string) error {
	if strings.HasPrefix(msg, "table ") && strings.HasSuffix(msg, " may not be modified") {
		// A write to a registered table's rows (a virtual table).
		return &Error{Kind: ErrReadOnly, Msg: readOnlyMessage("writes"), Offset: -1}
	}
	if name, ok := strings.CutPrefix(msg, "no such table: "); ok {
		if regs := tables[strings.ToLower(name)]; !strings.Contains(name, ".") && len(regs) > 1 {
			var nss []string
			for _, r := range regs {
				ns, _, _ := strings.Cut(r, "\x00")
				nss = append(nss, ns+"."+name)
			}
			return &Error{Kind: ErrInvalid, Offset: at, Msg: fmt.Sprintf("sql: table %s is in more than one namespace%s; qualify it: %s",
				name, position(text, at), strings.Join(nss, " or "))}
		}
		if ns, table, found := registered(name, tables); found {
			return &Error{Kind: ErrTableData, Namespace: ns, Table: table, Offset: at, Msg: fmt.Sprintf("sql: %s is a registered table", name)}
		}
		return &Error{Kind: ErrInvalid, Offset: at, Msg: "sql: " + msg + position(text, at) +
			"; lake answers your registered tables and information_schema.schemata, information_schema.tables and information_schema.columns"}
	}
	return &Error{Kind: ErrInvalid, Offset: at, Msg: "sql: " + msg + position(text, at)}
}

// registered finds the registration a name SQLite could not resolve
// stands for: "namespace.table" (SQLite reads the namespace as a schema
// name) or "table" when one namespace alone has it. Names match exactly,
// else ignoring case (SQLite's identifiers are case-insensitive).
func registered(name string, tables map[string][]string) (ns, table string, ok bool) {
	for _, exact := range []bool{true, false} {
		same := func(a, b string) bool { return a == b || !exact && strings.EqualFold(a, b) }
		var hits []string
		for i := 0; i <= len(name); i++ {
			wantNS, wantTable := "", name
			if i < len(name) {
				if name[i] != '.' {
					continue
				}
				wantNS, wantTable = name[:i], name[i+1:]
			}
			for _, r := range tables[strings.ToLower(wantTable)] {
				rns, rname, _ := strings.Cut(r, "\x00")
				if same(rname, wantTable) && (i == len(name) || same(rns, wantNS)) {
					hits = append(hits, r)
				}
			}
		}
		if len(hits) > 0 {
			ns, table, _ = strings.Cut(hits[0], "\x00")
			return ns, table, true
		}
	}
	return "", "", false
}
