// Package metastoretest is the conformance suite every metastore.Store
// backend runs. A backend's test calls Run with a constructor of fresh, empty
// stores; each case is a subtest, so `go test -run 'TestConformance/<case>'`
// picks one.
package metastoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// Suite describes the backend under test.
type Suite struct {
	// New returns a fresh, empty store. The suite closes it.
	New func(tb testing.TB) metastore.Store
	// MinLargeScanPages is the fewest pages the >3 MB scan must report through
	// metastore.StatsScanner (DynamoDB's 1 MB pages: 3). 0 skips the check.
	MinLargeScanPages int
}

// Run runs every case against s.
func Run(t *testing.T, s Suite) {
	cases := []struct {
		name string
		fn   func(*testing.T, Suite)
	}{
		{"prefix_entry_scan_returns_stripped_keys_and_values", testPrefixScan},
		{"get_missing_is_not_found", testGetMissing},
		{"put_overwrites", testPutOverwrites},
		{"create_only_conflict", testCreateConflict},
		{"compare_and_swap", testCompareAndSwap},
		{"delete", testDelete},
		{"compare_and_delete", testCompareAndDelete},
		{"zero_byte_value", testZeroByteValue},
		{"value_350KB", testLargeValue},
		{"all_byte_values_exact", testAllBytes},
		{"empty_prefix_scans_everything", testEmptyPrefix},
		{"prefix_of_another_prefix", testPrefixOfPrefix},
		{"scan_sorted_bytewise", testSortedBytewise},
		{"returned_slices_owned_by_caller", testOwnership},
		{"invalid_keys_rejected", testInvalidKeys},
		{"concurrent_writers", testConcurrentWriters},
		{"cancelled_context", testCancelled},
		{"large_scan_over_3MB", testLargeScan},
		{"visit_sees_what_scan_returns", testVisit},
		{"visit_stops_at_an_error", testVisitStops},
		{"counter_starts_at_zero_and_adds", testCounterAdds},
		{"counter_concurrent_adds_all_count", testCounterConcurrent},
		{"counter_continues_a_decimal_value", testCounterDecimal},
		{"counter_refuses_other_values", testCounterRefuses},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, s) })
	}
}

func open(t *testing.T, s Suite) metastore.Store {
	t.Helper()
	st := s.New(t)
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

func put(t *testing.T, st metastore.Store, key string, value []byte) {
	t.Helper()
	if err := st.Put(context.Background(), key, value); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func scan(t *testing.T, st metastore.Store, prefix string) []metastore.Entry {
	t.Helper()
	got, err := st.ScanPrefix(context.Background(), prefix)
	if err != nil {
		t.Fatalf("ScanPrefix(%q): %v", prefix, err)
	}
	return got
}

func wantEntries(t *testing.T, got []metastore.Entry, want ...metastore.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("scan returned %d entries %v, want %d %v", len(got), keys(got), len(want), keys(want))
	}
	for i := range want {
		if got[i].Key != want[i].Key || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Errorf("entry %d = %q:%q, want %q:%q", i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
		}
	}
}

func keys(es []metastore.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}

func wantGet(t *testing.T, st metastore.Store, key string, want []byte) {
	t.Helper()
	got, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !bytes.Equal(got, want) || got == nil {
		t.Fatalf("Get(%q) = %q (nil=%v), want %q", key, got, got == nil, want)
	}
}

func testPrefixScan(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "tbl/a/y", []byte("value-y\x00\xff"))
	put(t, st, "tbl/a/x", []byte("value-x"))
	put(t, st, "cfg/unrelated", []byte("other"))
	wantEntries(t, scan(t, st, "tbl/"),
		metastore.Entry{Key: "a/x", Value: []byte("value-x")},
		metastore.Entry{Key: "a/y", Value: []byte("value-y\x00\xff")},
	)
}

func testGetMissing(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "tbl/a/x", []byte("v"))
	for _, k := range []string{"tbl/a/y", "tbl/a/", "tbl/a/xx"} {
		if _, err := st.Get(context.Background(), k); !errors.Is(err, metastore.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want ErrNotFound", k, err)
		}
	}
}

func testPutOverwrites(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "k", []byte("one"))
	put(t, st, "k", []byte("two"))
	wantGet(t, st, "k", []byte("two"))
}

