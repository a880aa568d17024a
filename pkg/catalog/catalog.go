package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/schemadiff"
)

// Errors a caller tells apart with errors.Is (see also ErrInvalidName,
// ErrInvalidSchema, ErrInvalidRegistration and ErrTooLarge). Like every
// kind below they carry no package prefix: they are said once, inside an
// error that has it ("catalog: get acme/sales/orders: table not found").
var (
	// ErrNotFound: no table is registered under the reference.
	ErrNotFound = errors.New("table not found")
	// ErrExists: the table is registered with a different location, type,
	// schema, description or properties; change it with Update.
	ErrExists = errors.New("table already registered differently")
	// ErrConflict: the registration changed between read and write, or does
	// not have the version the caller expected.
	ErrConflict = errors.New("registration changed concurrently")
	// ErrIncompatibleSchema: an update's schema breaks the table's
	// compatibility mode; Error.Breaches lists the first
	// schemadiff.MaxChanges breaking changes, Error.BreachCount counts them.
	ErrIncompatibleSchema = errors.New("incompatible schema")
	// ErrProtected: the table is protected, so it cannot be dropped until
	// an update unsets the flag.
	ErrProtected = errors.New("table is protected")
)

// Error is every error of this package about a table, a tenant or a
// value (Names have their own, *NameError): the operation, what it was
// about, the kind and what the kind does not say, each said once:
//
//	catalog: register acme/sales/orders: invalid schema: no fields
//	catalog: get acme/sales/orders: table not found
//	catalog: invalid schema: empty IPC bytes
//
// Kind is one of this package's sentinels (ErrNotFound, ErrInvalidSchema,
// …), none of which carries a prefix, or the error of a layer below (a
// metastore failure), which says its own package. errors.Is(err, kind)
// holds through Unwrap. A caller that builds its own message (the
// registration API) reads the parts, never Error's text.
type Error struct {
	// Op is the operation: register, update, get, drop, usage,
	// recompute usage; empty for a check that is not one (DecodeSchema).
	Op string
	// Ref is what the operation was about: a table (tenant/namespace/table,
	// TableRef.String), a tenant or a key; empty for none.
	Ref string
	// Kind says what went wrong: a sentinel of this package, or an error of
	// the layer below. Never nil.
	Kind error
	// Detail is what Kind does not say (which field, which limit, which
	// version), or "".
	Detail string
	// Breaches are the first schemadiff.MaxChanges changes the table's
	// compatibility mode refuses, in schemadiff.Diff's order, and
	// BreachCount how many it refuses in all: set for
	// ErrIncompatibleSchema only.
	Breaches    []schemadiff.Breach
	BreachCount int
	// SideWrites are the writes that went with a stored mutation and
	// failed, in the order they ran: set for ErrSideWrite and
	// ErrUnsignalled (the mutation is stored; see ErrSideWrite).
	SideWrites []SideWrite
}

// Error says "catalog: ", then Op and Ref, then the kind, then the detail,
// leaving out the parts that are empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("catalog: ")
	switch {
	case e.Op != "" && e.Ref != "":
		b.WriteString(e.Op + " " + e.Ref + ": ")
	case e.Op != "":
		b.WriteString(e.Op + ": ")
	case e.Ref != "":
		b.WriteString(e.Ref + ": ")
	}
	b.WriteString(e.Kind.Error())
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }

// Is reports ErrSideWrite for an error that lists side writes (one of
// kind ErrUnsignalled too): whatever else failed, the mutation is stored.
func (e *Error) Is(target error) bool { return target == ErrSideWrite && len(e.SideWrites) > 0 }

// during says err happened during op on ref: an *Error without an
// operation gets them (a validation error of NewRegistration becomes the
// register's), any other error not already a *Error or *NameError becomes
// the Kind of a new one. nil stays nil.
func during(op, ref string, err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *NameError:
		return e
	case *Error:
		if e.Op != "" {
			return e
		}
		return &Error{Op: op, Ref: ref, Kind: e.Kind, Detail: e.Detail, Breaches: e.Breaches, BreachCount: e.BreachCount, SideWrites: e.SideWrites}
	}
	return &Error{Op: op, Ref: ref, Kind: err}
}

