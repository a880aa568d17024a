package discovery

import (
	"context"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/wire"
)

const droppedActionDescription = `One page of the caller's tenant's dropped tables in retention, newest drop first: body {"offset","limit" (1–500)}; ` +
	`one Result, JSON {"tenant","total","dropped":[{"namespace","table","version","creation_id","dropped_at","dropped_by","expires_at"}]}`

// dropped answers wire.DroppedActionType for the tenant in ctx from its
// prepared tombstones; those past retention at the time of the call are
// left out.
func (s *Service) dropped(ctx context.Context, body []byte) ([]byte, error) {
	tenant, v, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	req, err := parseList(wire.DroppedActionType, body, false)
	if err != nil {
		return nil, err
	}
	// A tenant whose tables are all dropped has tombstones and no tables.
	ts, err := s.preparedTenant(ctx, v, tenant)
	if err != nil {
		return nil, err
	}
	page := wire.DroppedPage{Tenant: tenant, Dropped: []wire.DroppedTable{}}
	if ts == nil || ts.tombstones.Name == nil {
		return marshalList(page)
	}
	d := ts.tombstones
	at := func(a *arrow.TimestampType, ts arrow.Timestamp) time.Time { return ts.ToTime(a.Unit).UTC() }
	droppedType := d.DroppedAt.DataType().(*arrow.TimestampType)
	expiresType := d.ExpiresAt.DataType().(*arrow.TimestampType)
	now := time.Now()
	var all []wire.DroppedTable
	for i := range d.Name.Len() {
		t := wire.DroppedTable{Namespace: d.Namespace.Value(i), Table: d.Name.Value(i), Version: d.Version.Value(i),
			CreationID: d.CreationID.Value(i), DroppedAt: at(droppedType, d.DroppedAt.Value(i)), DroppedBy: d.DroppedBy.Value(i)}
		if d.ExpiresAt.IsValid(i) {
			t.ExpiresAt = at(expiresType, d.ExpiresAt.Value(i))
			if !now.Before(t.ExpiresAt) {
				continue
			}
		}
		all = append(all, t)
	}
	slices.SortStableFunc(all, func(a, b wire.DroppedTable) int { return b.DroppedAt.Compare(a.DroppedAt) })
	page.Total = len(all)
	page.Dropped = append(page.Dropped, all[min(req.Offset, len(all)):min(req.Offset+req.Limit, len(all))]...)
	return marshalList(page)
}
