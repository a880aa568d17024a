package vending

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// STS's limits on an AssumeRole session's duration, and lake's default. The
// role's own MaxSessionDuration (1 h unless raised) also bounds it; STS
// refuses a longer request.
const (
	MinDuration     = 15 * time.Minute
	MaxDuration     = 12 * time.Hour
	DefaultDuration = 15 * time.Minute
)

// DefaultMaxEntries is the default bound on cached credentials.
const DefaultMaxEntries = 1024

// assumeTimeout bounds one AssumeRole call. The call runs apart from the
// context of the caller that started it, since other callers wait for it too.
const assumeTimeout = 30 * time.Second

// ErrOptions is returned by New for invalid Options.
var ErrOptions = errors.New("vending: invalid options")

// AssumeInput is what Vendor asks of STS AssumeRole.
type AssumeInput struct {
	RoleARN     string        // the data-reader role
	SessionName string        // RoleSessionName, from SessionName
	Policy      []byte        // the inline session policy, from SessionPolicy
	Tags        []Tag         // session tags, from SessionTags and LocationTags
	Duration    time.Duration // DurationSeconds
}

// Credentials are temporary AWS credentials as AssumeRole returns them.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Expiration      time.Time
	// PackedPolicySize is the percentage of STS's packed limit that the
	// session policy and tags used, as AssumeRole reports it; 0 if unknown.
	PackedPolicySize int
}

// assumer is the one STS call Vendor makes, owned here so that an STS
// client (aws-sdk-go-v2's sts.Client behind an adapter) or a test double can
// serve it. AssumeRole returns the credentials or an error (never both
// empty); it must be safe for concurrent use. The input's slices are not
// modified and not kept.
type assumer interface {
	AssumeRole(ctx context.Context, in AssumeInput) (Credentials, error)
}

// Vend is one vend of credentials, as told to an Observer.
type Vend struct {
	Who        string    // the caller lake authenticated
	Tenant     string    // the table's tenant
	Namespace  string    // the table's namespace
	Table      string    // the table's name
	Location   Location  // the prefix the credentials read
	Metadata   Location  // the metadata prefix they read too; zero for none
	Expiration time.Time // when the credentials expire
	Cached     bool      // served from the cache, without an AssumeRole call
}

// Observer records vends (a log line, an audit event). Vended is called
// once for each successful Vend, cached or not, after the credentials are
// known and before Vend returns; it must be safe for concurrent use and
// should not block.
type Observer interface {
	Vended(ctx context.Context, v Vend)
}

// Options configure a Vendor.
type Options struct {
	// RoleARN is the data-reader role to assume. Required.
	RoleARN string
	// Duration of the credentials, within MinDuration and MaxDuration;
	// 0 means DefaultDuration.
	Duration time.Duration
	// MaxEntries bounds the cached credentials (least recently used go
	// first); 0 means DefaultMaxEntries.
	MaxEntries int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Observer, if not nil, is told of every vend.
	Observer Observer
}

// Request asks for credentials to read one table's files.
type Request struct {
	Who       string     // the authenticated caller, for the record
	Tenant    string     // the table's tenant
	Namespace string     // the table's namespace
	Table     string     // the table's name
	Location  string     // the table's location as registered
	Allowed   []Location // the prefixes an operator allowed for Tenant
	// Metadata is the table's Iceberg metadata prefix in lake's metadata
	// store, "s3://bucket/tables/<table-uuid>/metadata/"
	// (ParseMetadataLocation's shape), when lake has synced the table's
	// current registration; "" for none. Lake wrote it for that table, so
	// neither Allowed nor the Guard's own buckets govern it; any other
	// shape is refused.
	Metadata string
}

// Vended is the answer to a Request: the locations the credentials read
// and the credentials.
type Vended struct {
	Location    Location
	Metadata    Location // the zero Location when the Request had none
	Credentials Credentials
}

// Vendor vends table-scoped credentials: it checks a request with its Guard,
// then assumes the data-reader role with the table's session policy, name and
// tags. Credentials are cached per (tenant, namespace, table, location,
// metadata location) until
// refreshMargin before they expire — 2 min, or a tenth of the duration when
// that is longer (6 min for 1 h, 72 min for 12 h) — so a caller always gets
// at least that much time; the cache holds at most MaxEntries, least recently
// used evicted first. Callers asking for the same key while it is being
// assumed share one AssumeRole call. The cache holds secrets and is kept
// apart from lake's cache of derived state. A Vendor is safe for concurrent
// use.
type Vendor struct {
	assumer  assumer
	guard    *Guard
	role     string
	duration time.Duration
	margin   time.Duration
	max      int
	now      func() time.Time
	observer Observer
	flights  singleflight.Group
	onWait   func() // test hook: called before waiting on a flight

	mu      sync.Mutex
	lru     *list.List // of *entry, most recently used first
	entries map[string]*list.Element
}

type entry struct {
	key   string
	creds Credentials
}