// MaxRegistrationBytes bounds a stored registration: DynamoDB's 400 KB item
// less the key and attribute names.
const MaxRegistrationBytes = 390 * 1000

// Catalog registers, updates, reads and drops tables in a metastore.Store.
// It is safe for concurrent use.
type Catalog struct {
	store metastore.Store
	now   func() time.Time
	quota Quota
	mode  schemadiff.Mode
	// retention is Options.TombstoneRetention (negative: none kept).
	retention time.Duration
	// history is Options.HistoryVersions (negative: none kept), historyAge
	// Options.HistoryMaxAge (0: no age bound).
	history    int
	historyAge time.Duration
	stats      commitStats
}

// Options configures New.
type Options struct {
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Quota bounds each tenant's tables and registration bytes (zero
	// fields take the defaults; see quota.go).
	Quota Quota
	// DefaultCompatibility is the compatibility mode of a table registered
	// without one (the deployment's default; "" is schemadiff.None). A
	// registration that says none explicitly keeps none.
	DefaultCompatibility schemadiff.Mode
	// TombstoneRetention is how long a dropped table can be restored
	// (Undrop): a drop keeps a tombstone of the registration until then.
	// Zero is DefaultTombstoneRetention; negative keeps none (a drop is
	// final).
	TombstoneRetention time.Duration
	// HistoryVersions is how many versions of each registration are kept
	// (History): zero is DefaultHistoryVersions, negative keeps none.
	HistoryVersions int
	// HistoryMaxAge, when more than zero, also bounds the versions kept by
	// age: one made longer ago is no longer listed, expires by DynamoDB's
	// TTL and is deleted by local mode's sweep. Zero: no age bound (the
	// default).
	HistoryMaxAge time.Duration
}

// DefaultTombstoneRetention is how long a drop can be undone by default.
const DefaultTombstoneRetention = 7 * 24 * time.Hour

// New returns a Catalog over store.
func New(store metastore.Store, opts Options) *Catalog {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TombstoneRetention == 0 {
		opts.TombstoneRetention = DefaultTombstoneRetention
	}
	if opts.HistoryVersions == 0 {
		opts.HistoryVersions = DefaultHistoryVersions
	}
	return &Catalog{store: store, now: opts.Now, quota: opts.Quota.withDefaults(), mode: opts.DefaultCompatibility,
		retention: opts.TombstoneRetention, history: opts.HistoryVersions, historyAge: opts.HistoryMaxAge}
}

type callerKey struct{}

// WithCaller returns ctx carrying the identity on whose behalf the writes
// made with it act (the IAM principal API Gateway authenticated, a token's
// subject): the catalog records it as the registration's UpdatedBy and a
// tombstone's DroppedBy. The tenant never comes from it.
func WithCaller(ctx context.Context, by string) context.Context {
	return context.WithValue(ctx, callerKey{}, by)
}

// callerOf is the identity WithCaller put in ctx ("" when none).
func callerOf(ctx context.Context) string {
	by, _ := ctx.Value(callerKey{}).(string)
	return by
}

func encodeRegistration(r Registration) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxRegistrationBytes {
		return nil, &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("registration of %d bytes, limit %d", len(b), MaxRegistrationBytes)}
	}
	return b, nil
}

// Register creates the table ref with spec. It validates the names and the
// spec and encodes the schema (checked by decoding back) before anything is
// stored. A retry of an identical registration returns the stored one with
// created false; a different one already stored is ErrExists. When the
// registration is stored but a write that goes with it fails (its version
// record, the usage, the change counter), Register returns the
// registration, created true, with an error of kind ErrSideWrite listing
// them (ErrUnsignalled when the change counter is one): the caller answers
// it as stored. So do Update, Drop and Undrop.
func (c *Catalog) Register(ctx context.Context, ref TableRef, spec TableSpec) (Registration, bool, error) {
	key, err := ref.Key()
	if err != nil {
		return Registration{}, false, err
	}
	reg, created, err := c.register(ctx, ref, key, spec)
	switch {
	case committed(err):
		return reg, created, during("register", ref.String(), err)
	case err != nil:
		return Registration{}, false, during("register", ref.String(), err)
	}
	return reg, created, nil
}