func testCreateConflict(t *testing.T, s Suite) {
	st := open(t, s)
	ctx := context.Background()
	if err := st.Create(ctx, "tbl/a/x", []byte("first")); err != nil {
		t.Fatalf("first Create: %v", err)
	}
	err := st.Create(ctx, "tbl/a/x", []byte("second"))
	if !errors.Is(err, metastore.ErrExists) {
		t.Fatalf("second Create error = %v, want ErrExists", err)
	}
	wantGet(t, st, "tbl/a/x", []byte("first"))
	// A zero-length value still occupies the key.
	if err := st.Create(ctx, "empty", []byte{}); err != nil {
		t.Fatalf("Create(empty): %v", err)
	}
	if err := st.Create(ctx, "empty", []byte("x")); !errors.Is(err, metastore.ErrExists) {
		t.Fatalf("Create over a zero-length value error = %v, want ErrExists", err)
	}
}

func testCompareAndSwap(t *testing.T, s Suite) {
	st := open(t, s)
	ctx := context.Background()
	if err := st.CompareAndSwap(ctx, "k", []byte("a"), []byte("b")); !errors.Is(err, metastore.ErrNotFound) {
		t.Fatalf("swap on missing key error = %v, want ErrNotFound", err)
	}
	put(t, st, "k", []byte("v1"))
	if err := st.CompareAndSwap(ctx, "k", []byte("stale"), []byte("v2")); !errors.Is(err, metastore.ErrConflict) {
		t.Fatalf("swap with stale old error = %v, want ErrConflict", err)
	}
	wantGet(t, st, "k", []byte("v1"))
	if err := st.CompareAndSwap(ctx, "k", []byte("v1"), []byte("v2")); err != nil {
		t.Fatalf("swap with current old: %v", err)
	}
	wantGet(t, st, "k", []byte("v2"))
}

func testCompareAndDelete(t *testing.T, s Suite) {
	st := open(t, s)
	ctx := context.Background()
	if err := st.CompareAndDelete(ctx, "k", []byte("a")); !errors.Is(err, metastore.ErrNotFound) {
		t.Fatalf("delete-if on missing key error = %v, want ErrNotFound", err)
	}
	put(t, st, "k", []byte("v1"))
	if err := st.CompareAndDelete(ctx, "k", []byte("stale")); !errors.Is(err, metastore.ErrConflict) {
		t.Fatalf("delete-if with stale old error = %v, want ErrConflict", err)
	}
	wantGet(t, st, "k", []byte("v1"))
	if err := st.CompareAndDelete(ctx, "k", []byte("v1")); err != nil {
		t.Fatalf("delete-if with current old: %v", err)
	}
	if _, err := st.Get(ctx, "k"); !errors.Is(err, metastore.ErrNotFound) {
		t.Fatalf("Get after delete-if error = %v, want ErrNotFound", err)
	}
	put(t, st, "empty", []byte{})
	if err := st.CompareAndDelete(ctx, "empty", []byte{}); err != nil {
		t.Fatalf("delete-if of a zero-length value: %v", err)
	}
}

