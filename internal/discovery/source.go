package discovery

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// Source loads the snapshot blob into a Service and keeps it current by
// polling with conditional reads: each poll names the ETag of the serving
// blob (If-None-Match), so an unchanged blob is answered 304 with no bytes
// and nothing is decoded. The blob is the manifest (snapshot.Load): a new
// one is loaded with the segments the serving view already holds, by
// address, and only the others fetched, so a change moves the manifest and
// the changed tenants' segments. A blob that fails any check (a segment
// that does not match its address included) is rejected and the previous
// view keeps serving; a blob of an older generation than the serving one
// is rejected too. A rejected blob's ETag is remembered and named instead,
// so the same rejected bytes are not fetched and checked again at every
// poll. A segment that cannot be fetched (missing, the store failing)
// fails the poll without a rejection: the next poll tries again.
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

	blobs   blobstore.Store
	svc     *Service
	metrics *Metrics
	log     *slog.Logger

	pollMu      sync.Mutex // one poll at a time; held through a (long) load
	etag        string     // the serving blob's ETag; guarded by pollMu
	rejectedTag string     // the last rejected blob's ETag, "" after a load; guarded by pollMu
	rejectedErr error      // why it was rejected; guarded by pollMu

	mu          sync.Mutex // guards the status fields; never held during I/O
	lastErr     error
	lastPoll    time.Time
	lastSuccess time.Time
	metaReads   uint64
	segsFetched uint64
	segBytes    uint64
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
	// lacked) and their bytes.
	SegmentsFetched     uint64 `json:"segments_fetched"`
	SegmentBytesFetched uint64 `json:"segment_bytes_fetched"`
	// Cache describes the prepared-tenant cache.
	Cache CacheStats `json:"cache"`
}

// Status reports the serving generation and the last poll's result.
func (s *Source) Status() Status {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{LastPoll: s.lastPoll, LastSuccessfulPoll: s.lastSuccess, MetadataReads: s.metaReads,
		SegmentsFetched: s.segsFetched, SegmentBytesFetched: s.segBytes,
		MaxStalenessSeconds: s.MaxStaleness.Seconds(), Cache: s.svc.CacheStats()}
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

// health reports whether the source can serve: a snapshot is loaded and the
// last successful poll is within MaxStaleness. reason says why not, briefly
// and without the blob's location (a load balancer reads it).
func (s *Source) health(now time.Time) (ok bool, reason string) {
	if s.svc.View() == nil {
		return false, "no snapshot loaded yet"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.staleFor(now) > 0 {
		return false, fmt.Sprintf("snapshot stale: no successful poll for %v, over the %v bound",
			now.Sub(s.lastSuccess).Round(time.Millisecond), s.MaxStaleness)
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
	case errors.Is(err, blobstore.ErrNotModified) && s.rejectedTag != "":
		// Still the blob rejected before: not fetched, not checked again.
		return false, s.rejectedErr
	case errors.Is(err, blobstore.ErrNotModified):
		s.succeeded(start)
		return false, nil
	case errors.Is(err, blobstore.ErrNotFound):
		return false, fmt.Errorf("discovery: no snapshot blob at %s yet", s.blobs.Location())
	case err != nil:
		return false, fmt.Errorf("discovery: fetch %s: %w", s.blobs.Location(), err)
	}
	blob, fetched, err := s.load(ctx, b.Data)
	if err != nil && !errors.Is(err, snapshot.ErrCorrupt) && !errors.Is(err, snapshot.ErrVersion) {
		return false, fmt.Errorf("discovery: load %s: %w", s.blobs.Location(), err)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "snapshot blob rejected; the previous snapshot keeps serving",
			slog.String("blob", s.blobs.Location()), slog.String("etag", b.ETag), slog.String("error", err.Error()))
		return false, s.reject(b.ETag, fmt.Errorf("%w: %w", errRejected, err))
	}
	h := blob.Header()
	if cur := s.svc.View(); cur != nil && h.Generation < cur.Generation {
		s.log.WarnContext(ctx, "snapshot blob of an older generation rejected",
			slog.Uint64("blob_generation", h.Generation), slog.Uint64("serving_generation", cur.Generation))
		return false, s.reject(b.ETag, fmt.Errorf("%w: generation %d is older than the serving %d", errRejected, h.Generation, cur.Generation))
	}
	v := &View{Generation: h.Generation, CreatedAt: h.CreatedAt, Counts: h.Counts, Tenants: len(blob.Entries()), index: blobIndex{blob}}
	s.succeeded(start)
	s.svc.setView(v)
	s.etag, s.rejectedTag, s.rejectedErr = b.ETag, "", nil
	if s.OnLoad != nil {
		s.OnLoad(v)
	}
	if s.metrics != nil {
		s.metrics.generation.Set(float64(v.Generation))
		s.metrics.createdAt.Set(float64(v.CreatedAt.UnixNano()) / 1e9)
		s.metrics.tables.Set(float64(v.Counts.Tables))
	}
	s.log.InfoContext(ctx, "snapshot loaded", slog.Uint64("generation", v.Generation), slog.Int("tables", v.Counts.Tables),
		slog.Int("schema_unavailable", v.Counts.SchemaUnavailable), slog.Int("blob_bytes", len(b.Data)),
		slog.Int("segments_fetched", fetched.n), slog.Int("segment_bytes_fetched", fetched.bytes))
	return true, nil
}

// fetched counts a load's segment fetches.
type fetched struct{ n, bytes int }

// segmentFetchers bounds a load's segment fetches in flight.
const segmentFetchers = 32

// load opens a blob object (snapshot.Load): each segment its manifest
// names is the serving view's when that holds one of the same address,
// else fetched from the store.
func (s *Source) load(ctx context.Context, data []byte) (*snapshot.Reader, fetched, error) {
	have := map[[32]byte][]byte{}
	if cur := s.svc.View(); cur != nil {
		if x, ok := cur.index.(blobIndex); ok {
			for _, e := range x.blob.Entries() {
				if b, err := x.blob.Stored(e.Tenant); err == nil {
					have[e.Address] = b
				}
			}
		}
	}
	var (
		mu sync.Mutex
		f  fetched
	)
	r, err := snapshot.Load(ctx, data, func(ctx context.Context, e snapshot.Entry) ([]byte, error) {
		if b, ok := have[e.Address]; ok {
			return b, nil
		}
		b, err := s.blobs.GetSegment(ctx, hex.EncodeToString(e.Address[:]), e.StoredBytes)
		mu.Lock()
		f.n, f.bytes = f.n+1, f.bytes+len(b)
		mu.Unlock()
		return b, err
	}, snapshot.LoadOptions{Concurrency: segmentFetchers})
	s.mu.Lock()
	s.segsFetched += uint64(f.n)
	s.segBytes += uint64(f.bytes)
	s.mu.Unlock()
	return r, f, err
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
