package refresh_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// On DynamoDB (dynalite) the TTL deletes a tombstone at the end of its
// retention and leaves the version records it kept, which nothing reaches
// any more. Refresh deletes them: a stream batch that names the
// tombstone's key (its REMOVE) purges that table's records, and leaves
// a live table's and an undropped one's (whose tombstone the undrop
// deleted, a REMOVE too) as they are; the same batch again purges
// nothing; a history whose REMOVE no batch brought is purged by the sweep
// of a run that scans, at most once a Reconcile interval, within
// HistoryBudget (what it leaves, the next run that scans carries on).
func TestRefreshPurgesTheHistoryTheTTLOrphans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	st, err := dynamo.New(d.Client(), dynamo.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now}
	c := catalog.New(st, catalog.Options{Now: clk.now, TombstoneRetention: 48 * time.Hour})
	p := &refresh.Publisher{Store: st, Blobs: blobstore.NewFile(filepath.Join(t.TempDir(), "catalog.lakesnap")), Now: clk.now,
		History: catalog.New(st, catalog.Options{})}

	ref := func(name string) catalog.TableRef {
		return catalog.TableRef{Tenant: "acme", Namespace: "ns", Name: name}
	}
	ids := map[string]string{}
	for i, name := range []string{"orders", "kept", "back", "lost"} {
		reg, _, err := c.Register(ctx, ref(name), catalog.TableSpec{Location: "/d/" + name, Schema: catalogtest.WideSchema(i, 3)})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = reg.CreationID()
	}
	if _, err := c.Update(ctx, ref("orders"), catalog.TableSpec{Schema: catalogtest.WideSchema(9, 4)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders", "back", "lost"} {
		if err := c.Drop(ctx, ref(name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Undrop(ctx, ref("back"), ids["back"]); err != nil {
		t.Fatal(err)
	}
	tomb := func(name string) string { return catalog.TombstonePrefix + ref(name).String() + "/" + ids[name] }
	want := map[string]int{"orders": 3, "kept": 1, "back": 3, "lost": 2} // orders: create, update, drop; back: create, drop, undrop
	check := func(step string) {
		t.Helper()
		for name, n := range want {
			es, err := st.ScanPrefix(ctx, catalog.VersionPrefix+ref(name).String()+"/")
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != n {
				t.Fatalf("%s: %d version records of %s, want %d", step, len(es), name, n)
			}
		}
	}
	// The first run scans and sweeps: every history is reached.
	if res := run(t, p); !res.Scanned || !res.HistorySwept || res.VersionsPurged != 0 || res.HistoryError != "" {
		t.Fatalf("first run = %+v; want a scan and a sweep that purges nothing", res)
	}
	check("before the TTL")

	// The TTL deletes the tombstones of orders and lost (dynalite has no
	// TTL); the stream brings orders' REMOVE and back's (its undrop), not
	// lost's.
	var ttlBytes int64 // what the TTL's deletes take without telling the usage
	for _, name := range []string{"orders", "lost"} {
		raw, err := st.Get(ctx, tomb(name))
		if err != nil {
			t.Fatal(err)
		}
		ttlBytes += int64(len(tomb(name)) + len(raw))
		if _, err := d.Client().DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{dynamo.KeyAttr: &types.AttributeValueMemberS{Value: tomb(name)}}}); err != nil {
			t.Fatal(err)
		}
	}
	batch := []string{tomb("orders"), "tbl/acme/ns/back", tomb("back"), catalog.ChangesKey}
	res, err := p.Apply(ctx, batch)
	if err != nil || res.HistoriesPurged != 1 || res.VersionsPurged != 3 || res.HistoryError != "" || res.HistorySwept {
		t.Fatalf("batch = %+v, %v; want orders' 3 version records purged, no sweep", res, err)
	}
	want["orders"] = 0
	check("after the batch")
	if res, err := p.Apply(ctx, batch); err != nil || res.VersionsPurged != 0 || res.HistoryError != "" {
		t.Fatalf("the batch again = %+v, %v; want nothing purged", res, err)
	}

	// A run that scans within the interval does not sweep again.
	clk.t = clk.t.Add(time.Hour)
	if _, _, err := c.Register(ctx, ref("x"), catalog.TableSpec{Location: "/d/x", Schema: catalogtest.WideSchema(7, 3)}); err != nil {
		t.Fatal(err)
	}
	want["x"] = 1
	if res := run(t, p); !res.Scanned || res.HistorySwept {
		t.Fatalf("run within the interval = %+v; want a scan and no sweep", res)
	}
	check("within the interval")

	// The reconciliation sweeps: lost's history, one record at a time on
	// a budget of one read, the rest at the next run that scans.
	clk.t = clk.t.Add(refresh.DefaultReconcile)
	p.HistoryBudget = 1
	if res := run(t, p); !res.Scanned || !res.HistorySwept || res.VersionsPurged != 1 || res.HistoriesLeft != 1 || res.HistoryError != "" {
		t.Fatalf("reconciliation = %+v; want a sweep that purges one record of lost and leaves the rest", res)
	}
	want["lost"] = 1
	check("after a sweep on a budget")
	if _, err := c.Update(ctx, ref("x"), catalog.TableSpec{Schema: catalogtest.WideSchema(8, 3)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["x"] = 2
	if res := run(t, p); !res.Scanned || !res.HistorySwept || res.VersionsPurged != 1 || res.HistoriesLeft != 0 || res.HistoryError != "" {
		t.Fatalf("the next run that scans = %+v; want a sweep that purges the rest", res)
	}
	want["lost"] = 0
	check("after the sweep")
	if raw, err := st.Get(ctx, refresh.HistorySweepKey); err != nil || string(raw) != clk.t.Format(time.RFC3339) {
		t.Fatalf("%s = %q, %v; want the sweep's time", refresh.HistorySweepKey, raw, err)
	}
	// The purges gave back what they deleted: the recount differs from
	// the running count by the tombstones the TTL deleted alone.
	running, err := c.Usage(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecomputeUsage(ctx); err != nil {
		t.Fatal(err)
	}
	if recounted, err := c.Usage(ctx, "acme"); err != nil || running.Bytes-recounted.Bytes != ttlBytes || running.Tables != recounted.Tables {
		t.Fatalf("usage %+v, recounted %+v, %v; want %d bytes apart (the tombstones the TTL deleted)", running, recounted, err, ttlBytes)
	}
}
