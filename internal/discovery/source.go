package discovery

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// Source loads the snapshot blob into a Service and keeps it current by
// polling with conditional reads: each poll names the ETag of the serving
// blob (If-None-Match), so an unchanged blob is answered 304 with no bytes
// and nothing is decoded. The blob is the manifest: a new one is loaded
// with the segments the serving view already holds, by address, and only
// the others fetched, so a change moves the manifest and the changed
// tenants' segments. A manifest that fails any check is rejected and the
// previous view keeps serving; a blob of an older generation than the
// serving one is rejected too. A rejected blob's ETag is remembered and
// named instead, so the same rejected bytes are not fetched and checked
// again at every poll.
//
// A segment is one tenant's: one that does not load (damaged, missing, the
// store failing) leaves that tenant degraded and the manifest serves every
// other tenant (degraded.go). The tenant keeps its last good state where
// the view held one, else its requests get UNAVAILABLE; its segment is
// fetched again with backoff, at a poll once the wait is over.
type Source struct {
	// OnLoad, when set before the first poll, is called after each new view
	// is swapped in.
	OnLoad func(*View)
	// OnPoll, when set before the first poll, is called after each poll,
	// once its result is in Status.
	OnPoll func()
	// MaxStaleness, when more than zero and set before the first poll, is
	// how old the last successful poll may be before the source counts as
	// stale (Status.Stale; /healthz answers 503). The view keeps serving.
	MaxStaleness time.Duration
	// SegmentRetryMin and SegmentRetryMax bound the wait before a degraded
	// tenant's segment is fetched again: SegmentRetryMin (or SegmentRetryMax
	// when shorter) after the first failure, twice as long after each one
	// after, at most SegmentRetryMax; the fetch is made at the first poll
	// after the wait. Zero: DefaultSegmentRetryMin, DefaultSegmentRetryMax.
	// Set them before the first poll.
	SegmentRetryMin, SegmentRetryMax time.Duration
	// Now is the clock segment retries are scheduled by; default time.Now.
	// Set it before the first poll.
	Now func() time.Time

	blobs   blobstore.Store
	svc     *Service
	metrics *Metrics
	log     *slog.Logger

	pollMu      sync.Mutex // one poll at a time; held through a (long) load
	etag        string     // the serving blob's ETag; guarded by pollMu
	rejectedTag string     // the last rejected blob's ETag, "" after a load; guarded by pollMu
	rejectedErr error      // why it was rejected; guarded by pollMu
	// manifest is the serving manifest (nil for a one-file blob), and
	// failures its degraded tenants' failed segments; guarded by pollMu.
	manifest []byte
	failures map[string]*segmentFailure

	mu          sync.Mutex // guards the status fields; never held during I/O
	lastErr     error
	lastPoll    time.Time
	lastSuccess time.Time
	metaReads   uint64
	segsFetched uint64
	segBytes    uint64
	degraded    []DegradedTenant // the serving view's, as of the last poll
	segFailures uint64
	unservable  bool // the view serves no tenant: each one is degraded without a last good state
}

// NewSource returns a Source feeding svc from blobs. metrics may be nil.
func NewSource(blobs blobstore.Store, svc *Service, metrics *Metrics, log *slog.Logger) *Source {
	if log == nil {
		log = slog.Default()
	}
	return &Source{blobs: blobs, svc: svc, metrics: metrics, log: log}
}

