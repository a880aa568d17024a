package registerapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lake-catalog/lake/internal/preview"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/arrowtype"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// GET /v1/tenants/{tenant}/namespaces/{namespace}/tables/{table}/preview?limit=&columns=
// answers the table's first rows (wire.Preview), read by package preview
// from the files the vending Door gives access to (Options.Door: the
// table's vended credentials, or a local path under local mode's data
// root), as its registered schema says, never cached (Cache-Control:
// no-store). limit is 1 to wire.MaxPreviewLimit (default
// wire.DefaultPreviewLimit); columns=a,b reads those top-level columns
// alone, in that order (default: all).
//
// Errors: an unknown table 404 (another tenant's included: the tenant is
// the caller's), a bad limit or a column the schema lacks 400
// invalid_query naming it, a table without a schema 409 no_schema, the
// Door's refusals as the credentials route answers them (403
// location_not_allowed, 501 vending_not_configured, 502 vending_failed), a
// file that does not match the schema 422 schema_mismatch naming the file,
// a cap reached 413 preview_limit naming it (429 for the tenant's
// concurrent previews, 504 for the time), files that cannot be read 502
// preview_failed.

// PreviewOptions configures the preview route. Zero fields take the
// documented defaults.
type PreviewOptions struct {
	// Authorize checks a preview request for the tenant in the path;
	// nil uses Options.Authorize. A preview only reads, so local mode
	// allows the catalog browser's read-only dev tokens here, which its
	// Options.Authorize refuses.
	Authorize Authorizer
	// S3Config gives the S3 client that reads vended s3:// locations its
	// endpoint settings (preview.FilesFor); S3PathStyle addresses buckets
	// by path (S3-compatible servers).
	S3Config    aws.Config
	S3PathStyle bool
	// Limits bound each preview (zero fields: package preview's
	// defaults: 64 MiB read, 100 files, …).
	Limits preview.Limits
	// Gate bounds the previews in progress, per tenant and in all.
	// Default preview.NewGate(0, 0).
	Gate *preview.Gate
	// Timeout bounds one preview, vending included. Default
	// DefaultPreviewTimeout.
	Timeout time.Duration
	// Allocator allocates the rows read. Default memory.DefaultAllocator.
	Allocator memory.Allocator
}

// DefaultPreviewTimeout is PreviewOptions.Timeout's default: below API
// Gateway's 29 s integration timeout, so that a slow preview on AWS gets
// lake's answer naming the cap, not the gateway's 504.
const DefaultPreviewTimeout = 20 * time.Second

func (o *PreviewOptions) defaults() {
	if o.Gate == nil {
		o.Gate = preview.NewGate(0, 0)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultPreviewTimeout
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
}

// authorizePreview runs PreviewOptions.Authorize (or Options.Authorize)
// for the path's tenant.
func (h *Handler) authorizePreview(r *http.Request) (string, error) {
	if h.opts.Preview.Authorize == nil {
		return h.authorize(r)
	}
	tenant := r.PathValue("tenant")
	caller, err := h.opts.Preview.Authorize(r, tenant)
	if errors.Is(err, ErrUnauthenticated) {
		return "", &apiError{http.StatusUnauthorized, wire.CodeUnauthenticated, "missing or invalid credentials"}
	}
	if err != nil {
		return "", &apiError{http.StatusForbidden, wire.CodeForbidden, fmt.Sprintf("not allowed to act on tenant %q", tenant)}
	}
	return caller, nil
}

// previewQuery reads ?limit= and ?columns= against the table's schema: the
// limit, the schema's field indexes in the order asked (nil: all).
func previewQuery(r *http.Request, s *arrow.Schema) (int, []int, error) {
	q := r.URL.Query()
	limit := wire.DefaultPreviewLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > wire.MaxPreviewLimit {
			return 0, nil, badRequest(wire.CodeInvalidQuery, "limit must be 1 to %d, got %q", wire.MaxPreviewLimit, v)
		}
		limit = n
	}
	if !q.Has("columns") {
		return limit, nil, nil
	}
	names := strings.Split(q.Get("columns"), ",")
	if len(names) > s.NumFields() {
		return 0, nil, badRequest(wire.CodeInvalidQuery, "columns names %d columns; the table has %d", len(names), s.NumFields())
	}
	cols := make([]int, 0, len(names))
	for _, n := range names {
		idx := s.FieldIndices(n)
		switch {
		case n == "":
			return 0, nil, badRequest(wire.CodeInvalidQuery, "columns: an empty name (give names separated by commas: columns=a,b)")
		case len(idx) == 0:
			return 0, nil, badRequest(wire.CodeInvalidQuery, "columns: the table has no column %q", n)
		case len(idx) > 1:
			return 0, nil, badRequest(wire.CodeInvalidQuery, "columns: the table has %d columns named %q; leave columns out to read them all", len(idx), n)
		case slices.Contains(cols, idx[0]):
			return 0, nil, badRequest(wire.CodeInvalidQuery, "columns: %q is named twice", n)
		}
		cols = append(cols, idx[0])
	}
	return limit, cols, nil
}

