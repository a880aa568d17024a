package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/metastore/metastoretest"
)

// TestMain shares one dynalite among the tests; each uses its own table.
func TestMain(m *testing.M) { testenv.Main(m, nil) }

func newStore(tb testing.TB, d *testenv.DynamoDB, opts dynamo.Options) *dynamo.Store {
	tb.Helper()
	if opts.Table == "" {
		opts.Table = d.NewTable(tb)
	}
	st, err := dynamo.New(d.Client(), opts)
	if err != nil {
		tb.Fatalf("dynamo.New: %v", err)
	}
	return st
}

func TestConformance(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	metastoretest.Run(t, metastoretest.Suite{
		New:               func(tb testing.TB) metastore.Store { return newStore(tb, d, dynamo.Options{}) },
		MinLargeScanPages: 3,
	})
}

func TestConformanceParallelSegments(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	metastoretest.Run(t, metastoretest.Suite{
		New:               func(tb testing.TB) metastore.Store { return newStore(tb, d, dynamo.Options{Segments: 4}) },
		MinLargeScanPages: 4,
	})
}

func putRaw(t *testing.T, c *dynamodb.Client, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatalf("raw PutItem %v: %v", item, err)
	}
}

// Items written straight through the SDK in shapes the store never writes are
// dropped and counted, and the well-formed ones still come back.
func TestScanDropsMalformedItems(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	st, err := dynamo.New(d.Client(), dynamo.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Client()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	b := func(v string) types.AttributeValue { return &types.AttributeValueMemberB{Value: []byte(v)} }
	putRaw(t, c, table, map[string]types.AttributeValue{"pk": s("tbl/ok/1"), "val": b("good-1")})
	putRaw(t, c, table, map[string]types.AttributeValue{"pk": s("tbl/ok/2"), "val": b("good-2")})
	putRaw(t, c, table, map[string]types.AttributeValue{"pk": s("tbl/bad/string-val"), "val": s("not binary")})
	putRaw(t, c, table, map[string]types.AttributeValue{"pk": s("tbl/bad/missing-val"), "other": b("x")})
	putRaw(t, c, table, map[string]types.AttributeValue{"pk": s("tbl/bad/number-val"), "val": &types.AttributeValueMemberN{Value: "42"}})
	putRaw(t, c, table, map[string]types.AttributeValue{"pk": s("cfg/outside"), "val": b("outside")})

	got, stats, err := st.ScanPrefixStats(context.Background(), "tbl/")
	if err != nil {
		t.Fatalf("ScanPrefixStats: %v", err)
	}
	if len(got) != 2 || got[0].Key != "ok/1" || string(got[0].Value) != "good-1" || got[1].Key != "ok/2" || string(got[1].Value) != "good-2" {
		t.Fatalf("entries = %+v, want ok/1 and ok/2", got)
	}
	want := metastore.ScanStats{Pages: 1, Scanned: 6, Kept: 2, OutsidePrefix: 1, Malformed: 3}
	if stats != want {
		t.Fatalf("stats = %+v, want %+v", stats, want)
	}
}

// A table keyed by a number (someone pointed lake at the wrong table) yields
// only dropped items, not an error.
func TestScanDropsNumericKeys(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	c := d.Client()
	ctx := context.Background()
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("numeric-pk"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	// CreateTable returns while the table is CREATING, even on dynalite.
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 20 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("numeric-pk")}, time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		putRaw(t, c, "numeric-pk", map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberN{Value: fmt.Sprint(i)}, "val": &types.AttributeValueMemberB{Value: []byte("v")},
		})
	}
	st, err := dynamo.New(c, dynamo.Options{Table: "numeric-pk"})
	if err != nil {
		t.Fatal(err)
	}
	got, stats, err := st.ScanPrefixStats(ctx, "")
	if err != nil {
		t.Fatalf("ScanPrefixStats: %v", err)
	}
	if len(got) != 0 || stats.Malformed != 3 || stats.Scanned != 3 {
		t.Fatalf("entries %v, stats %+v; want none kept and 3 malformed", got, stats)
	}
}

