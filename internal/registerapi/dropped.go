package registerapi

import (
	"context"
	"net/http"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// DroppedLister lists a tenant's dropped tables in retention, newest drop
// first, as discovery's lake.dropped lists them (wire.DroppedTable). An
// error made by NotImplemented is answered as it says; any other is a store
// failure (503 unavailable).
type DroppedLister func(ctx context.Context, tenant string) ([]wire.DroppedTable, error)

// CatalogDropped lists drops from the catalog's store (one prefix read of
// the tenant's tombstones, catalog.Dropped): local mode's lister, where the
// store is RocksDB. On DynamoDB a prefix read is a scan of the whole table,
// so the register Lambda passes a lister of the published snapshot's
// tombstones instead (functions/register/program.SnapshotDropped).
func CatalogDropped(cat *catalog.Catalog) DroppedLister {
	return func(ctx context.Context, tenant string) ([]wire.DroppedTable, error) {
		ds, err := cat.Dropped(ctx, tenant)
		if err != nil {
			return nil, err
		}
		out := make([]wire.DroppedTable, len(ds))
		for i, d := range ds {
			out[i] = wire.DroppedTable{Namespace: d.Ref.Namespace, Table: d.Ref.Name, CreationID: d.Registration.CreationID(),
				Version: d.Registration.Version(), DroppedAt: d.DroppedAt, DroppedBy: d.DroppedBy, ExpiresAt: d.ExpiresAt}
		}
		return out, nil
	}
}

// dropped answers GET /v1/tenants/{tenant}/dropped: the tenant's dropped
// tables in retention, newest drop first, all of them (a tenant's drops in
// retention are few), as a wire.DroppedPage, lake.dropped's answer.
func (h *Handler) dropped(w http.ResponseWriter, r *http.Request) {
	tenant := r.PathValue("tenant")
	ref := catalog.TableRef{Tenant: tenant}
	if _, err := h.authorize(r); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	if err := catalog.ValidateName("tenant", tenant); err != nil {
		h.fail(w, r, ref, err)
		return
	}
	ds, err := h.opts.Dropped(r.Context(), tenant)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	if ds == nil {
		ds = []wire.DroppedTable{}
	}
	writeJSON(w, http.StatusOK, wire.DroppedPage{Tenant: tenant, Total: len(ds), Dropped: ds})
}
