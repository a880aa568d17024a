package discovery

import (
	"context"
	"time"

	"github.com/lake-catalog/lake/pkg/wire"
)

const droppedActionDescription = `One page of the caller's tenant's dropped tables in retention, newest drop first: body {"offset","limit" (1–500)}; ` +
	`one Result, JSON {"tenant","total","dropped":[{"namespace","table","version","creation_id","dropped_at","dropped_by","expires_at"}]}`

// dropped answers wire.DroppedActionType for the tenant in ctx from its
// prepared tombstones: the format's list of its dropped tables at the time
// of the call (snapshot.TombstoneColumns.Dropped).
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
	var all []wire.DroppedTable
	for _, d := range ts.tombstones.Dropped(time.Now()) {
		all = append(all, wire.DroppedTable{Namespace: d.Namespace, Table: d.Name, Version: d.Version, CreationID: d.CreationID,
			DroppedAt: d.DroppedAt, DroppedBy: d.DroppedBy, ExpiresAt: d.ExpiresAt})
	}
	page.Total = len(all)
	page.Dropped = append(page.Dropped, all[min(req.Offset, len(all)):min(req.Offset+req.Limit, len(all))]...)
	return marshalList(page)
}
