package discovery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func key(t string) cacheKey { return cacheKey{kind: kindTenant, tenant: t} }

func sized(n int64) func() (*tenantState, error) {
	return func() (*tenantState, error) { return &tenantState{bytes: n}, nil }
}

// tenants is the cache seen as the prepared tenants' cache it was before it
// held other kinds: get builds and returns a prepared tenant.
type tenants struct{ *cache }

func newTenantCache(budget int64) tenants { return tenants{newCache(budget)} }

func (c tenants) get(ctx context.Context, k cacheKey, build func() (*tenantState, error)) (*tenantState, error) {
	h, err := c.cache.get(ctx, k, func() (any, int64, error) {
		ts, err := build()
		if err != nil {
			return nil, 0, err
		}
		return ts, ts.bytes, nil
	})
	if err != nil {
		return nil, err
	}
	defer h.release()
	return h.value().(*tenantState), nil
}

func (c tenants) Stats() CacheStats { return c.stats() }

func (c tenants) retain(keep func(cacheKey) bool) {
	c.cache.retain(func(tenant string, addr [32]byte) bool {
		return keep(cacheKey{kind: kindTenant, tenant: tenant, addr: addr})
	})
}

// Concurrent first requests for one tenant build it once: the build blocks
// until every other request is waiting on it.
func TestCacheSingleFlight(t *testing.T) {
	t.Parallel()
	c := newTenantCache(1 << 20)
	release := make(chan struct{})
	builds := 0
	build := func() (*tenantState, error) {
		builds++
		<-release
		return &tenantState{bytes: 10}, nil
	}
	const waiters = 8
	var wg sync.WaitGroup
	got := make([]*tenantState, waiters+1)
	wg.Go(func() { got[0], _ = c.get(context.Background(), key("a"), build) })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		_, started := c.entries[key("a")]
		c.mu.Unlock()
		if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first build never started")
		}
	}
	for i := 1; i <= waiters; i++ {
		wg.Go(func() {
			got[i], _ = c.get(context.Background(), key("a"), func() (*tenantState, error) {
				t.Error("a second build ran")
				return nil, errors.New("second build")
			})
		})
	}
	for deadline := time.Now().Add(10 * time.Second); c.Stats().Hits < waiters; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hits = %d, want %d waiters", c.Stats().Hits, waiters)
		}
	}
	close(release)
	wg.Wait()
	for i, st := range got {
		if st == nil || st != got[0] {
			t.Fatalf("request %d got %p, want the one build %p", i, st, got[0])
		}
	}
	if st := c.Stats(); builds != 1 || st.Builds != 1 || st.Tenants != 1 || st.Bytes != 10 {
		t.Fatalf("builds %d, stats %+v; want one build of 10 bytes", builds, st)
	}
}