func testDelete(t *testing.T, s Suite) {
	st := open(t, s)
	ctx := context.Background()
	put(t, st, "k", []byte("v"))
	if err := st.Delete(ctx, "k"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := st.Get(ctx, "k"); !errors.Is(err, metastore.ErrNotFound) {
		t.Fatalf("Get after Delete error = %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, "k"); !errors.Is(err, metastore.ErrNotFound) {
		t.Fatalf("second Delete error = %v, want ErrNotFound", err)
	}
	if got := scan(t, st, ""); len(got) != 0 {
		t.Fatalf("scan after Delete = %v, want empty", keys(got))
	}
}

func testZeroByteValue(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "tbl/empty", []byte{})
	put(t, st, "tbl/nil", nil)
	wantGet(t, st, "tbl/empty", []byte{})
	wantGet(t, st, "tbl/nil", []byte{})
	got := scan(t, st, "tbl/")
	wantEntries(t, got, metastore.Entry{Key: "empty", Value: []byte{}}, metastore.Entry{Key: "nil", Value: []byte{}})
	for _, e := range got {
		if e.Value == nil {
			t.Errorf("scan value of %q is nil, want a non-nil zero-length slice", e.Key)
		}
	}
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func testLargeValue(t *testing.T, s Suite) {
	st := open(t, s)
	v := pattern(350*1000, 7)
	put(t, st, "tbl/big", v)
	wantGet(t, st, "tbl/big", v)
	wantEntries(t, scan(t, st, "tbl/"), metastore.Entry{Key: "big", Value: v})
}

func testAllBytes(t *testing.T, s Suite) {
	st := open(t, s)
	v := make([]byte, 512)
	for i := range v {
		v[i] = byte(i)
	}
	put(t, st, "bytes", v)
	wantGet(t, st, "bytes", v)
}

func testEmptyPrefix(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "b", []byte("2"))
	put(t, st, "a", []byte("1"))
	put(t, st, "tbl/x", []byte("3"))
	wantEntries(t, scan(t, st, ""),
		metastore.Entry{Key: "a", Value: []byte("1")},
		metastore.Entry{Key: "b", Value: []byte("2")},
		metastore.Entry{Key: "tbl/x", Value: []byte("3")},
	)
}

func testPrefixOfPrefix(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "tbl/a/t1", []byte("a1"))
	put(t, st, "tbl/ab/t1", []byte("ab1"))
	put(t, st, "tbl/a", []byte("bare"))
	wantEntries(t, scan(t, st, "tbl/a/"), metastore.Entry{Key: "t1", Value: []byte("a1")})
	wantEntries(t, scan(t, st, "tbl/ab/"), metastore.Entry{Key: "t1", Value: []byte("ab1")})
	wantEntries(t, scan(t, st, "tbl/a"),
		metastore.Entry{Key: "", Value: []byte("bare")},
		metastore.Entry{Key: "/t1", Value: []byte("a1")},
		metastore.Entry{Key: "b/t1", Value: []byte("ab1")},
	)
	wantEntries(t, scan(t, st, "tbl/zzz/"))
}

func testSortedBytewise(t *testing.T, s Suite) {
	st := open(t, s)
	in := []string{"p/é", "p/Z", "p/a", "p/日本", "p/_", "p/%", "p/a b", "p/ab", "p/A"}
	for i, k := range in {
		put(t, st, k, []byte{byte(i)})
	}
	got := keys(scan(t, st, "p/"))
	want := make([]string, len(in))
	for i, k := range in {
		want[i] = k[2:]
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("scan order = %q, want %q", got, want)
	}
}

func testOwnership(t *testing.T, s Suite) {
	st := open(t, s)
	in := []byte("original")
	put(t, st, "k", in)
	in[0] = 'X' // the store must not have kept the caller's slice
	wantGet(t, st, "k", []byte("original"))
	got, _ := st.Get(context.Background(), "k")
	got[0] = 'Y'
	wantGet(t, st, "k", []byte("original"))
	es := scan(t, st, "")
	es[0].Value[0] = 'Z'
	wantGet(t, st, "k", []byte("original"))
}

func testInvalidKeys(t *testing.T, s Suite) {
	st := open(t, s)
	ctx := context.Background()
	bad := map[string]string{
		"empty":    "",
		"not utf8": "tbl/\xff\xfe",
		"too long": string(bytes.Repeat([]byte("k"), metastore.MaxKeyBytes+1)),
	}
	for name, k := range bad {
		if err := st.Put(ctx, k, []byte("v")); !errors.Is(err, metastore.ErrInvalidKey) {
			t.Errorf("Put(%s) error = %v, want ErrInvalidKey", name, err)
		}
		if err := st.Create(ctx, k, []byte("v")); !errors.Is(err, metastore.ErrInvalidKey) {
			t.Errorf("Create(%s) error = %v, want ErrInvalidKey", name, err)
		}
		if _, err := st.Get(ctx, k); !errors.Is(err, metastore.ErrInvalidKey) {
			t.Errorf("Get(%s) error = %v, want ErrInvalidKey", name, err)
		}
	}
	if got := scan(t, st, ""); len(got) != 0 {
		t.Fatalf("invalid keys stored: %q", keys(got))
	}
}

