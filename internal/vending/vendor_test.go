package vending

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeAssumer stands in for STS behind the consumer-owned assumer interface:
// it counts calls and mints credentials expiring after the asked duration.
type fakeAssumer struct {
	clock   *fakeClock
	mu      sync.Mutex
	calls   []AssumeInput
	err     error
	release chan struct{} // when non-nil, AssumeRole waits for it
}

func (f *fakeAssumer) AssumeRole(ctx context.Context, in AssumeInput) (Credentials, error) {
	if f.release != nil {
		<-f.release
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, in)
	if f.err != nil {
		return Credentials{}, f.err
	}
	n := len(f.calls)
	return Credentials{
		AccessKeyID:     fmt.Sprintf("AK%d", n),
		SecretAccessKey: fmt.Sprintf("secret%d", n),
		SessionToken:    fmt.Sprintf("token%d", n),
		Expiration:      f.clock.Now().Add(in.Duration),
	}, nil
}

func (f *fakeAssumer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type recorder struct {
	mu    sync.Mutex
	vends []Vend
}

func (r *recorder) Vended(_ context.Context, v Vend) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vends = append(r.vends, v)
}

const testRole = "arn:aws:iam::123456789012:role/lake-data-reader"

func newTestVendor(t testing.TB, o Options) (*Vendor, *fakeAssumer, *fakeClock, *recorder) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)}
	a := &fakeAssumer{clock: clock}
	rec := &recorder{}
	o.RoleARN = testRole
	o.Now = clock.Now
	o.Observer = rec
	v, err := New(a, NewGuard([]string{"lake-data"}), o)
	if err != nil {
		t.Fatal(err)
	}
	return v, a, clock, rec
}

func request(table, location string) Request {
	return Request{
		Who: "alice", Tenant: "acme", Namespace: "sales", Table: table, Location: location,
		Allowed: []Location{{Bucket: "tenant-data", Prefix: "acme/"}},
	}
}

func TestVendAssumesRoleWithPolicy(t *testing.T) {
	v, a, clock, rec := newTestVendor(t, Options{})
	got, err := v.Vend(context.Background(), request("orders", "s3://tenant-data/acme/orders/"))
	if err != nil {
		t.Fatal(err)
	}
	if a.count() != 1 {
		t.Fatalf("AssumeRole calls = %d, want 1", a.count())
	}
	in := a.calls[0]
	loc := Location{Bucket: "tenant-data", Prefix: "acme/orders/"}
	wantPolicy, _ := SessionPolicy(loc)
	if in.RoleARN != testRole || in.Duration != DefaultDuration || string(in.Policy) != string(wantPolicy) ||
		in.SessionName != SessionName("acme", "sales", "orders") ||
		!slices.Equal(in.Tags, append(SessionTags("acme", "sales", "orders"), Tag{TagBucket, "tenant-data"}, Tag{TagPrefix, "acme/orders/"})) {
		t.Fatalf("AssumeInput = %+v", in)
	}
	if got.Location != loc || got.Credentials.AccessKeyID != "AK1" || !got.Credentials.Expiration.Equal(clock.Now().Add(15*time.Minute)) {
		t.Fatalf("Vend = %+v", got)
	}
	want := Vend{Who: "alice", Tenant: "acme", Namespace: "sales", Table: "orders", Location: loc, Expiration: got.Credentials.Expiration}
	if len(rec.vends) != 1 || rec.vends[0] != want {
		t.Fatalf("observed %+v, want %+v", rec.vends, want)
	}
}

