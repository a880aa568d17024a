// Package refresh turns one scan of the registrations into the snapshot blob
// and publishes it, only when its content changed and never over a newer
// blob. The refresh Lambda and local mode both run it.
//
// # An idle run costs one read
//
// Every write through the catalog bumps its change counter
// (catalog.ChangesKey; the protocol and why it loses no change are in
// pkg/catalog/changes.go). A run reads the current blob's first
// snapshot.MarkerPrefix bytes (its header and change marker) and the
// counter (one strongly consistent read); when the counter equals the one
// the blob recorded and the last full scan is younger than the
// reconciliation interval, it stops there: outcome unchanged, no scan.
// Otherwise it scans, recording the counter value it read before the scan
// and the scan's time in the new blob, and publishes it with If-Match on the
// ETag it read. The reconciliation (a full scan at least every
// Publisher.Reconcile whatever the counter says) heals a write whose bump
// was lost.
//
// # Segments apart from the manifest
//
// The blob holds the manifest alone (snapshot format version 5 and later); each
// tenant's segment is an immutable object named by its content address
// (blobstore.Store.PutSegment), written before the manifest that names it.
// A stream batch (Apply) reads the manifest and the segments of the
// tenants its keys name, and writes those tenants' new segments and the
// manifest: what it moves follows the change, not the catalog. After a
// publish, the segments the new manifest no longer names are released (on
// S3, tagged for the bucket's lifecycle rule to expire after its grace
// period). Every full scan writes every segment again, so a segment
// released by mistake (a race between a release and a batch that names it
// again) is stored live again within the reconciliation interval; the
// grace period must exceed it (the stack sets 3 days against 1).
//
// # Failures
//
//   - A blob whose header is intact but whose size disagrees with it
//     (truncated, padded) is republished from a scan.
//   - A missing or unreadable blob restarts at a generation above any this
//     catalog published before (recorded at GenerationKey after every
//     publish), so discovery, which refuses older generations, takes it.
//   - A conditional write refused by a newer blob is superseded; refused by
//     anything else (an older or unreadable blob put in its place) it is an
//     error, and the next run starts from what is there.
package refresh

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh/scan"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// DefaultReconcile is the most time between full scans by default: a day.
// With DynamoDB Streams carrying every write to Apply, the reconciliation
// only heals a write whose stream batch failed to the on-failure queue and
// whose bump was lost as well, and its scan is what an idle catalog pays
// for: at a million 2 KB registrations an hourly one would cost about $45 a
// month in reads, a daily one about $1.90 (bench/RESULTS.md, section 6).
const DefaultReconcile = 24 * time.Hour

// GenerationKey is the metastore key where refresh records the last
// generation it published, outside the "tbl/" prefix.
const GenerationKey = "meta/generation"

// DefaultMaxIncremental is the largest batch of changed keys Apply
// applies incrementally by default; a larger one is a full scan.
const DefaultMaxIncremental = 1000