func testConcurrentWriters(t *testing.T, s Suite) {
	st := open(t, s)
	ctx := context.Background()
	const writers, each = 8, 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	errs := make(chan error, writers*(each+2))
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := st.Put(ctx, fmt.Sprintf("tbl/w%d/%03d", w, i), []byte{byte(w), byte(i)}); err != nil {
					errs <- err
				}
			}
			switch err := st.Create(ctx, "tbl/contended", []byte{byte(w)}); {
			case err == nil:
				mu.Lock()
				winners++
				mu.Unlock()
			case !errors.Is(err, metastore.ErrExists):
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent write: %v", err)
	}
	if winners != 1 {
		t.Fatalf("%d writers won the create-only race, want exactly 1", winners)
	}
	got := scan(t, st, "tbl/")
	if len(got) != writers*each+1 {
		t.Fatalf("scan after concurrent writes found %d entries, want %d", len(got), writers*each+1)
	}
	for _, e := range got {
		var w, i int
		if _, err := fmt.Sscanf(e.Key, "w%d/%03d", &w, &i); err == nil && !bytes.Equal(e.Value, []byte{byte(w), byte(i)}) {
			t.Errorf("%s = %v, want %v", e.Key, e.Value, []byte{byte(w), byte(i)})
		}
	}
}

func testCancelled(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "existing", []byte("v"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"Get":            func() error { _, err := st.Get(ctx, "existing"); return err },
		"Put":            func() error { return st.Put(ctx, "new-put", []byte("v")) },
		"Create":         func() error { return st.Create(ctx, "new-create", []byte("v")) },
		"CompareAndSwap": func() error { return st.CompareAndSwap(ctx, "existing", []byte("v"), []byte("w")) },
		"Delete":         func() error { return st.Delete(ctx, "existing") },
		"CompareAndDelete": func() error {
			return st.CompareAndDelete(ctx, "existing", []byte("v"))
		},
		"ScanPrefix": func() error { _, err := st.ScanPrefix(ctx, ""); return err },
		"AddCounter": func() error { _, err := st.AddCounter(ctx, "new-counter", 1); return err },
		"Counter":    func() error { _, err := st.Counter(ctx, "new-counter"); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context error = %v, want context.Canceled", name, err)
		}
	}
	wantEntries(t, scan(t, st, ""), metastore.Entry{Key: "existing", Value: []byte("v")})
}

func testLargeScan(t *testing.T, s Suite) {
	st := open(t, s)
	ctx := context.Background()
	const n, size = 64, 60 * 1000 // 3.84 MB
	want := make([]metastore.Entry, n)
	for i := range n {
		want[i] = metastore.Entry{Key: fmt.Sprintf("t%03d", i), Value: pattern(size, i)}
		put(t, st, "tbl/"+want[i].Key, want[i].Value)
	}
	put(t, st, "zzz/outside", []byte("x"))
	ss, ok := st.(metastore.StatsScanner)
	if !ok {
		wantEntries(t, scan(t, st, "tbl/"), want...)
		return
	}
	got, stats, err := ss.ScanPrefixStats(ctx, "tbl/")
	if err != nil {
		t.Fatalf("ScanPrefixStats: %v", err)
	}
	wantEntries(t, got, want...)
	t.Logf("scan of %d × %d B: %+v", n, size, stats)
	if stats.Kept != n || stats.Malformed != 0 || stats.Scanned != stats.Kept+stats.OutsidePrefix {
		t.Errorf("stats = %+v, want Kept %d, no Malformed, Scanned = Kept + OutsidePrefix", stats, n)
	}
	if stats.Pages < s.MinLargeScanPages {
		t.Errorf("scan read %d pages, want at least %d", stats.Pages, s.MinLargeScanPages)
	}
}

