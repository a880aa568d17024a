package discovery

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Cache budget defaults (see DefaultCacheBytes).
const (
	// CacheMemoryShare is the share of the memory limit the cache
	// (prepared tenants, SQL engines and results, kept answers) gets by
	// default: the rest holds the compressed blob, the tenant index,
	// a reload's second blob and request buffers.
	CacheMemoryShare = 0.40
	// FallbackCacheBytes is the default budget when no memory limit is set.
	FallbackCacheBytes = 256 << 20
	// MinCacheBytes is the smallest default budget.
	MinCacheBytes = 16 << 20
)

// Where the container's memory limit is read, cgroup v2 first.
var cgroupLimitFiles = []string{
	"/sys/fs/cgroup/memory.max",                   // cgroup v2
	"/sys/fs/cgroup/memory/memory.limit_in_bytes", // cgroup v1
}

// DefaultCacheBytes is the cache budget used when
// Options.CacheBytes is 0:
//
//	limit = min(container memory limit, GOMEMLIMIT)
//	budget = max(16 MiB, 40% of limit), or 256 MiB when neither is set
//
// The container limit is cgroup v2's /sys/fs/cgroup/memory.max, else cgroup
// v1's /sys/fs/cgroup/memory/memory.limit_in_bytes; "max" or a value of
// 2^60 or more means unlimited. GOMEMLIMIT is read from the runtime
// (debug.SetMemoryLimit), so it counts whether set by the environment or by
// the program.
func DefaultCacheBytes() int64 {
	return defaultCacheBytes(os.ReadFile, debug.SetMemoryLimit(-1))
}

func defaultCacheBytes(readFile func(string) ([]byte, error), goLimit int64) int64 {
	limit := int64(math.MaxInt64)
	for _, path := range cgroupLimitFiles {
		b, err := readFile(path)
		if err != nil {
			continue
		}
		if v, ok := parseLimit(string(b)); ok {
			limit = v
		}
		break
	}
	if goLimit > 0 && goLimit < 1<<60 {
		limit = min(limit, goLimit)
	}
	if limit == math.MaxInt64 {
		return FallbackCacheBytes
	}
	return max(MinCacheBytes, int64(float64(limit)*CacheMemoryShare))
}

// parseLimit reads a cgroup memory limit; ok is false for "max", values of
// 2^60 or more (cgroup v1's "unlimited") and anything unparsable.
func parseLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= 1<<60 {
		return 0, false
	}
	return v, true
}
