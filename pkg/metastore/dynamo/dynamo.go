// Package dynamo is the metastore.Store backend on Amazon DynamoDB (named so it
// does not collide with the SDK's dynamodb package).
//
// The table has one string hash key "pk" and a binary attribute "val". Reads
// are strongly consistent. A prefix scan is one paginated, strongly
// consistent Scan projecting pk and val (optionally split into parallel
// segments); items of the wrong shape are dropped and counted, never fatal.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/pkg/metastore"
)

// Attribute names of the table.
const (
	KeyAttr   = "pk"
	ValueAttr = "val"
	// CounterAttr is the number attribute AddCounter adds to. A counter
	// item has no ValueAttr unless it was first written with Put as a
	// decimal value (lake before counters), which the counter then adds to.
	CounterAttr = "cnt"
)

// MaxItemBytes is DynamoDB's item size limit (400 KB, counting attribute
// names and values).
const MaxItemBytes = 400 * 1024

// api is the part of the DynamoDB client the store calls.
type api interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Options configures a Store.
type Options struct {
	// Table is the DynamoDB table name. Required.
	Table string
	// Segments splits a prefix scan into this many parallel Scan segments.
	// Default 1 (one sequential paginated Scan).
	Segments int
	// PageLimit caps the items per Scan page (the Limit parameter). Default 0:
	// DynamoDB's 1 MB pages.
	PageLimit int32
}

// Store is a metastore.Store on one DynamoDB table.
type Store struct {
	client api
	opts   Options
}

var (
	_ metastore.Store        = (*Store)(nil)
	_ metastore.StatsScanner = (*Store)(nil)
)

// New returns a Store over client. Build the client with RetryOptions so
// throttling is retried on purpose.
func New(client api, opts Options) (*Store, error) {
	if opts.Table == "" {
		return nil, errors.New("dynamo: Options.Table is required")
	}
	if opts.Segments <= 0 {
		opts.Segments = 1
	}
	if opts.Segments > 1_000_000 {
		return nil, fmt.Errorf("dynamo: Options.Segments %d exceeds DynamoDB's 1,000,000", opts.Segments)
	}
	return &Store{client: client, opts: opts}, nil
}

// RetryPolicy configures the client's retryer. The zero value gives the
// documented defaults.
type RetryPolicy struct {
	// MaxAttempts per call, first try included. Default 10.
	MaxAttempts int
	// MaxBackoff between attempts. Default 20 s.
	MaxBackoff time.Duration
}

// RetryOptions returns a dynamodb.Options function that installs a standard
// retryer without the client-wide retry quota: the SDK's default quota of 500
// tokens runs dry under sustained throttling and then fails calls that a
// backoff would have saved (aws-sdk-go-v2#1665). Throttling errors back off
// from 1 s with jitter; other retryable errors from 50 ms.
func RetryOptions(p RetryPolicy) func(*dynamodb.Options) {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 10
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 20 * time.Second
	}
	return func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = p.MaxAttempts
			so.MaxBackoff = p.MaxBackoff
			so.RateLimiter = ratelimit.None
		})
	}
}

func (s *Store) check(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dynamo: %w", err)
	}
	if err := metastore.ValidateKey(key); err != nil {
		return err
	}
	if n := len(KeyAttr) + len(key) + len(ValueAttr) + len(value); n > MaxItemBytes {
		return fmt.Errorf("%w: item of %d bytes exceeds DynamoDB's %d", metastore.ErrValueTooLarge, n, MaxItemBytes)
	}
	return nil
}

func keyOf(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyAttr: &types.AttributeValueMemberS{Value: key}}
}

func item(key string, value []byte) map[string]types.AttributeValue {
	if value == nil {
		value = []byte{}
	}
	return map[string]types.AttributeValue{
		KeyAttr:   &types.AttributeValueMemberS{Value: key},
		ValueAttr: &types.AttributeValueMemberB{Value: value},
	}
}

// expiringItem is item with ExpiresAttr set to expiresAt (none when it is
// zero).
func expiringItem(key string, value []byte, expiresAt time.Time) map[string]types.AttributeValue {
	it := item(key, value)
	if !expiresAt.IsZero() {
		it[ExpiresAttr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(expiresAt.Unix(), 10)}
	}
	return it
}