// Publisher refreshes one blob from one metastore.
type Publisher struct {
	Store metastore.Store
	Blobs blobstore.Store
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Reconcile is the most time between full scans, whatever the change
	// counter says. Default DefaultReconcile.
	Reconcile time.Duration
	// MaxIncremental is the largest batch Apply applies incrementally.
	// Default DefaultMaxIncremental.
	MaxIncremental int
	// Events, when set, is told of the changes each published stream
	// batch brought into the snapshot (after the publish: a subscriber
	// that reads the snapshot then finds them), also when the batch fell
	// back to a full scan (announceBatch). It is best effort: a failure is
	// in the result (AnnounceError) and the log, and the batch stands; a
	// change that only a scheduled full scan publishes (its batch failed)
	// is not announced. The change feed (lake.changes) is the record.
	Events Announcer
	// History, when set, deletes the version records nothing reaches any
	// more once DynamoDB's TTL has deleted their tombstone (history.go):
	// Apply those of each tombstone key of its batch found gone, and a run
	// that scans all it finds, at most once a Reconcile interval. It is
	// best effort, as Events is: a failure is in the result
	// (HistoryError) and the log, and the run stands. The refresh Lambda
	// sets it; local mode's sweep (catalog.PurgeExpired) leaves nothing
	// for it.
	History HistoryPurger
	// HistoryBudget bounds the version records History reads in one
	// invocation (a batch's purges, a sweep). Default
	// DefaultHistoryBudget.
	HistoryBudget int
	// HistoryVersions is how many versions of each registration the
	// catalog keeps (catalog.Options.HistoryVersions; zero is its
	// default, negative none): each snapshot row carries its kept
	// versions below its own (scan.BuildOptions.HistoryVersions).
	HistoryVersions int
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
	// Scanned says whether the run scanned the registrations (an idle run
	// reads the change counter alone); Changes is the counter it read, or
	// for an incremental run the change marker its blob records.
	Scanned bool
	Changes uint64
	// Incremental says the run applied a batch of changed keys to the
	// current blob (Apply), reading Reads registrations and encoding
	// Tenants tenants again.
	Incremental bool
	Reads       int
	Tenants     int
	Counts      catalog.Counts
	Scan        metastore.ScanStats
	// BlobBytes is the size of the manifest published (or built).
	BlobBytes int
	// SegmentsRead and BytesRead are the segments fetched for an
	// incremental run and their bytes; SegmentsWritten and BytesWritten
	// the segments stored and their bytes (the manifest's are BlobBytes);
	// SegmentsReleased the segments the new manifest names no more.
	SegmentsRead, BytesRead       int
	SegmentsWritten, BytesWritten int
	SegmentsReleased              int
	// SegmentsVerified is how many segments of the current manifest the
	// run read back and checked against their addresses (a run that writes
	// no segment checks them all: verify); SegmentsRepaired how many of
	// those it found damaged or missing and stored again, of the tenants
	// Repaired.
	SegmentsVerified int      `json:",omitempty"`
	SegmentsRepaired int      `json:",omitempty"`
	Repaired         []string `json:",omitempty"`
	// Announced is how many changes Events was told of; AnnounceError why
	// it could not be ("" when it could, or was not asked).
	Announced     int    `json:",omitempty"`
	AnnounceError string `json:",omitempty"`
	// HistoriesPurged is how many tables' orphaned histories History
	// deleted, VersionsPurged their version records; HistoriesLeft how
	// many it found and left for a later run (HistoryBudget);
	// HistorySwept says the run swept the whole store for them, over
	// HistorySweepPages pages of a scan apart from Scan's;
	// HistoryError why a purge failed ("" when none did).
	HistoriesPurged   int  `json:",omitempty"`
	VersionsPurged    int  `json:",omitempty"`
	HistoriesLeft     int  `json:",omitempty"`
	HistorySwept      bool `json:",omitempty"`
	HistorySweepPages int  `json:",omitempty"`
	// DroppedIndexed is how many tombstones in retention the sweep added
	// to their tenant's index of dropped tables, which lacked them (drops
	// made before the index existed, or whose index write failed).
	DroppedIndexed int    `json:",omitempty"`
	HistoryError   string `json:",omitempty"`
	// SkippedKeys lists the first malformed registrations, for the log.
	SkippedKeys []string
	Duration    time.Duration
}

// Run reads the change counter and, unless nothing changed since the
// current blob and no reconciliation is due, scans once, builds the blob
// (scan.Build, which holds the table rows rather than the scanned
// items) and publishes it with a conditional write. On any read, scan,
// encode or upload error it publishes nothing and returns the error.
func (p *Publisher) Run(ctx context.Context) (Result, error) { return p.run(ctx, runOptions{}) }

// RunFull is Run with a full scan whatever the change counter says: for a
// process that cannot know what was written while it was not running (local
// mode's start) or a refresh a person asked for.
func (p *Publisher) RunFull(ctx context.Context) (Result, error) {
	return p.run(ctx, runOptions{full: true})
}

// runOptions qualify a run.
type runOptions struct {
	// full scans whatever the change counter says.
	full bool
	// batch holds the keys of a stream batch that fell back to this full
	// scan: the changes they brought are announced once it publishes.
	batch []string
}

// run is a run, and the sweep of orphaned history after a run that
// scanned (sweepHistory).
func (p *Publisher) run(ctx context.Context, opts runOptions) (Result, error) {
	res, err := p.publish(ctx, opts)
	if err == nil && res.Scanned {
		p.sweepHistory(ctx, &res)
	}
	return res, err
}