func (c *Catalog) register(ctx context.Context, ref TableRef, key string, spec TableSpec) (Registration, bool, error) {
	if spec.Compatibility == "" {
		spec.Compatibility = c.mode
	}
	reg, err := NewRegistration(spec, c.now())
	if err != nil {
		return Registration{}, false, err
	}
	reg = reg.withChange(OpCreate, callerOf(ctx))
	val, err := encodeRegistration(reg)
	if err != nil {
		return Registration{}, false, err
	}
	// The registration and its version record count alike.
	p := &plan{tenant: ref.Tenant, refusable: true, signal: true,
		primary: write{part: PartRegistration, op: opCreate, key: key, val: val, usage: usage{1, registrationBytes(key, val)}}}
	c.planVersion(ctx, p, ref, reg, val)
	err = c.commit(ctx, p)
	switch {
	case committed(err):
		return reg, true, err
	case errors.Is(err, ErrQuotaExceeded):
		// An identical retry adds nothing: answer it as without quotas.
		if cur, _, gerr := c.get(ctx, key); gerr == nil && cur.sameContent(reg) {
			return cur, false, nil
		}
		return Registration{}, false, err
	case !errors.Is(err, metastore.ErrExists):
		return Registration{}, false, err
	}
	cur, _, err := c.get(ctx, key)
	if err != nil {
		return Registration{}, false, err
	}
	if cur.sameContent(reg) {
		return cur, false, nil
	}
	return Registration{}, false, &Error{Kind: ErrExists, Detail: fmt.Sprintf("at version %d", cur.version)}
}

// UpdateOptions qualify Update.
type UpdateOptions struct {
	// IfVersion, when non-zero, makes the update apply only to a registration
	// at that version with creation id IfCreationID (empty: a registration
	// written before creation ids); anything else is ErrConflict. A table
	// dropped and registered again has another creation id, so a stale
	// precondition never matches it.
	IfVersion    int64
	IfCreationID string
	// IfNoSchema makes the update apply only to a registration that carries
	// no schema (a backfill); one that has a schema is ErrConflict.
	IfNoSchema bool
	// ClearDescription removes the description when spec gives none (an
	// empty spec.Description otherwise keeps the current one).
	ClearDescription bool
}

// Update replaces the table's schema (and its location, type and
// description where spec gives them: empty keeps the current ones, and
// opts.ClearDescription removes the description), bumping the version.
// Properties are replaced as a whole by a non-nil spec.Properties (an empty
// map removes them all); nil keeps the current ones. An update
// that changes nothing returns the stored registration unchanged. The write
// is a compare-and-swap on the bytes read, so a registration that changed
// meanwhile is never overwritten: without IfVersion the update is re-applied
// to the newer registration (up to a few times), with it ErrConflict.
func (c *Catalog) Update(ctx context.Context, ref TableRef, spec TableSpec, opts UpdateOptions) (Registration, error) {
	key, err := ref.Key()
	if err != nil {
		return Registration{}, err
	}
	reg, err := c.update(ctx, ref, key, spec, opts)
	switch {
	case committed(err):
		return reg, during("update", ref.String(), err)
	case err != nil:
		return Registration{}, during("update", ref.String(), err)
	}
	return reg, nil
}