// Get implements metastore.Store with a strongly consistent GetItem.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.check(ctx, key, nil); err != nil {
		return nil, err
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.opts.Table),
		Key:                      keyOf(key),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#v"),
		ExpressionAttributeNames: map[string]string{"#v": ValueAttr},
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: get %q: %w", key, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("dynamo: get %q: %w", key, metastore.ErrNotFound)
	}
	v, ok := out.Item[ValueAttr].(*types.AttributeValueMemberB)
	if !ok {
		return nil, fmt.Errorf("dynamo: get %q: item has no binary %q attribute", key, ValueAttr)
	}
	return nonNil(v.Value), nil
}

// Put implements metastore.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	if err := s.check(ctx, key, value); err != nil {
		return err
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.opts.Table), Item: item(key, value)})
	if err != nil {
		return fmt.Errorf("dynamo: put %q: %w", key, err)
	}
	return nil
}

// ExpiresAttr is the numeric attribute (Unix seconds) PutExpiring sets:
// the table's TTL attribute (the CDK stack enables TTL on it).
const ExpiresAttr = "expires_at"

var _ metastore.ExpiringPutter = (*Store)(nil)

// PutExpiring implements metastore.ExpiringPutter: Put with ExpiresAttr,
// so DynamoDB's TTL deletes the item after expiresAt.
func (s *Store) PutExpiring(ctx context.Context, key string, value []byte, expiresAt time.Time) error {
	if err := s.check(ctx, key, value); err != nil {
		return err
	}
	it := item(key, value)
	it[ExpiresAttr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(expiresAt.Unix(), 10)}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.opts.Table), Item: it})
	if err != nil {
		return fmt.Errorf("dynamo: put %q: %w", key, err)
	}
	return nil
}

// CreateExpiring implements metastore.ExpiringPutter: Create with
// ExpiresAttr.
func (s *Store) CreateExpiring(ctx context.Context, key string, value []byte, expiresAt time.Time) error {
	return s.create(ctx, key, value, expiresAt)
}

// CompareAndSwapExpiring implements metastore.ExpiringPutter:
// CompareAndSwap with ExpiresAttr.
func (s *Store) CompareAndSwapExpiring(ctx context.Context, key string, old, value []byte, expiresAt time.Time) error {
	return s.compareAndSwap(ctx, key, old, value, expiresAt)
}

// Create implements metastore.Store with a PutItem conditioned on
// attribute_not_exists(pk).
func (s *Store) Create(ctx context.Context, key string, value []byte) error {
	return s.create(ctx, key, value, time.Time{})
}

// create is Create, with ExpiresAttr unless expiresAt is zero.
func (s *Store) create(ctx context.Context, key string, value []byte, expiresAt time.Time) error {
	if err := s.check(ctx, key, value); err != nil {
		return err
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.opts.Table),
		Item:                     expiringItem(key, value, expiresAt),
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": KeyAttr},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("dynamo: create %q: %w", key, metastore.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("dynamo: create %q: %w", key, err)
	}
	return nil
}

// AddCounter implements metastore.Store with one UpdateItem ADD on
// CounterAttr (DynamoDB applies concurrent ADDs one after another: no
// condition, nothing retried on contention), returning the new item.
func (s *Store) AddCounter(ctx context.Context, key string, delta uint64) (uint64, error) {
	if err := s.check(ctx, key, nil); err != nil {
		return 0, err
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.opts.Table),
		Key:                       keyOf(key),
		UpdateExpression:          aws.String("ADD #c :d"),
		ExpressionAttributeNames:  map[string]string{"#c": CounterAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberN{Value: strconv.FormatUint(delta, 10)}},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return 0, fmt.Errorf("dynamo: add to counter %q: %w", key, err)
	}
	return counterOf(key, out.Attributes)
}

// Counter implements metastore.Store with a strongly consistent GetItem of
// the counter's two attributes.
func (s *Store) Counter(ctx context.Context, key string) (uint64, error) {
	if err := s.check(ctx, key, nil); err != nil {
		return 0, err
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.opts.Table),
		Key:                      keyOf(key),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#v, #c"),
		ExpressionAttributeNames: map[string]string{"#v": ValueAttr, "#c": CounterAttr},
	})
	if err != nil {
		return 0, fmt.Errorf("dynamo: read counter %q: %w", key, err)
	}
	return counterOf(key, out.Item)
}