func TestItemTooLarge(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	st := newStore(t, d, dynamo.Options{})
	err := st.Put(context.Background(), "tbl/a/b/c", make([]byte, dynamo.MaxItemBytes))
	if !errors.Is(err, metastore.ErrValueTooLarge) {
		t.Fatalf("Put of an item over 400 KB error = %v, want ErrValueTooLarge", err)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	if _, err := dynamo.New(nil, dynamo.Options{}); err == nil {
		t.Fatal("New without a table succeeded, want an error")
	}
}

func seed(t *testing.T, st metastore.Store, n, size int) {
	t.Helper()
	for i := range n {
		if err := st.Put(context.Background(), fmt.Sprintf("tbl/t/%04d", i), make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
}

// storeVia returns a store on table reached through a fault proxy.
func storeVia(t *testing.T, d *testenv.DynamoDB, table string, policy dynamo.RetryPolicy, inject func(op string, n int) *testenv.Fault) (*dynamo.Store, *testenv.FaultProxy) {
	t.Helper()
	proxy := testenv.StartFaultProxy(t, d.Endpoint, inject)
	client := (&testenv.DynamoDB{Endpoint: proxy.URL}).Client(dynamo.RetryOptions(policy))
	st, err := dynamo.New(client, dynamo.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return st, proxy
}

// Throttled pages are retried with backoff, and the scan completes.
func TestScanRetriesThrottling(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	direct, _ := dynamo.New(d.Client(), dynamo.Options{Table: table})
	seed(t, direct, 40, 90*1000) // 3.6 MB: 4 pages
	// Throttle the 2nd, 3rd and 5th Scan calls: page 2 needs two retries.
	st, proxy := storeVia(t, d, table, dynamo.RetryPolicy{MaxAttempts: 4}, func(op string, n int) *testenv.Fault {
		if op == "Scan" && (n == 2 || n == 3 || n == 5) {
			return &testenv.Throttled
		}
		return nil
	})
	got, stats, err := st.ScanPrefixStats(context.Background(), "tbl/")
	if err != nil {
		t.Fatalf("scan under throttling: %v", err)
	}
	if len(got) != 40 || stats.Pages < 3 {
		t.Fatalf("scan under throttling returned %d entries in %d pages, want 40 in at least 3", len(got), stats.Pages)
	}
	if calls := proxy.Calls("Scan"); calls != stats.Pages+3 {
		t.Fatalf("proxy saw %d Scan calls, want %d pages + 3 retries", calls, stats.Pages)
	}
}

// A page that keeps failing fails the whole scan: no partial result.
func TestScanFailsWholeOnPersistentPageError(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	direct, _ := dynamo.New(d.Client(), dynamo.Options{Table: table})
	seed(t, direct, 40, 90*1000)
	st, proxy := storeVia(t, d, table, dynamo.RetryPolicy{MaxAttempts: 3}, func(op string, n int) *testenv.Fault {
		if op == "Scan" && n >= 2 {
			return &testenv.InternalError
		}
		return nil
	})
	got, err := st.ScanPrefix(context.Background(), "tbl/")
	if err == nil || got != nil {
		t.Fatalf("scan with a failing second page = %d entries, %v; want nil and an error", len(got), err)
	}
	if calls := proxy.Calls("Scan"); calls != 1+3 {
		t.Fatalf("proxy saw %d Scan calls, want 1 good page + 3 attempts at the second", calls)
	}
}

func BenchmarkScanPrefix(b *testing.B) {
	d := testenv.SharedDynamoDB(b)
	for _, segments := range []int{1, 4} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
			metastoretest.BenchmarkScanPrefix(b, newStore(b, d, dynamo.Options{Segments: segments}), 10_000, 2048)
		})
	}
}

// PutExpiring stores the value as Put does, readable and scanned alike,
// with the TTL attribute the stack enables set to the expiry in Unix
// seconds (checked on the raw item in dynalite).
func TestPutExpiringSetsTheTTLAttribute(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	st, err := dynamo.New(d.Client(), dynamo.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Unix(1_900_000_000, 0)
	if err := st.PutExpiring(ctx, "dropped/acme/sales/orders/0123456789abcdef", []byte("tombstone"), at); err != nil {
		t.Fatal(err)
	}
	if v, err := st.Get(ctx, "dropped/acme/sales/orders/0123456789abcdef"); err != nil || string(v) != "tombstone" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if es, err := st.ScanPrefix(ctx, "dropped/"); err != nil || len(es) != 1 || string(es[0].Value) != "tombstone" {
		t.Fatalf("ScanPrefix = %v, %v", es, err)
	}
	out, err := d.Client().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.KeyAttr: &types.AttributeValueMemberS{Value: "dropped/acme/sales/orders/0123456789abcdef"}}})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := out.Item[dynamo.ExpiresAttr].(*types.AttributeValueMemberN)
	if !ok || n.Value != "1900000000" {
		t.Fatalf("the item's %s = %#v, want the number 1900000000", dynamo.ExpiresAttr, out.Item[dynamo.ExpiresAttr])
	}
	if err := st.PutExpiring(ctx, "", []byte("x"), at); !errors.Is(err, metastore.ErrInvalidKey) {
		t.Fatalf("PutExpiring of an empty key: %v, want ErrInvalidKey", err)
	}
}