func (c *Catalog) update(ctx context.Context, ref TableRef, key string, spec TableSpec, opts UpdateOptions) (Registration, error) {
	const attempts = 5
	for range attempts {
		cur, raw, err := c.get(ctx, key)
		if err != nil {
			return Registration{}, err
		}
		if err := checkPrecondition(cur, opts.IfVersion, opts.IfCreationID); err != nil {
			return Registration{}, err
		}
		if opts.IfNoSchema && cur.HasSchema() {
			return Registration{}, &Error{Kind: ErrConflict, Detail: "it has a schema now"}
		}
		want := spec
		if want.Location == "" {
			want.Location = cur.location
		}
		if want.TableType == "" {
			want.TableType = cur.tableType
		}
		if want.Description == "" && !opts.ClearDescription {
			want.Description = cur.description
		}
		if want.Properties == nil {
			want.Properties = cur.properties
		}
		if want.Compatibility == "" {
			want.Compatibility = cur.Compatibility()
		}
		if want.Protected == nil {
			p := cur.protected
			want.Protected = &p
		}
		next, err := NewRegistration(want, c.now())
		if err != nil {
			return Registration{}, err
		}
		if err := checkCompatible(cur, next, want.Schema); err != nil {
			return Registration{}, err
		}
		if next.sameContent(cur) {
			return cur, nil
		}
		next.createdAt = cur.createdAt
		next.creationID = cur.creationID
		next.version = cur.version + 1
		next = next.withFieldIDsAfter(cur)
		next = next.withChange(OpUpdate, callerOf(ctx))
		val, err := encodeRegistration(next)
		if err != nil {
			return Registration{}, err
		}
		// What it grows by (its version record too) is reserved; what it
		// shrinks by, and the version record it moves out of the kept
		// count, given back.
		p := &plan{tenant: ref.Tenant, refusable: true, signal: true,
			primary: write{part: PartRegistration, op: opSwap, key: key, old: raw, val: val,
				usage: usage{0, registrationBytes(key, val) - registrationBytes(key, raw)}}}
		c.planVersion(ctx, p, ref, next, val)
		err = c.commit(ctx, p)
		switch {
		case committed(err):
			return next, err
		case errors.Is(err, metastore.ErrNotFound):
			return Registration{}, ErrNotFound
		case errors.Is(err, metastore.ErrConflict):
			if opts.IfVersion != 0 {
				return Registration{}, &Error{Kind: ErrConflict, Detail: fmt.Sprintf("changed while being updated from version %d", cur.version)}
			}
			continue
		default:
			return Registration{}, err
		}
	}
	return Registration{}, &Error{Kind: ErrConflict, Detail: fmt.Sprintf("still changing after %d attempts", attempts)}
}

// detailBreaches is how many breaking changes an ErrIncompatibleSchema's
// Detail names.
const detailBreaches = 10

// checkCompatible refuses next when its schema breaks the compatibility
// mode it carries (the mode the update sets, or the table's own): an
// update may set the mode to none and change the schema at once, as an
// explicit choice. A current registration without a schema, or with one
// that no longer decodes, has nothing to be compatible with.
func checkCompatible(cur, next Registration, schema *arrow.Schema) error {
	mode := next.Compatibility()
	if mode == schemadiff.None || !cur.HasSchema() || bytes.Equal(cur.schemaIPC, next.schemaIPC) {
		return nil
	}
	old, err := cur.Schema()
	if err != nil {
		return nil
	}
	breaches, total := schemadiff.Check(mode, old, schema, schemadiff.MaxChanges)
	if total == 0 {
		return nil
	}
	// The detail names the first few; Breaches holds more.
	named := breaches[:min(len(breaches), detailBreaches)]
	parts := make([]string, len(named), len(named)+1)
	for i, b := range named {
		parts[i] = b.String()
	}
	if more := total - len(named); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return &Error{Kind: ErrIncompatibleSchema, Breaches: breaches, BreachCount: total,
		Detail: schemadiff.Breaking(total, mode) + ": " + strings.Join(parts, "; ")}
}

// Get returns the table's registration with a strongly consistent read.
func (c *Catalog) Get(ctx context.Context, ref TableRef) (Registration, error) {
	key, err := ref.Key()
	if err != nil {
		return Registration{}, err
	}
	r, _, err := c.get(ctx, key)
	if err != nil {
		return Registration{}, during("get", ref.String(), err)
	}
	return r, nil
}

// get reads and decodes key; its errors are wrapped by the caller's Error.
func (c *Catalog) get(ctx context.Context, key string) (Registration, []byte, error) {
	raw, err := c.store.Get(ctx, key)
	if errors.Is(err, metastore.ErrNotFound) {
		return Registration{}, nil, ErrNotFound
	}
	if err != nil {
		return Registration{}, nil, err
	}
	r, err := DecodeRegistration(raw)
	if err != nil {
		return Registration{}, nil, err
	}
	return r, raw, nil
}

// checkPrecondition is ErrConflict unless version is 0 (no precondition)
// or cur is at version with creation id creationID.
func checkPrecondition(cur Registration, version int64, creationID string) error {
	switch {
	case version == 0:
		return nil
	case cur.creationID != creationID:
		return &Error{Kind: ErrConflict, Detail: "that state is of another registration of this table (dropped and registered again since)"}
	case cur.version != version:
		return &Error{Kind: ErrConflict, Detail: fmt.Sprintf("at version %d, expected %d", cur.version, version)}
	}
	return nil
}