func (h *Handler) preview(w http.ResponseWriter, r *http.Request) {
	ref := pathRef(r, r.PathValue("table"))
	caller, err := h.authorizePreview(r)
	var reg catalog.Registration
	if err == nil {
		reg, err = h.cat.Get(r.Context(), ref)
	}
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	schema, err := reg.Schema()
	if errors.Is(err, catalog.ErrSchemaUnavailable) {
		h.fail(w, r, ref, &apiError{http.StatusConflict, wire.CodeNoSchema, ref.String() + ": the table has no schema: it was registered without one, so its rows cannot be read; store one (lake backfill, or register it again)"})
		return
	}
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	limit, cols, err := previewQuery(r, schema)
	if err != nil {
		h.fail(w, r, ref, err)
		return
	}
	if h.opts.Door == nil {
		h.fail(w, r, ref, &apiError{http.StatusNotImplemented, wire.CodeVendingNotConfigured, ref.String() + ": " + vending.ErrNotConfigured.Error()})
		return
	}
	po := h.opts.Preview
	release, err := po.Gate.Enter(ref.Tenant)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		h.fail(w, r, ref, previewError(ref, err, po.Timeout))
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), po.Timeout)
	defer cancel()
	access, ok := h.access(ctx, w, r, caller, ref, reg, "")
	if !ok {
		return
	}
	files, err := preview.FilesFor(access, po.S3Config, po.S3PathStyle)
	if err != nil {
		h.opts.Log.ErrorContext(r.Context(), "register api: preview: the table's files", slog.String("table", ref.String()), slog.String("error", err.Error()))
		h.fail(w, r, ref, &apiError{http.StatusBadGateway, wire.CodePreviewFailed, ref.String() + ": the table's files could not be read: " + err.Error()})
		return
	}
	read := slices.Clone(cols)
	slices.Sort(read)
	// One row more than the limit says whether the limit cut the rows.
	recs, stats, err := preview.Read(ctx, files, preview.Request{Table: ref.Namespace + "." + ref.Name, Schema: schema, Columns: read, Limit: int64(limit) + 1},
		po.Limits, po.Allocator)
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	if err != nil {
		ae := previewError(ref, err, po.Timeout)
		if ae.code == wire.CodePreviewFailed {
			h.opts.Log.WarnContext(r.Context(), "register api: preview failed", slog.String("table", ref.String()), slog.String("error", err.Error()))
		}
		h.fail(w, r, ref, ae)
		return
	}
	out := previewAnswer(ref, access.Location, schema, cols, read, recs, limit)
	out.Stats = wire.PreviewStats{FilesOpened: stats.FilesOpened, RowGroupsRead: stats.RowGroupsRead, RowGroupsSkipped: stats.RowGroupsSkipped, BytesRead: stats.BytesRead}
	h.opts.Log.InfoContext(r.Context(), "preview", slog.String("table", ref.String()), slog.String("by", caller), slog.Int("rows", len(out.Rows)),
		slog.Int("files", stats.FilesOpened), slog.Int64("bytes", stats.BytesRead))
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

// previewError is the answer to a preview that failed: a cap (413, 429 for
// concurrent previews, 504 for the time), a file that does not match the
// schema (422), otherwise 502 preview_failed with the reason.
func previewError(ref catalog.TableRef, err error, timeout time.Duration) *apiError {
	// The messages start with the phrases apiclient says for these codes,
	// so a client that prints its own phrase says nothing twice.
	if le, ok := errors.AsType[*preview.LimitError](err); ok {
		if le.Limit == "concurrent previews" {
			return &apiError{http.StatusTooManyRequests, wire.CodePreviewLimit,
				fmt.Sprintf("%s: past a preview's cap: concurrent previews (%d for the tenant); retry when one ends", ref, le.Max)}
		}
		return &apiError{http.StatusRequestEntityTooLarge, wire.CodePreviewLimit,
			fmt.Sprintf("%s: past a preview's cap: %s (%d); ask for fewer rows or columns", ref, le.Limit, le.Max)}
	}
	if me, ok := errors.AsType[*preview.MismatchError](err); ok {
		return &apiError{http.StatusUnprocessableEntity, wire.CodeSchemaMismatch,
			fmt.Sprintf("%s: a file does not match the registered schema: %s: %s", ref, me.File, me.Reason)}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &apiError{http.StatusGatewayTimeout, wire.CodePreviewLimit, fmt.Sprintf("%s: past a preview's cap: time (%v); ask for fewer rows or columns", ref, timeout)}
	}
	if errors.Is(err, context.Canceled) {
		return &apiError{http.StatusServiceUnavailable, wire.CodeUnavailable, "the request was cancelled; retry"}
	}
	return &apiError{http.StatusBadGateway, wire.CodePreviewFailed, ref.String() + ": the table's files could not be read: " + err.Error()}
}

