package refresh

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// Announcer tells subscribers of the changes a published stream batch
// brought into the snapshot (Publisher.Events).
type Announcer interface {
	Announce(ctx context.Context, generation uint64, changes []scan.Change) error
}

// Event names on the bus: every lake event has EventSource as its source
// and EventDetailType as its detail-type, so a rule selects them, and a
// tenant's with detail.tenant.
const (
	EventSource     = "lake.catalog"
	EventDetailType = "Table Changed"
)

// EventDetail is an event's detail: one change of one table, discoverable
// from the snapshot generation Generation on. Op is create, update,
// undrop or drop; Version the table's version after it (a drop is a
// version of its own, one past the last state); By who made it.
type EventDetail struct {
	Tenant     string    `json:"tenant"`
	Namespace  string    `json:"namespace"`
	Table      string    `json:"table"`
	Op         string    `json:"op"`
	Version    int64     `json:"version"`
	CreationID string    `json:"creation_id,omitempty"`
	By         string    `json:"by,omitempty"`
	At         time.Time `json:"at"`
	Generation uint64    `json:"generation"`
}

// eventsPerCall is PutEvents' limit of entries per call.
const eventsPerCall = 10

// eventEntries lays out changes as PutEvents entries on bus, in batches of
// eventsPerCall.
func eventEntries(bus string, generation uint64, changes []scan.Change) ([][]types.PutEventsRequestEntry, error) {
	var out [][]types.PutEventsRequestEntry
	for i, c := range changes {
		b, err := json.Marshal(EventDetail{Tenant: c.Ref.Tenant, Namespace: c.Ref.Namespace, Table: c.Ref.Name, Op: c.Op, Version: c.Version,
			CreationID: c.CreationID, By: c.By, At: c.At.UTC(), Generation: generation})
		if err != nil {
			return nil, err
		}
		if i%eventsPerCall == 0 {
			out = append(out, nil)
		}
		at := c.At.UTC()
		out[len(out)-1] = append(out[len(out)-1], types.PutEventsRequestEntry{EventBusName: aws.String(bus), Source: aws.String(EventSource),
			DetailType: aws.String(EventDetailType), Detail: aws.String(string(b)), Time: &at})
	}
	return out, nil
}

// EventBridge announces changes on an EventBridge event bus with
// PutEvents.
type EventBridge struct {
	Client interface {
		PutEvents(context.Context, *eventbridge.PutEventsInput, ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
	}
	Bus string
}

// Announce implements Announcer: one PutEvents per ten changes; an entry
// EventBridge refuses is an error naming how many were.
func (e *EventBridge) Announce(ctx context.Context, generation uint64, changes []scan.Change) error {
	batches, err := eventEntries(e.Bus, generation, changes)
	if err != nil {
		return err
	}
	for _, b := range batches {
		out, err := e.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: b})
		if err != nil {
			return fmt.Errorf("refresh: put events on %s: %w", e.Bus, err)
		}
		if out.FailedEntryCount > 0 {
			return fmt.Errorf("refresh: put events on %s: %d of %d refused", e.Bus, out.FailedEntryCount, len(b))
		}
	}
	return nil
}

// announce tells p.Events of changes published at generation, recording
// the outcome in res.
func (p *Publisher) announce(ctx context.Context, res *Result, generation uint64, changes []scan.Change) {
	if p.Events == nil || len(changes) == 0 {
		return
	}
	if err := p.Events.Announce(ctx, generation, changes); err != nil {
		res.AnnounceError = err.Error()
		return
	}
	res.Announced = len(changes)
}

// batchChanges are the changes a stream batch that fell back to a full
// scan brought into the snapshot, or why they could not be found.
type batchChanges struct {
	changes []scan.Change
	err     error
}

// batchChanges finds the changes a stream batch brought into the snapshot
// when the batch fell back to a full scan that published generation at
// scanAt: those an incremental batch would have found (scan.Apply of
// the batch's keys to the blob the scan replaced, base), with each key as
// the scan read it (seen), so what is announced is what the published
// snapshot holds. It reads the segments of the batch's tenants in base, so
// it runs before they are released. Without a version 5 base (no blob, or
// one this build does not apply to) there are none. (A write the scan read
// whose own batch comes later is announced by neither: that batch finds it
// in the snapshot already.)
func (p *Publisher) batchChanges(ctx context.Context, seen *batchScan, base *snapshot.Reader, generation uint64, scanAt time.Time) batchChanges {
	if base == nil || base.Header().Version != snapshot.Version {
		return batchChanges{}
	}
	applied, err := scan.Apply(ctx, seen.asScanned(), base, seen.keys, scan.ApplyOptions{Generation: generation, CreatedAt: scanAt})
	if err != nil {
		return batchChanges{err: fmt.Errorf("refresh: the batch's changes: %w", err)}
	}
	return batchChanges{changes: applied.Changes}
}

// announceBatch announces what batchChanges found.
func (p *Publisher) announceBatch(ctx context.Context, res *Result, generation uint64, b batchChanges) {
	if b.err != nil && p.Events != nil {
		res.AnnounceError = b.err.Error()
		return
	}
	p.announce(ctx, res, generation, b.changes)
}

// batchScan is the store a full scan reads through when it stands in for a
// stream batch: it passes the scan on and keeps the value of each of the
// batch's keys the scan visits.
type batchScan struct {
	metastore.Store
	keys []string
	want map[string]bool

	mu   sync.Mutex
	seen map[string][]byte // guarded by mu
}

var _ metastore.Visitor = (*batchScan)(nil)

func newBatchScan(store metastore.Store, keys []string) *batchScan {
	b := &batchScan{Store: store, keys: slices.Clone(keys), want: map[string]bool{}, seen: map[string][]byte{}}
	for _, k := range keys {
		if strings.HasPrefix(k, catalog.KeyPrefix) || strings.HasPrefix(k, catalog.TombstonePrefix) || strings.HasPrefix(k, catalog.TenantPrefix) ||
			strings.HasPrefix(k, catalog.IcebergPrefix) {
			b.want[k] = true
		}
	}
	return b
}

// VisitPrefix implements metastore.Visitor over the store's own scan.
func (b *batchScan) VisitPrefix(ctx context.Context, prefix string, fn func(metastore.Entry) error) (metastore.ScanStats, error) {
	return metastore.Visit(ctx, b.Store, prefix, func(e metastore.Entry) error {
		if key := prefix + e.Key; b.want[key] {
			b.mu.Lock()
			b.seen[key] = e.Value // Visit's entries may be kept, not modified
			b.mu.Unlock()
		}
		return fn(e)
	})
}

// asScanned is a store whose Get answers each of the batch's keys as the
// scan read it: its value, or metastore.ErrNotFound when the scan did not
// visit it (deleted). It serves nothing else.
func (b *batchScan) asScanned() metastore.Store { return scannedKeys{b} }

type scannedKeys struct{ *batchScan }

// Get implements metastore.Store from what the scan read.
func (s scannedKeys) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.seen[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("refresh: %s as the scan read it: %w", key, metastore.ErrNotFound)
}