func (p *Publisher) publish(ctx context.Context, opts runOptions) (Result, error) {
	full := opts.full
	now, reconcile := p.clock(), p.reconcileInterval()
	start := now()
	res := Result{}

	// The current blob's header and change marker, and its ETag for the
	// conditional write.
	var (
		prev        *snapshot.Header
		prevTenants []snapshot.Entry
		prevIndex   *snapshot.Reader // the current manifest opened alone, nil when unread
		prevApart   bool             // the current blob is a manifest alone, its segments objects of their own
		prevTag     string
		gen         = uint64(1)
		repair      []snapshot.Entry // the current manifest's segments found not stored as their address says
		verified    bool             // whether they were looked for
	)
	head, err := p.Blobs.GetPrefix(ctx, snapshot.MarkerPrefix)
	switch {
	case err == nil:
		prevTag = head.ETag
		h, herr := snapshot.ReadHeader(head.Data)
		form, ferr := h.FormOf(head.Size)
		switch {
		case herr != nil:
			// Not a blob this build reads: replaced, with a generation from
			// the clock (Unix seconds) so that it still grows.
			gen = max(gen, uint64(now().Unix()))
		case ferr != nil || form == snapshot.ManifestAlone && h.Version != snapshot.Version:
			// The header is intact, the body is not all there: republish.
			gen = h.Generation + 1
		default:
			prev, gen = &h, h.Generation+1
			prevApart = form == snapshot.ManifestAlone
		}
	case errors.Is(err, blobstore.ErrNotFound):
	default:
		return res, fmt.Errorf("refresh: read current blob: %w", err)
	}
	if prev == nil {
		last, err := lastGeneration(ctx, p.Store)
		if err != nil {
			return res, err
		}
		gen = max(gen, last+1)
	}
	if res.Changes, err = catalog.ReadChanges(ctx, p.Store); err != nil {
		return res, fmt.Errorf("refresh: %w", err)
	}
	// A blob of another version (version 3, before the upgrade) is
	// republished from a scan as the version this build writes.
	if prev != nil {
		if prevIndex, err = p.previousIndex(ctx, *prev); err != nil {
			return res, err
		}
		if prevIndex != nil {
			prevTenants = prevIndex.Entries()
		}
	}
	if !full && prev != nil && prev.Version == snapshot.Version && prev.Marker.Changes == res.Changes &&
		!prev.Marker.FullScanAt.IsZero() && now().Sub(prev.Marker.FullScanAt) < reconcile {
		// Nothing to publish. The run writes no segment, so it checks
		// those the manifest names, and scans to rewrite any that is not
		// stored as its address says.
		if prevApart {
			if repair, err = p.verify(ctx, prevTenants); err != nil {
				return res, err
			}
			res.SegmentsVerified, verified = len(prevTenants), true
		}
		if len(repair) == 0 {
			res.Outcome, res.Generation = Unchanged, prev.Generation
			res.Counts = prev.Counts
			res.Duration = now().Sub(start)
			return res, nil
		}
	}

	res.Scanned = true
	scanAt := now()
	var store metastore.Store = p.Store
	var seen *batchScan
	if opts.batch != nil && p.Events != nil {
		seen = newBatchScan(p.Store, opts.batch)
		store = seen
	}
	build, err := scan.Build(ctx, store, scan.BuildOptions{Generation: gen, CreatedAt: scanAt, Previous: prevTenants,
		Base: prevIndex, Marker: snapshot.Marker{Changes: res.Changes, FullScanAt: scanAt}, HistoryVersions: p.HistoryVersions})
	if err != nil {
		return res, fmt.Errorf("refresh: %w", err)
	}
	res.Counts, res.Scan, res.SkippedKeys = build.Counts, build.Stats, build.SkippedKeys
	newHead := build.Written.Header
	res.BlobBytes = len(build.Written.Manifest)

	// The same tables under the same marker: nothing to record. (A moved
	// counter or a reconciliation publishes even the same tables, so that
	// the next run can be idle.) The manifest stands: a segment it names
	// that is not stored as its address says is written again from the
	// scan (the same tables: the same addresses).
	if prev != nil && prev.ContentHash == newHead.ContentHash && prev.Version == snapshot.Version &&
		prev.Marker.Changes == res.Changes && !prev.Marker.FullScanAt.IsZero() && now().Sub(prev.Marker.FullScanAt) < reconcile {
		if prevApart && !verified {
			if repair, err = p.verify(ctx, prevTenants); err != nil {
				return res, err
			}
			res.SegmentsVerified = len(prevTenants)
		}
		if err := p.rewrite(ctx, &res, build.Written, repair); err != nil {
			return res, err
		}
		res.Outcome, res.Generation = Unchanged, prev.Generation
		res.Duration = now().Sub(start)
		return res, nil
	}
	cond := blobstore.Condition{IfNoneMatch: true}
	if prevTag != "" {
		cond = blobstore.Condition{IfMatch: prevTag}
	}
	// Every segment, also those the previous manifest names: a full scan is
	// what stores a wrongly released segment, or a damaged one, live again.
	if res.SegmentsWritten, res.BytesWritten, err = p.putSegments(ctx, build.Written, nil); err != nil {
		return res, err
	}
	// A damaged segment is stored again at its address, or the manifest
	// published names its tenant's new one.
	for _, e := range repair {
		res.SegmentsRepaired++
		res.Repaired = append(res.Repaired, e.Tenant)
	}
	_, err = p.Blobs.Put(ctx, build.Written.Manifest, cond)
	switch {
	case err == nil:
		res.Outcome, res.Generation = Published, gen
		var batch batchChanges
		if seen != nil {
			// Before the release: the changes are read from the segments
			// the scan replaced.
			batch = p.batchChanges(ctx, seen, prevIndex, gen, scanAt)
		}
		if prev != nil && prev.Version >= snapshot.Version5 { // its segments apart
			res.SegmentsReleased, err = p.release(ctx, prevTenants, build.Written.Entries)
		}
		p.announceBatch(ctx, &res, gen, batch)
		if gerr := recordGeneration(ctx, p.Store, gen); gerr != nil {
			res.Duration = now().Sub(start)
			return res, fmt.Errorf("refresh: published generation %d but could not record it: %w", gen, gerr)
		}
		if err != nil {
			res.Duration = now().Sub(start)
			return res, err
		}
	case errors.Is(err, blobstore.ErrPreconditionFailed):
		p.releaseOrphans(ctx, build.Written.Entries, prevTenants)
		// Superseded only when what is there now is newer than this run's.
		cur, cerr := p.Blobs.GetPrefix(ctx, snapshot.HeaderSize)
		if cerr != nil {
			return res, fmt.Errorf("refresh: publish: the blob changed meanwhile, and reading it again failed: %w", cerr)
		}
		h, herr := snapshot.ReadHeader(cur.Data)
		if herr != nil || h.Generation < gen {
			return res, fmt.Errorf("refresh: publish: the blob changed meanwhile to one that is not newer than generation %d (%v); publishing nothing this run", gen, describe(h, herr))
		}
		res.Outcome, res.Generation = Superseded, h.Generation
	default:
		return res, fmt.Errorf("refresh: publish: %w", err)
	}
	res.Duration = now().Sub(start)
	return res, nil
}