// metastore.Visit (VisitPrefix where the backend has it) sees exactly the
// entries ScanPrefix returns, with the same stats where both report them.
func testVisit(t *testing.T, s Suite) {
	st := open(t, s)
	ctx := context.Background()
	const n, size = 40, 30 * 1000
	want := make([]metastore.Entry, n)
	for i := range n {
		want[i] = metastore.Entry{Key: fmt.Sprintf("t%03d", i), Value: pattern(size, i)}
		put(t, st, "tbl/"+want[i].Key, want[i].Value)
	}
	put(t, st, "tbl/empty", []byte{})
	want = append(want, metastore.Entry{Key: "empty", Value: []byte{}})
	put(t, st, "zzz/outside", []byte("x"))
	var got []metastore.Entry
	stats, err := metastore.Visit(ctx, st, "tbl/", func(e metastore.Entry) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Visit: %v", err)
	}
	slices.SortFunc(got, func(a, b metastore.Entry) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(want, func(a, b metastore.Entry) int { return strings.Compare(a.Key, b.Key) })
	wantEntries(t, got, want...)
	for _, e := range got {
		if e.Value == nil {
			t.Fatalf("%s: a zero-length value visited as nil", e.Key)
		}
	}
	if _, ok := st.(metastore.StatsScanner); ok && (stats.Kept != n+1 || stats.Scanned != stats.Kept+stats.OutsidePrefix) {
		t.Errorf("stats = %+v, want Kept %d and Scanned = Kept + OutsidePrefix", stats, n+1)
	}
}

// An error from the visiting function stops the scan and comes back as is.
func testVisitStops(t *testing.T, s Suite) {
	st := open(t, s)
	for i := range 30 {
		put(t, st, fmt.Sprintf("tbl/t%03d", i), []byte("v"))
	}
	stop := errors.New("enough")
	calls := 0
	_, err := metastore.Visit(context.Background(), st, "tbl/", func(metastore.Entry) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("Visit = %v, want the function's own error", err)
	}
	if calls != 3 {
		t.Fatalf("the function ran %d times, want it stopped after the 3rd", calls)
	}
}

func wantCounter(t *testing.T, st metastore.Store, key string, want uint64) {
	t.Helper()
	got, err := st.Counter(context.Background(), key)
	if err != nil {
		t.Fatalf("Counter(%q): %v", key, err)
	}
	if got != want {
		t.Fatalf("Counter(%q) = %d, want %d", key, got, want)
	}
}

func add(t *testing.T, st metastore.Store, key string, delta, want uint64) {
	t.Helper()
	got, err := st.AddCounter(context.Background(), key, delta)
	if err != nil {
		t.Fatalf("AddCounter(%q, %d): %v", key, delta, err)
	}
	if got != want {
		t.Fatalf("AddCounter(%q, %d) = %d, want %d", key, delta, got, want)
	}
}

func testCounterAdds(t *testing.T, s Suite) {
	st := open(t, s)
	wantCounter(t, st, "meta/c", 0)
	add(t, st, "meta/c", 1, 1)
	add(t, st, "meta/c", 5, 6)
	add(t, st, "meta/c", 0, 6)
	wantCounter(t, st, "meta/c", 6)
	wantCounter(t, st, "meta/other", 0)
	if _, err := st.AddCounter(context.Background(), "", 1); !errors.Is(err, metastore.ErrInvalidKey) {
		t.Errorf("AddCounter(\"\") error = %v, want ErrInvalidKey", err)
	}
	// A counter is not a registration: scans of other prefixes never see it.
	put(t, st, "tbl/a", []byte("v"))
	wantEntries(t, scan(t, st, "tbl/"), metastore.Entry{Key: "a", Value: []byte("v")})
}

// testCounterConcurrent adds from many goroutines at once: every add
// counts, and each returns a value no other add returned (an add that read,
// then wrote, would lose updates and repeat values).
func testCounterConcurrent(t *testing.T, s Suite) {
	st := open(t, s)
	const writers, each = 16, 20
	var (
		mu   sync.Mutex
		seen = map[uint64]bool{}
		wg   sync.WaitGroup
	)
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				n, err := st.AddCounter(context.Background(), "meta/hot", 1)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if seen[n] {
					errs <- fmt.Errorf("AddCounter returned %d twice", n)
				}
				seen[n] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantCounter(t, st, "meta/hot", writers*each)
	if len(seen) != writers*each {
		t.Fatalf("%d distinct values returned, want %d", len(seen), writers*each)
	}
}

// testCounterDecimal: a counter that an older lake wrote with Put as a
// decimal value reads as that number, and adds continue from it.
func testCounterDecimal(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "meta/c", []byte("41"))
	wantCounter(t, st, "meta/c", 41)
	add(t, st, "meta/c", 1, 42)
	wantCounter(t, st, "meta/c", 42)
}

func testCounterRefuses(t *testing.T, s Suite) {
	st := open(t, s)
	put(t, st, "meta/c", []byte("not a number"))
	if _, err := st.Counter(context.Background(), "meta/c"); !errors.Is(err, metastore.ErrNotCounter) {
		t.Errorf("Counter of a non-counter value: error = %v, want ErrNotCounter", err)
	}
	if _, err := st.AddCounter(context.Background(), "meta/c", 1); !errors.Is(err, metastore.ErrNotCounter) {
		t.Errorf("AddCounter to a non-counter value: error = %v, want ErrNotCounter", err)
	}
}
