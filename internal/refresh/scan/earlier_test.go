package scan_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

// wantEarlier checks a row's earlier versions against the kept versions
// the catalog's history gives (oldest first): versions, schema bytes and
// field ids.
func wantEarlier(tb testing.TB, what string, got []snapshot.Earlier, want ...catalog.Version) {
	tb.Helper()
	ok := len(got) == len(want)
	for k := 0; ok && k < len(got); k++ {
		ids, _ := want[k].Registration.FieldIDs()
		ok = got[k].Version == want[k].Version && bytes.Equal(got[k].SchemaIPC, want[k].Registration.SchemaIPC()) &&
			slices.Equal(got[k].FieldIDs, ids.IDs) && got[k].LastColumnID == ids.LastColumnID
	}
	if !ok {
		var versions []int64
		for _, e := range got {
			versions = append(versions, e.Version)
		}
		var wantVersions []int64
		for _, v := range want {
			wantVersions = append(wantVersions, v.Version)
		}
		tb.Errorf("%s: earlier versions %v (%+v), want %v as the catalog keeps them", what, versions, got, wantVersions)
	}
}

// Build and Apply give each row its registration's kept earlier versions
// that have a schema, oldest first, as the catalog's history holds them:
// register v1, update its schema to v2 (a column added), then its
// description to v3; a full build, an Apply after each update (no read
// for one update), and an Apply to a blob that has no row of the table
// (a read of each kept version) agree, within the kept count.
func TestRowsCarryTheirEarlierVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := fixture(t)
	events := ref("acme", "web", "events")
	key := catalog.KeyPrefix + events.String()
	v1 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	v2 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "at", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	empty := build(t, st, scan.BuildOptions{Generation: 1, CreatedAt: t0})
	register(t, c, events, catalog.TableSpec{Location: "s3://lake/acme/events/", Schema: v1})
	first := build(t, st, scan.BuildOptions{Generation: 2, CreatedAt: t0})
	if got := row(t, first.Blob, events); got.Version != 1 || got.Earlier != nil {
		t.Fatalf("a table of one version: version %d, earlier versions %+v; want 1 and none", got.Version, got.Earlier)
	}
	if got := row(t, first.Blob, ref("acme", "sales", "orders")); got.Earlier != nil {
		t.Fatalf("orders, of one version: earlier versions %+v, want none", got.Earlier)
	}

	apply := func(base []byte, gen uint64, opts scan.ApplyOptions) (scan.Applied, []byte) {
		t.Helper()
		opts.Generation, opts.CreatedAt = gen, t0
		applied, err := scan.Apply(ctx, st, snapshottest.Open(t, base), []string{key}, opts)
		if err != nil {
			t.Fatal(err)
		}
		blob, err := applied.Written.Blob()
		if err != nil {
			t.Fatal(err)
		}
		return applied, blob
	}
	if _, err := c.Update(ctx, events, catalog.TableSpec{Location: "s3://lake/acme/events/", Schema: v2}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	history := func() []catalog.Version {
		t.Helper()
		vs, _, err := c.History(ctx, events, "", 0, catalog.MaxHistoryPage)
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(vs) // oldest first
		return vs
	}
	kept := history() // versions 1 and 2
	applied, second := apply(first.Blob, 3, scan.ApplyOptions{})
	if applied.Reads != 2 { // the key and acme's settings: v1 is the row in the base
		t.Errorf("Apply of one update read %d keys, want 2 (no version record)", applied.Reads)
	}
	wantEarlier(t, "applied v2", row(t, second, events).Earlier, kept[0])
	wantEarlier(t, "built v2", row(t, build(t, st, scan.BuildOptions{Generation: 3, CreatedAt: t0}).Blob, events).Earlier, kept[0])

	if _, err := c.Update(ctx, events, catalog.TableSpec{Location: "s3://lake/acme/events/", Schema: v2, Description: "clicks"}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kept = history() // versions 1 to 3
	_, third := apply(second, 4, scan.ApplyOptions{})
	full := build(t, st, scan.BuildOptions{Generation: 4, CreatedAt: t0})
	fresh, freshBlob := apply(empty.Blob, 4, scan.ApplyOptions{})
	if fresh.Reads != 5 { // the key, its Iceberg state, versions 1 and 2, acme's settings
		t.Errorf("Apply of a row new to its blob read %d keys, want 5 (versions 1 and 2 among them)", fresh.Reads)
	}
	for what, b := range map[string][]byte{"applied v3": third, "built v3": full.Blob, "applied v3 to a blob without it": freshBlob} {
		got := row(t, b, events)
		if got.Version != 3 {
			t.Fatalf("%s: version %d, want 3", what, got.Version)
		}
		wantEarlier(t, what, got.Earlier, kept[0], kept[1])
	}
	// v1 and v2's schemas are held once, beside the tenant's others.
	seg := snapshottest.Tenant(t, snapshottest.Open(t, full.Blob), "acme")
	if n, want := seg.Schemas.Len(), full.DistinctSchemas; n > want {
		t.Errorf("acme's segment holds %d schemas; the scan saw %d distinct ones", n, want)
	}

	// A catalog keeping two versions: the one below the current alone;
	// keeping one, or none: no earlier versions, and no scan of them.
	for _, tc := range []struct {
		history int
		want    []catalog.Version
	}{{2, kept[1:2]}, {1, nil}, {-1, nil}} {
		b := build(t, st, scan.BuildOptions{Generation: 4, CreatedAt: t0, HistoryVersions: tc.history})
		wantEarlier(t, fmt.Sprintf("built keeping %d", tc.history), row(t, b.Blob, events).Earlier, tc.want...)
		_, a := apply(empty.Blob, 4, scan.ApplyOptions{HistoryVersions: tc.history})
		wantEarlier(t, fmt.Sprintf("applied to a blob without it, keeping %d", tc.history), row(t, a, events).Earlier, tc.want...)
		_, a = apply(second, 4, scan.ApplyOptions{HistoryVersions: tc.history})
		wantEarlier(t, fmt.Sprintf("applied after an update, keeping %d", tc.history), row(t, a, events).Earlier, tc.want...)
	}
}