// New returns a Vendor assuming roles through a and checking locations with g.
func New(a assumer, g *Guard, o Options) (*Vendor, error) {
	if a == nil || g == nil {
		return nil, fmt.Errorf("%w: an assumer and a guard are required", ErrOptions)
	}
	if o.RoleARN == "" {
		return nil, fmt.Errorf("%w: RoleARN is required", ErrOptions)
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Duration < MinDuration || o.Duration > MaxDuration {
		return nil, fmt.Errorf("%w: duration %v is outside STS's %v to %v", ErrOptions, o.Duration, MinDuration, MaxDuration)
	}
	if o.MaxEntries < 0 {
		return nil, fmt.Errorf("%w: MaxEntries %d is negative", ErrOptions, o.MaxEntries)
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Vendor{
		assumer:  a,
		guard:    g,
		role:     o.RoleARN,
		duration: o.Duration,
		margin:   refreshMargin(o.Duration),
		max:      o.MaxEntries,
		now:      o.Now,
		observer: o.Observer,
		lru:      list.New(),
		entries:  make(map[string]*list.Element),
	}, nil
}

// refreshMargin is how long before expiry cached credentials stop being
// handed out: 2 min, or a tenth of the duration when that is longer.
func refreshMargin(d time.Duration) time.Duration {
	return max(2*time.Minute, d/10)
}

// Vend returns credentials that read r's table location, and its metadata
// prefix when r.Metadata is set, and nothing else. It returns a *GuardError
// when the location is not vendable for r.Tenant and a *LocationError
// (ErrMetadataShape or ParseLocation's reason) when r.Metadata is not a
// table's metadata prefix (both without calling AssumeRole), an *STSError
// when STS refuses (errors.Is ErrPolicyTooLarge, ErrAccessDenied) and any
// other assumer's error wrapped; failures are not cached.
func (v *Vendor) Vend(ctx context.Context, r Request) (Vended, error) {
	loc, err := v.guard.Check(r.Tenant, r.Allowed, r.Location)
	if err != nil {
		return Vended{}, err
	}
	var meta Location
	if r.Metadata != "" {
		if meta, err = ParseMetadataLocation(r.Metadata); err != nil {
			return Vended{}, err
		}
	}
	key := r.Tenant + "\x00" + r.Namespace + "\x00" + r.Table + "\x00" + loc.String()
	if meta != (Location{}) {
		key += "\x00" + meta.String()
	}
	creds, cached := v.lookup(key)
	if !cached {
		ch := v.flights.DoChan(key, func() (any, error) { return v.assume(ctx, key, r, loc, meta) })
		if v.onWait != nil {
			v.onWait()
		}
		select {
		case res := <-ch:
			if res.Err != nil {
				return Vended{}, res.Err
			}
			creds = res.Val.(Credentials)
		case <-ctx.Done():
			return Vended{}, ctx.Err()
		}
	}
	if v.observer != nil {
		v.observer.Vended(ctx, Vend{
			Who: r.Who, Tenant: r.Tenant, Namespace: r.Namespace, Table: r.Table,
			Location: loc, Metadata: meta, Expiration: creds.Expiration, Cached: cached,
		})
	}
	return Vended{Location: loc, Metadata: meta, Credentials: creds}, nil
}

// assume runs one AssumeRole for key and caches its answer. It runs once per
// flight, on behalf of every caller waiting for it, so it does not stop when
// the first caller's context is cancelled.
func (v *Vendor) assume(ctx context.Context, key string, r Request, loc, meta Location) (any, error) {
	if creds, ok := v.lookup(key); ok { // a flight that just ended stored it
		return creds, nil
	}
	policy, err := SessionPolicyWithMetadata(loc, meta)
	if err != nil {
		return nil, err
	}
	tags := append(SessionTags(r.Tenant, r.Namespace, r.Table), LocationTags(loc)...)
	if meta != (Location{}) {
		tags = append(tags, MetadataTags(meta)...)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), assumeTimeout)
	defer cancel()
	creds, err := v.assumer.AssumeRole(ctx, AssumeInput{
		RoleARN:     v.role,
		SessionName: SessionName(r.Tenant, r.Namespace, r.Table),
		Policy:      policy,
		Tags:        tags,
		Duration:    v.duration,
	})
	if se := (*STSError)(nil); errors.As(err, &se) {
		return nil, se // names the role and the session, and says "vending:" once
	}
	if err != nil {
		return nil, fmt.Errorf("vending: assume role for %s/%s/%s at %s: %w", r.Tenant, r.Namespace, r.Table, loc, err)
	}
	v.store(key, creds)
	return creds, nil
}

// OwnBucket reports whether bucket is one of lake's own, which v never
// vends for.
func (v *Vendor) OwnBucket(bucket string) bool { return v.guard.own[bucket] }

// fresh reports whether c may still be handed out.
func (v *Vendor) fresh(c Credentials) bool {
	return v.now().Before(c.Expiration.Add(-v.margin))
}

func (v *Vendor) lookup(key string) (Credentials, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	el, ok := v.entries[key]
	if !ok {
		return Credentials{}, false
	}
	e := el.Value.(*entry)
	if !v.fresh(e.creds) {
		v.lru.Remove(el)
		delete(v.entries, key)
		return Credentials{}, false
	}
	v.lru.MoveToFront(el)
	return e.creds, true
}

func (v *Vendor) store(key string, c Credentials) {
	if !v.fresh(c) {
		return // already within the margin: hand out once, do not cache
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if el, ok := v.entries[key]; ok {
		el.Value.(*entry).creds = c
		v.lru.MoveToFront(el)
		return
	}
	v.entries[key] = v.lru.PushFront(&entry{key: key, creds: c})
	for v.lru.Len() > v.max {
		oldest := v.lru.Back()
		v.lru.Remove(oldest)
		delete(v.entries, oldest.Value.(*entry).key)
	}
}

// Len returns the number of cached credentials, fresh or not yet evicted.
func (v *Vendor) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lru.Len()
}
