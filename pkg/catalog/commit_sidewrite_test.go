package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

var errVersionsDown = errors.New("injected: the version records' partition is unavailable")

// failingVersionWrites fails every write of a version record, and nothing
// else, as a store throttling that one kind of key would (fault
// injection).
type failingVersionWrites struct{ metastore.Store }

func (s failingVersionWrites) Put(ctx context.Context, key string, value []byte) error {
	if strings.HasPrefix(key, catalog.VersionPrefix) {
		return errVersionsDown
	}
	return s.Store.Put(ctx, key, value)
}

// A side write that fails after the mutation is stored (here the version
// record of a register, an update and a drop) is never silent: the
// mutation is stored and answered as stored (the registration with the
// error, never a failure a client would retry into another write), the
// error is of kind ErrSideWrite and lists the write that failed (what it
// was for, its key, the store's error), and the catalog counts it in
// Stats. The usage counts only what was written: the recount agrees.
// Before the one commit path the failure was dropped in silence.
func TestFailedSideWriteIsReportedAndCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := memstore.New(memstore.Options{})
	t.Cleanup(func() { base.Close() })
	c := catalog.New(failingVersionWrites{base}, catalog.Options{})
	spec := catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)}

	// check says err reports the one failed version record of version v of
	// op, and that Stats has counted failures failed side writes so far.
	check := func(op string, err error, id string, v int64, failures uint64) {
		t.Helper()
		if !errors.Is(err, catalog.ErrSideWrite) || errors.Is(err, catalog.ErrUnsignalled) {
			t.Fatalf("%s: %v, want ErrSideWrite (and not ErrUnsignalled: the change counter was bumped)", op, err)
		}
		ce, ok := errors.AsType[*catalog.Error](err)
		if !ok || ce.Op != op || ce.Ref != orders.String() || len(ce.SideWrites) != 1 {
			t.Fatalf("%s: %#v, want a *catalog.Error of op %s about %s with one side write", op, err, op, orders)
		}
		key := fmt.Sprintf("%s%s/%s/%020d", catalog.VersionPrefix, orders, id, v)
		if sw := ce.SideWrites[0]; sw.Part != catalog.PartVersion || sw.Key != key || !errors.Is(sw.Err, errVersionsDown) {
			t.Fatalf("%s: side write %+v, want the version record %s failing with the injected error", op, sw, key)
		}
		want := fmt.Sprintf("catalog: %s %s: stored, but a side write failed: the version record %s: %v", op, orders, key, errVersionsDown)
		if err.Error() != want {
			t.Fatalf("%s: message\n got %q\nwant %q", op, err.Error(), want)
		}
		if s := c.Stats(); s.SideWritesFailed != failures || s.FailedByPart[catalog.PartVersion] != failures {
			t.Fatalf("%s: Stats %+v, want %d failed side writes, all version records", op, s, failures)
		}
		if _, err := c.RecomputeUsage(ctx); err != nil {
			t.Fatal(err)
		}
	}

	reg, created, err := c.Register(ctx, orders, spec)
	if !created || reg.Version() != 1 {
		t.Fatalf("register: created %v, version %d, %v; want it stored", created, reg.Version(), err)
	}
	before := mustUsage(t, c, "acme")
	check("register", err, reg.CreationID(), 1, 1)
	if after := mustUsage(t, c, "acme"); after != before {
		t.Fatalf("register: usage %+v counts the record that was not written (a recount finds %+v)", before, after)
	}
	if got, err := c.Get(ctx, orders); err != nil || got.Version() != 1 {
		t.Fatalf("the registration is not stored: %v", err)
	}

	spec.Description = "changed"
	upd, err := c.Update(ctx, orders, spec, catalog.UpdateOptions{})
	if upd.Version() != 2 {
		t.Fatalf("update: version %d, %v; want version 2 stored", upd.Version(), err)
	}
	before = mustUsage(t, c, "acme")
	check("update", err, reg.CreationID(), 2, 2)
	if after := mustUsage(t, c, "acme"); after != before {
		t.Fatalf("update: usage %+v, a recount finds %+v", before, after)
	}

	err = c.Drop(ctx, orders)
	before = mustUsage(t, c, "acme")
	check("drop", err, reg.CreationID(), 3, 3)
	if after := mustUsage(t, c, "acme"); after != before {
		t.Fatalf("drop: usage %+v, a recount finds %+v", before, after)
	}
	if d, err := c.Dropped(ctx, "acme"); err != nil || len(d) != 1 {
		t.Fatalf("the drop is not stored: %v, %v", d, err)
	}
	if s := c.Stats(); s.Commits != 3 {
		t.Fatalf("Stats %+v, want 3 commits", s)
	}

	// A failed side write and a failed bump: ErrUnsignalled (the caller
	// must learn that refresh was not told), listing both.
	both := catalog.New(failingCounter{failingVersionWrites{base}}, catalog.Options{})
	_, _, err = both.Register(ctx, ref("acme", "both"), spec)
	ce, ok := errors.AsType[*catalog.Error](err)
	if !errors.Is(err, catalog.ErrUnsignalled) || !errors.Is(err, catalog.ErrSideWrite) || !ok || len(ce.SideWrites) != 2 ||
		ce.SideWrites[0].Part != catalog.PartVersion || ce.SideWrites[1].Part != catalog.PartChanges {
		t.Fatalf("register with both failing: %v, want ErrUnsignalled listing the version record and the change counter", err)
	}
	if s := both.Stats(); s.SideWritesFailed != 2 || s.FailedByPart[catalog.PartChanges] != 1 {
		t.Fatalf("Stats %+v, want 2 failed side writes, one the change counter", s)
	}
}