// Apply publishes the current blob with the registrations at keys (a
// change feed's batch: DynamoDB Streams) read again and applied: only their
// tenants are decoded and encoded again (scan.Apply), and the new
// blob keeps the current one's full-scan time, so the reconciliation stays
// due when it was, and a change marker that counts only the writes it has
// (the old marker plus the writes the batch accounts for): a write whose own
// batch failed keeps the counter ahead of it, so the next scheduled run
// scans. It falls back to a full scan (Run) when there is no
// usable current blob, when the batch holds more than MaxIncremental keys,
// or when the reconciliation is due. A conditional write that loses to
// another refresh applies the batch again to what that one published (a
// few times), so no key of the batch is lost. After a batch that
// succeeds, History purges the orphaned history of each tombstone key of
// the batch found gone (purgeDropped).
func (p *Publisher) Apply(ctx context.Context, keys []string) (Result, error) {
	res, err := p.apply(ctx, keys)
	if err == nil {
		p.purgeDropped(ctx, &res, keys)
	}
	return res, err
}

// clock is Now, or time.Now.
func (p *Publisher) clock() func() time.Time {
	if p.Now != nil {
		return p.Now
	}
	return time.Now
}

// reconcileInterval is Reconcile, or DefaultReconcile.
func (p *Publisher) reconcileInterval() time.Duration {
	if p.Reconcile > 0 {
		return p.Reconcile
	}
	return DefaultReconcile
}

