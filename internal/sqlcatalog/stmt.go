package sqlcatalog

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// A statement runs on its engine's database through SQLite's C API, as
// the Checker compiles: each value is read with one sqlite3_column_value
// and sqlite3_value_* calls into the result's typed columns (result.go),
// with no Go value per cell (the database/sql driver's rows make two or
// three calls per value and hand each text over as a Go string of its
// own). The engine is held (Engine.sem) while a statement runs, so nothing
// else uses the database; the statement runs on a TLS of its own, as the
// interrupt does (interrupt.go).

// statement is one prepared statement on an engine's connection.
type statement struct {
	tls   *libc.TLS
	db    uintptr
	pstmt uintptr // 0 for a text with no statement
	cols  int
	// out is where SQLite writes the prepared statement back: a field of a
	// heap object, which does not move (see Checker.out).
	out uintptr
}

// prepare compiles query on db and binds args (the strings the SHOW and
// DESCRIBE rewrites take). The caller finalizes the statement, also when
// prepare fails.
func prepare(tls *libc.TLS, db uintptr, query string, args []any) (*statement, error) {
	s := &statement{tls: tls, db: db}
	z, err := libc.CString(query)
	if err != nil {
		return s, fmt.Errorf("sqlcatalog: %w", err)
	}
	defer libc.Xfree(tls, z)
	// The Checker has made sure text after the first statement is only
	// white space and comments: the tail is not read.
	rc := sqlite3.Xsqlite3_prepare_v2(tls, db, z, -1, uintptr(unsafe.Pointer(&s.out)), 0)
	s.pstmt = s.out
	if rc != sqlite3.SQLITE_OK {
		return s, s.error(rc)
	}
	if s.pstmt == 0 {
		return s, nil
	}
	s.cols = int(sqlite3.Xsqlite3_column_count(tls, s.pstmt))
	for i, a := range args {
		v, ok := a.(string)
		if !ok {
			return s, fmt.Errorf("sqlcatalog: argument %d is %T, not a string", i+1, a)
		}
		if err := s.bindText(i+1, v); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (s *statement) bindText(i int, v string) error {
	z, err := libc.CString(v)
	if err != nil {
		return fmt.Errorf("sqlcatalog: %w", err)
	}
	defer libc.Xfree(s.tls, z)
	if rc := sqlite3.Xsqlite3_bind_text(s.tls, s.pstmt, int32(i), z, int32(len(v)), sqlite3.SQLITE_TRANSIENT); rc != sqlite3.SQLITE_OK {
		return s.error(rc)
	}
	return nil
}

// finalize frees the statement.
func (s *statement) finalize() {
	if s.pstmt != 0 {
		sqlite3.Xsqlite3_finalize(s.tls, s.pstmt)
		s.pstmt = 0
	}
}

// columns are the result's column names and their declared types (upper
// case; "" for an expression).
func (s *statement) columns() (names, decl []string) {
	names, decl = make([]string, s.cols), make([]string, s.cols)
	for i := range s.cols {
		names[i] = libc.GoString(sqlite3.Xsqlite3_column_name(s.tls, s.pstmt, int32(i)))
		decl[i] = strings.ToUpper(libc.GoString(sqlite3.Xsqlite3_column_decltype(s.tls, s.pstmt, int32(i))))
	}
	return names, decl
}

// step moves to the next row: true when there is one, false at the end.
func (s *statement) step() (bool, error) {
	if s.pstmt == 0 {
		return false, nil
	}
	switch rc := sqlite3.Xsqlite3_step(s.tls, s.pstmt); rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	default:
		return false, s.error(rc)
	}
}

// read appends the current row's values to cols (one per result column)
// and returns the bytes they count for (valueBytes).
func (s *statement) read(cols []column) int {
	size := 0
	for i := range cols {
		v := sqlite3.Xsqlite3_column_value(s.tls, s.pstmt, int32(i))
		switch sqlite3.Xsqlite3_value_type(s.tls, v) {
		case sqlite3.SQLITE_INTEGER:
			size += cols[i].addNumber(kindInt, uint64(sqlite3.Xsqlite3_value_int64(s.tls, v)))
		case sqlite3.SQLITE_FLOAT:
			size += cols[i].addNumber(kindFloat, math.Float64bits(sqlite3.Xsqlite3_value_double(s.tls, v)))
		case sqlite3.SQLITE_TEXT:
			// A text's bytes as a blob's: _text would copy a text that is
			// not NUL-terminated (the columns table's are not) to
			// terminate it. The database is UTF-8, so the bytes are.
			// _blob before _bytes, as SQLite's documentation asks.
			p := sqlite3.Xsqlite3_value_blob(s.tls, v)
			size += cols[i].addBytes(kindText, cBytes(p, sqlite3.Xsqlite3_value_bytes(s.tls, v)))
		case sqlite3.SQLITE_BLOB:
			p := sqlite3.Xsqlite3_value_blob(s.tls, v)
			size += cols[i].addBytes(kindBlob, cBytes(p, sqlite3.Xsqlite3_value_bytes(s.tls, v)))
		default:
			size += cols[i].addNull()
		}
	}
	return size
}

// cBytes is the n bytes SQLite holds at p, valid until the statement
// moves on.
func cBytes(p uintptr, n int32) []byte {
	if p == 0 || n <= 0 {
		return nil
	}
	return cSlice[byte](p, int(n))
}

// sqliteError is a failure SQLite reported: its result code and message,
// worded as modernc.org/sqlite's driver words them.
type sqliteError struct {
	code int
	msg  string
}

func (e *sqliteError) Error() string { return e.msg }

// Code is SQLite's (extended) result code.
func (e *sqliteError) Code() int { return e.code }

func (s *statement) error(rc int32) error {
	str := libc.GoString(sqlite3.Xsqlite3_errstr(s.tls, rc))
	msg := libc.GoString(sqlite3.Xsqlite3_errmsg(s.tls, s.db))
	if msg == str {
		return &sqliteError{code: int(rc), msg: fmt.Sprintf("%s (%v)", str, rc)}
	}
	return &sqliteError{code: int(rc), msg: fmt.Sprintf("%s: %s (%v)", str, msg, rc)}
}
