package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
)

// On DynamoDB the table's TTL purges a tombstone once its retention ends,
// and the history the tombstone kept goes with it: the version records
// carry no expiry of their own (but HistoryMaxAge's), so neither a drop
// nor an undrop rewrites them; the tombstone's expiry is theirs. From the
// end of its retention the history is not listed, and once the TTL has
// taken the tombstone (dynalite has no TTL: the test deletes it as the TTL
// would) the recount leaves the records out of the tenant's usage and the
// purge deletes them. (Before the one commit path a drop gave each kept
// record the tombstone's expiry and an undrop took it back: a read and a
// write per record, 100 of each with a full history.)
func TestDropExpiresTheHistoryWithItsTombstone(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	st := newStore(t, d, dynamo.Options{Table: table})
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const retention, maxAge = 48 * time.Hour, 30 * 24 * time.Hour
	c := catalog.New(st, catalog.Options{Now: func() time.Time { return now }, TombstoneRetention: retention})
	ctx := catalog.WithCaller(context.Background(), "arn:aws:iam::1:user/alice")
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	reg, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Update(ctx, ref, catalog.TableSpec{Schema: catalogtest.WideSchema(1, 4)}, catalog.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// expiries reads the TTL attribute of every stored item under prefix.
	expiries := func(prefix string) map[string]string {
		t.Helper()
		out, err := d.Client().Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, item := range out.Items {
			key := item[dynamo.KeyAttr].(*types.AttributeValueMemberS).Value
			if !strings.HasPrefix(key, prefix) {
				continue
			}
			m[key] = ""
			if n, ok := item[dynamo.ExpiresAttr].(*types.AttributeValueMemberN); ok {
				m[key] = n.Value
			}
		}
		return m
	}
	// versions checks the version records stored: n of them, none expiring.
	versions := func(step string, n int) {
		t.Helper()
		vers := expiries(catalog.VersionPrefix + "acme/sales/orders/")
		if len(vers) != n {
			t.Fatalf("%s: version records %v, want %d", step, vers, n)
		}
		for k, at := range vers {
			if at != "" {
				t.Fatalf("%s: %s expires at %s, want never (the tombstone's expiry governs)", step, k, at)
			}
		}
	}
	versions("live", 2)
	if err := c.Drop(ctx, ref); err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(now.Add(retention).Unix(), 10)
	tomb := expiries(catalog.TombstonePrefix)
	tombKey := catalog.TombstonePrefix + "acme/sales/orders/" + reg.CreationID()
	if len(tomb) != 1 || tomb[tombKey] != want {
		t.Fatalf("tombstone expiries %v, want one at %s", tomb, want)
	}
	versions("dropped", 3) // create, update, drop
	if vs, _, err := c.History(ctx, ref, reg.CreationID(), 0, 10); err != nil || len(vs) != 3 {
		t.Fatalf("history in retention: %d versions, %v; want 3", len(vs), err)
	}
	if _, err := c.Undrop(ctx, ref, reg.CreationID()); err != nil {
		t.Fatal(err)
	}
	versions("undropped", 4)
	if err := c.Drop(ctx, ref); err != nil {
		t.Fatal(err)
	}
	versions("dropped again", 5)

	// Retention ends: the history is gone with the tombstone, before the
	// TTL has deleted anything.
	now = now.Add(retention)
	if vs, _, err := c.History(ctx, ref, reg.CreationID(), 0, 10); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("history past retention: %d versions, %v; want ErrNotFound", len(vs), err)
	}
	// The TTL deletes the tombstone.
	if _, err := d.Client().DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{dynamo.KeyAttr: &types.AttributeValueMemberS{Value: tombKey}}}); err != nil {
		t.Fatal(err)
	}
	if vs, _, err := c.History(ctx, ref, reg.CreationID(), 0, 10); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("history after the TTL: %d versions, %v; want ErrNotFound", len(vs), err)
	}
	if _, err := c.RecomputeUsage(ctx); err != nil {
		t.Fatal(err)
	}
	if u, err := c.Usage(ctx, "acme"); err != nil || u != (catalog.Usage{}) {
		t.Fatalf("usage recounted after the TTL: %+v, %v; want nothing (the records nothing reaches are not held)", u, err)
	}
	if p, err := c.PurgeExpired(ctx); err != nil || p.Versions != 5 {
		t.Fatalf("purge after the TTL: %+v, %v; want the 5 version records", p, err)
	}
	versions("purged", 0)

	// HistoryMaxAge: each record expires by its own age, set as it is
	// written; a drop and an undrop leave it as it is.
	aged := catalog.New(st, catalog.Options{Now: func() time.Time { return now }, TombstoneRetention: retention, HistoryMaxAge: maxAge})
	returns := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "returns"}
	made := now
	r2, _, err := aged.Register(ctx, returns, catalog.TableSpec{Location: "/r", Schema: catalogtest.WideSchema(1, 3)})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if err := aged.Drop(ctx, returns); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if _, err := aged.Undrop(ctx, returns, r2.CreationID()); err != nil {
		t.Fatal(err)
	}
	prefix := catalog.VersionPrefix + "acme/sales/returns/" + r2.CreationID() + "/"
	for v, at := range []time.Time{made, made.Add(time.Hour), made.Add(2 * time.Hour)} {
		key := fmt.Sprintf("%s%020d", prefix, v+1)
		if got, want := expiries(prefix)[key], strconv.FormatInt(at.Add(maxAge).Unix(), 10); got != want {
			t.Fatalf("%s expires at %q, want its own age's %s", key, got, want)
		}
	}
}

