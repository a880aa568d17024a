package discovery_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/wire"
)

func (e *env) changes(ctx context.Context, body string) (wire.ChangePage, error) {
	e.t.Helper()
	var page wire.ChangePage
	stream, err := e.client.Client.DoAction(ctx, &flight.Action{Type: wire.ChangesActionType, Body: []byte(body)})
	if err != nil {
		return page, err
	}
	r, err := stream.Recv()
	if err != nil {
		return page, err
	}
	if err := json.Unmarshal(r.Body, &page); err != nil {
		e.t.Fatalf("result %q: %v", r.Body, err)
	}
	return page, nil
}

// lake.changes: the caller's tenant's changes in the order they happened
// (each table's latest, each drop), who made each, paged by cursor; a
// cursor past the last change answers none and keeps it; a new change
// after a cursor is the only one after it; no other tenant sees any; bad
// bodies and forged cursors are INVALID_ARGUMENT.
func TestChangesAction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	p := &refresh.Publisher{Store: e.store, Blobs: e.blobs}
	alice := catalog.WithCaller(context.Background(), "alice")
	ref := func(tenant, name string) catalog.TableRef {
		return catalog.TableRef{Tenant: tenant, Namespace: "sales", Name: name}
	}
	for _, r := range []catalog.TableRef{ref("acme", "orders"), ref("acme", "returns"), ref("acm_", "orders")} {
		if _, _, err := e.cat.Register(alice, r, catalog.TableSpec{Location: "/x", Schema: wide(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.cat.Update(alice, ref("acme", "orders"), catalog.TableSpec{Schema: wide(2)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.Drop(catalog.WithCaller(context.Background(), "bob"), ref("acme", "returns")); err != nil {
		t.Fatal(err)
	}
	e.refreshed(p)
	acme := as(t, "acme")
	page, err := e.changes(acme, `{"limit":10}`)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(len(page.Changes))
	for _, c := range page.Changes {
		got += fmt.Sprintf(" %s:%s.%s@%d by %s", c.Op, c.Namespace, c.Table, c.Version, c.By)
	}
	if want := "2 update:sales.orders@2 by alice drop:sales.returns@2 by bob"; got != want || page.Tenant != "acme" || page.Next != page.Changes[1].Cursor {
		t.Fatalf("changes: %s, want %s (page %+v)", got, want, page)
	}
	first, err := e.changes(acme, `{"limit":1}`)
	if err != nil || len(first.Changes) != 1 || first.Changes[0] != page.Changes[0] {
		t.Fatalf("first page of 1: %+v, %v", first, err)
	}
	second, err := e.changes(acme, fmt.Sprintf(`{"since":%q,"limit":1}`, first.Next))
	if err != nil || len(second.Changes) != 1 || second.Changes[0] != page.Changes[1] {
		t.Fatalf("second page: %+v, %v", second, err)
	}
	end, err := e.changes(acme, fmt.Sprintf(`{"since":%q,"limit":10}`, second.Next))
	if err != nil || len(end.Changes) != 0 || end.Next != second.Next {
		t.Fatalf("past the last change: %+v, %v", end, err)
	}
	if _, _, err := e.cat.Register(alice, ref("acme", "refunds"), catalog.TableSpec{Location: "/x", Schema: wide(3)}); err != nil {
		t.Fatal(err)
	}
	e.refreshed(p)
	next, err := e.changes(acme, fmt.Sprintf(`{"since":%q,"limit":10}`, end.Next))
	if err != nil || len(next.Changes) != 1 || next.Changes[0].Table != "refunds" || next.Changes[0].Op != "create" {
		t.Fatalf("after a new change: %+v, %v", next, err)
	}
	if p, err := e.changes(as(t, "globex"), `{"limit":10}`); err != nil || len(p.Changes) != 0 || p.Tenant != "globex" {
		t.Fatalf("globex's feed: %+v, %v", p, err)
	}
	if p, err := e.changes(as(t, "acm_"), `{"limit":10}`); err != nil || len(p.Changes) != 1 || p.Changes[0].Op != "create" {
		t.Fatalf("acm_'s feed: %+v, %v", p, err)
	}
	for _, body := range []string{``, `{"limit":0}`, `{"limit":501}`, `{"limit":1,"since":"!!"}`, `{"limit":1,"since":"AAAA"}`, `{"limit":1,"tenant":"acme"}`} {
		if _, err := e.changes(acme, body); codeOf(err) != codes.InvalidArgument {
			t.Errorf("body %q: %v, want INVALID_ARGUMENT", body, err)
		}
	}
}

// follower pages a tenant's feed from a cursor, as `lake changes --follow`
// does, and remembers every change it was given.
type follower struct {
	e      *env
	ctx    context.Context
	cursor string
	seen   []wire.Change
}

// catchUp asks for pages of limit until one comes back short.
func (f *follower) catchUp(limit int) error {
	for {
		page, err := f.e.changes(f.ctx, fmt.Sprintf(`{"since":%q,"limit":%d}`, f.cursor, limit))
		if err != nil {
			return err
		}
		f.seen = append(f.seen, page.Changes...)
		f.cursor = page.Next
		if len(page.Changes) < limit {
			return nil
		}
	}
}

// refreshed runs refresh's full scan over the env's store into its blob
// store and polls discovery, as local mode does after a write.
func (e *env) refreshed(p *refresh.Publisher) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := p.RunFull(ctx); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.src.Poll(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// A change published after a change stamped later is not skipped: the feed
// is ordered and resumed by publication, not by the changes' times. Each
// write here is stamped earlier than the one published before it (a writer
// whose clock is behind, or whose write landed after a later-stamped one);
// a follower paging with the cursor sees every change exactly once, whether
// refresh publishes it with a full scan or a stream batch (which reads an
// unchanged table's key too); a full rebuild over the same tables gives it
// nothing again, and a rebuild that has lost the previous blob gives it
// the tenant again rather than nothing.
// A cursor of the time order is INVALID_ARGUMENT, saying to start again.
func TestChangesFollowPublicationNotTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	t0 := time.Now().UTC().Truncate(time.Second) // drops stay in retention
	stamp := t0
	e.cat = catalog.New(e.store, catalog.Options{Now: func() time.Time { return stamp }})
	p := &refresh.Publisher{Store: e.store, Blobs: e.blobs}
	alice := catalog.WithCaller(context.Background(), "alice")
	ref := func(name string) catalog.TableRef {
		return catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: name}
	}
	f := &follower{e: e, ctx: as(t, "acme")}
	var want []string
	// step writes at t0+at and publishes it: with a full scan, or with a
	// stream batch of the table's key when batch names it.
	step := func(at time.Duration, what string, write func() error, batch ...string) {
		t.Helper()
		stamp = t0.Add(at)
		if err := write(); err != nil {
			t.Fatal(err)
		}
		if len(batch) > 0 {
			if res, err := p.Apply(context.Background(), batch); err != nil || !res.Incremental {
				t.Fatalf("stream batch: %+v, %v", res, err)
			}
			if _, err := e.src.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}
		} else {
			e.refreshed(p)
		}
		want = append(want, what)
		if err := f.catchUp(1); err != nil {
			t.Fatal(err)
		}
	}
	register := func(name string) func() error {
		return func() error {
			_, _, err := e.cat.Register(alice, ref(name), catalog.TableSpec{Location: "/x", Schema: wide(1)})
			return err
		}
	}
	step(10*time.Second, "create orders@1", register("orders"))
	step(5*time.Second, "create returns@1", register("returns"))
	step(7*time.Second, "update orders@2", func() error {
		_, err := e.cat.Update(alice, ref("orders"), catalog.TableSpec{Schema: wide(2)}, catalog.UpdateOptions{})
		return err
	}, "tbl/acme/sales/orders", "tbl/acme/sales/returns")
	step(time.Second, "drop returns@2", func() error { return e.cat.Drop(alice, ref("returns")) })
	step(2*time.Second, "create refunds@1", register("refunds"), "tbl/acme/sales/refunds")
	got := func(cs []wire.Change) []string {
		var out []string
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s %s@%d", c.Op, c.Table, c.Version))
		}
		return out
	}
	if g := got(f.seen); !slices.Equal(g, want) {
		t.Fatalf("the follower saw %q, want %q", g, want)
	}

	// A full scan over the same tables renumbers nothing.
	e.refreshed(p)
	if err := f.catchUp(10); err != nil || len(f.seen) != len(want) {
		t.Fatalf("after a rebuild of the same tables the follower saw %q more (%v)", got(f.seen[len(want):]), err)
	}
	// Without the previous blob, the tenant's current state again: more
	// than needed, never less.
	if err := os.Remove(e.blobs.Location()); err != nil {
		t.Fatal(err)
	}
	e.refreshed(p)
	if err := f.catchUp(10); err != nil {
		t.Fatal(err)
	}
	if g, w := got(f.seen[len(want):]), []string{"create refunds@1", "update orders@2", "drop returns@2"}; !slices.Equal(slices.Sorted(slices.Values(g)), slices.Sorted(slices.Values(w))) {
		t.Fatalf("after a rebuild without the previous blob the follower saw %q, want %q", g, w)
	}

	// A cursor of the order by time (before lake resumed by publication).
	old := base64.RawURLEncoding.EncodeToString(append(binary.BigEndian.AppendUint64(nil, uint64(t0.Add(10*time.Second).UnixNano())), "sales\x00orders\x00create\x00"...))
	_, err := e.changes(f.ctx, fmt.Sprintf(`{"since":%q,"limit":10}`, old))
	if codeOf(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "without since") {
		t.Fatalf("a time-ordered cursor: %v, want INVALID_ARGUMENT saying to ask again without since", err)
	}
}

// slowWrites is the real store with the latency of a remote one on each
// write: time passes between a registration's timestamp and the moment a
// scan can see it, as it does on DynamoDB.
type slowWrites struct{ metastore.Store }

func (s slowWrites) pause() { time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) }

func (s slowWrites) Create(ctx context.Context, key string, v []byte) error {
	s.pause()
	return s.Store.Create(ctx, key, v)
}

func (s slowWrites) CompareAndSwap(ctx context.Context, key string, old, v []byte) error {
	s.pause()
	return s.Store.CompareAndSwap(ctx, key, old, v)
}

// A follower of a tenant written by 16 writers at once, refresh publishing
// all the while, sees every table created, each once.
func TestChangesFollowerUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	e.store = slowWrites{e.store}
	e.cat = catalog.New(e.store, catalog.Options{})
	p := &refresh.Publisher{Store: e.store, Blobs: e.blobs}
	const writers, each = 16, 40
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				ref := catalog.TableRef{Tenant: "acme", Namespace: "w" + strconv.Itoa(w), Name: "t" + strconv.Itoa(i)}
				if _, _, err := e.cat.Register(ctx, ref, catalog.TableSpec{Location: "/x", Schema: wide(1)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()
	f := &follower{e: e, ctx: as(t, "acme")}
	publish := func() error {
		if _, err := p.Run(ctx); err != nil {
			return err
		}
		_, err := e.src.Poll(ctx)
		return err
	}
	for done := false; !done; {
		select {
		case <-writing:
			done = true
		default:
		}
		if err := publish(); err != nil {
			t.Fatal(err)
		}
		if err := f.catchUp(7); err != nil {
			t.Fatal(err)
		}
	}
	if err := publish(); err != nil {
		t.Fatal(err)
	}
	if err := f.catchUp(7); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, c := range f.seen {
		seen[c.Namespace+"."+c.Table]++
	}
	var missed, twice []string
	for w := range writers {
		for i := range each {
			switch k := "w" + strconv.Itoa(w) + ".t" + strconv.Itoa(i); seen[k] {
			case 0:
				missed = append(missed, k)
			case 1:
			default:
				twice = append(twice, k)
			}
		}
	}
	if len(missed) > 0 || len(twice) > 0 || len(f.seen) != writers*each {
		t.Fatalf("of %d tables created the follower missed %d (first %q) and saw %d more than once (first %q)",
			writers*each, len(missed), missed[:min(len(missed), 5)], len(twice), twice[:min(len(twice), 5)])
	}
}

// BenchmarkChangesPage: one page of 100 changes from the middle of a
// 10,000-table tenant's feed, over Flight. cpu-µs/op is the process's CPU
// (client and server) per page; a page must cost what it returns, not the
// tenant.
func BenchmarkChangesPage(b *testing.B) {
	e := newEnv(b, discovery.Options{})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	regs := make([]scan.Registered, 0, 10_000)
	for i := range 10_000 {
		reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "/x", Schema: catalogtest.WideSchema(i%50, 8)}, t0.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		regs = append(regs, scan.Registered{Ref: catalog.TableRef{Tenant: "acme", Namespace: "ns" + strconv.Itoa(i%7), Name: "t" + strconv.Itoa(i)}, Registration: reg})
	}
	e.load(regs)
	f := &follower{e: e, ctx: as(b, "acme")}
	for range 10 {
		page, err := e.changes(f.ctx, fmt.Sprintf(`{"since":%q,"limit":500}`, f.cursor))
		if err != nil {
			b.Fatal(err)
		}
		f.cursor = page.Next
	}
	body := fmt.Sprintf(`{"since":%q,"limit":100}`, f.cursor)
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	for b.Loop() {
		page, err := e.changes(f.ctx, body)
		if err != nil || len(page.Changes) != 100 {
			b.Fatalf("page of %d changes, %v", len(page.Changes), err)
		}
	}
	b.ReportMetric(float64((cpu()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}
