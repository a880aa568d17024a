package sqlcatalog

import (
	"context"
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// interruptOnDone interrupts the statement running on e's database when
// ctx ends, until the returned stop is called (before the statement is
// finalized). An interrupt while the statement is active (between two
// steps included) makes its next step fail with SQLITE_INTERRUPT; SQLite
// clears one delivered while no statement is active, and stop prevents
// any after the statement.
func (e *Engine) interruptOnDone(ctx context.Context) (stop func()) {
	db := e.handle
	if ctx.Done() == nil || db == 0 {
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
				// A TLS of its own: the statement's is in use, and a
				// TLS is not safe for concurrent use.
				tls := libc.NewTLS()
				sqlite3.Xsqlite3_interrupt(tls, db)
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
