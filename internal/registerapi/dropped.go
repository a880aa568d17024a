package registerapi

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/wire"
)

// DroppedLister lists a tenant's dropped tables in retention, newest drop
// first, as discovery's lake.dropped lists them (wire.DroppedTable).
type DroppedLister func(ctx context.Context, tenant string) ([]wire.DroppedTable, error)

// CatalogDropped lists drops from the catalog's store (one prefix read of
// the tenant's tombstones): local mode's lister, where the store is RocksDB.
// On DynamoDB a prefix read is a scan of the whole table, so the register
// Lambda lists from the snapshot instead (SnapshotDropped).
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

// SnapshotDropped lists drops from the published snapshot in blobs: its
// manifest and the tenant's segment alone (what discovery's lake.dropped
// answers from, as fresh as the last refresh), leaving out the tombstones
// past retention at now. A tenant the snapshot does not hold has none.
func SnapshotDropped(blobs blobstore.Store, now func() time.Time) DroppedLister {
	fetch := func(ctx context.Context, e snapshot.Entry) ([]byte, error) {
		return blobs.GetSegment(ctx, hex.EncodeToString(e.Address[:]), e.StoredBytes)
	}
	return func(ctx context.Context, tenant string) ([]wire.DroppedTable, error) {
		b, err := blobs.Get(ctx, "")
		if errors.Is(err, blobstore.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		seg, err := snapshot.LoadTenant(ctx, b.Data, tenant, fetch, snapshot.ReaderOptions{})
		if errors.Is(err, snapshot.ErrNoTenant) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		defer seg.Release()
		at := now()
		var out []wire.DroppedTable
		for i := range seg.Tombstones.Name.Len() {
			d := seg.Tombstone(i)
			if !d.ExpiresAt.IsZero() && !at.Before(d.ExpiresAt) {
				continue
			}
			out = append(out, wire.DroppedTable{Namespace: d.Namespace, Table: d.Name, CreationID: d.CreationID, Version: d.Version,
				DroppedAt: d.DroppedAt, DroppedBy: d.DroppedBy, ExpiresAt: d.ExpiresAt})
		}
		slices.SortStableFunc(out, func(a, b wire.DroppedTable) int { return b.DroppedAt.Compare(a.DroppedAt) })
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
