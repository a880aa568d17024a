package dynamo_test

import (
	"context"
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

// On DynamoDB the table's TTL purges a tombstone once its retention ends:
// the history the tombstone kept must go with it (nothing else can reach
// it, and it counts in the tenant's quota). So a drop gives every kept
// version record the tombstone's expiry, and an undrop takes it back.
func TestDropExpiresTheHistoryWithItsTombstone(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	st := newStore(t, d, dynamo.Options{Table: table})
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := catalog.New(st, catalog.Options{Now: func() time.Time { return now }, TombstoneRetention: 48 * time.Hour})
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
	for k, at := range expiries(catalog.VersionPrefix) {
		if at != "" {
			t.Fatalf("%s of a live table expires at %s, want never", k, at)
		}
	}
	if err := c.Drop(ctx, ref); err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(now.Add(48*time.Hour).Unix(), 10)
	tomb := expiries(catalog.TombstonePrefix)
	if len(tomb) != 1 || tomb[catalog.TombstonePrefix+"acme/sales/orders/"+reg.CreationID()] != want {
		t.Fatalf("tombstone expiries %v, want one at %s", tomb, want)
	}
	vers := expiries(catalog.VersionPrefix)
	if len(vers) != 3 { // create, update, drop
		t.Fatalf("version records after the drop: %v, want 3", vers)
	}
	for k, at := range vers {
		if at != want {
			t.Fatalf("%s expires at %q, want the tombstone's %s", k, at, want)
		}
	}
	if _, err := c.Undrop(ctx, ref, reg.CreationID()); err != nil {
		t.Fatal(err)
	}
	vers = expiries(catalog.VersionPrefix)
	if len(vers) != 4 {
		t.Fatalf("version records after the undrop: %v, want 4", vers)
	}
	for k, at := range vers {
		if at != "" {
			t.Fatalf("%s of the restored table expires at %s, want never", k, at)
		}
	}
}