func (p *Publisher) apply(ctx context.Context, keys []string) (Result, error) {
	now, reconcile, limit := p.clock(), p.reconcileInterval(), p.MaxIncremental
	if limit <= 0 {
		limit = DefaultMaxIncremental
	}
	if len(keys) > limit {
		return p.run(ctx, runOptions{full: true, batch: keys})
	}
	const attempts = 3
	for range attempts {
		start := now()
		cur, err := p.Blobs.Get(ctx, "")
		if errors.Is(err, blobstore.ErrNotFound) {
			return p.RunFull(ctx)
		}
		if err != nil {
			return Result{}, fmt.Errorf("refresh: read current blob: %w", err)
		}
		// A manifest alone fetches the segments of the batch's tenants
		// only, as Apply reads them.
		var fetched counter
		base, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{Fetch: fetched.wrap(p.fetchSegment)})
		switch {
		case err != nil || base.Header().Version != snapshot.Version:
			return p.RunFull(ctx)
		case now().Sub(base.Header().Marker.FullScanAt) >= reconcile:
			return p.run(ctx, runOptions{full: true, batch: keys})
		}
		apart := base.Form() == snapshot.ManifestAlone
		h := base.Header()
		res := Result{Incremental: true}
		gen := h.Generation + 1
		// The new blob's marker is the old one plus the writes this batch
		// accounts for, never the live counter, which may count a write
		// whose batch failed (pkg/catalog/changes.go).
		applied, err := scan.Apply(ctx, p.Store, base, keys, scan.ApplyOptions{Generation: gen, CreatedAt: now(),
			HistoryVersions: p.HistoryVersions})
		switch {
		case apart && (errors.Is(err, snapshot.ErrCorrupt) || errors.Is(err, blobstore.ErrNotFound)):
			// A segment of the batch's tenants is not stored as the
			// manifest says: the batch is published from a full scan,
			// which stores every segment again (a retry of the batch would
			// fail the same way).
			return p.run(ctx, runOptions{full: true, batch: keys})
		case err != nil:
			return res, fmt.Errorf("refresh: %w", err)
		}
		ah := applied.Written.Header
		res.Reads, res.Tenants, res.Counts, res.BlobBytes = applied.Reads, applied.Tenants, ah.Counts, len(applied.Written.Manifest)
		res.SegmentsRead, res.BytesRead = fetched.n, fetched.bytes
		res.Changes = ah.Marker.Changes
		if applied.Writes == 0 && ah.ContentHash == h.ContentHash && apart {
			res.Outcome, res.Generation, res.Duration = Unchanged, h.Generation, now().Sub(start)
			return res, nil
		}
		// The segments the base does not name yet (all of them when the
		// base held its segments in one file).
		var have map[[32]byte]bool
		if apart {
			have = addresses(base.Entries())
		}
		if res.SegmentsWritten, res.BytesWritten, err = p.putSegments(ctx, applied.Written, have); err != nil {
			return res, err
		}
		_, err = p.Blobs.Put(ctx, applied.Written.Manifest, blobstore.Condition{IfMatch: cur.ETag})
		switch {
		case err == nil:
			res.Outcome, res.Generation = Published, gen
			if apart {
				res.SegmentsReleased, err = p.release(ctx, base.Entries(), applied.Written.Entries)
			}
			p.announce(ctx, &res, gen, applied.Changes)
			res.Duration = now().Sub(start)
			if gerr := recordGeneration(ctx, p.Store, gen); gerr != nil {
				return res, fmt.Errorf("refresh: published generation %d but could not record it: %w", gen, gerr)
			}
			return res, err
		case errors.Is(err, blobstore.ErrPreconditionFailed):
			p.releaseOrphans(ctx, applied.Written.Entries, base.Entries())
			continue // another refresh published: apply the batch to its blob
		default:
			return res, fmt.Errorf("refresh: publish: %w", err)
		}
	}
	return Result{}, fmt.Errorf("refresh: the blob kept changing under %d incremental attempts; the batch is retried", attempts)
}

