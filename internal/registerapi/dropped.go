package registerapi

import (
	"net/http"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// dropped answers GET /v1/tenants/{tenant}/dropped: the tenant's dropped
// tables in retention, newest drop first, all of them (a tenant's drops in
// retention are few), as a wire.DroppedPage, lake.dropped's answer. They
// are the catalog's tombstones (catalog.Dropped: the tenant's index of
// dropped tables and its tombstones, read with Gets, no prefix read), on
// RocksDB and DynamoDB alike, so a drop is listed as soon as it is made.
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
	ts, err := h.cat.Dropped(r.Context(), tenant)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	ds := make([]wire.DroppedTable, len(ts))
	for i, d := range ts {
		ds[i] = wire.DroppedTable{Namespace: d.Ref.Namespace, Table: d.Ref.Name, CreationID: d.Registration.CreationID(),
			Version: d.Registration.Version(), DroppedAt: d.DroppedAt, DroppedBy: d.DroppedBy, ExpiresAt: d.ExpiresAt}
	}
	writeJSON(w, http.StatusOK, wire.DroppedPage{Tenant: tenant, Total: len(ds), Dropped: ds})
}
