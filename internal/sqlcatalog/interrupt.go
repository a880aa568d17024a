package sqlcatalog

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// connHandle is the sqlite3* of a modernc.org/sqlite driver connection.
// Statements run on it through SQLite's C API (stmt.go), and
// interruptOnDone arms sqlite3_interrupt for the whole statement with it
// (the driver's own interrupt is armed only while it steps to the first
// row, so a statement whose later rows are slow would run on past its
// budget and its client). The driver does not export it: it is read from
// the connection's db field (a uintptr; reflection reads an unexported
// integer field without unsafe), and a driver without that field fails
// Build, so an upgrade that renames it is caught by every test that
// builds an engine.
func connHandle(dc any) (uintptr, error) {
	v := reflect.ValueOf(dc)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("db"); f.IsValid() && f.Kind() == reflect.Uintptr && f.Uint() != 0 {
			return uintptr(f.Uint()), nil
		}
	}
	return 0, fmt.Errorf("sqlcatalog: driver connection %T has no sqlite3 handle", dc)
}

// interruptOnDone interrupts the statement running on e's connection when
// ctx ends, until the returned stop is called (before the statement's rows
// are closed). An interrupt while the statement is active (between two
// steps included) makes its next step fail with SQLITE_INTERRUPT; SQLite
// clears one delivered while no statement is active, and stop prevents
// any after the statement.
func (e *Engine) interruptOnDone(ctx context.Context) (stop func()) {
	if ctx.Done() == nil || e.handle == 0 {
		return func() {}
	}
	var mu sync.Mutex
	stopped := false
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			mu.Lock()
			if !stopped {
				// A TLS of its own: the statement runs on the
				// connection's, which is not safe for concurrent use.
				tls := libc.NewTLS()
				sqlite3.Xsqlite3_interrupt(tls, e.handle)
				tls.Close()
			}
			mu.Unlock()
		case <-done:
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		close(done)
	}
}