func describe(h snapshot.Header, err error) string {
	if err != nil {
		return err.Error()
	}
	return "generation " + strconv.FormatUint(h.Generation, 10)
}

// lastGeneration is the last generation recorded at GenerationKey (0 when
// none).
func lastGeneration(ctx context.Context, store metastore.Store) (uint64, error) {
	raw, err := store.Get(ctx, GenerationKey)
	if errors.Is(err, metastore.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("refresh: read the last generation: %w", err)
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("refresh: the last generation holds %q: %w", raw, err)
	}
	return n, nil
}

// recordGeneration raises GenerationKey to gen (never lowers it).
func recordGeneration(ctx context.Context, store metastore.Store, gen uint64) error {
	for range 10 {
		raw, err := store.Get(ctx, GenerationKey)
		switch {
		case errors.Is(err, metastore.ErrNotFound):
			err = store.Create(ctx, GenerationKey, []byte(strconv.FormatUint(gen, 10)))
		case err != nil:
			return err
		default:
			if n, perr := strconv.ParseUint(string(raw), 10, 64); perr == nil && n >= gen {
				return nil
			}
			err = store.CompareAndSwap(ctx, GenerationKey, raw, []byte(strconv.FormatUint(gen, 10)))
		}
		if err == nil || !(errors.Is(err, metastore.ErrExists) || errors.Is(err, metastore.ErrConflict) || errors.Is(err, metastore.ErrNotFound)) {
			return err
		}
	}
	return errors.New("the last generation kept changing")
}

// Log writes one structured line for the run.
func (r Result) Log(ctx context.Context, log *slog.Logger, location string) {
	log.InfoContext(ctx, "refresh",
		slog.String("outcome", string(r.Outcome)),
		slog.Uint64("generation", r.Generation),
		slog.Bool("scanned", r.Scanned),
		slog.Bool("incremental", r.Incremental),
		slog.Int("reads", r.Reads),
		slog.Uint64("changes", r.Changes),
		slog.Int("tables", r.Counts.Tables),
		slog.Int("schema_unavailable", r.Counts.SchemaUnavailable),
		slog.Int("skipped", r.Counts.Skipped),
		slog.Any("skipped_keys", r.SkippedKeys),
		slog.Int("pages", r.Scan.Pages),
		slog.Int("items_scanned", r.Scan.Scanned),
		slog.Int("blob_bytes", r.BlobBytes),
		slog.Int("segments_read", r.SegmentsRead),
		slog.Int("segment_bytes_read", r.BytesRead),
		slog.Int("segments_written", r.SegmentsWritten),
		slog.Int("segment_bytes_written", r.BytesWritten),
		slog.Int("segments_released", r.SegmentsReleased),
		slog.Int("segments_verified", r.SegmentsVerified),
		slog.Int("segments_repaired", r.SegmentsRepaired),
		slog.Any("repaired", r.Repaired),
		slog.Int("announced", r.Announced),
		slog.String("announce_error", r.AnnounceError),
		slog.Int("histories_purged", r.HistoriesPurged),
		slog.Int("versions_purged", r.VersionsPurged),
		slog.Int("histories_left", r.HistoriesLeft),
		slog.Bool("history_swept", r.HistorySwept),
		slog.Int("history_sweep_pages", r.HistorySweepPages),
		slog.Int("dropped_indexed", r.DroppedIndexed),
		slog.String("history_error", r.HistoryError),
		slog.Int64("duration_ms", r.Duration.Milliseconds()),
		slog.String("blob", location),
	)
}

