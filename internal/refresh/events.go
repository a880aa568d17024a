package refresh

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/lake-catalog/lake/pkg/snapshot"
)

// Announcer tells subscribers of the changes a published stream batch
// brought into the snapshot (Publisher.Events).
type Announcer interface {
	Announce(ctx context.Context, generation uint64, changes []snapshot.Change) error
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
func eventEntries(bus string, generation uint64, changes []snapshot.Change) ([][]types.PutEventsRequestEntry, error) {
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
func (e *EventBridge) Announce(ctx context.Context, generation uint64, changes []snapshot.Change) error {
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
