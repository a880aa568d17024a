package snapshot_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

// A tenant's dropped tables are one list, the format's: its tombstones
// still in retention at a time (one that expires at that time is out),
// newest drop first, a tie in the segment's order. A tenant without
// tombstones has none.
func TestDroppedIsTheTombstonesInRetentionNewestFirst(t *testing.T) {
	t.Parallel()
	at := t0.Add(time.Hour)
	tomb := func(name, cid string, dropped, expires time.Time) snapshot.Tombstone {
		return snapshot.Tombstone{Namespace: "n", Name: name, Version: 1, CreationID: cid, DroppedAt: dropped, DroppedBy: "bob", ExpiresAt: expires}
	}
	b := write(t, snapshot.WriterOptions{Generation: 1, CreatedAt: at}, map[string]rows{
		"acme": {tombstones: []snapshot.Tombstone{
			tomb("a", "c1", t0.Add(-3*time.Hour), time.Time{}),        // kept for ever
			tomb("b", "c2", t0, at),                                   // expires at `at`: out
			tomb("c", "c3", t0.Add(-time.Hour), at.Add(time.Second)),  // in retention
			tomb("d", "c4", t0.Add(-2*time.Hour), at.Add(-time.Hour)), // expired
			tomb("e", "c5", t0.Add(-time.Hour), time.Time{}),          // ties with c
		}},
		"globex": {tables: []snapshot.Table{{Namespace: "n", Name: "t", Location: "/t", TableType: "TABLE"}}},
	})
	r := snapshottest.Open(t, b.Blob)
	var got []string
	for _, d := range snapshottest.Tenant(t, r, "acme").Tombstones.Dropped(at) {
		got = append(got, fmt.Sprintf("%s@%s", d.Name, d.DroppedAt.Sub(t0)))
	}
	if want := []string{"c@-1h0m0s", "e@-1h0m0s", "a@-3h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("acme dropped at %v: got %q, want %q", at, got, want)
	}
	if got := snapshottest.Tenant(t, r, "globex").Tombstones.Dropped(at); len(got) != 0 {
		t.Errorf("globex dropped: got %+v, want none", got)
	}
}
