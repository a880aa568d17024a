package vending

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// Every vend is recorded: who asked, for which tenant and table, the
// prefix the credentials read and when they expire. LogObserver writes a
// log line; EventObserver puts an EventBridge event on the bus of lake's
// change events ("Table Changed"), with the same source and its own
// detail-type, so one rule can route both to an audit trail.

// Audit event names: EventSource is the change events' source.
const (
	EventSource     = "lake.catalog"
	EventDetailType = "Credentials Vended"
)

// EventDetail is a vend event's detail.
type EventDetail struct {
	Who        string    `json:"who,omitempty"`
	Tenant     string    `json:"tenant"`
	Namespace  string    `json:"namespace"`
	Table      string    `json:"table"`
	Location   string    `json:"location"`
	Metadata   string    `json:"metadata,omitempty"` // the metadata prefix read too, if any
	Expiration time.Time `json:"expiration"`
	Cached     bool      `json:"cached"`
}

func detailOf(v Vend) EventDetail {
	return EventDetail{Who: v.Who, Tenant: v.Tenant, Namespace: v.Namespace, Table: v.Table,
		Location: v.Location.String(), Metadata: metadataString(v.Metadata), Expiration: v.Expiration.UTC(), Cached: v.Cached}
}

// metadataString is meta as text, or "" for the zero Location (none).
func metadataString(meta Location) string {
	if meta == (Location{}) {
		return ""
	}
	return meta.String()
}

// Observers returns an Observer telling each of obs (nil ones skipped).
func Observers(obs ...Observer) Observer { return observers(obs) }

type observers []Observer

func (o observers) Vended(ctx context.Context, v Vend) {
	for _, ob := range o {
		if ob != nil {
			ob.Vended(ctx, v)
		}
	}
}

// LogObserver logs every vend at info: "credentials vended" with who,
// tenant, namespace, table, location, metadata (when read too), expiration
// and cached. It never logs
// the credentials.
type LogObserver struct{ Log *slog.Logger }

// Vended implements Observer.
func (l LogObserver) Vended(ctx context.Context, v Vend) {
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	attrs := []slog.Attr{slog.String("who", v.Who), slog.String("tenant", v.Tenant),
		slog.String("namespace", v.Namespace), slog.String("table", v.Table), slog.String("location", v.Location.String())}
	if m := metadataString(v.Metadata); m != "" {
		attrs = append(attrs, slog.String("metadata", m))
	}
	attrs = append(attrs, slog.Time("expiration", v.Expiration.UTC()), slog.Bool("cached", v.Cached))
	log.LogAttrs(ctx, slog.LevelInfo, "credentials vended", attrs...)
}

// PutEventsAPI is the EventBridge call EventObserver makes (eventbridge.Client's).
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// EventQueue is how many vend events an EventObserver holds while they
// wait to be put; beyond it an event is dropped, counted and logged.
const EventQueue = 1024

// EventObserver puts one EventBridge event per vend on Bus (up to ten a
// call), from a goroutine of its own so a vend never waits on EventBridge.
// Events that cannot be put (EventBridge refuses or fails, or the queue is
// full) are logged at warn and counted in Dropped; the vend's log line
// (LogObserver) is the record that remains. Close puts what is queued and
// stops.
type EventObserver struct {
	client PutEventsAPI
	bus    string
	log    *slog.Logger
	queue  chan EventDetail
	done   chan struct{}
	once   sync.Once
	put    atomic.Uint64
	drop   atomic.Uint64
	sync   bool
}

// NewEventObserver starts an EventObserver putting events on bus with client.
func NewEventObserver(client PutEventsAPI, bus string, log *slog.Logger) *EventObserver {
	if log == nil {
		log = slog.Default()
	}
	e := &EventObserver{client: client, bus: bus, log: log, queue: make(chan EventDetail, EventQueue), done: make(chan struct{})}
	go e.run()
	return e
}

// NewSyncEventObserver returns an EventObserver that puts each event before
// Vended returns, for a Lambda, whose process may be frozen as soon as it
// answers (a queued event would wait for the next invocation, or be lost).
// Close does nothing.
func NewSyncEventObserver(client PutEventsAPI, bus string, log *slog.Logger) *EventObserver {
	if log == nil {
		log = slog.Default()
	}
	return &EventObserver{client: client, bus: bus, log: log, sync: true}
}

// Vended implements Observer.
func (e *EventObserver) Vended(ctx context.Context, v Vend) {
	if e.sync {
		e.send([]EventDetail{detailOf(v)})
		return
	}
	select {
	case e.queue <- detailOf(v):
	default:
		e.drop.Add(1)
		e.log.WarnContext(ctx, "vend event dropped: queue full", slog.String("tenant", v.Tenant), slog.String("table", v.Namespace+"."+v.Table))
	}
}

// Put and Dropped count the events put on the bus and those lost.
func (e *EventObserver) Put() uint64     { return e.put.Load() }
func (e *EventObserver) Dropped() uint64 { return e.drop.Load() }

// Close puts the queued events (for at most 5 s) and stops the observer.
// Vended must not be called after Close.
func (e *EventObserver) Close() {
	if e.sync {
		return
	}
	e.once.Do(func() { close(e.queue) })
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
	}
}

func (e *EventObserver) run() {
	defer close(e.done)
	for d := range e.queue {
		batch := []EventDetail{d}
	more:
		for len(batch) < 10 {
			select {
			case d, ok := <-e.queue:
				if !ok {
					break more
				}
				batch = append(batch, d)
			default:
				break more
			}
		}
		e.send(batch)
	}
}

func (e *EventObserver) send(batch []EventDetail) {
	entries := make([]types.PutEventsRequestEntry, 0, len(batch))
	for _, d := range batch {
		b, err := json.Marshal(d)
		if err != nil {
			e.drop.Add(1)
			continue
		}
		entries = append(entries, types.PutEventsRequestEntry{EventBusName: aws.String(e.bus), Source: aws.String(EventSource),
			DetailType: aws.String(EventDetailType), Detail: aws.String(string(b))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := e.client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
	switch {
	case err != nil:
		e.drop.Add(uint64(len(entries)))
		e.log.Warn("vend events not put", slog.String("bus", e.bus), slog.Int("events", len(entries)), slog.Any("error", err))
	case out.FailedEntryCount > 0:
		n := uint64(out.FailedEntryCount)
		e.drop.Add(n)
		e.put.Add(uint64(len(entries)) - n)
		e.log.Warn("vend events refused", slog.String("bus", e.bus), slog.Int("refused", int(n)), slog.Int("events", len(entries)))
	default:
		e.put.Add(uint64(len(entries)))
	}
}