func TestVendCachesUntilShortlyBeforeExpiry(t *testing.T) {
	v, a, clock, rec := newTestVendor(t, Options{})
	ctx := context.Background()
	req := request("orders", "s3://tenant-data/acme/orders/")
	first, err := v.Vend(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// Refresh margin for 15 min is 2 min: cached for 13 min.
	clock.Advance(13*time.Minute - time.Second)
	second, err := v.Vend(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if a.count() != 1 || second.Credentials != first.Credentials {
		t.Fatalf("after 12m59s: AssumeRole calls = %d, credentials %v, want 1 call and the cached %v", a.count(), second.Credentials, first.Credentials)
	}
	if !rec.vends[1].Cached {
		t.Fatalf("second vend observed as not cached: %+v", rec.vends[1])
	}
	clock.Advance(time.Second)
	third, err := v.Vend(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if a.count() != 2 || third.Credentials.AccessKeyID != "AK2" {
		t.Fatalf("at 13m: AssumeRole calls = %d, key %q, want 2 calls and fresh credentials", a.count(), third.Credentials.AccessKeyID)
	}
	if len(rec.vends) != 3 || rec.vends[2].Cached {
		t.Fatalf("observed %+v, want three vends, the last not cached", rec.vends)
	}
}

func TestVendKeyedByTenantTableAndLocation(t *testing.T) {
	v, a, _, _ := newTestVendor(t, Options{})
	ctx := context.Background()
	seen := map[string]bool{}
	for _, req := range []Request{
		request("orders", "s3://tenant-data/acme/orders/"),
		request("orders", "s3://tenant-data/acme/orders-v2/"), // same table, moved
		request("returns", "s3://tenant-data/acme/orders/"),   // another table, same location
		func() Request { r := request("orders", "s3://tenant-data/acme/orders/"); r.Namespace = "eu"; return r }(),
		func() Request {
			r := request("orders", "s3://tenant-data/acme/orders/")
			r.Tenant = "globex"
			return r
		}(),
	} {
		got, err := v.Vend(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if seen[got.Credentials.AccessKeyID] {
			t.Fatalf("%+v got cached credentials %s of another key", req, got.Credentials.AccessKeyID)
		}
		seen[got.Credentials.AccessKeyID] = true
	}
	if a.count() != 5 {
		t.Fatalf("AssumeRole calls = %d, want 5", a.count())
	}
}

func TestVendConcurrentCallersShareOneAssumeRole(t *testing.T) {
	v, a, _, rec := newTestVendor(t, Options{})
	a.release = make(chan struct{})
	const callers = 8
	var waiting sync.WaitGroup
	waiting.Add(callers)
	v.onWait = waiting.Done
	req := request("orders", "s3://tenant-data/acme/orders/")
	var done sync.WaitGroup
	results := make([]Vended, callers)
	errs := make([]error, callers)
	for i := range callers {
		done.Add(1)
		go func() {
			defer done.Done()
			results[i], errs[i] = v.Vend(context.Background(), req)
		}()
	}
	waiting.Wait() // every caller waits on the one flight
	close(a.release)
	done.Wait()
	for i := range callers {
		if errs[i] != nil || results[i].Credentials.AccessKeyID != "AK1" {
			t.Fatalf("caller %d: %+v, %v; want AK1", i, results[i], errs[i])
		}
	}
	if a.count() != 1 {
		t.Fatalf("AssumeRole calls = %d, want 1", a.count())
	}
	if len(rec.vends) != callers {
		t.Fatalf("observed %d vends, want %d", len(rec.vends), callers)
	}
}

func TestVendGuardRefusalAssumesNothing(t *testing.T) {
	v, a, _, rec := newTestVendor(t, Options{})
	for _, tt := range []struct {
		location string
		want     error
	}{
		{"s3://tenant-data/globex/orders/", ErrNotAllowed},
		{"s3://tenant-data/acmecorp/orders/", ErrNotAllowed},
		{"s3://lake-data/acme/orders/", ErrOwnBucket},
		{"s3://tenant-data/acme/../globex/", ErrInvalidLocation},
	} {
		_, err := v.Vend(context.Background(), request("orders", tt.location))
		var ge *GuardError
		if !errors.Is(err, tt.want) || !errors.As(err, &ge) {
			t.Fatalf("Vend(%s) error = %v, want *GuardError %v", tt.location, err, tt.want)
		}
	}
	if a.count() != 0 || len(rec.vends) != 0 {
		t.Fatalf("AssumeRole calls = %d, observed %d, want none", a.count(), len(rec.vends))
	}
}

func TestVendAssumeRoleFailureIsNotCached(t *testing.T) {
	v, a, _, rec := newTestVendor(t, Options{})
	a.err = errors.New("AccessDenied")
	req := request("orders", "s3://tenant-data/acme/orders/")
	if _, err := v.Vend(context.Background(), req); !errors.Is(err, a.err) {
		t.Fatalf("Vend error = %v, want the AssumeRole error within", err)
	}
	a.err = nil
	if _, err := v.Vend(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if a.count() != 2 || len(rec.vends) != 1 {
		t.Fatalf("AssumeRole calls = %d, observed %d, want 2 and 1", a.count(), len(rec.vends))
	}
}

func TestVendCacheIsBounded(t *testing.T) {
	v, a, _, _ := newTestVendor(t, Options{MaxEntries: 2})
	ctx := context.Background()
	for _, table := range []string{"a", "b", "a", "c", "a", "b"} {
		if _, err := v.Vend(ctx, request(table, "s3://tenant-data/acme/"+table+"/")); err != nil {
			t.Fatal(err)
		}
	}
	// a, b miss; a hits; c misses and evicts b (least recently used); a hits; b misses.
	if a.count() != 4 {
		t.Fatalf("AssumeRole calls = %d, want 4", a.count())
	}
	if n := v.Len(); n != 2 {
		t.Fatalf("cache holds %d entries, want 2", n)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	clock := &fakeClock{}
	a := &fakeAssumer{clock: clock}
	g := NewGuard(nil)
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"defaults", Options{RoleARN: testRole}, true},
		{"12h", Options{RoleARN: testRole, Duration: 12 * time.Hour}, true},
		{"no role", Options{}, false},
		{"14m", Options{RoleARN: testRole, Duration: 14 * time.Minute}, false},
		{"13h", Options{RoleARN: testRole, Duration: 13 * time.Hour}, false},
		{"negative cap", Options{RoleARN: testRole, MaxEntries: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(a, g, tt.o)
			if tt.ok != (err == nil) {
				t.Fatalf("New(%+v) error = %v, want ok %v", tt.o, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrOptions) {
				t.Fatalf("New error = %v, want %v", err, ErrOptions)
			}
		})
	}
	if _, err := New(nil, g, Options{RoleARN: testRole}); !errors.Is(err, ErrOptions) {
		t.Fatalf("New without an assumer error = %v, want %v", err, ErrOptions)
	}
}

func TestRefreshMargin(t *testing.T) {
	for _, tt := range []struct{ d, want time.Duration }{
		{15 * time.Minute, 2 * time.Minute},
		{time.Hour, 6 * time.Minute},
		{12 * time.Hour, 72 * time.Minute},
	} {
		if got := refreshMargin(tt.d); got != tt.want {
			t.Errorf("refreshMargin(%v) = %v, want %v", tt.d, got, tt.want)
		}
	}
}
