package refresh_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// A stream batch of an Iceberg state key alone (as the Lambda passes every
// key of its batch) is applied incrementally: the table's row carries the
// state as stored, no change is announced, and the marker counts the
// sync's write, so the next scheduled run is idle.
func TestApplyCarriesAnIcebergState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st, p, blobs, clk := counted(t)
	register(t, c, "a", 1)
	run(t, p)
	ref := catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: "a"}
	reg, err := c.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutIcebergState(ctx, ref, catalog.IcebergState{CreationID: reg.CreationID(), Version: reg.Version(),
		MetadataLocation: "s3://lake/meta/a/v1.metadata.json",
		Metadata:         json.RawMessage(`{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}`), SyncedAt: clk.t}); err != nil {
		t.Fatal(err)
	}
	want, err := st.Get(ctx, catalog.IcebergPrefix+ref.String())
	if err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Second)
	res, err := p.Apply(ctx, []string{catalog.IcebergPrefix + ref.String(), catalog.ChangesKey})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Incremental || res.Scanned || res.Outcome != refresh.Published || res.Announced != 0 {
		t.Fatalf("apply = %+v; want incremental, published, nothing announced", res)
	}
	cur, err := blobs.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	seg, err := load(t, blobs, cur.Data).Tenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Release()
	if got := seg.Table(0).IcebergState; !bytes.Equal(got, want) {
		t.Fatalf("row's iceberg state %q, want the item as stored %q", got, want)
	}
	if res := run(t, p); res.Scanned || res.Outcome != refresh.Unchanged {
		t.Fatalf("scheduled run after the apply = %+v, want idle", res)
	}
}
