package refresh_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// registerIn registers table name of tenant.
func registerIn(t *testing.T, c *catalog.Catalog, tenant, name string, seed int) {
	t.Helper()
	ref := catalog.TableRef{Tenant: tenant, Namespace: "ns", Name: name}
	if _, _, err := c.Register(context.Background(), ref, catalog.TableSpec{Location: "/d/" + name, Schema: catalogtest.WideSchema(seed, 4)}); err != nil {
		t.Fatal(err)
	}
}

// manifestEntry is tenant's entry in the published manifest.
func manifestEntry(t *testing.T, blobs blobstore.Store, tenant string) snapshot.Entry {
	t.Helper()
	cur, err := blobs.Get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.Entry(tenant)
	if !ok {
		t.Fatalf("the manifest names no segment of %s", tenant)
	}
	return e
}

// damageSegment makes the stored segment e names no longer match its
// address, or deletes it.
func damageSegment(t *testing.T, blobs blobstore.Store, e snapshot.Entry, missing bool) {
	t.Helper()
	ctx := context.Background()
	name := hex.EncodeToString(e.Address[:])
	if missing {
		if err := blobs.ReleaseSegments(ctx, []string{name}); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := blobs.GetSegment(ctx, name, e.StoredBytes)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Clone(b)
	b[len(b)/2] ^= 0x10
	if err := blobs.PutSegment(ctx, name, b); err != nil {
		t.Fatal(err)
	}
}

// verifies reports whether every segment the published manifest names is
// stored and matches its address, and says which does not.
func verifies(t *testing.T, blobs blobstore.Store) (bool, string) {
	t.Helper()
	ctx := context.Background()
	cur, err := blobs.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries() {
		b, err := blobs.GetSegment(ctx, hex.EncodeToString(e.Address[:]), e.StoredBytes)
		if err != nil || sha256.Sum256(b) != e.Address {
			return false, e.Tenant
		}
	}
	return true, ""
}

// A segment the published manifest names that no longer matches its
// address, or is gone, is rewritten from the metastore by the next
// scheduled run, also when nothing was written since (an idle run), without
// publishing another manifest; the run after is idle again (issue 38,
// deliver 2: only the daily reconciliation rewrote it).
func TestScheduledRunRepairsADamagedSegment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		missing bool
	}{{"damaged", false}, {"missing", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, st, p, blobs, clk := counted(t)
			registerIn(t, c, "acme", "orders", 1)
			registerIn(t, c, "globex", "ledger", 2)
			if res := run(t, p); res.Outcome != refresh.Published {
				t.Fatalf("first run = %+v", res)
			}
			damageSegment(t, blobs, manifestEntry(t, blobs, "globex"), tc.missing)
			if ok, _ := verifies(t, blobs); ok {
				t.Fatal("the damaged segment still verifies")
			}
			clk.t = clk.t.Add(15 * time.Minute)
			res := run(t, p)
			if ok, tenant := verifies(t, blobs); !ok {
				t.Fatalf("after the scheduled run (%+v) the segment of %s does not verify", res, tenant)
			}
			// The same tables: the manifest stands and the segment is
			// stored again at its address, or (rows carrying the
			// generation they were published in, re-stamped when their
			// segment cannot be read) a new manifest names its new one.
			if !(res.Outcome == refresh.Unchanged && res.Generation == 1 || res.Outcome == refresh.Published && res.Generation == 2) ||
				res.SegmentsVerified != 2 || res.SegmentsRepaired != 1 || len(res.Repaired) != 1 || res.Repaired[0] != "globex" {
				t.Fatalf("the repairing run = %+v; want globex's segment verified bad and repaired", res)
			}
			clk.t = clk.t.Add(15 * time.Minute)
			st.scans = 0
			if res := run(t, p); res.Scanned || st.scans != 0 || res.SegmentsVerified != 2 || res.SegmentsRepaired != 0 {
				t.Fatalf("the run after the repair = %+v with %d scans; want idle, 2 segments verified", res, st.scans)
			}
		})
	}
}

// A stream batch whose tenant's stored segment is damaged does not fail
// (every retry of the batch failed the same way, until the batch went to
// the on-failure queue): it falls back to a full scan, which publishes the
// batch and stores every segment again.
func TestStreamBatchOverADamagedSegmentRepairsIt(t *testing.T) {
	t.Parallel()
	c, _, p, blobs, clk := counted(t)
	registerIn(t, c, "acme", "orders", 1)
	registerIn(t, c, "globex", "ledger", 2)
	run(t, p)
	damageSegment(t, blobs, manifestEntry(t, blobs, "acme"), false)
	registerIn(t, c, "acme", "returns", 3)
	clk.t = clk.t.Add(time.Second)
	res, err := p.Apply(context.Background(), []string{"tbl/acme/ns/returns", catalog.ChangesKey})
	if err != nil || res.Outcome != refresh.Published || !res.Scanned {
		t.Fatalf("the batch over a damaged segment = %+v, %v; want a published full scan", res, err)
	}
	if ok, tenant := verifies(t, blobs); !ok {
		t.Fatalf("after the batch the segment of %s does not verify", tenant)
	}
	if got := current(t, blobs).Tenant("acme"); len(got) != 2 {
		t.Fatalf("acme after the batch: %v, want orders and returns", got)
	}
}