// A table dropped before the one commit path has version records carrying
// its tombstone's expiry, and a tombstone that does not say
// history_by_reference: its undrop takes the expiry back, so the restored
// table's history does not expire by the TTL.
func TestUndropOfAnOlderDropTakesTheExpiryBack(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	st := newStore(t, d, dynamo.Options{Table: table})
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := catalog.New(st, catalog.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	reg, _, err := c.Register(ctx, ref, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(ctx, ref); err != nil {
		t.Fatal(err)
	}
	// Make the drop an older one: the tombstone without the marker, each
	// record with the tombstone's expiry.
	expires := now.Add(catalog.DefaultTombstoneRetention)
	tombKey := catalog.TombstonePrefix + ref.String() + "/" + reg.CreationID()
	raw, err := st.Get(ctx, tombKey)
	if err != nil {
		t.Fatal(err)
	}
	var tomb map[string]any
	if err := json.Unmarshal(raw, &tomb); err != nil || tomb["history_by_reference"] != true {
		t.Fatalf("tombstone %s, %v; want history_by_reference", raw, err)
	}
	delete(tomb, "history_by_reference")
	if raw, err = json.Marshal(tomb); err != nil {
		t.Fatal(err)
	}
	if err := st.PutExpiring(ctx, tombKey, raw, expires); err != nil {
		t.Fatal(err)
	}
	versions, err := st.ScanPrefix(ctx, catalog.VersionPrefix)
	if err != nil || len(versions) != 2 {
		t.Fatalf("version records %v, %v; want 2", versions, err)
	}
	for _, e := range versions {
		if err := st.PutExpiring(ctx, catalog.VersionPrefix+e.Key, e.Value, expires); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Undrop(ctx, ref, reg.CreationID()); err != nil {
		t.Fatal(err)
	}
	out, err := d.Client().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, item := range out.Items {
		key := item[dynamo.KeyAttr].(*types.AttributeValueMemberS).Value
		if !strings.HasPrefix(key, catalog.VersionPrefix) {
			continue
		}
		n++
		if at, ok := item[dynamo.ExpiresAttr]; ok {
			t.Errorf("%s of the restored table expires at %v, want never", key, at)
		}
	}
	if n != 3 {
		t.Fatalf("%d version records after the undrop, want 3 (create, drop, undrop)", n)
	}
}