// Status is what the source last did, as /status serves it.
type Status struct {
	// Generation and CreatedAt are the serving blob's (zero before the first).
	Generation uint64    `json:"generation"`
	CreatedAt  time.Time `json:"created_at"`
	// Loaded reports whether a blob is serving.
	Loaded bool `json:"loaded"`
	// Tables and Tenants count the serving blob's tables and tenants.
	Tables  int `json:"tables"`
	Tenants int `json:"tenants"`
	// LastPoll is when the blob was last checked; LastError what that
	// check failed with ("" when it did not).
	LastPoll  time.Time `json:"last_poll"`
	LastError string    `json:"last_error"`
	// LastSuccessfulPoll is when a poll last succeeded: it found the blob
	// unchanged (304) or loaded it. A failed read or a rejected blob is no
	// success. Zero before the first.
	LastSuccessfulPoll time.Time `json:"last_successful_poll"`
	// MaxStalenessSeconds is the bound on the last successful poll's age
	// (Source.MaxStaleness); 0 when there is none.
	MaxStalenessSeconds float64 `json:"max_staleness_seconds"`
	// Stale reports a loaded snapshot whose last successful poll is older
	// than the bound: health says unhealthy, and requests are still answered
	// from the serving snapshot.
	Stale bool `json:"stale"`
	// MetadataReads counts blob reads: only polls read metadata.
	MetadataReads uint64 `json:"metadata_reads"`
	// SegmentsFetched and SegmentBytesFetched count the segments the
	// source fetched (those a new manifest names that the serving view
	// lacked, and retries) and their bytes.
	SegmentsFetched     uint64 `json:"segments_fetched"`
	SegmentBytesFetched uint64 `json:"segment_bytes_fetched"`
	// DegradedTenants lists the tenants the serving manifest names whose
	// segment did not load, by tenant (empty when none): each serves its
	// last good state or answers UNAVAILABLE, and is fetched again with
	// backoff. SegmentFailures counts the failed segment loads since start.
	DegradedTenants []DegradedTenant `json:"degraded_tenants"`
	SegmentFailures uint64           `json:"segment_failures"`
	// Cache describes the cache of everything derived from segments.
	Cache CacheStats `json:"cache"`
}

// Status reports the serving generation and the last poll's result.
func (s *Source) Status() Status {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{LastPoll: s.lastPoll, LastSuccessfulPoll: s.lastSuccess, MetadataReads: s.metaReads,
		SegmentsFetched: s.segsFetched, SegmentBytesFetched: s.segBytes, SegmentFailures: s.segFailures,
		DegradedTenants: slices.Clone(s.degraded), MaxStalenessSeconds: s.MaxStaleness.Seconds(), Cache: s.svc.CacheStats()}
	if st.DegradedTenants == nil {
		st.DegradedTenants = []DegradedTenant{}
	}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	if v := s.svc.View(); v != nil {
		st.Loaded, st.Generation, st.CreatedAt, st.Tables, st.Tenants = true, v.Generation, v.CreatedAt, v.Counts.Tables, v.Tenants
		st.Stale = s.staleFor(now) > 0
	}
	return st
}

// staleFor is how far the last successful poll's age exceeds MaxStaleness
// at now (0 when it does not, or without a bound). s.mu must be held.
func (s *Source) staleFor(now time.Time) time.Duration {
	if s.MaxStaleness <= 0 || s.lastSuccess.IsZero() {
		return 0
	}
	return max(0, now.Sub(s.lastSuccess)-s.MaxStaleness)
}

// Health reports whether the source can serve: a snapshot is loaded, it
// serves at least one tenant (or names none), and the last successful poll
// is within MaxStaleness. reason says why not, or, when it can, how many
// tenants are degraded ("" when none), briefly and without the blob's
// location or a tenant's name (a load balancer reads it). A degraded
// tenant is one tenant's problem: the others are served, so the task is
// healthy.
func (s *Source) Health(now time.Time) (ok bool, reason string) {
	v := s.svc.View()
	if v == nil {
		return false, "no snapshot loaded yet"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.staleFor(now) > 0:
		return false, fmt.Sprintf("snapshot stale: no successful poll for %v, over the %v bound",
			now.Sub(s.lastSuccess).Round(time.Millisecond), s.MaxStaleness)
	case s.unservable:
		return false, fmt.Sprintf("no tenant can be served: the segment of each of the %d tenants failed to load", v.Tenants)
	case len(s.degraded) > 0:
		return true, fmt.Sprintf("%d of %d tenants degraded (segments that failed to load)", len(s.degraded), v.Tenants)
	}
	return true, ""
}

// Poll fetches the blob if it changed since the last load and swaps in its
// view. It returns whether a new view was loaded.
func (s *Source) Poll(ctx context.Context) (bool, error) {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	start := time.Now()
	s.mu.Lock()
	s.lastPoll = start
	s.metaReads++
	s.mu.Unlock()
	if s.metrics != nil {
		s.metrics.metadataIO.Inc()
	}
	loaded, err := s.poll(ctx, start)
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
	if s.OnPoll != nil {
		s.OnPoll()
	}
	result := "unchanged"
	switch {
	case err != nil && errors.Is(err, errRejected):
		result = "rejected"
	case err != nil:
		result = "error"
	case loaded:
		result = "loaded"
	}
	if s.metrics != nil {
		s.metrics.loads.WithLabelValues(result).Inc()
		if loaded {
			s.metrics.lastLoadTime.Set(time.Since(start).Seconds())
		}
	}
	return loaded, err
}