// A waiter gives up with its context; the build goes on for the others.
func TestCacheWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	c := newTenantCache(1 << 20)
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.get(context.Background(), key("a"), func() (*tenantState, error) { <-release; return &tenantState{}, nil })
	}()
	for c.Stats().Builds == 0 {
		c.mu.Lock()
		_, started := c.entries[key("a")]
		c.mu.Unlock()
		if started {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.get(ctx, key("a"), sized(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("get with a canceled context: %v, want context.Canceled", err)
	}
	close(release)
	<-done
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	c := newTenantCache(100)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := c.get(ctx, key(n), sized(40)); err != nil {
			t.Fatal(err)
		}
		if n == "b" {
			// Touch a: b becomes the least recently used.
			if _, err := c.get(ctx, key("a"), sized(40)); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := c.Stats()
	if st.Tenants != 2 || st.Bytes != 80 || st.Evictions != 1 || st.Builds != 3 {
		t.Fatalf("stats %+v, want 2 tenants of 80 bytes after 1 eviction and 3 builds", st)
	}
	c.mu.Lock()
	_, hasA := c.entries[key("a")]
	_, hasB := c.entries[key("b")]
	c.mu.Unlock()
	if !hasA || hasB {
		t.Fatalf("after evicting: a cached %v, b cached %v; want a kept and b evicted", hasA, hasB)
	}
}

// An entry over the whole budget is kept until the next build; the memory
// held is at most max(budget, the largest entry).
func TestCacheOversizedEntry(t *testing.T) {
	t.Parallel()
	c := newTenantCache(10)
	ctx := context.Background()
	if _, err := c.get(ctx, key("big"), sized(50)); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Tenants != 1 || st.Bytes != 50 {
		t.Fatalf("stats %+v, want the oversized entry kept", st)
	}
	if _, err := c.get(ctx, key("small"), sized(5)); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Tenants != 1 || st.Bytes != 5 || st.Evictions != 1 {
		t.Fatalf("stats %+v, want only the small entry", st)
	}
}

func TestCacheBuildFailures(t *testing.T) {
	t.Parallel()
	c := newTenantCache(100)
	ctx := context.Background()
	for name, build := range map[string]func() (*tenantState, error){
		"error": func() (*tenantState, error) { return nil, errors.New("corrupt segment") },
		"panic": func() (*tenantState, error) { panic("bad segment") },
	} {
		if _, err := c.get(ctx, key(name), build); err == nil {
			t.Fatalf("%s: get succeeded", name)
		}
		// A failure is not cached: the next request builds again.
		st, err := c.get(ctx, key(name), sized(1))
		if err != nil || st == nil {
			t.Fatalf("%s: get after a failure: %v, %v", name, st, err)
		}
	}
	if st := c.Stats(); st.BuildErrors != 2 || st.Builds != 4 || st.Tenants != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// retain drops entries a new blob no longer holds, a build in flight
// included (its requester still gets the result).
func TestCacheRetain(t *testing.T) {
	t.Parallel()
	c := newTenantCache(1 << 20)
	ctx := context.Background()
	for i := range 4 {
		if _, err := c.get(ctx, key(fmt.Sprint(i)), sized(1)); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	done := make(chan *tenantState)
	go func() {
		st, _ := c.get(ctx, key("inflight"), func() (*tenantState, error) { <-release; return &tenantState{bytes: 7}, nil })
		done <- st
	}()
	for {
		c.mu.Lock()
		_, started := c.entries[key("inflight")]
		c.mu.Unlock()
		if started {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c.retain(func(k cacheKey) bool { return k.tenant == "0" || k.tenant == "2" })
	close(release)
	if st := <-done; st == nil || st.bytes != 7 {
		t.Fatalf("the in-flight request got %v", st)
	}
	if st := c.Stats(); st.Tenants != 2 || st.Bytes != 2 {
		t.Fatalf("stats %+v, want tenants 0 and 2 only", st)
	}
}

func TestDefaultCacheBytes(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if v, ok := m[p]; ok {
				return []byte(v), nil
			}
			return nil, errors.New("no such file")
		}
	}
	v2, v1 := cgroupLimitFiles[0], cgroupLimitFiles[1]
	const noGoLimit = int64(1<<63 - 1)
	tests := []struct {
		name    string
		files   map[string]string
		goLimit int64
		want    int64
	}{
		{"no limit anywhere", nil, noGoLimit, FallbackCacheBytes},
		{"cgroup v2 1 GiB", map[string]string{v2: "1073741824\n"}, noGoLimit, 429496729},
		{"cgroup v2 max", map[string]string{v2: "max\n"}, noGoLimit, FallbackCacheBytes},
		{"cgroup v1 512 MiB", map[string]string{v1: "536870912\n"}, noGoLimit, 214748364},
		{"cgroup v1 unlimited", map[string]string{v1: "9223372036854771712\n"}, noGoLimit, FallbackCacheBytes},
		{"GOMEMLIMIT below the cgroup", map[string]string{v2: "1073741824"}, 900 * mib, 377487360},
		{"GOMEMLIMIT alone", nil, 500 * mib, 209715200},
		{"tiny limit", map[string]string{v2: "10485760"}, noGoLimit, MinCacheBytes},
		{"garbage", map[string]string{v2: "lots"}, noGoLimit, FallbackCacheBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := defaultCacheBytes(files(tt.files), tt.goLimit); got != tt.want {
				t.Fatalf("defaultCacheBytes = %d, want %d", got, tt.want)
			}
		})
	}
}
