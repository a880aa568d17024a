package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/icebergschema"
	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Iceberg returns the Iceberg REST front-end's Source over this service:
// every answer comes from the caller's prepared tenant in memory, as the
// Flight SQL answers do (the same cache, the same degraded-tenant rules,
// no metadata I/O), and credentials from Options.Door as lake.credentials
// vends them. The front-end (internal/icebergrest) owns the protocol; this
// is the core's side of it.
func (s *Service) Iceberg() icebergrest.Source { return icebergSource{s} }

var _ icebergrest.KeptSource = icebergSource{}

type icebergSource struct{ s *Service }

// state is the tenant's prepared state; before the first snapshot, and for
// a degraded tenant, an error wrapping icebergrest.ErrUnavailable.
func (src icebergSource) state(ctx context.Context, tenant string) (*tenantState, error) {
	ts, _, err := src.stateIn(ctx, tenant)
	return ts, err
}

// stateIn is state and the view it is from.
func (src icebergSource) stateIn(ctx context.Context, tenant string) (*tenantState, *View, error) {
	s := src.s
	v := s.view.Load()
	if v == nil {
		return nil, nil, fmt.Errorf("%w: the catalog snapshot is not loaded yet", icebergrest.ErrUnavailable)
	}
	if err := v.unavailable(tenant); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", icebergrest.ErrUnavailable, err)
	}
	ts, err := s.tenantState(ctx, v, tenant)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", icebergrest.ErrUnavailable, err)
	}
	return ts, v, nil
}

// icebergAnswer is a table's loadTable answer, kept in the cache
// (kindAnswer) for the same state of its tenant (its segment's address is
// in the key): the metadata built from its schema, or its synced metadata
// file. answer is icebergrest.LoadTableAnswer's, metadata a part of it;
// tableLocation and version are the row's (Go memory: the row's strings
// are the segment's, which the cache may release first).
type icebergAnswer struct {
	location      string
	metadata      []byte
	answer        []byte
	tableLocation string
	version       int64
}

// table is a as the Source answers it.
func (a icebergAnswer) table() icebergrest.Table {
	return icebergrest.Table{Location: a.tableLocation, Version: a.version, MetadataLocation: a.location, Metadata: a.metadata, Answer: a.answer}
}

// keep adds the answer of metadata md at loc for row i of ts to the cache
// under key and returns the Table it makes; when the answer cannot be
// encoded, t as it is, not kept.
func (src icebergSource) keep(key cacheKey, ts *tenantState, i int, loc string, md []byte, t icebergrest.Table) icebergrest.Table {
	answer, md, err := icebergrest.LoadTableAnswer(loc, md)
	if err != nil {
		return t
	}
	a := icebergAnswer{location: loc, metadata: md, answer: answer, tableLocation: strings.Clone(ts.cols.Location.Value(i)), version: ts.cols.Version.Value(i)}
	src.s.cache.add(key, a, int64(len(key.sub)+len(key.tenant)+len(loc)+len(answer)+len(a.tableLocation))+160)
	t.MetadataLocation, t.Metadata, t.Answer = loc, md, answer
	return t
}

// KeptTable answers a loadTable whose answer is kept for the tenant's
// state in the current view (icebergrest.KeptSource): one index lookup and
// one cache lookup, nothing prepared, built or waited for. A kept answer
// was made by Table for a row of the same segment (the key holds its
// address), so the table exists and its answer is what Table would give;
// a degraded tenant is never answered from it.
func (src icebergSource) KeptTable(tenant, namespace, name string) (icebergrest.Table, bool) {
	v := src.s.view.Load()
	if v == nil || v.unavailable(tenant) != nil {
		return icebergrest.Table{}, false
	}
	key, ok := answerKeyFor(v, tenant, icebergAnswerSub+namespace+"\x00"+name)
	if !ok {
		return icebergrest.Table{}, false
	}
	h, ok := src.s.cache.lookup(key)
	if !ok {
		return icebergrest.Table{}, false
	}
	a := h.value().(icebergAnswer) // immutable: valid after the release
	h.release()
	return a.table(), true
}

// icebergAnswerSub starts the cache sub-key of a kept loadTable answer;
// the byte 0xff never starts a Flight SQL ticket (a protobuf message).
const icebergAnswerSub = "\xfficeberg\x00"

