package registerapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Syncer takes a table's file snapshot: it lists the Parquet files at the
// table's location (reached through the vending Door: table-scoped
// credentials, or a local path under the data root), writes Iceberg
// metadata for them and records it in the catalog, so discovery's Iceberg
// REST catalog serves their rows. who is the caller, for the record.
type Syncer interface {
	Sync(ctx context.Context, who string, ref catalog.TableRef, reg catalog.Registration) (wire.SyncResult, error)
}

// Syncs after a write (Options.SyncOnWrite): at most backgroundSyncs at
// once, each bounded by backgroundSyncTimeout, or InlineSyncTimeout when
// the write waits for it (Options.SyncInline).
const (
	backgroundSyncs       = 2
	backgroundSyncTimeout = 5 * time.Minute
	// InlineSyncTimeout bounds a sync a write waits for: a location with
	// more files than it reads in that time is synced by POST …/sync.
	InlineSyncTimeout = 20 * time.Second
)

// syncAfterWrite takes ref's file snapshot after a write of reg, waiting
// for a free slot; its outcome is logged (a location lake may not read, a
// missing folder, a failure) and never changes the write's answer.
func (h *Handler) syncAfterWrite(ctx context.Context, ref catalog.TableRef, caller string, reg catalog.Registration) {
	h.syncs <- struct{}{}
	defer func() { <-h.syncs }()
	timeout := backgroundSyncTimeout
	if h.opts.SyncInline {
		timeout = InlineSyncTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := h.opts.Sync.Sync(ctx, caller, ref, reg)
	if err != nil && vending.Code(err) != wire.CodeVendingFailed {
		// Not a table lake reads (no data root, no vending, outside the
		// allowed prefixes): said once at info, not a warning per write.
		h.opts.Log.InfoContext(ctx, "sync after write: not synced", slog.String("table", ref.String()), slog.String("reason", err.Error()))
		return
	}
	if err != nil {
		h.opts.Log.WarnContext(ctx, "sync after write", slog.String("table", ref.String()), slog.String("error", err.Error()))
		return
	}
	h.opts.Log.InfoContext(ctx, "sync after write", slog.String("table", ref.String()), slog.Bool("changed", res.Changed),
		slog.Int("files", res.Files), slog.Int("skipped", len(res.Skipped)))
	if res.Changed && h.opts.OnWrite != nil {
		h.opts.OnWrite()
	}
}

// POST /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/sync
// runs Options.Sync for the table (501 sync_not_configured without one):
// wire.SyncResult; a location the tenant may not read through lake is 403
// location_not_allowed, a table gone or changed meanwhile 409 conflict, any
// other failure 502 sync_failed with the reason.
func (h *Handler) sync(w http.ResponseWriter, r *http.Request) {
	caller, ref, reg, ok := h.authorizedTable(w, r)
	if !ok {
		return
	}
	if h.opts.Sync == nil {
		h.fail(w, r, ref, &apiError{http.StatusNotImplemented, wire.CodeSyncNotConfigured, ref.String() + ": this deployment does not sync tables' files into Iceberg metadata"})
		return
	}
	res, err := h.opts.Sync.Sync(r.Context(), caller, ref, reg)
	switch {
	case err == nil:
		h.opts.Log.InfoContext(r.Context(), "sync", slog.String("table", ref.String()), slog.String("by", caller), slog.Bool("changed", res.Changed),
			slog.Int("files", res.Files), slog.Int("skipped", len(res.Skipped)))
		if res.Changed && h.opts.OnWrite != nil {
			h.opts.OnWrite()
		}
		writeJSON(w, http.StatusOK, res)
	case vending.Code(err) != wire.CodeVendingFailed:
		h.fail(w, r, ref, vendError(ref, err))
	case errors.Is(err, catalog.ErrConflict), errors.Is(err, catalog.ErrNotFound):
		h.fail(w, r, ref, &apiError{http.StatusConflict, wire.CodeConflict, ref.String() + ": the table changed during the sync; run it again"})
	default:
		h.opts.Log.ErrorContext(r.Context(), "register api: sync failed", slog.String("table", ref.String()), slog.String("error", err.Error()))
		h.fail(w, r, ref, &apiError{http.StatusBadGateway, wire.CodeSyncFailed, ref.String() + ": " + err.Error()})
	}
}