// counterOf reads a counter item: CounterAttr plus a decimal ValueAttr
// where one was written with Put.
func counterOf(key string, it map[string]types.AttributeValue) (uint64, error) {
	var n uint64
	if v, ok := it[ValueAttr]; ok {
		b, ok := v.(*types.AttributeValueMemberB)
		if !ok {
			return 0, fmt.Errorf("%w: %q has a %q that is not binary", metastore.ErrNotCounter, key, ValueAttr)
		}
		legacy, err := metastore.ParseCounter(key, b.Value)
		if err != nil {
			return 0, err
		}
		n = legacy
	}
	if v, ok := it[CounterAttr]; ok {
		num, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return 0, fmt.Errorf("%w: %q has a %q that is not a number", metastore.ErrNotCounter, key, CounterAttr)
		}
		c, err := strconv.ParseUint(num.Value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q holds %s", metastore.ErrNotCounter, key, num.Value)
		}
		n += c
	}
	return n, nil
}

// CompareAndSwap implements metastore.Store with a PutItem conditioned on the
// stored value. On a failed condition it returns the stored item
// (ReturnValuesOnConditionCheckFailure) to tell a missing key from a changed one.
func (s *Store) CompareAndSwap(ctx context.Context, key string, old, value []byte) error {
	return s.compareAndSwap(ctx, key, old, value, time.Time{})
}

// compareAndSwap is CompareAndSwap, with ExpiresAttr unless expiresAt is
// zero.
func (s *Store) compareAndSwap(ctx context.Context, key string, old, value []byte, expiresAt time.Time) error {
	if err := s.check(ctx, key, value); err != nil {
		return err
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.opts.Table),
		Item:                                expiringItem(key, value, expiresAt),
		ConditionExpression:                 aws.String("#v = :old"),
		ExpressionAttributeNames:            map[string]string{"#v": ValueAttr},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":old": &types.AttributeValueMemberB{Value: nonNil(old)}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			// Either the key is missing or the server does not return the
			// old item; a consistent read tells which.
			if _, gerr := s.Get(ctx, key); errors.Is(gerr, metastore.ErrNotFound) {
				return fmt.Errorf("dynamo: swap %q: %w", key, metastore.ErrNotFound)
			}
		}
		return fmt.Errorf("dynamo: swap %q: %w", key, metastore.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("dynamo: swap %q: %w", key, err)
	}
	return nil
}

// CompareAndDelete implements metastore.Store with a DeleteItem
// conditioned on the stored value.
func (s *Store) CompareAndDelete(ctx context.Context, key string, old []byte) error {
	if err := s.check(ctx, key, nil); err != nil {
		return err
	}
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.opts.Table),
		Key:                       keyOf(key),
		ConditionExpression:       aws.String("#v = :old"),
		ExpressionAttributeNames:  map[string]string{"#v": ValueAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":old": &types.AttributeValueMemberB{Value: nonNil(old)}},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// A consistent read tells a missing key from another value.
		if _, gerr := s.Get(ctx, key); errors.Is(gerr, metastore.ErrNotFound) {
			return fmt.Errorf("dynamo: delete %q: %w", key, metastore.ErrNotFound)
		}
		return fmt.Errorf("dynamo: delete %q: %w", key, metastore.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("dynamo: delete %q: %w", key, err)
	}
	return nil
}

// Delete implements metastore.Store with a DeleteItem conditioned on
// attribute_exists(pk).
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, key, nil); err != nil {
		return err
	}
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(s.opts.Table),
		Key:                      keyOf(key),
		ConditionExpression:      aws.String("attribute_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": KeyAttr},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("dynamo: delete %q: %w", key, metastore.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dynamo: delete %q: %w", key, err)
	}
	return nil
}

// ScanPrefix implements metastore.Store.
func (s *Store) ScanPrefix(ctx context.Context, prefix string) ([]metastore.Entry, error) {
	entries, _, err := s.ScanPrefixStats(ctx, prefix)
	return entries, err
}

