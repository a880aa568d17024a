package sqlcatalog

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// progressOps is how many virtual machine steps SQLite runs between two
// calls of the progress handler interruptOnDone registers.
const progressOps = 1000

// interruptOnDone interrupts the statement running on e's database when
// ctx ends, until the returned stop is called (before the statement is
// finalized). An interrupt while the statement is active (between two
// steps included) makes its next step fail with SQLITE_INTERRUPT. SQLite
// clears one delivered while no statement is active, so a context that
// ends after the last check of it and before the statement's first step
// becomes active would be missed: a progress handler that fails the
// statement once ctx has ended (checked every progressOps steps) closes
// that window. stop unregisters it and prevents any interrupt after the
// statement.
func (e *Engine) interruptOnDone(ctx context.Context) (stop func()) {
	db := e.handle
	if ctx.Done() == nil || db == 0 {
		return func() {}
	}
	var canceled atomic.Bool
	// SQLite holds the address of this closure until stop unregisters it
	// (runtime.KeepAlive there keeps it reachable until then).
	progress := func(*libc.TLS, uintptr) int32 {
		if canceled.Load() {
			return 1
		}
		return 0
	}
	tls := libc.NewTLS()
	sqlite3.Xsqlite3_progress_handler(tls, db, progressOps, cFunction(progress), 0)
	tls.Close()
	var mu sync.Mutex
	stopped := false
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			canceled.Store(true)
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
		tls := libc.NewTLS()
		sqlite3.Xsqlite3_progress_handler(tls, db, 0, 0, 0)
		tls.Close()
		runtime.KeepAlive(progress)
	}
}