func (src icebergSource) Namespaces(ctx context.Context, tenant string) ([]string, error) {
	ts, err := src.state(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return slices.Clone(ts.namespaces), nil
}

func (src icebergSource) Tables(ctx context.Context, tenant, namespace string) ([]string, bool, error) {
	ts, err := src.state(ctx, tenant)
	if err != nil {
		return nil, false, err
	}
	k, ok := slices.BinarySearch(ts.namespaces, namespace)
	if !ok {
		return nil, false, nil
	}
	span := ts.nsSpan[k]
	names := make([]string, 0, span.hi-span.lo)
	for i := span.lo; i < span.hi; i++ {
		names = append(names, ts.cols.Name.Value(i))
	}
	return names, true, nil
}

func (src icebergSource) Table(ctx context.Context, tenant, namespace, name string) (icebergrest.Table, bool, error) {
	ts, v, err := src.stateIn(ctx, tenant)
	if err != nil {
		return icebergrest.Table{}, false, err
	}
	i, ok := ts.find(namespace, name)
	if !ok {
		return icebergrest.Table{}, false, nil
	}
	c := ts.cols
	// The answer (the synced metadata file, or the metadata built from the
	// schema) is kept for the same state of the tenant: a repeat answers
	// the kept bytes without decoding anything.
	key, keyed := answerKeyFor(v, tenant, icebergAnswerSub+namespace+"\x00"+name)
	if keyed {
		if h, ok := src.s.cache.lookup(key); ok {
			a := h.value().(icebergAnswer) // immutable: valid after the release
			h.release()
			return a.table(), true, nil
		}
		src.s.cache.missed(kindAnswer)
	}
	if t, ok := src.synced(ctx, ts, i); ok {
		if keyed {
			t = src.keep(key, ts, i, t.MetadataLocation, t.Metadata, t)
		}
		return t, true, nil
	}
	ipc := ts.schema(i)
	if ipc == nil {
		return icebergrest.Table{}, false, fmt.Errorf("%s.%s has no stored schema (registered before lake kept schemas; backfill it): %w", namespace, name, icebergrest.ErrNotRepresentable)
	}
	sc, err := catalog.DecodeSchema(ipc)
	if err != nil {
		return icebergrest.Table{}, false, fmt.Errorf("%s.%s: stored schema: %w", namespace, name, err)
	}
	ids, last := ts.fieldIDs(i)
	fids := icebergschema.FieldIDs{IDs: ids, LastColumnID: last}
	if len(ids) == 0 {
		// A segment before format 8: the catalog's fresh assignment, which
		// is what Registration.FieldIDs answers for a registration
		// without recorded ids.
		fids = icebergschema.Assign(nil, icebergschema.FieldIDs{}, sc)
	}
	version := c.Version.Value(i)
	schema, err := icebergschema.ToIceberg(sc, fids, int(version))
	if ue, ok := errors.AsType[*icebergschema.UnsupportedError](err); ok {
		return icebergrest.Table{}, false, fmt.Errorf("%s.%s: column %q has Arrow type %s, which Iceberg cannot represent (%s); Flight SQL serves its exact schema: %w",
			namespace, name, ue.Path, ue.ArrowType, ue.Reason, icebergrest.ErrNotRepresentable)
	}
	if err != nil {
		return icebergrest.Table{}, false, fmt.Errorf("%s.%s: %w", namespace, name, err)
	}
	mapping, err := icebergschema.NameMapping(sc, fids)
	if err != nil {
		return icebergrest.Table{}, false, fmt.Errorf("%s.%s: name mapping: %w", namespace, name, err)
	}
	t := icebergrest.Table{
		Location: c.Location.Value(i), Schema: schema, Earlier: earlierSchemas(ts.earlier(i)), LastColumnID: int(fids.LastColumnID),
		Properties: ts.properties(i), Description: c.Description.Value(i), UpdatedAt: c.UpdatedAt.Value(i).ToTime(arrow.Microsecond).UTC(),
		Version: version, NameMapping: mapping,
	}
	if id := ts.creationID(i); id != "" {
		t.UUID = icebergrest.TableUUID(tenant, namespace, name, id)
	}
	loc, md, err := icebergrest.BuildMetadata(tenant, namespace, name, t)
	if err != nil {
		return icebergrest.Table{}, false, fmt.Errorf("%s.%s: metadata: %w", namespace, name, err)
	}
	t.MetadataLocation, t.Metadata = loc, md
	if keyed {
		t = src.keep(key, ts, i, loc, md, t)
	}
	return t, true, nil
}

// earlierSchemas returns the Iceberg schemas of a row's earlier kept
// versions (tenantState.earlier), oldest first, each with its version as
// schema id and the field ids it recorded: icebergrest.Table.Earlier, the
// list tablesync.EarlierSchemas makes from the catalog's history for a
// sync, made here from the snapshot's row without I/O. As there, a version
// whose schema bytes are the version before's is left out (Iceberg lists
// a schema once), and so is one whose schema does not decode or Iceberg
// cannot represent (its table could not be served then either).
func earlierSchemas(es []snapshot.Earlier) []*iceberg.Schema {
	var (
		out  []*iceberg.Schema
		last []byte
	)
	for _, e := range es {
		if bytes.Equal(e.SchemaIPC, last) {
			continue
		}
		last = e.SchemaIPC
		sc, err := catalog.DecodeSchema(e.SchemaIPC)
		if err != nil {
			continue
		}
		fids := icebergschema.FieldIDs{IDs: e.FieldIDs, LastColumnID: e.LastColumnID}
		if len(e.FieldIDs) == 0 {
			fids = icebergschema.Assign(nil, icebergschema.FieldIDs{}, sc)
		}
		isc, err := icebergschema.ToIceberg(sc, fids, int(e.Version))
		if err != nil {
			continue
		}
		out = append(out, isc)
	}
	return out
}

// synced returns row i as its Iceberg state describes it: its metadata
// file, answered verbatim, when the row carries a state that decodes
// (catalog.DecodeIcebergState) and was synced against the row's
// registration (its creation id and version). A state of an older version
// is not served: the table has changed since (an update of its schema, a
// drop and undrop), and until the next sync loadTable answers metadata
// built from the registration. One that does not decode is logged, once
// per row of the prepared tenant, and served as none.
func (src icebergSource) synced(ctx context.Context, ts *tenantState, i int) (icebergrest.Table, bool) {
	raw := ts.icebergState(i)
	if raw == nil {
		return icebergrest.Table{}, false
	}
	st, err := catalog.DecodeIcebergState(raw)
	if err != nil {
		if _, logged := ts.icebergLogged.LoadOrStore(i, struct{}{}); !logged {
			src.s.opts.Log.WarnContext(ctx, "iceberg: a table's iceberg state in the snapshot does not decode; answered without it",
				slog.String("tenant", ts.tenant), slog.String("table", ts.cols.Namespace.Value(i)+"."+ts.cols.Name.Value(i)),
				slog.String("error", err.Error()))
		}
		return icebergrest.Table{}, false
	}
	c := ts.cols
	if st.Version != c.Version.Value(i) || st.CreationID != ts.creationID(i) {
		return icebergrest.Table{}, false
	}
	return icebergrest.Table{Location: c.Location.Value(i), Version: c.Version.Value(i), Description: c.Description.Value(i),
		UpdatedAt: c.UpdatedAt.Value(i).ToTime(arrow.Microsecond).UTC(), MetadataLocation: st.MetadataLocation, Metadata: st.Metadata}, true
}

func (src icebergSource) Credentials(ctx context.Context, tenant, namespace, name string) (wire.Credentials, error) {
	ts, err := src.state(ctx, tenant)
	if err != nil {
		return wire.Credentials{}, err
	}
	i, ok := ts.find(namespace, name)
	if !ok {
		return wire.Credentials{}, fmt.Errorf("%w: %s.%s is gone", icebergrest.ErrUnavailable, namespace, name)
	}
	door := src.s.opts.Door
	if door == nil {
		return wire.Credentials{}, vending.ErrNotConfigured
	}
	return door.Credentials(ctx, vending.TableRequest{Who: "iceberg:" + tenant, Tenant: tenant, Namespace: namespace, Table: name,
		Location: ts.cols.Location.Value(i), Allowed: ts.settings().AllowedPrefixes, Metadata: src.metadataPrefix(ctx, ts, i)})
}

// metadataPrefix is the Iceberg metadata prefix row i's credentials read
// too (vending.TableRequest.Metadata): the directory of its metadata file
// when the row carries a state synced against its registration (synced)
// whose file lies in lake's metadata store under the table's own
// "tables/<table-uuid>/metadata/" (vending.SyncedMetadata, with the row's
// icebergrest.TableUUID); otherwise "" (no state, an older one, a local
// file:// metadata location).
func (src icebergSource) metadataPrefix(ctx context.Context, ts *tenantState, i int) string {
	id := ts.creationID(i)
	if id == "" {
		return ""
	}
	t, ok := src.synced(ctx, ts, i)
	if !ok {
		return ""
	}
	return vending.SyncedMetadata(t.MetadataLocation, icebergrest.TableUUID(ts.tenant, ts.cols.Namespace.Value(i), ts.cols.Name.Value(i), id))
}