// DropOptions qualify DropIf.
type DropOptions struct {
	// IfVersion and IfCreationID, when IfVersion is non-zero, make the drop
	// apply only to the registration in that state (see UpdateOptions).
	IfVersion    int64
	IfCreationID string
}

// DropIf removes the table's registration only when it is in the state
// opts names, with a delete conditioned on the bytes read: ErrNotFound when
// there is none, ErrConflict when it is in another state or changed
// meanwhile.
func (c *Catalog) DropIf(ctx context.Context, ref TableRef, opts DropOptions) error {
	key, err := ref.Key()
	if err != nil {
		return err
	}
	fail := func(err error) error { return during("drop", ref.String(), err) }
	for range casAttempts {
		cur, raw, err := c.get(ctx, key)
		if err != nil {
			return fail(err)
		}
		if err := checkPrecondition(cur, opts.IfVersion, opts.IfCreationID); err != nil {
			return fail(err)
		}
		if cur.protected {
			return fail(&Error{Kind: ErrProtected, Detail: "unset the flag with an update first"})
		}
		// The drop is the registration's next state: the one before it, at
		// the next version, made by the caller now with OpDrop. The
		// tombstone keeps it, and so does the history.
		dropped := cur
		dropped.version++
		dropped.updatedAt = c.now().UTC()
		dropped = dropped.withChange(OpDrop, callerOf(ctx))
		// What the dropped registration took as stored is what its writes
		// reserved (undecodable ones are not dropped through here: get
		// fails). The tombstone and the drop's version record hold their
		// bytes until they are purged or undropped (counted whatever the
		// limit: a drop is never refused for them).
		p := &plan{tenant: ref.Tenant, signal: true,
			primary: write{part: PartRegistration, op: opDelete, key: key, old: raw, usage: usage{-1, -registrationBytes(key, raw)}}}
		tombKey, err := c.planTombstone(ctx, p, ref, dropped)
		if err != nil {
			return fail(err)
		}
		switch {
		case tombKey != "":
			if val, err := encodeRegistration(dropped); err == nil {
				c.planVersion(ctx, p, ref, dropped, val)
			}
		case dropped.creationID != "" && c.history >= 0:
			// No tombstone (retention off) leaves nothing that can reach
			// the registration's history: its records go with it.
			c.planHistoryDelete(ctx, p, ref, dropped.creationID, dropped.version-1)
		}
		// The table's Iceberg state goes with it; an undrop does not bring
		// it back (the next sync writes it again).
		p.sides = append(p.sides, icebergStateDelete(ref, dropped.creationID))
		err = c.commit(ctx, p)
		var before *beforeError
		switch {
		case committed(err):
			return fail(err)
		case errors.As(err, &before) && lostRace(err):
			continue // the tombstone moved meanwhile: read again
		case errors.As(err, &before):
			return fail(before.err)
		case errors.Is(err, metastore.ErrNotFound):
			return fail(ErrNotFound)
		case errors.Is(err, metastore.ErrConflict):
			return fail(&Error{Kind: ErrConflict, Detail: "changed while being dropped"})
		}
		return fail(err)
	}
	return fail(&Error{Kind: ErrConflict, Detail: fmt.Sprintf("its tombstone still changing after %d attempts", casAttempts)})
}

