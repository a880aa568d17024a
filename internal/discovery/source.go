package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// Source loads the snapshot blob into a Service and keeps it current by
// polling with conditional reads. A blob that fails any check is rejected
// and the previous view keeps serving; a blob of an older generation than
// the serving one is rejected too.
type Source struct {
	// OnLoad, when set before the first poll, is called after each new view
	// is swapped in.
	OnLoad func(*View)

	blobs   blobstore.Store
	svc     *Service
	metrics *Metrics
	log     *slog.Logger

	pollMu sync.Mutex // one poll at a time; held through a (long) load
	etag   string     // guarded by pollMu

	mu        sync.Mutex // guards the status fields; never held during I/O
	lastErr   error
	lastPoll  time.Time
	metaReads uint64
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
	// MetadataReads counts blob reads: only polls read metadata.
	MetadataReads uint64 `json:"metadata_reads"`
	// Cache describes the prepared-tenant cache.
	Cache CacheStats `json:"cache"`
}

// Status reports the serving generation and the last poll's result.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{LastPoll: s.lastPoll, MetadataReads: s.metaReads, Cache: s.svc.CacheStats()}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	if v := s.svc.View(); v != nil {
		st.Loaded, st.Generation, st.CreatedAt, st.Tables, st.Tenants = true, v.Generation, v.CreatedAt, v.Counts.Tables, v.Tenants
	}
	return st
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
	loaded, err := s.poll(ctx)
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
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

func (s *Source) poll(ctx context.Context) (bool, error) {
	b, err := s.blobs.Get(ctx, s.etag)
	switch {
	case errors.Is(err, blobstore.ErrNotModified):
		return false, nil
	case errors.Is(err, blobstore.ErrNotFound):
		return false, fmt.Errorf("discovery: no snapshot blob at %s yet", s.blobs.Location())
	case err != nil:
		return false, fmt.Errorf("discovery: fetch %s: %w", s.blobs.Location(), err)
	}
	blob, err := catalog.OpenBlob(b.Data, catalog.DecodeOptions{})
	if err != nil {
		s.log.ErrorContext(ctx, "snapshot blob rejected; the previous snapshot keeps serving",
			slog.String("blob", s.blobs.Location()), slog.String("etag", b.ETag), slog.String("error", err.Error()))
		return false, fmt.Errorf("%w: %w", errRejected, err)
	}
	h := blob.Header()
	if cur := s.svc.View(); cur != nil && h.Generation < cur.Generation {
		s.log.WarnContext(ctx, "snapshot blob of an older generation rejected",
			slog.Uint64("blob_generation", h.Generation), slog.Uint64("serving_generation", cur.Generation))
		return false, fmt.Errorf("%w: generation %d is older than the serving %d", errRejected, h.Generation, cur.Generation)
	}
	v := &View{Generation: h.Generation, CreatedAt: h.CreatedAt, Counts: h.Counts, Tenants: len(blob.Tenants()), index: blobIndex{blob}}
	s.svc.setView(v)
	s.etag = b.ETag
	if s.OnLoad != nil {
		s.OnLoad(v)
	}
	if s.metrics != nil {
		s.metrics.generation.Set(float64(v.Generation))
		s.metrics.createdAt.Set(float64(v.CreatedAt.UnixNano()) / 1e9)
		s.metrics.tables.Set(float64(v.Counts.Tables))
	}
	s.log.InfoContext(ctx, "snapshot loaded", slog.Uint64("generation", v.Generation), slog.Int("tables", v.Counts.Tables),
		slog.Int("schema_unavailable", v.Counts.SchemaUnavailable), slog.Int("blob_bytes", len(b.Data)))
	return true, nil
}

// Run polls every interval until ctx ends. Errors are logged and kept in
// Status; the serving view stays.
func (s *Source) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Poll(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "snapshot poll", slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