var errRejected = errors.New("discovery: snapshot blob rejected")

// succeeded records a successful poll that started at start.
func (s *Source) succeeded(start time.Time) {
	s.mu.Lock()
	s.lastSuccess = start
	s.mu.Unlock()
	if s.metrics != nil {
		s.metrics.lastSuccess.Set(float64(start.UnixNano()) / 1e9)
	}
}

func (s *Source) poll(ctx context.Context, start time.Time) (bool, error) {
	tag := s.etag
	if s.rejectedTag != "" {
		tag = s.rejectedTag
	}
	b, err := s.blobs.Get(ctx, tag)
	switch {
	case errors.Is(err, blobstore.ErrNotModified):
		// Unchanged, or still the blob rejected before (not fetched, not
		// checked again): the serving manifest's degraded tenants are
		// fetched again when their wait is over.
		loaded, err := s.retry(ctx)
		switch {
		case err != nil:
			return loaded, err
		case s.rejectedTag != "":
			return loaded, s.rejectedErr
		}
		s.succeeded(start)
		return loaded, nil
	case errors.Is(err, blobstore.ErrNotFound):
		return false, fmt.Errorf("discovery: no snapshot blob at %s yet", s.blobs.Location())
	case err != nil:
		return false, fmt.Errorf("discovery: fetch %s: %w", s.blobs.Location(), err)
	}
	blob, err := snapshot.Open(b.Data, snapshot.ReaderOptions{})
	if err == nil {
		if cur := s.svc.View(); cur != nil && blob.Header().Generation < cur.Generation {
			h := blob.Header()
			s.log.WarnContext(ctx, "snapshot blob of an older generation rejected",
				slog.Uint64("blob_generation", h.Generation), slog.Uint64("serving_generation", cur.Generation))
			return false, s.reject(b.ETag, fmt.Errorf("%w: generation %d is older than the serving %d", errRejected, h.Generation, cur.Generation))
		}
	}
	if err != nil {
		s.log.ErrorContext(ctx, "snapshot blob rejected; the previous snapshot keeps serving",
			slog.String("blob", s.blobs.Location()), slog.String("etag", b.ETag), slog.String("error", err.Error()))
		return false, s.reject(b.ETag, fmt.Errorf("%w: %w", errRejected, err))
	}
	// A manifest alone is given its segments here, before it serves: the
	// view's readers have no Fetch, so serving does no I/O.
	apart := blob.Form() == snapshot.ManifestAlone
	o := opened{blob: blob}
	if apart {
		if o, err = s.attach(ctx, blob); err != nil {
			return false, fmt.Errorf("discovery: load %s: %w", s.blobs.Location(), err)
		}
	}
	s.succeeded(start)
	v := s.swap(o)
	s.etag, s.rejectedTag, s.rejectedErr = b.ETag, "", nil
	s.manifest = nil
	if apart {
		s.manifest = b.Data
	}
	s.log.InfoContext(ctx, "snapshot loaded", slog.Uint64("generation", v.Generation), slog.Int("tables", v.Counts.Tables),
		slog.Int("schema_unavailable", v.Counts.SchemaUnavailable), slog.Int("blob_bytes", len(b.Data)),
		slog.Int("segments_fetched", o.fetched.n), slog.Int("segment_bytes_fetched", o.fetched.bytes), slog.Int("degraded_tenants", len(o.failures)))
	return true, nil
}

// opened is a blob made ready for a view: its reader with every segment
// that loaded attached, the degraded tenants' failures and last good
// states, and what loading it fetched.
type opened struct {
	blob     *snapshot.Reader
	lastGood map[string]*snapshot.Reader
	failures map[string]*segmentFailure
	fetched  fetched
	// tried counts the segment loads that failed, by state; recovered the
	// tenants degraded before whose segment loaded.
	tried     map[string]int
	recovered int
}

// fetched counts a load's segment fetches.
type fetched struct{ n, bytes int }