// Drop removes the table's registration; ErrNotFound when there is none.
// It deletes the bytes it read (retrying when they change meanwhile), so
// the tenant's usage gets back exactly what the dropped registration held.
func (c *Catalog) Drop(ctx context.Context, ref TableRef) error {
	const attempts = 5
	for range attempts {
		err := c.DropIf(ctx, ref, DropOptions{})
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return &Error{Op: "drop", Ref: ref.String(), Kind: ErrConflict, Detail: fmt.Sprintf("still changing after %d attempts", attempts)}
}

// planTombstone adds to p, a drop of dropped (the registration about to
// be dropped, in its drop state), the write of its tombstone, before the
// primary: a drop that is stored can always be undone within retention.
// It returns the tombstone's key ("" when the catalog keeps none: with
// retention off, or for a registration written before creation ids, which
// a tombstone cannot name).
//
// The key may hold a tombstone already. One of an earlier state is left by
// an earlier drop of this registration whose undrop has happened (the
// registration is live: the drop just read it) and may be deleting it
// still: it is replaced with a compare-and-swap and its bytes given back,
// so exactly one of the two gives them back (that undrop's
// compare-and-delete then fails, and counts nothing). One of this state or
// a later one was written by a concurrent drop, and is left as it is.
//
// A tombstone this drop wrote is taken back when the registration changed
// before the delete (nothing was dropped); it stays when the delete found
// the registration gone (a concurrent drop of the same state took it and
// relies on this tombstone) or failed without saying whether it happened
// (a tombstone of a live table is harmless: Undrop refuses it, the next
// drop replaces it, the purge removes it).
func (c *Catalog) planTombstone(ctx context.Context, p *plan, ref TableRef, dropped Registration) (string, error) {
	if c.retention < 0 || dropped.creationID == "" {
		return "", nil
	}
	now := dropped.updatedAt
	d := Tombstone{Ref: ref, Registration: dropped, DroppedAt: now, DroppedBy: dropped.updatedBy, ExpiresAt: now.Add(c.retention)}
	key, err := d.Key()
	if err != nil {
		return "", err
	}
	val, err := EncodeTombstone(d)
	if err != nil {
		return "", err
	}
	w := write{part: PartTombstone, op: opCreate, key: key, val: val, expires: d.ExpiresAt, usage: usage{0, registrationBytes(key, val)}}
	old, err := c.store.Get(ctx, key)
	switch {
	case errors.Is(err, metastore.ErrNotFound):
	case err != nil:
		return "", err
	default:
		if prev, derr := DecodeTombstone(strings.TrimPrefix(key, TombstonePrefix), old); derr == nil && prev.Registration.version >= dropped.version {
			return key, nil
		}
		w.op, w.old, w.usage.bytes = opSwap, old, w.usage.bytes-registrationBytes(key, old)
	}
	p.before = append(p.before, w)
	p.sides = append(p.sides, c.indexAdd(d, key))
	p.undo = append(p.undo, write{part: PartTombstone, op: opDelete, key: key, old: val, usage: usage{0, -registrationBytes(key, val)}})
	p.undoOn = metastore.ErrConflict
	return key, nil
}

// Purged is what PurgeExpired removed.
type Purged struct {
	Tombstones, Versions int
	// Indexed is how many tombstones in retention it added to their
	// tenant's index of dropped tables, which lacked them.
	Indexed int
}

// PurgeExpired deletes the tombstones past retention and the version
// records of the registrations they kept: local mode's sweep (on DynamoDB
// the table's TTL deletes the tombstones). A tombstone is deleted only as
// it was read, so one written again meanwhile stays. With HistoryMaxAge it
// deletes the version records past it, and on a store whose entries
// expire by themselves the records nothing reaches any more (see
// purgeVersions). Each deletion is a mutation of its
// own; the side writes that fail are returned, joined, after the sweep.
// It also adds to each tenant's index of dropped tables (Dropped) the
// tombstones in retention it lacks: drops made before the index, or whose
// index write failed.
func (c *Catalog) PurgeExpired(ctx context.Context) (Purged, error) {
	var out Purged
	entries, err := c.store.ScanPrefix(ctx, TombstonePrefix)
	if err != nil {
		return out, fmt.Errorf("catalog: purge expired tombstones: %w", err)
	}
	var failed []error
	now := c.now()
	live := map[string][]Tombstone{} // by index item
	for _, e := range entries {
		d, err := DecodeTombstone(e.Key, e.Value)
		if err != nil {
			continue
		}
		if !d.Expired(now) {
			live[droppedIndexKey(d.Ref)] = append(live[droppedIndexKey(d.Ref)], d)
			continue
		}
		key := TombstonePrefix + e.Key
		p := &plan{tenant: d.Ref.Tenant,
			primary: write{part: PartTombstone, op: opDelete, key: key, old: e.Value, usage: usage{0, -registrationBytes(key, e.Value)}}}
		if cur, _, err := c.get(ctx, KeyPrefix+d.Ref.String()); err != nil || cur.creationID != d.Registration.creationID {
			// Not undropped after all (then its history is live): the
			// history goes with the tombstone.
			c.planHistoryDelete(ctx, p, d.Ref, d.Registration.creationID, d.Registration.version)
		}
		p.sides = append(p.sides, c.indexRemove(d.Ref, d.Registration.creationID, d.Registration.version))
		err = c.commit(ctx, p)
		if !committed(err) {
			continue // moved meanwhile
		}
		out.Tombstones++
		out.Versions += p.done
		if err != nil {
			failed = append(failed, during("purge", d.Ref.String(), err))
		}
	}
	indexed, ifailed := c.indexAllMissing(ctx, live)
	out.Indexed += indexed
	failed = append(failed, ifailed...)
	if _, expiring := c.store.(metastore.ExpiringPutter); expiring || c.historyAge > 0 {
		n, err := c.purgeVersions(ctx, now, expiring)
		out.Versions += n
		if err != nil {
			failed = append(failed, err)
		}
	}
	return out, errors.Join(failed...)
}

// Undrop restores the dropped table ref from its tombstone of creation id
// creationID: the registration as it was when dropped, with its creation
// id and the next version (Op OpUndrop, by the caller in ctx). ErrNotFound
// when there is no such tombstone in retention; ErrExists when the name
// has been registered again since the drop (nothing is changed; drop or
// rename that table first); ErrQuotaExceeded when the tenant has no room
// for it. The table's Iceberg state, which the drop deleted, is not
// restored: the next sync writes it again (the restored registration is
// at a new version, which no state of before was synced against).
func (c *Catalog) Undrop(ctx context.Context, ref TableRef, creationID string) (Registration, error) {
	fail := func(err error) (Registration, error) { return Registration{}, during("undrop", ref.String(), err) }
	key, err := ref.Key()
	if err != nil {
		return fail(err)
	}
	if creationID == "" || strings.Trim(creationID, "0123456789abcdef") != "" || len(creationID) > 64 {
		return fail(&Error{Kind: ErrInvalidRegistration, Detail: fmt.Sprintf("creation id %q: want the hex id lake dropped lists", creationID)})
	}
	tombKey := TombstonePrefix + ref.String() + "/" + creationID
	raw, err := c.store.Get(ctx, tombKey)
	if errors.Is(err, metastore.ErrNotFound) {
		return fail(&Error{Kind: ErrNotFound, Detail: "no dropped table of that name and creation id in retention"})
	}
	if err != nil {
		return fail(err)
	}
	d, err := DecodeTombstone(strings.TrimPrefix(tombKey, TombstonePrefix), raw)
	if err != nil {
		return fail(err)
	}
	if d.Expired(c.now()) {
		return fail(&Error{Kind: ErrNotFound, Detail: "its retention ended at " + d.ExpiresAt.Format(time.RFC3339)})
	}
	reg := d.Registration
	reg.version++
	reg.updatedAt = c.now().UTC()
	reg = reg.withChange(OpUndrop, callerOf(ctx))
	val, err := encodeRegistration(reg)
	if err != nil {
		return fail(err)
	}
	// The registration and its version record are reserved like a
	// register's. The history is the dropped registration's, kept as it
	// was: its records carry no expiry of the tombstone's (but those of a
	// drop made before the one commit path do: they get theirs back). The table is
	// restored whatever happens to the tombstone then. A drop of the
	// restored table may have replaced it already (and given its bytes
	// back); one that cannot be deleted stays, harmless: Undrop refuses it
	// while the table is registered, the next drop replaces it, the purge
	// removes it.
	p := &plan{tenant: ref.Tenant, refusable: true, signal: true,
		primary: write{part: PartRegistration, op: opCreate, key: key, val: val, usage: usage{1, registrationBytes(key, val)}}}
	c.planVersion(ctx, p, ref, reg, val)
	if d.expiringHistory {
		c.planLegacyExpiry(ctx, p, ref, d.Registration.creationID, d.Registration.version)
	}
	p.sides = append(p.sides, write{part: PartTombstone, op: opDelete, key: tombKey, old: raw, usage: usage{0, -registrationBytes(tombKey, raw)}, mayLose: true},
		c.indexRemove(ref, creationID, d.Registration.version))
	err = c.commit(ctx, p)
	switch {
	case committed(err):
		return reg, during("undrop", ref.String(), err)
	case errors.Is(err, metastore.ErrExists):
		return fail(&Error{Kind: ErrExists, Detail: "the name has been registered again since the drop; drop or rename that table first"})
	}
	return fail(err)
}