// CreateExpiring and CompareAndSwapExpiring are Create and CompareAndSwap
// (same conditions, same errors) that also set the TTL attribute; a plain
// CompareAndSwap afterwards leaves the item without one.
func TestConditionalWritesWithExpiry(t *testing.T) {
	t.Parallel()
	d := testenv.SharedDynamoDB(t)
	table := d.NewTable(t)
	st, err := dynamo.New(d.Client(), dynamo.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const key = "dropped/acme/sales/orders/0123456789abcdef"
	expires := func() string {
		t.Helper()
		out, err := d.Client().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{dynamo.KeyAttr: &types.AttributeValueMemberS{Value: key}}})
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := out.Item[dynamo.ExpiresAttr].(*types.AttributeValueMemberN); ok {
			return n.Value
		}
		return ""
	}
	if err := st.CreateExpiring(ctx, key, []byte("one"), time.Unix(1_900_000_000, 0)); err != nil {
		t.Fatal(err)
	}
	if got := expires(); got != "1900000000" {
		t.Fatalf("after CreateExpiring the item's %s = %q, want 1900000000", dynamo.ExpiresAttr, got)
	}
	if err := st.CreateExpiring(ctx, key, []byte("two"), time.Unix(1_900_000_001, 0)); !errors.Is(err, metastore.ErrExists) {
		t.Fatalf("CreateExpiring of a key that holds a value: %v, want ErrExists", err)
	}
	if err := st.CompareAndSwapExpiring(ctx, key, []byte("other"), []byte("two"), time.Unix(1_900_000_001, 0)); !errors.Is(err, metastore.ErrConflict) {
		t.Fatalf("CompareAndSwapExpiring from another value: %v, want ErrConflict", err)
	}
	if err := st.CompareAndSwapExpiring(ctx, "dropped/none", []byte("one"), []byte("two"), time.Unix(1_900_000_001, 0)); !errors.Is(err, metastore.ErrNotFound) {
		t.Fatalf("CompareAndSwapExpiring of a missing key: %v, want ErrNotFound", err)
	}
	if v, _ := st.Get(ctx, key); string(v) != "one" || expires() != "1900000000" {
		t.Fatalf("after the refused writes: %q expiring %q, want them unchanged", v, expires())
	}
	if err := st.CompareAndSwapExpiring(ctx, key, []byte("one"), []byte("two"), time.Unix(1_900_000_001, 0)); err != nil {
		t.Fatal(err)
	}
	if v, _ := st.Get(ctx, key); string(v) != "two" || expires() != "1900000001" {
		t.Fatalf("after CompareAndSwapExpiring: %q expiring %q, want \"two\" expiring 1900000001", v, expires())
	}
	if err := st.CompareAndSwap(ctx, key, []byte("two"), []byte("three")); err != nil || expires() != "" {
		t.Fatalf("a plain CompareAndSwap: %v, expiring %q; want no expiry", err, expires())
	}
}
