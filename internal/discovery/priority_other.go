//go:build !linux

package discovery

// lowPriority runs f: lowering one thread's priority is Linux's
// (priority_linux.go).
func lowPriority(f func()) { f() }
