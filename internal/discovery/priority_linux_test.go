package discovery

import (
	"syscall"
	"testing"
)

// niceOfThisThread is the calling thread's nice value (the raw syscall
// answers 20 - nice).
func niceOfThisThread(t *testing.T) int {
	t.Helper()
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - p
}

func TestLowPriorityRunsAtRowsNice(t *testing.T) {
	before := niceOfThisThread(t)
	var inside int
	lowPriority(func() { inside = niceOfThisThread(t) })
	if want := max(before, rowsNice); inside != want {
		t.Fatalf("nice inside lowPriority %d, want %d", inside, want)
	}
	if after := niceOfThisThread(t); after != before {
		t.Fatalf("the caller's thread's nice changed: %d → %d", before, after)
	}
}
