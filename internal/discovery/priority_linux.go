package discovery

import (
	"runtime"
	"syscall"
)

// rowsNice is the nice value of the threads that read tables' rows.
const rowsNice = 10

// lowPriority runs f on an OS thread of its own whose CPU priority is
// lowered to nice rowsNice, and waits for it: reading and decoding a
// table's files is CPU work a request for rows asked for, and the
// catalog's own answers (GetTables, information_schema) must not queue
// behind it for a core. The thread is never unlocked, so it ends with f's
// goroutine and its lowered priority with it (raising a priority back
// needs CAP_SYS_NICE, which a container rarely has). If the priority
// cannot be lowered, f runs all the same.
//
// A panic in f is raised again on the caller's goroutine, where the
// server's recovery catches it (a goroutine's own panic would end the
// process).
func lowPriority(f func()) {
	done := make(chan struct{})
	var panicked any
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		runtime.LockOSThread()
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), rowsNice)
		f()
	}()
	<-done
	if panicked != nil {
		panic(panicked)
	}
}
