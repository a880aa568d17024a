// Package refresh turns one scan of the registrations into the snapshot blob
// and publishes it, only when its content changed and never over a newer
// blob. The refresh Lambda and local mode both run it.
package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
)

// Publisher refreshes one blob from one metastore.
type Publisher struct {
	Store metastore.Store
	Blobs blobstore.Store
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Outcome says what a run did.
type Outcome string

// Outcomes of a run.
const (
	// Published: a new blob was written.
	Published Outcome = "published"
	// Unchanged: the tables are those of the current blob; nothing written.
	Unchanged Outcome = "unchanged"
	// Superseded: another refresh published first; this run's blob was
	// dropped so that an older scan never replaces a newer blob.
	Superseded Outcome = "superseded"
)

// Result describes one run.
type Result struct {
	Outcome Outcome
	// Generation is the blob's generation after the run.
	Generation uint64
	Counts     catalog.Counts
	Scan       metastore.ScanStats
	// BlobBytes is the size of the blob built.
	BlobBytes int
	// SkippedKeys lists the first malformed registrations, for the log.
	SkippedKeys []string
	Duration    time.Duration
}

// Run scans once, builds the blob (catalog.BuildBlob, which holds the
// table rows rather than the scanned items), and publishes it with a conditional
// write when its content differs from the current blob's. On any scan,
// encode or upload error it publishes nothing and returns the error.
func (p *Publisher) Run(ctx context.Context) (Result, error) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	start := now()
	res := Result{}

	// The current blob's header (generation, content hash) and its ETag for
	// the conditional write. A current blob whose header does not parse is
	// replaced, with a generation from the clock (Unix seconds) so that the
	// generation still grows.
	var (
		prev        *catalog.BlobHeader
		prevTenants []catalog.TenantInfo
		prevTag     string
		gen         = uint64(1)
	)
	head, err := p.Blobs.GetPrefix(ctx, catalog.BlobHeaderSize)
	switch {
	case err == nil:
		prevTag = head.ETag
		if h, herr := catalog.ReadBlobHeader(head.Data); herr == nil {
			prev, gen = &h, h.Generation+1
			if prevTenants, err = p.previousIndex(ctx, h); err != nil {
				return res, err
			}
		} else {
			gen = max(gen, uint64(now().Unix()))
		}
	case errors.Is(err, blobstore.ErrNotFound):
	default:
		return res, fmt.Errorf("refresh: read current blob: %w", err)
	}
	build, err := catalog.BuildBlob(ctx, p.Store, catalog.BuildOptions{Generation: gen, CreatedAt: now(), Previous: prevTenants})
	if err != nil {
		return res, fmt.Errorf("refresh: %w", err)
	}
	res.Counts, res.Scan, res.SkippedKeys = build.Counts, build.Stats, build.SkippedKeys
	blob, newHead := build.Blob, build.Header
	res.BlobBytes = len(blob)

	if prev != nil && prev.ContentHash == newHead.ContentHash {
		res.Outcome, res.Generation = Unchanged, prev.Generation
		res.Duration = now().Sub(start)
		return res, nil
	}
	cond := blobstore.Condition{IfNoneMatch: true}
	if prevTag != "" {
		cond = blobstore.Condition{IfMatch: prevTag}
	}
	_, err = p.Blobs.Put(ctx, blob, cond)
	switch {
	case err == nil:
		res.Outcome, res.Generation = Published, gen
	case errors.Is(err, blobstore.ErrPreconditionFailed):
		res.Outcome = Superseded
		if prev != nil {
			res.Generation = prev.Generation
		}
	default:
		return res, fmt.Errorf("refresh: publish: %w", err)
	}
	res.Duration = now().Sub(start)
	return res, nil
}

// Log writes one structured line for the run.
func (r Result) Log(ctx context.Context, log *slog.Logger, location string) {
	log.InfoContext(ctx, "refresh",
		slog.String("outcome", string(r.Outcome)),
		slog.Uint64("generation", r.Generation),
		slog.Int("tables", r.Counts.Tables),
		slog.Int("schema_unavailable", r.Counts.SchemaUnavailable),
		slog.Int("skipped", r.Counts.Skipped),
		slog.Any("skipped_keys", r.SkippedKeys),
		slog.Int("pages", r.Scan.Pages),
		slog.Int("items_scanned", r.Scan.Scanned),
		slog.Int("blob_bytes", r.BlobBytes),
		slog.Int64("duration_ms", r.Duration.Milliseconds()),
		slog.String("blob", location),
	)
}

// WriteEMF writes the run's metrics as one CloudWatch Embedded Metric Format
// line to w (a Lambda's stdout), under namespace.
func (r Result) WriteEMF(w io.Writer, namespace string, at time.Time) error {
	published := 0
	if r.Outcome == Published {
		published = 1
	}
	metric := func(name, unit string) map[string]string { return map[string]string{"Name": name, "Unit": unit} }
	line := map[string]any{
		"_aws": map[string]any{
			"Timestamp": at.UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  namespace,
				"Dimensions": [][]string{{}},
				"Metrics": []any{
					metric("Tables", "Count"), metric("SchemaUnavailable", "Count"), metric("Skipped", "Count"),
					metric("ScanPages", "Count"), metric("BlobBytes", "Bytes"), metric("DurationMs", "Milliseconds"),
					metric("Published", "Count"),
				},
			}},
		},
		"Tables":            r.Counts.Tables,
		"SchemaUnavailable": r.Counts.SchemaUnavailable,
		"Skipped":           r.Counts.Skipped,
		"ScanPages":         r.Scan.Pages,
		"BlobBytes":         r.BlobBytes,
		"DurationMs":        r.Duration.Milliseconds(),
		"Published":         published,
		"Outcome":           string(r.Outcome),
		"Generation":        r.Generation,
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// maxIndexRead bounds the index refresh reads back from the current blob to
// carry its tenants' generations: 64 MiB, several million tenants.
const maxIndexRead = 64 << 20

// previousIndex reads the current blob's tenant index (a ranged read of its
// header and index) so unchanged tenants keep their generation. A version 1
// blob has none, and an index that does not parse is ignored: every tenant
// then counts as changed, which costs readers a rebuild, not correctness.
func (p *Publisher) previousIndex(ctx context.Context, h catalog.BlobHeader) ([]catalog.TenantInfo, error) {
	if (h.Version != catalog.BlobVersion2 && h.Version != catalog.BlobVersion3) || h.IndexBytes > maxIndexRead {
		return nil, nil
	}
	prefix, err := p.Blobs.GetPrefix(ctx, catalog.BlobHeaderSize+int(h.IndexBytes))
	if err != nil {
		return nil, fmt.Errorf("refresh: read the current blob's index: %w", err)
	}
	_, tenants, err := catalog.ReadBlobIndex(prefix.Data)
	if err != nil {
		return nil, nil
	}
	return tenants, nil
}