// previewAnswer turns the batches read (columns read, ascending) into the
// answer's rows in the order asked (cols; nil: all), at most limit rows
// and wire.MaxPreviewAnswerBytes of them as JSON.
func previewAnswer(ref catalog.TableRef, location string, s *arrow.Schema, cols, read []int, recs []arrow.RecordBatch, limit int) wire.Preview {
	if cols == nil {
		cols = make([]int, s.NumFields())
		for i := range cols {
			cols[i] = i
		}
	}
	out := wire.Preview{Tenant: ref.Tenant, Namespace: ref.Namespace, Table: ref.Name, Location: location,
		Columns: make([]wire.PreviewColumn, len(cols)), Rows: [][]any{}, Limit: limit}
	// at[k] is the batch column of the k-th column asked.
	at := make([]int, len(cols))
	for k, c := range cols {
		f := s.Field(c)
		out.Columns[k] = wire.PreviewColumn{Name: f.Name, Type: arrowtype.String(f.Type), Nullable: f.Nullable}
		at[k] = k
		if read != nil {
			at[k] = slices.Index(read, c)
		}
	}
	size := 0
	for _, rec := range recs {
		for i := range int(rec.NumRows()) {
			if len(out.Rows) == limit {
				out.Truncated = true
				return out
			}
			row := make([]any, len(cols))
			for k := range cols {
				row[k] = jsonValue(rec.Column(at[k]), i)
			}
			b, err := json.Marshal(row)
			if err == nil {
				size += len(b) + 1
			}
			if err != nil || size > wire.MaxPreviewAnswerBytes {
				out.Truncated = true
				return out
			}
			out.Rows = append(out.Rows, row)
		}
	}
	return out
}

// jsonValue is row i of a as the JSON value wire.Preview documents.
func jsonValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float16:
		return jsonFloat(float64(a.Value(i).Float32()))
	case *array.Float32:
		return jsonFloat(float64(a.Value(i)))
	case *array.Float64:
		return jsonFloat(a.Value(i))
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	case *array.Binary:
		return slices.Clone(a.Value(i))
	case *array.LargeBinary:
		return slices.Clone(a.Value(i))
	case *array.BinaryView:
		return slices.Clone(a.Value(i))
	case *array.FixedSizeBinary:
		return slices.Clone(a.Value(i))
	case *array.Date32:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Date64:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		t := a.Value(i).ToTime(tt.Unit)
		if tt.TimeZone == "" {
			return t.Format("2006-01-02T15:04:05.999999999")
		}
		return t.UTC().Format(time.RFC3339Nano)
	case *array.Time32:
		return a.Value(i).ToTime(a.DataType().(*arrow.Time32Type).Unit).Format("15:04:05.999999999")
	case *array.Time64:
		return a.Value(i).ToTime(a.DataType().(*arrow.Time64Type).Unit).Format("15:04:05.999999999")
	case *array.Duration:
		return int64(a.Value(i))
	case *array.Decimal32:
		return a.Value(i).ToString(a.DataType().(arrow.DecimalType).GetScale())
	case *array.Decimal64:
		return a.Value(i).ToString(a.DataType().(arrow.DecimalType).GetScale())
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(arrow.DecimalType).GetScale())
	case *array.Decimal256:
		return a.Value(i).ToString(a.DataType().(arrow.DecimalType).GetScale())
	case *array.Dictionary:
		return jsonValue(a.Dictionary(), a.GetValueIndex(i))
	case *array.RunEndEncoded:
		return jsonValue(a.Values(), a.GetPhysicalIndex(i))
	case *array.Map:
		keys, items := a.Keys(), a.Items()
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, map[string]any{"key": jsonValue(keys, int(j)), "value": jsonValue(items, int(j))})
		}
		return out
	case array.ListLike:
		values := a.ListValues()
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, jsonValue(values, int(j)))
		}
		return out
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		out := make(map[string]any, a.NumField())
		for j := range a.NumField() {
			out[st.Field(j).Name] = jsonValue(a.Field(j), i)
		}
		return out
	}
	// Unions, intervals, extension types: arrow-go's own JSON form.
	return a.GetOneForMarshal(i)
}

// jsonFloat is f, or its name where JSON has no number for it.
func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}