// WriteEMF writes the run's metrics as one CloudWatch Embedded Metric Format
// line to w (a Lambda's stdout), under namespace.
func (r Result) WriteEMF(w io.Writer, namespace string, at time.Time) error {
	published, scanned := 0, 0
	if r.Outcome == Published {
		published = 1
	}
	if r.Scanned {
		scanned = 1
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
					metric("Published", "Count"), metric("Scanned", "Count"), metric("SegmentsRepaired", "Count"),
					metric("VersionsPurged", "Count"), metric("HistoriesLeft", "Count"),
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
		"Scanned":           scanned,
		"SegmentsRepaired":  r.SegmentsRepaired,
		"VersionsPurged":    r.VersionsPurged,
		"HistoriesLeft":     r.HistoriesLeft,
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

// previousSegment fetches a segment of the current manifest (the Fetch
// of the reader previousIndex opens, which a full scan's Base and the
// batch it stands in for read); one the store no longer holds is
// scan.ErrSegmentMissing as well as the store's not-found, so a full
// scan publishes its rows again.
func (p *Publisher) previousSegment(ctx context.Context, e snapshot.Entry) ([]byte, error) {
	b, err := p.fetchSegment(ctx, e)
	if errors.Is(err, blobstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", scan.ErrSegmentMissing, err)
	}
	return b, err
}

// maxIndexRead bounds the index refresh reads back from the current blob to
// carry its tenants' generations: 64 MiB, several million tenants.
const maxIndexRead = 64 << 20

// previousIndex reads the current blob's manifest (a ranged read) and
// opens it alone (nil when it does not verify, or is over maxIndexRead), so
// unchanged tenants keep their generation and a full scan's unchanged rows
// their publication (it fetches the segments: previousSegment). A manifest
// that does not verify is ignored: every tenant then counts as changed and
// every row is published again, which costs readers a rebuild and change
// feed followers each change a second time, never one missed. (A version 4
// index addresses its segments as later versions do.)
func (p *Publisher) previousIndex(ctx context.Context, h snapshot.Header) (*snapshot.Reader, error) {
	if h.ManifestBytes > maxIndexRead {
		return nil, nil
	}
	prefix, err := p.Blobs.GetPrefix(ctx, snapshot.HeaderSize+int(h.ManifestBytes))
	if err != nil {
		return nil, fmt.Errorf("refresh: read the current blob's manifest: %w", err)
	}
	m, err := snapshot.Open(prefix.Data, snapshot.ReaderOptions{Fetch: p.previousSegment})
	if err != nil {
		return nil, nil
	}
	return m, nil
}

// segmentName is a segment's object name: its address in hex.
func segmentName(e snapshot.Entry) string { return hex.EncodeToString(e.Address[:]) }

func (p *Publisher) fetchSegment(ctx context.Context, e snapshot.Entry) ([]byte, error) {
	return p.Blobs.GetSegment(ctx, segmentName(e), e.StoredBytes)
}

// counter counts a Fetch's segments and bytes.
type counter struct {
	mu       sync.Mutex
	n, bytes int
}

func (c *counter) wrap(f snapshot.Fetch) snapshot.Fetch {
	return func(ctx context.Context, e snapshot.Entry) ([]byte, error) {
		b, err := f(ctx, e)
		c.mu.Lock()
		c.n, c.bytes = c.n+1, c.bytes+len(b)
		c.mu.Unlock()
		return b, err
	}
}

func addresses(entries []snapshot.Entry) map[[32]byte]bool {
	m := make(map[[32]byte]bool, len(entries))
	for _, e := range entries {
		m[e.Address] = true
	}
	return m
}

// segmentWriters bounds the segment writes in flight.
const segmentWriters = 16

// putSegments stores w's segments whose addresses are not in skip,
// segmentWriters at a time, and returns how many and their bytes.
func (p *Publisher) putSegments(ctx context.Context, w *snapshot.Written, skip map[[32]byte]bool) (n, bytes int, err error) {
	type job struct {
		e   snapshot.Entry
		seg []byte
	}
	var jobs []job
	for i, seg := range w.Segments {
		if seg != nil && !skip[w.Entries[i].Address] {
			jobs = append(jobs, job{w.Entries[i], seg})
			bytes += len(seg)
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(segmentWriters)
	for _, j := range jobs {
		g.Go(func() error {
			if err := p.Blobs.PutSegment(ctx, segmentName(j.e), j.seg); err != nil {
				return fmt.Errorf("refresh: store the segment of %q: %w", j.e.Tenant, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, 0, err
	}
	return len(jobs), bytes, nil
}

// segmentVerifiers bounds the segment reads of a verification in flight.
const segmentVerifiers = 16

// verify reads back every segment entries name and returns the entries of
// those not stored as their address says: damaged (other bytes), missing,
// or unreadable (the store failing; storing it again is harmless, its
// bytes are fixed by its address). It is the repair path of a run that
// writes no segment: one GET and one SHA-256 per segment, at every
// scheduled run that publishes nothing (README, Operations). Only ctx's
// error is returned.
func (p *Publisher) verify(ctx context.Context, entries []snapshot.Entry) ([]snapshot.Entry, error) {
	var (
		g    errgroup.Group
		mu   sync.Mutex
		bad  []snapshot.Entry
		seen = map[[32]byte]bool{}
	)
	g.SetLimit(segmentVerifiers)
	for _, e := range entries {
		if seen[e.Address] {
			continue // two tenants of the same bytes: one object
		}
		seen[e.Address] = true
		g.Go(func() error {
			b, err := p.fetchSegment(ctx, e)
			if err == nil && len(b) == e.StoredBytes && sha256.Sum256(b) == e.Address {
				return nil
			}
			mu.Lock()
			bad = append(bad, e)
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(bad, func(a, b snapshot.Entry) int { return strings.Compare(a.Tenant, b.Tenant) })
	return bad, nil
}

// rewrite stores again, from w (a scan of the same tables), the segments of
// repair, and counts them in res.
func (p *Publisher) rewrite(ctx context.Context, res *Result, w *snapshot.Written, repair []snapshot.Entry) error {
	if len(repair) == 0 {
		return nil
	}
	segs := make(map[[32]byte][]byte, len(w.Entries))
	for i, e := range w.Entries {
		segs[e.Address] = w.Segments[i]
	}
	for _, e := range repair {
		seg := segs[e.Address]
		if seg == nil {
			return fmt.Errorf("refresh: the scan holds no segment %s of %q to repair", segmentName(e), e.Tenant)
		}
		if err := p.Blobs.PutSegment(ctx, segmentName(e), seg); err != nil {
			return fmt.Errorf("refresh: repair the segment of %q: %w", e.Tenant, err)
		}
		res.SegmentsRepaired++
		res.BytesWritten += len(seg)
		res.Repaired = append(res.Repaired, e.Tenant)
	}
	res.SegmentsWritten += len(repair)
	return nil
}

// release releases the segments old names and now does not, once now is
// published. A failure is reported (the publish stands: an unreleased
// segment costs storage, not correctness).
func (p *Publisher) release(ctx context.Context, old, now []snapshot.Entry) (int, error) {
	live := addresses(now)
	var names []string
	for _, e := range old {
		if !live[e.Address] {
			names = append(names, segmentName(e))
			live[e.Address] = true // once
		}
	}
	if len(names) == 0 {
		return 0, nil
	}
	if err := p.Blobs.ReleaseSegments(ctx, names); err != nil {
		return 0, fmt.Errorf("refresh: published, but releasing %d segments failed: %w", len(names), err)
	}
	return len(names), nil
}

// releaseOrphans releases, after a lost publish, the segments this run
// stored that neither the manifest it built on (prev) nor the one that won
// (read again) names. It is best effort: an orphan left is storage, and a
// segment released while a later manifest names it is stored again by the
// next full scan, within the lifecycle's grace period.
func (p *Publisher) releaseOrphans(ctx context.Context, ours, prev []snapshot.Entry) {
	cur, err := p.Blobs.Get(ctx, "")
	if err != nil {
		return
	}
	winner, err := snapshot.Open(cur.Data, snapshot.ReaderOptions{})
	if err != nil || winner.Header().Version != snapshot.Version {
		return
	}
	keep := addresses(prev)
	for _, e := range winner.Entries() {
		keep[e.Address] = true
	}
	var orphans []snapshot.Entry
	for _, e := range ours {
		if !keep[e.Address] {
			orphans = append(orphans, e)
		}
	}
	_, _ = p.release(ctx, orphans, nil)
}
