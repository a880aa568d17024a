package discovery

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// A degraded tenant is one whose segment the serving manifest names but
// that did not load: its bytes do not match the address the manifest gives
// (damaged), the store has no object under it (missing), or reading it
// failed (unreachable). The manifest serves every other tenant; a degraded
// tenant keeps the last good state this task held of it, or, when it held
// none (a new task, or a tenant new in the manifest), its requests get
// UNAVAILABLE naming the state. Its segment is fetched again with backoff
// (Source.SegmentRetryMin to SegmentRetryMax) while the manifest names the
// same address; a manifest naming another address for it fetches that at
// once. Refresh repairs the stored segment (package refresh).

// Degraded states (DegradedTenant.State) and what a degraded tenant serves
// (DegradedTenant.Serving).
const (
	SegmentDamaged     = "damaged"
	SegmentMissing     = "missing"
	SegmentUnreachable = "unreachable"

	ServingLastGood    = "last_good"
	ServingUnavailable = "unavailable"
)

// Defaults of Source.SegmentRetryMin and SegmentRetryMax: a failed segment
// is fetched again after 2 s, then twice as long after each failure, at
// most a minute apart: one GET a minute per degraded tenant and task,
// against 30 at the default poll interval.
const (
	DefaultSegmentRetryMin = 2 * time.Second
	DefaultSegmentRetryMax = time.Minute
)

// DegradedTenant is a tenant whose segment failed to load, as /status
// reports it.
type DegradedTenant struct {
	Tenant string `json:"tenant"`
	// State is damaged, missing or unreachable (the last attempt's).
	State string `json:"state"`
	// Segment is the address the manifest names (hex), and Generation the
	// manifest's generation of the tenant's segment.
	Segment    string `json:"segment"`
	Generation uint64 `json:"generation"`
	// Serving is last_good when the tenant's last good state serves (of
	// ServingGeneration), unavailable when its requests get UNAVAILABLE.
	Serving           string `json:"serving"`
	ServingGeneration uint64 `json:"serving_generation,omitempty"`
	// Error is the last attempt's error.
	Error string `json:"error"`
	// Since is the first failed attempt at this address; Attempts how many
	// failed; NextAttempt when the segment is fetched again.
	Since       time.Time `json:"since"`
	Attempts    int       `json:"attempts"`
	NextAttempt time.Time `json:"next_attempt"`
}

// segmentFailure is a tenant's failed segment: what the Source remembers
// between polls to retry it with backoff.
type segmentFailure struct {
	entry    snapshot.Entry // the manifest's entry (the address that failed)
	state    string
	err      error
	since    time.Time
	attempts int
	next     time.Time
}

// failed records an attempt to load e that failed with err at now, after
// the failure before (nil: the first at this address).
func failed(before *segmentFailure, e snapshot.Entry, err error, now time.Time, minWait, maxWait time.Duration) *segmentFailure {
	f := &segmentFailure{entry: e, since: now}
	if before != nil && before.entry.Address == e.Address {
		f.since, f.attempts = before.since, before.attempts
	}
	f.attempts++
	f.state, f.err = segmentState(err), err
	f.next = now.Add(backoff(f.attempts, minWait, maxWait))
	return f
}

// backoff is the wait after the nth failed attempt: minWait doubled for
// each failure before, at most maxWait.
func backoff(n int, minWait, maxWait time.Duration) time.Duration {
	d := minWait
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

// segmentState names why a segment failed to load.
func segmentState(err error) string {
	switch {
	case errors.Is(err, snapshot.ErrCorrupt):
		return SegmentDamaged
	case errors.Is(err, blobstore.ErrNotFound):
		return SegmentMissing
	}
	return SegmentUnreachable
}

// degradedTenant is what a View holds of a degraded tenant: enough to
// answer its requests.
type degradedTenant struct {
	state      string
	generation uint64
	lastGood   bool
}

// unavailable returns the UNAVAILABLE error of a degraded tenant that has
// no last good state in v, or nil. The message names the tenant's state
// and says what repairs it; it never names the store's location.
func (v *View) unavailable(tenant string) error {
	x, ok := v.index.(blobIndex)
	if !ok {
		return nil
	}
	d, ok := x.degraded[tenant]
	if !ok || d.lastGood {
		return nil
	}
	what := map[string]string{
		SegmentDamaged:     "is damaged (its bytes do not match its content address)",
		SegmentMissing:     "is missing from the snapshot store",
		SegmentUnreachable: "could not be read from the snapshot store",
	}[d.state]
	return status.Errorf(codes.Unavailable,
		"catalog %q is degraded: its snapshot segment of generation %d %s; this server fetches it again with backoff and the next refresh rewrites it; retry later",
		tenant, d.generation, what)
}

// degradedList is the tenants of failures as /status lists them, sorted by
// tenant; lastGood gives the generation of a tenant's last good state.
func degradedList(failures map[string]*segmentFailure, lastGood map[string]*snapshot.Reader) []DegradedTenant {
	out := make([]DegradedTenant, 0, len(failures))
	for tenant, f := range failures {
		d := DegradedTenant{Tenant: tenant, State: f.state, Segment: hex.EncodeToString(f.entry.Address[:]), Generation: f.entry.Generation,
			Serving: ServingUnavailable, Since: f.since, Attempts: f.attempts, NextAttempt: f.next}
		if f.err != nil {
			d.Error = f.err.Error()
		}
		if r, ok := lastGood[tenant]; ok {
			e, _ := r.Entry(tenant)
			d.Serving, d.ServingGeneration = ServingLastGood, e.Generation
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b DegradedTenant) int { return cmp.Compare(a.Tenant, b.Tenant) })
	return out
}

// lastGoodOf is tenant's state in r (a reader with its segment attached)
// on its own: a one-tenant reader, so that it keeps that segment alone
// alive, not r's others.
func lastGoodOf(r *snapshot.Reader, tenant string) (*snapshot.Reader, error) {
	stored, err := r.Stored(tenant)
	if err != nil {
		return nil, err
	}
	h := r.Header()
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: h.Generation, CreatedAt: h.CreatedAt})
	if err != nil {
		return nil, err
	}
	if err := w.CopyTenant(r, tenant); err != nil {
		return nil, err
	}
	written, err := w.Finish()
	if err != nil {
		return nil, err
	}
	one, err := snapshot.Open(written.Manifest, snapshot.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	if err := one.Attach(tenant, stored); err != nil {
		return nil, fmt.Errorf("discovery: keep the last good state of %q: %w", tenant, err)
	}
	return one, nil
}
