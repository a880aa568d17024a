package catalog_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// An undrop raced by a drop of the table it restores, round after round,
// on memory and on DynamoDB (dynalite): every undrop succeeds and says so
// (the restored version is in the history as an undrop), every drop
// succeeds once the table is back, one tombstone is left, and the
// tenant's usage is what a recount finds. Before, a drop that wrote its
// tombstone while the undrop was still deleting the old one made the undrop
// fail after it had restored the table (503 through the API), and the old
// tombstone's bytes stayed counted.
func TestUndropRacingADrop(t *testing.T) {
	t.Parallel()
	t.Run("memstore", func(t *testing.T) {
		t.Parallel()
		st := memstore.New(memstore.Options{})
		t.Cleanup(func() { st.Close() })
		raceUndropAndDrop(t, catalog.New(st, catalog.Options{}), 300)
	})
	t.Run("dynamo", func(t *testing.T) {
		t.Parallel()
		d := testenv.SharedDynamoDB(t)
		table := d.NewTable(t)
		st, err := dynamo.New(d.Client(), dynamo.Options{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		tomb := raceUndropAndDrop(t, catalog.New(st, catalog.Options{}), 40)
		// The tombstone a drop wrote over the one an undrop was deleting
		// still expires by DynamoDB's TTL.
		out, err := d.Client().GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{dynamo.KeyAttr: &types.AttributeValueMemberS{Value: catalog.TombstonePrefix + orders.String() + "/" + tomb.Registration.CreationID()}}})
		if err != nil {
			t.Fatal(err)
		}
		want := strconv.FormatInt(tomb.ExpiresAt.Unix(), 10)
		if n, ok := out.Item[dynamo.ExpiresAttr].(*types.AttributeValueMemberN); !ok || n.Value != want {
			t.Fatalf("the last tombstone's %s = %#v, want %s", dynamo.ExpiresAttr, out.Item[dynamo.ExpiresAttr], want)
		}
	})
}

// raceUndropAndDrop runs the rounds and returns the tombstone left.
func raceUndropAndDrop(t *testing.T, c *catalog.Catalog, rounds int) catalog.Tombstone {
	ctx := context.Background()
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: catalogtest.WideSchema(1, 20)})
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	id := reg.CreationID()
	for round := range rounds {
		var (
			wg         sync.WaitGroup
			restored   catalog.Registration
			uerr, derr error
		)
		undone := make(chan struct{})
		wg.Go(func() {
			defer close(undone)
			restored, uerr = c.Undrop(ctx, orders, id)
		})
		// The dropper drops the table the moment it is back.
		wg.Go(func() {
			for {
				err := c.Drop(ctx, orders)
				if !errors.Is(err, catalog.ErrNotFound) {
					derr = err
					return
				}
				select {
				case <-undone:
					if uerr != nil {
						return
					}
				default:
				}
			}
		})
		wg.Wait()
		if uerr != nil {
			t.Fatalf("round %d: undrop: %v, want it restored (nothing else undrops)", round, uerr)
		}
		if derr != nil {
			t.Fatalf("round %d: drop: %v", round, derr)
		}
		vs, _, err := c.History(ctx, orders, id, restored.Version()+1, 1)
		if err != nil || len(vs) != 1 || vs[0].Version != restored.Version() || vs[0].Registration.Op() != catalog.OpUndrop {
			t.Fatalf("round %d: the history at the restored version %d: %+v, %v; want the undrop", round, restored.Version(), vs, err)
		}
	}
	dropped, err := c.Dropped(ctx, "acme")
	if err != nil || len(dropped) != 1 || dropped[0].Registration.Version() != int64(2*rounds+2) {
		t.Fatalf("tombstones left: %+v, %v; want one, of the last drop (version %d)", dropped, err, 2*rounds+2)
	}
	counted, err := c.Usage(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecomputeUsage(ctx); err != nil {
		t.Fatal(err)
	}
	if recounted, _ := c.Usage(ctx, "acme"); recounted != counted {
		t.Fatalf("after %d rounds the usage counted %+v, a recount finds %+v", rounds, counted, recounted)
	}
	return dropped[0]
}