// ScanPrefixStats implements metastore.StatsScanner: one paginated, strongly
// consistent Scan (in Options.Segments parallel segments) projecting pk and
// val. Items whose pk is not a string or whose val is missing or not binary
// are dropped and counted as Malformed; items outside the prefix are counted
// as OutsidePrefix. Any page error fails the whole scan: a partial result is
// never returned.
func (s *Store) ScanPrefixStats(ctx context.Context, prefix string) ([]metastore.Entry, metastore.ScanStats, error) {
	var entries []metastore.Entry
	stats, err := s.VisitPrefix(ctx, prefix, func(e metastore.Entry) error {
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, metastore.ScanStats{}, err
	}
	slices.SortFunc(entries, func(a, b metastore.Entry) int { return strings.Compare(a.Key, b.Key) })
	return entries, stats, nil
}

// VisitPrefix implements metastore.Visitor: the segments are scanned in
// parallel and fn is called for each item as its page arrives, one call at
// a time. An error from fn stops every segment.
func (s *Store) VisitPrefix(ctx context.Context, prefix string, fn func(metastore.Entry) error) (metastore.ScanStats, error) {
	if err := ctx.Err(); err != nil {
		return metastore.ScanStats{}, fmt.Errorf("dynamo: %w", err)
	}
	n := s.opts.Segments
	stats := make([]metastore.ScanStats, n)
	var (
		mu    sync.Mutex
		fnErr error
	)
	emit := func(e metastore.Entry) error {
		mu.Lock()
		defer mu.Unlock()
		if fnErr == nil {
			fnErr = fn(e)
		}
		return fnErr
	}
	g, gctx := errgroup.WithContext(ctx)
	for seg := range n {
		g.Go(func() error {
			var err error
			stats[seg], err = s.scanSegment(gctx, prefix, seg, emit)
			return err
		})
	}
	err := g.Wait()
	var total metastore.ScanStats
	for i := range n {
		total.Pages += stats[i].Pages
		total.Scanned += stats[i].Scanned
		total.OutsidePrefix += stats[i].OutsidePrefix
		total.Malformed += stats[i].Malformed
		total.Kept += stats[i].Kept
	}
	switch {
	case fnErr != nil:
		return total, fnErr
	case err != nil:
		return total, fmt.Errorf("dynamo: scan %q: %w", prefix, err)
	}
	return total, nil
}

func (s *Store) scanSegment(ctx context.Context, prefix string, seg int, emit func(metastore.Entry) error) (metastore.ScanStats, error) {
	in := &dynamodb.ScanInput{
		TableName:                aws.String(s.opts.Table),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#k, #v"),
		ExpressionAttributeNames: map[string]string{"#k": KeyAttr, "#v": ValueAttr},
	}
	if s.opts.Segments > 1 {
		in.Segment = aws.Int32(int32(seg))
		in.TotalSegments = aws.Int32(int32(s.opts.Segments))
	}
	if s.opts.PageLimit > 0 {
		in.Limit = aws.Int32(s.opts.PageLimit)
	}
	var stats metastore.ScanStats
	p := dynamodb.NewScanPaginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return stats, fmt.Errorf("page %d: %w", stats.Pages+1, err)
		}
		stats.Pages++
		for i, it := range page.Items {
			page.Items[i] = nil // the page's items go as they are visited
			stats.Scanned++
			k, ok := it[KeyAttr].(*types.AttributeValueMemberS)
			if !ok {
				stats.Malformed++
				continue
			}
			rest, ok := strings.CutPrefix(k.Value, prefix)
			if !ok {
				// Counters (no ValueAttr) live here too, outside the
				// prefixes scanned.
				stats.OutsidePrefix++
				continue
			}
			v, ok := it[ValueAttr].(*types.AttributeValueMemberB)
			if !ok {
				stats.Malformed++
				continue
			}
			stats.Kept++
			if err := emit(metastore.Entry{Key: rest, Value: nonNil(v.Value)}); err != nil {
				return stats, err
			}
		}
	}
	return stats, nil
}

// Close implements metastore.Store. The SDK client needs no closing.
func (s *Store) Close() error { return nil }

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// nonNil keeps a zero-length value non-nil so it stays a value.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