// segmentFetchers bounds a load's segment fetches in flight.
const segmentFetchers = 32

// attach gives blob (a manifest opened alone) the segments it names: each
// the serving view's when that holds one of the same address, else
// fetched from the store, segmentFetchers at a time, and checked against
// its address; a tenant whose segment failed at the same address before
// and whose wait is not over is not fetched and stays degraded. A segment
// that does not load leaves its tenant degraded, with its last good state
// from the serving view where that has one. Only ctx's error is returned.
func (s *Source) attach(ctx context.Context, blob *snapshot.Reader) (opened, error) {
	now := s.now()
	o := opened{blob: blob, lastGood: map[string]*snapshot.Reader{}, failures: map[string]*segmentFailure{}, tried: map[string]int{}}
	var serving blobIndex
	have := map[[32]byte][]byte{}
	if cur := s.svc.View(); cur != nil {
		serving, _ = cur.index.(blobIndex)
	}
	if serving.blob != nil {
		for _, e := range serving.blob.Entries() {
			if held, b, ok := serving.stored(e.Tenant); ok { // a degraded tenant's: its last good state's
				have[held.Address] = b
			}
		}
	}
	entries := blob.Entries()
	type load struct {
		stored []byte
		err    error
		wait   bool // failed before at this address, and not due
	}
	loads := make([]load, len(entries))
	var (
		g  errgroup.Group
		mu sync.Mutex
	)
	g.SetLimit(segmentFetchers)
	for i, e := range entries {
		if b, ok := have[e.Address]; ok {
			loads[i].stored = b
			continue
		}
		if f := s.failures[e.Tenant]; f != nil && f.entry.Address == e.Address && now.Before(f.next) {
			loads[i].wait = true
			continue
		}
		g.Go(func() error {
			b, err := s.blobs.GetSegment(ctx, hex.EncodeToString(e.Address[:]), e.StoredBytes)
			loads[i].stored, loads[i].err = b, err
			mu.Lock()
			o.fetched.n, o.fetched.bytes = o.fetched.n+1, o.fetched.bytes+len(b)
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait() // the loads carry their errors
	s.mu.Lock()
	s.segsFetched += uint64(o.fetched.n)
	s.segBytes += uint64(o.fetched.bytes)
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return o, err
	}
	minWait, maxWait := s.segmentRetry()
	var attempted []string
	for i, e := range entries {
		l := loads[i]
		before := s.failures[e.Tenant]
		if l.wait {
			o.failures[e.Tenant] = before
			continue
		}
		err := l.err
		if err == nil {
			err = blob.Attach(e.Tenant, l.stored)
		}
		if err == nil {
			if before != nil {
				o.recovered++
			}
			continue
		}
		f := failed(before, e, err, now, minWait, maxWait)
		o.failures[e.Tenant] = f
		o.tried[f.state]++
		attempted = append(attempted, e.Tenant)
	}
	for tenant := range o.failures {
		if r, ok := serving.lastGood[tenant]; ok {
			o.lastGood[tenant] = r
			continue
		}
		if _, ok := serving.degraded[tenant]; ok || serving.blob == nil {
			continue
		}
		if _, err := serving.blob.Stored(tenant); err != nil {
			continue // the serving view has no state of it
		}
		r, err := lastGoodOf(serving.blob, tenant)
		if err != nil {
			s.log.ErrorContext(ctx, "the last good state of a degraded tenant could not be kept", slog.String("error", err.Error()))
			continue
		}
		o.lastGood[tenant] = r
	}
	// One line per failed attempt: the backoff bounds them.
	for _, tenant := range attempted {
		f := o.failures[tenant]
		_, keeps := o.lastGood[tenant]
		s.log.ErrorContext(ctx, "tenant segment failed to load; the tenant is degraded", slog.String("tenant", tenant),
			slog.String("state", f.state), slog.Bool("serves_last_good", keeps), slog.Int("attempts", f.attempts),
			slog.Time("next_attempt", f.next), slog.String("segment", s.blobs.SegmentLocation(hex.EncodeToString(f.entry.Address[:]))),
			slog.String("error", f.err.Error()))
	}
	return o, nil
}

// retry fetches again the segments of the serving manifest's degraded
// tenants whose wait is over, and swaps in a view of the same manifest with
// those that load. It returns whether a tenant recovered. Only ctx's error
// is returned.
func (s *Source) retry(ctx context.Context) (bool, error) {
	if len(s.failures) == 0 || s.manifest == nil {
		return false, nil
	}
	now := s.now()
	due := false
	for _, f := range s.failures {
		due = due || !now.Before(f.next)
	}
	if !due {
		return false, nil
	}
	blob, err := snapshot.Open(s.manifest, snapshot.ReaderOptions{})
	if err != nil {
		return false, fmt.Errorf("discovery: open the serving manifest again: %w", err) // it opened before
	}
	o, err := s.attach(ctx, blob)
	if err != nil {
		return false, err
	}
	s.swap(o)
	if o.recovered > 0 {
		s.log.InfoContext(ctx, "degraded tenants' segments loaded", slog.Int("recovered", o.recovered), slog.Int("degraded_tenants", len(o.failures)))
	}
	return o.recovered > 0, nil
}

// swap makes o the serving view, and records its degraded tenants in the
// status and the metrics.
func (s *Source) swap(o opened) *View {
	h := o.blob.Header()
	degraded := make(map[string]degradedTenant, len(o.failures))
	for tenant, f := range o.failures {
		_, keeps := o.lastGood[tenant]
		degraded[tenant] = degradedTenant{state: f.state, generation: f.entry.Generation, lastGood: keeps}
	}
	v := &View{Generation: h.Generation, CreatedAt: h.CreatedAt, Counts: h.Counts, Tenants: len(o.blob.Entries()),
		index: blobIndex{blob: o.blob, lastGood: o.lastGood, degraded: degraded}}
	s.svc.setView(v)
	s.failures = o.failures
	list := degradedList(o.failures, o.lastGood)
	failures := 0
	for _, n := range o.tried {
		failures += n
	}
	s.mu.Lock()
	s.degraded = list
	s.segFailures += uint64(failures)
	s.unservable = v.Tenants > 0 && len(o.failures) == v.Tenants && len(o.lastGood) == 0
	s.mu.Unlock()
	if s.OnLoad != nil {
		s.OnLoad(v)
	}
	if s.metrics != nil {
		s.metrics.generation.Set(float64(v.Generation))
		s.metrics.createdAt.Set(float64(v.CreatedAt.UnixNano()) / 1e9)
		s.metrics.tables.Set(float64(v.Counts.Tables))
		s.metrics.degradedTenants.Set(float64(len(o.failures)))
		for state, n := range o.tried {
			s.metrics.segmentFailures.WithLabelValues(state).Add(float64(n))
		}
	}
	return v
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// segmentRetry is the backoff's bounds (SegmentRetryMin, SegmentRetryMax
// or their defaults).
func (s *Source) segmentRetry() (minWait, maxWait time.Duration) {
	minWait, maxWait = s.SegmentRetryMin, s.SegmentRetryMax
	if minWait <= 0 {
		minWait = DefaultSegmentRetryMin
	}
	if maxWait <= 0 {
		maxWait = DefaultSegmentRetryMax
	}
	return min(minWait, maxWait), maxWait
}

// reject remembers a rejected blob's ETag and why, for the next polls, and
// returns err. The rejection holds for those bytes: a blob's content does
// not change under one ETag, and the serving generation only grows.
func (s *Source) reject(etag string, err error) error {
	s.rejectedTag, s.rejectedErr = etag, err
	return err
}

// failureLogEvery is how often Run logs a poll failure that goes on; the
// first failure and the recovery are logged at once.
const failureLogEvery = time.Minute

// Run polls every interval until ctx ends. Errors are kept in Status and
// logged: the first of a run of failures, then once a minute at most, and
// the recovery. The serving view stays.
func (s *Source) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing, lastLogged := false, time.Time{}
	for {
		_, err := s.Poll(ctx)
		switch now := time.Now(); {
		case ctx.Err() != nil:
		case err != nil && (!failing || now.Sub(lastLogged) >= failureLogEvery):
			lastLogged, failing = now, true
			s.log.WarnContext(ctx, "snapshot poll", slog.String("error", err.Error()))
		case err == nil && failing:
			failing = false
			s.log.InfoContext(ctx, "snapshot poll succeeded again")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
