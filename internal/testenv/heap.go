package testenv

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// PeakHeap runs fn and returns the most heap (live and not yet collected
// objects) it held above the starting point, sampled every millisecond, for
// benchmarks' peak-memory figures.
func PeakHeap(fn func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-done
	metrics.Read(sample)
	if v := sample[0].Value.Uint64(); v > peak.Load() {
		peak.Store(v)
	}
	if peak.Load() < base {
		return 0
	}
	return peak.Load() - base
}
