package snapshot

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"

	"github.com/lake-catalog/lake/pkg/catalog"
)

var timestampUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// TablesSchema is the schema of a segment's tables record batch.
var TablesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "namespace", Type: arrow.BinaryTypes.String},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "table_type", Type: arrow.BinaryTypes.String},
	{Name: "schema_ref", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "location", Type: arrow.BinaryTypes.String},
	{Name: "version", Type: arrow.PrimitiveTypes.Int64},
	{Name: "created_at", Type: timestampUTC},
	{Name: "updated_at", Type: timestampUTC},
	{Name: "description", Type: arrow.BinaryTypes.String},
	{Name: "properties", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
	{Name: "updated_by", Type: arrow.BinaryTypes.String},
	{Name: "op", Type: arrow.BinaryTypes.String},
	{Name: "published", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "creation_id", Type: arrow.BinaryTypes.String},
	{Name: "field_ids", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "iceberg_state", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "earlier", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// SchemasSchema is the schema of a segment's distinct table schemas.
var SchemasSchema = arrow.NewSchema([]arrow.Field{
	{Name: "schema_ipc", Type: arrow.BinaryTypes.Binary},
}, nil)

// TombstonesSchema is the schema of a segment's tombstones record batch.
var TombstonesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "namespace", Type: arrow.BinaryTypes.String},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "version", Type: arrow.PrimitiveTypes.Int64},
	{Name: "creation_id", Type: arrow.BinaryTypes.String},
	{Name: "dropped_at", Type: timestampUTC},
	{Name: "dropped_by", Type: arrow.BinaryTypes.String},
	{Name: "expires_at", Type: timestampUTC, Nullable: true},
	{Name: "published", Type: arrow.PrimitiveTypes.Uint64},
}, nil)

// tablesSchema9 is a segment's tables schema in format version 9:
// TablesSchema without its last column, earlier. tablesSchema8 is the one
// of version 8: version 9's without its last column, iceberg_state.
// tablesSchema7 is the one of versions 6 and 7: version 8's without its
// last two columns, creation_id and field_ids. tablesSchema5 and
// tombstonesSchema5 are a segment's schemas before version 6: those of
// version 7 without their last column, published.
var (
	tablesSchema9     = withoutLast(TablesSchema, 1)
	tablesSchema8     = withoutLast(TablesSchema, 2)
	tablesSchema7     = withoutLast(TablesSchema, 4)
	tablesSchema5     = withoutLast(TablesSchema, 5)
	tombstonesSchema5 = withoutLast(TombstonesSchema, 1)
)

func withoutLast(s *arrow.Schema, n int) *arrow.Schema {
	return arrow.NewSchema(s.Fields()[:s.NumFields()-n], nil)
}

// Table is one table of a tenant as the writer takes it and Segment.Table
// returns it.
type Table struct {
	Namespace, Name string
	TableType       string
	// SchemaIPC is the exact Arrow IPC schema message, checked to decode,
	// or nil when the schema is unavailable.
	SchemaIPC   []byte
	Location    string
	Version     int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Description string
	Properties  map[string]string
	UpdatedBy   string
	Op          string
	// Published is the generation of the blob in which the row last
	// changed: the change feed's order. Zero when the writer is to stamp
	// it with its own generation (a row new or changed in this blob).
	Published uint64
	// CreationID is the registration's creation id (catalog's
	// Registration.CreationID): it changes when the name is registered
	// anew, never on an update. Empty for a registration made before lake
	// recorded one, and for a row of a segment before version 8.
	CreationID string
	// FieldIDs are the Iceberg field ids the catalog recorded for the
	// table's schema, one per path in the schema's depth-first path order,
	// and LastColumnID the highest id it ever assigned. Both empty for a
	// table without a schema or without ids, and for a row of a segment
	// before version 8. The format does not check them against the schema.
	FieldIDs     []int32
	LastColumnID int32
	// IcebergState is the bytes of the table's Iceberg state item
	// (catalog.IcebergKey) exactly as the catalog stored them, opaque here
	// (catalog.DecodeIcebergState reads them), at most
	// MaxIcebergStateBytes; nil when the table has none, and for a row of
	// a segment before version 9.
	IcebergState []byte
	// Earlier are the table's earlier kept versions (the catalog's
	// history of its registration below Version) that had a schema,
	// oldest first: what Iceberg REST lists before the current schema.
	// Versions ascend, each at least 1 and below Version, and each has a
	// schema (SchemaIPC, checked to decode as the table's is). Nil for a
	// table of one version, and for a row of a segment before version 10.
	Earlier []Earlier
}

// Earlier is one earlier kept version of a table as its row carries it.
type Earlier struct {
	// Version is the catalog version that registered it: Iceberg REST's
	// schema id for it.
	Version int64
	// SchemaIPC is its Arrow IPC schema message. In a segment it is one of
	// the segment's distinct schemas (Segment.Schemas), stored once
	// however many rows and versions share it.
	SchemaIPC []byte
	// FieldIDs and LastColumnID are the Iceberg field ids the catalog
	// recorded for it, as Table.FieldIDs and Table.LastColumnID.
	FieldIDs     []int32
	LastColumnID int32
}

// MaxIcebergStateBytes bounds a row's Iceberg state, what the writer
// takes and the reader accepts: the bound of the stored item it is a copy
// of, 256 KiB.
const MaxIcebergStateBytes = catalog.MaxIcebergStateBytes

// HasSchema reports whether the table's schema is available.
func (t *Table) HasSchema() bool { return t.SchemaIPC != nil }

// Tombstone is one dropped table of a tenant, still in retention.
type Tombstone struct {
	Namespace, Name string
	Version         int64
	CreationID      string
	DroppedAt       time.Time
	DroppedBy       string
	// ExpiresAt is when retention ends (zero: never).
	ExpiresAt time.Time
	// Published is as Table.Published.
	Published uint64
}

// TableColumns are the columns of a segment's tables record batch
// (TablesSchema), sorted by (namespace, name).
type TableColumns struct {
	Namespace, Name, TableType *array.String
	// SchemaRef indexes Segment.Schemas; null where the schema is
	// unavailable.
	SchemaRef            *array.Int32
	Location             *array.String
	Version              *array.Int64
	CreatedAt, UpdatedAt *array.Timestamp
	Description          *array.String
	// Properties is null for a table without properties; keys are sorted.
	Properties    *array.Map
	UpdatedBy, Op *array.String
	// Published is each row's Table.Published. A segment written before
	// version 6 has no such column; its rows read as published at the
	// tenant's generation (Entry.Generation).
	Published *array.Uint64
	// CreationID is each row's Table.CreationID; FieldIDs each row's
	// Table.FieldIDs and Table.LastColumnID, encoded (null when both are
	// empty; FieldIDsOf reads them). A segment written before version 8
	// has neither column: its rows read with an empty creation id and no
	// field ids.
	CreationID *array.String
	FieldIDs   *array.Binary
	// IcebergState is each row's Table.IcebergState (null when none;
	// IcebergStateOf reads it). A segment written before version 9 has no
	// such column: its rows read with none.
	IcebergState *array.Binary
	// Earlier is each row's Table.Earlier, encoded with references into
	// the segment's schemas (null when none; EarlierOf reads it). A
	// segment written before version 10 has no such column: its rows read
	// with none.
	Earlier *array.Binary
}

// EarlierOf returns row i's earlier kept versions (Table.Earlier; nil
// when none), a new slice the caller owns, each SchemaIPC the bytes of
// schemas (the segment's Schemas, which the references index) in place:
// do not modify them. The segment's reader checked every row's encoding
// and references against its schemas.
func (c TableColumns) EarlierOf(i int, schemas *array.Binary) []Earlier {
	if c.Earlier.IsNull(i) {
		return nil
	}
	refs, _ := decodeEarlier(c.Earlier.Value(i), schemas.Len(), c.Version.Value(i))
	out := make([]Earlier, len(refs))
	for k, r := range refs {
		out[k] = Earlier{Version: r.version, SchemaIPC: schemas.Value(int(r.schema)), FieldIDs: r.ids, LastColumnID: r.last}
	}
	return out
}

// earlierRef is one entry of a row's encoded earlier versions.
type earlierRef struct {
	version int64
	schema  int32
	ids     []int32
	last    int32
}

// appendEarlier appends the encoding of a row's earlier versions, their
// schemas given as references (refs[k] indexes the segment's schemas for
// es[k]): the count (uvarint), then per version its difference from the
// version before (the first from 0; uvarint), its schema reference
// (uvarint) and its field ids: a byte 0 when they are the version
// before's, else 1 and appendFieldIDs's encoding. A version of a schema
// unchanged since the one before takes three bytes.
func appendEarlier(b []byte, es []Earlier, refs []int32) []byte {
	b = binary.AppendUvarint(b, uint64(len(es)))
	prev := int64(0)
	for k, e := range es {
		b = binary.AppendUvarint(b, uint64(e.Version-prev))
		prev = e.Version
		b = binary.AppendUvarint(b, uint64(refs[k]))
		if k > 0 && slices.Equal(e.FieldIDs, es[k-1].FieldIDs) && e.LastColumnID == es[k-1].LastColumnID {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = appendFieldIDs(b, e.FieldIDs, e.LastColumnID)
	}
	return b
}

// decodeEarlier reads appendEarlier's encoding of a row of version
// version in a segment of schemas distinct schemas, refusing one that is
// truncated, has bytes left over, lists no version, has versions that do
// not ascend from 1 to below version, or references a schema out of
// range.
func decodeEarlier(b []byte, schemas int, version int64) ([]earlierRef, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b)) { // each version takes three bytes at least
		return nil, fmt.Errorf("earlier versions: bad count")
	}
	b = b[k:]
	out := make([]earlierRef, 0, n)
	prev := int64(0)
	for range n {
		d, k := binary.Uvarint(b)
		if k <= 0 || d == 0 || d >= uint64(version-prev) {
			return nil, fmt.Errorf("earlier versions: a version after %d that is not below %d", prev, version)
		}
		b = b[k:]
		prev += int64(d)
		r, k := binary.Uvarint(b)
		if k <= 0 || r >= uint64(schemas) {
			return nil, fmt.Errorf("earlier versions: version %d: schema reference out of range", prev)
		}
		b = b[k:]
		e := earlierRef{version: prev, schema: int32(r)}
		switch {
		case len(b) == 0:
			return nil, fmt.Errorf("earlier versions: truncated")
		case b[0] == 0 && len(out) > 0:
			e.ids, e.last = out[len(out)-1].ids, out[len(out)-1].last
			b = b[1:]
		case b[0] == 1:
			var err error
			if e.ids, e.last, b, err = readFieldIDs(b[1:]); err != nil {
				return nil, fmt.Errorf("earlier versions: version %d: %v", prev, err)
			}
		default:
			return nil, fmt.Errorf("earlier versions: version %d: bad field ids marker", prev)
		}
		out = append(out, e)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("earlier versions: %d bytes after the last version", len(b))
	}
	return out, nil
}

// IcebergStateOf returns row i's Iceberg state item as stored (nil when
// none). The bytes point into the segment: do not modify them.
func (c TableColumns) IcebergStateOf(i int) []byte {
	if c.IcebergState.IsNull(i) {
		return nil
	}
	return c.IcebergState.Value(i)
}

// FieldIDsOf returns row i's field ids, a new slice the caller owns, and
// its last column id (Table.FieldIDs, Table.LastColumnID); none when the
// row has none. The segment's reader checked every row's encoding.
func (c TableColumns) FieldIDsOf(i int) (ids []int32, last int32) {
	if c.FieldIDs.IsNull(i) {
		return nil, 0
	}
	ids, last, _ = decodeFieldIDs(c.FieldIDs.Value(i))
	return ids, last
}

// appendFieldIDs appends the encoding of a row's field ids: the count
// (uvarint), each id as the difference from the one before it (the first
// from 0; zigzag varint), then the last column id as the difference from
// the last id (from 0 when there are none). Ids assigned in order take a
// byte each.
func appendFieldIDs(b []byte, ids []int32, last int32) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	prev := int64(0)
	for _, id := range ids {
		b = binary.AppendVarint(b, int64(id)-prev)
		prev = int64(id)
	}
	return binary.AppendVarint(b, int64(last)-prev)
}

// decodeFieldIDs reads appendFieldIDs's encoding, refusing one that is
// truncated, runs past its bytes or leaves the int32 range.
func decodeFieldIDs(b []byte) ([]int32, int32, error) {
	ids, last, rest, err := readFieldIDs(b)
	switch {
	case err != nil:
		return nil, 0, err
	case len(rest) != 0:
		return nil, 0, fmt.Errorf("field ids: %d bytes after the last column id", len(rest))
	}
	return ids, last, nil
}

// readFieldIDs reads appendFieldIDs's encoding from the start of b and
// returns the bytes after it, refusing one that is truncated, runs past
// b or leaves the int32 range.
func readFieldIDs(b []byte) ([]int32, int32, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n >= uint64(len(b)) { // each id and the last take a byte at least
		return nil, 0, nil, fmt.Errorf("field ids: bad count")
	}
	b = b[k:]
	ids := make([]int32, 0, n)
	prev := int64(0)
	next := func() (int32, error) {
		d, k := binary.Varint(b)
		if k <= 0 {
			return 0, fmt.Errorf("field ids: truncated")
		}
		b = b[k:]
		v := prev + d
		if d < math.MinInt32-math.MaxInt32 || d > math.MaxInt32-math.MinInt32 || v < math.MinInt32 || v > math.MaxInt32 {
			return 0, fmt.Errorf("field ids: %d out of range", v)
		}
		prev = v
		return int32(v), nil
	}
	for range n {
		id, err := next()
		if err != nil {
			return nil, 0, nil, err
		}
		ids = append(ids, id)
	}
	last, err := next()
	if err != nil {
		return nil, 0, nil, err
	}
	if n == 0 {
		ids = nil
	}
	return ids, last, b, nil
}

// TombstoneColumns are the columns of a segment's tombstones record batch
// (TombstonesSchema), sorted by (namespace, name, creation_id).
type TombstoneColumns struct {
	Namespace, Name *array.String
	Version         *array.Int64
	CreationID      *array.String
	DroppedAt       *array.Timestamp
	DroppedBy       *array.String
	ExpiresAt       *array.Timestamp
	// Published is as TableColumns.Published.
	Published *array.Uint64
}

// Segment is one tenant's decoded and checked segment. Its arrays are
// immutable and safe for concurrent reads; Release gives their memory back
// to the allocator.
type Segment struct {
	Tenant string
	// Generation is the tenant's index entry's: the blob generation in
	// which its segment last changed, at or above every row's Published.
	Generation uint64
	Tables     TableColumns
	Schemas    *array.Binary
	Tombstones TombstoneColumns
	// Bytes is what the decoded arrays and the settings hold.
	Bytes int64

	recs     []arrow.RecordBatch
	settings []byte
}

// Settings returns the tenant's settings as the segment carries them: the
// bytes of its settings item exactly as the catalog stored them (opaque
// here; catalog.DecodeTenantSettings reads them), at most
// MaxSettingsBytes; nil when it carries none (also a segment written
// before version 7). The bytes are the segment's: do not modify them.
func (s *Segment) Settings() []byte { return s.settings }

// NumTables is how many tables the segment holds.
func (s *Segment) NumTables() int { return s.Tables.Name.Len() }

// Schema returns row i's schema IPC message (nil when unavailable). The
// bytes point into the segment: do not modify them.
func (s *Segment) Schema(i int) []byte {
	if s.Tables.SchemaRef.IsNull(i) {
		return nil
	}
	return s.Schemas.Value(int(s.Tables.SchemaRef.Value(i)))
}

// Table returns row i as a Table, its strings and bytes copied (an
// earlier version of the row's schema, or of the version before's, shares
// that copy).
func (s *Segment) Table(i int) Table {
	c := s.Tables
	t := Table{Namespace: strings.Clone(c.Namespace.Value(i)), Name: strings.Clone(c.Name.Value(i)),
		TableType: strings.Clone(c.TableType.Value(i)), SchemaIPC: bytes.Clone(s.Schema(i)), Location: strings.Clone(c.Location.Value(i)),
		Version: c.Version.Value(i), CreatedAt: c.CreatedAt.Value(i).ToTime(arrow.Microsecond).UTC(),
		UpdatedAt: c.UpdatedAt.Value(i).ToTime(arrow.Microsecond).UTC(), Description: strings.Clone(c.Description.Value(i)),
		Properties: s.Properties(i), UpdatedBy: strings.Clone(c.UpdatedBy.Value(i)), Op: strings.Clone(c.Op.Value(i)),
		Published: c.Published.Value(i), CreationID: strings.Clone(c.CreationID.Value(i)), IcebergState: bytes.Clone(c.IcebergStateOf(i))}
	t.FieldIDs, t.LastColumnID = c.FieldIDsOf(i)
	t.Earlier = c.EarlierOf(i, s.Schemas)
	for k := range t.Earlier {
		// One copy of a schema per row: an earlier version of the row's
		// schema, or of the version before's, shares its copy.
		e := &t.Earlier[k]
		switch {
		case t.SchemaIPC != nil && bytes.Equal(e.SchemaIPC, t.SchemaIPC):
			e.SchemaIPC = t.SchemaIPC
		case k > 0 && bytes.Equal(e.SchemaIPC, t.Earlier[k-1].SchemaIPC):
			e.SchemaIPC = t.Earlier[k-1].SchemaIPC
		default:
			e.SchemaIPC = bytes.Clone(e.SchemaIPC)
		}
	}
	if !s.Tables.SchemaRef.IsNull(i) && t.SchemaIPC == nil {
		t.SchemaIPC = []byte{}
	}
	return t
}

// Properties returns row i's properties as a new map (nil when none).
func (s *Segment) Properties(i int) map[string]string {
	m := s.Tables.Properties
	if m.IsNull(i) {
		return nil
	}
	lo, hi := m.ValueOffsets(i)
	keys, items := m.Keys().(*array.String), m.Items().(*array.String)
	out := make(map[string]string, hi-lo)
	for j := lo; j < hi; j++ {
		out[strings.Clone(keys.Value(int(j)))] = strings.Clone(items.Value(int(j)))
	}
	return out
}

// Tombstone returns tombstone row i, its strings copied.
func (s *Segment) Tombstone(i int) Tombstone { return s.Tombstones.row(i) }

// Dropped is the tenant's list of dropped tables: its tombstones still in
// retention at at (no ExpiresAt, or one after at), newest drop first, a
// tie in the segment's order (namespace, name, creation id); strings
// copied. It is the one list every reader of a tenant's drops answers
// with (discovery's lake.dropped, the register API's GET …/dropped). None
// for columns of no tombstones.
func (c TombstoneColumns) Dropped(at time.Time) []Tombstone {
	if c.Name == nil {
		return nil
	}
	var out []Tombstone
	for i := range c.Name.Len() {
		if c.ExpiresAt.IsValid(i) && !at.Before(c.ExpiresAt.Value(i).ToTime(arrow.Microsecond)) {
			continue
		}
		out = append(out, c.row(i))
	}
	slices.SortStableFunc(out, func(a, b Tombstone) int { return b.DroppedAt.Compare(a.DroppedAt) })
	return out
}

// row returns row i, its strings copied.
func (c TombstoneColumns) row(i int) Tombstone {
	d := Tombstone{Namespace: strings.Clone(c.Namespace.Value(i)), Name: strings.Clone(c.Name.Value(i)), Version: c.Version.Value(i),
		CreationID: strings.Clone(c.CreationID.Value(i)), DroppedAt: c.DroppedAt.Value(i).ToTime(arrow.Microsecond).UTC(),
		DroppedBy: strings.Clone(c.DroppedBy.Value(i)), Published: c.Published.Value(i)}
	if c.ExpiresAt.IsValid(i) {
		d.ExpiresAt = c.ExpiresAt.Value(i).ToTime(arrow.Microsecond).UTC()
	}
	return d
}

// Release releases the segment's arrays.
func (s *Segment) Release() {
	for _, r := range s.recs {
		r.Release()
	}
	s.recs = nil
}

// compareTables orders tables by (namespace, name).
func compareTables(a, b *Table) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

func compareTombstones(a, b *Tombstone) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.CreationID, b.CreationID))
}

// MaxSettingsBytes bounds a segment's settings, what the writer takes and
// the reader accepts: the bound of the stored settings item they are a
// copy of, 16 KiB.
const MaxSettingsBytes = catalog.MaxTenantSettingsBytes

// encodePayload lays out a tenant's tables, tombstones and settings
// (sorted and checked by the caller) as an uncompressed segment.
func encodePayload(mem memory.Allocator, tables []Table, tombstones []Tombstone, settings []byte) ([]byte, int, error) {
	var out bytes.Buffer
	stream := func(rec arrow.RecordBatch) error {
		defer rec.Release()
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
		if err := w.Write(rec); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		out.Write(binary.LittleEndian.AppendUint64(nil, uint64(buf.Len())))
		out.Write(buf.Bytes())
		return nil
	}
	tb := array.NewRecordBuilder(mem, TablesSchema)
	defer tb.Release()
	sb := array.NewRecordBuilder(mem, SchemasSchema)
	defer sb.Release()
	ns, name, typ := tb.Field(0).(*array.StringBuilder), tb.Field(1).(*array.StringBuilder), tb.Field(2).(*array.StringBuilder)
	ref, loc, ver := tb.Field(3).(*array.Int32Builder), tb.Field(4).(*array.StringBuilder), tb.Field(5).(*array.Int64Builder)
	created, updated := tb.Field(6).(*array.TimestampBuilder), tb.Field(7).(*array.TimestampBuilder)
	desc, props := tb.Field(8).(*array.StringBuilder), tb.Field(9).(*array.MapBuilder)
	by, op, pub := tb.Field(10).(*array.StringBuilder), tb.Field(11).(*array.StringBuilder), tb.Field(12).(*array.Uint64Builder)
	cid, fids, ice := tb.Field(13).(*array.StringBuilder), tb.Field(14).(*array.BinaryBuilder), tb.Field(15).(*array.BinaryBuilder)
	earlier := tb.Field(16).(*array.BinaryBuilder)
	keys, items := props.KeyBuilder().(*array.StringBuilder), props.ItemBuilder().(*array.StringBuilder)
	schemas := sb.Field(0).(*array.BinaryBuilder)
	var (
		idBuf []byte
		refs  []int32
	)
	seen := map[string]int32{}
	schemaRef := func(ipc []byte) int32 {
		r, ok := seen[string(ipc)]
		if !ok {
			r = int32(len(seen))
			seen[string(ipc)] = r
			schemas.Append(ipc)
		}
		return r
	}
	unavailable := 0
	for i := range tables {
		t := &tables[i]
		ns.Append(t.Namespace)
		name.Append(t.Name)
		typ.Append(t.TableType)
		if t.SchemaIPC == nil {
			ref.AppendNull()
			unavailable++
		} else {
			ref.Append(schemaRef(t.SchemaIPC))
		}
		loc.Append(t.Location)
		ver.Append(t.Version)
		created.Append(arrow.Timestamp(t.CreatedAt.UnixMicro()))
		updated.Append(arrow.Timestamp(t.UpdatedAt.UnixMicro()))
		desc.Append(t.Description)
		if len(t.Properties) == 0 {
			props.AppendNull()
		} else {
			props.Append(true)
			for _, k := range slices.Sorted(maps.Keys(t.Properties)) {
				keys.Append(k)
				items.Append(t.Properties[k])
			}
		}
		by.Append(t.UpdatedBy)
		op.Append(t.Op)
		pub.Append(t.Published)
		cid.Append(t.CreationID)
		if len(t.FieldIDs) == 0 && t.LastColumnID == 0 {
			fids.AppendNull()
		} else {
			idBuf = appendFieldIDs(idBuf[:0], t.FieldIDs, t.LastColumnID)
			fids.Append(idBuf)
		}
		if len(t.IcebergState) == 0 {
			ice.AppendNull()
		} else {
			ice.Append(t.IcebergState)
		}
		if len(t.Earlier) == 0 {
			earlier.AppendNull()
		} else {
			refs = refs[:0]
			for _, e := range t.Earlier {
				refs = append(refs, schemaRef(e.SchemaIPC))
			}
			idBuf = appendEarlier(idBuf[:0], t.Earlier, refs)
			earlier.Append(idBuf)
		}
	}
	if err := stream(tb.NewRecordBatch()); err != nil {
		return nil, 0, err
	}
	if err := stream(sb.NewRecordBatch()); err != nil {
		return nil, 0, err
	}
	db := array.NewRecordBuilder(mem, TombstonesSchema)
	defer db.Release()
	dns, dname, dver := db.Field(0).(*array.StringBuilder), db.Field(1).(*array.StringBuilder), db.Field(2).(*array.Int64Builder)
	did, dat, dby, dexp := db.Field(3).(*array.StringBuilder), db.Field(4).(*array.TimestampBuilder), db.Field(5).(*array.StringBuilder), db.Field(6).(*array.TimestampBuilder)
	dpub := db.Field(7).(*array.Uint64Builder)
	for i := range tombstones {
		d := &tombstones[i]
		dns.Append(d.Namespace)
		dname.Append(d.Name)
		dver.Append(d.Version)
		did.Append(d.CreationID)
		dat.Append(arrow.Timestamp(d.DroppedAt.UnixMicro()))
		dby.Append(d.DroppedBy)
		if d.ExpiresAt.IsZero() {
			dexp.AppendNull()
		} else {
			dexp.Append(arrow.Timestamp(d.ExpiresAt.UnixMicro()))
		}
		dpub.Append(d.Published)
	}
	if err := stream(db.NewRecordBatch()); err != nil {
		return nil, 0, err
	}
	out.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(settings))))
	out.Write(settings)
	return out.Bytes(), unavailable, nil
}

// decodeSegment decompresses and checks a tenant's stored segment against
// its index entry: the one place a segment is checked. Every failure wraps
// ErrCorrupt.
func decodeSegment(e Entry, stored []byte, mem memory.Allocator) (*Segment, error) {
	if len(stored) != e.StoredBytes || sha256.Sum256(stored) != e.Address {
		return nil, corrupt("tenant %q: segment does not match its address", e.Tenant)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(uint64(e.PayloadBytes), 1)))
	if err != nil {
		return nil, fmt.Errorf("snapshot: make a segment decoder: %w", err)
	}
	defer dec.Close()
	// Capacity from what the stored bytes can hold at most, not from the
	// index's claim alone.
	payload, err := dec.DecodeAll(stored, make([]byte, 0, min(e.PayloadBytes, 64*len(stored)+4096)))
	if err != nil {
		return nil, corrupt("tenant %q: decompress: %v", e.Tenant, err)
	}
	if len(payload) != e.PayloadBytes {
		return nil, corrupt("tenant %q: segment of %d bytes, index says %d", e.Tenant, len(payload), e.PayloadBytes)
	}
	seg, err := readPayload(e, payload, mem)
	if err != nil {
		return nil, corrupt("tenant %q: %v", e.Tenant, err)
	}
	return seg, nil
}

// readPayload reads and checks the three streams of an uncompressed
// segment and, from version 7, its settings after them.
func readPayload(e Entry, payload []byte, mem memory.Allocator) (seg *Segment, err error) {
	seg = &Segment{Tenant: e.Tenant}
	defer func() {
		// The IPC reader trusts offsets in well-formed-looking messages; a
		// segment that passed its address but is still wrong must not crash.
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed segment: %v", r)
		}
		if err != nil {
			seg.Release()
			seg = nil
		}
	}()
	seg.Generation = e.Generation
	rest := payload
	var (
		recs  [3]arrow.RecordBatch
		forms [3]int // which of its schemas each stream has
	)
	// The tables of version 10, of version 9 (without earlier), of version
	// 8 (without iceberg_state too), of versions 6 and 7 (without
	// creation_id and field_ids too) or of the versions before (without
	// published too), and the tombstones of version 6 on or of the
	// versions before (without published).
	for k, want := range [][]*arrow.Schema{{TablesSchema, tablesSchema9, tablesSchema8, tablesSchema7, tablesSchema5}, {SchemasSchema}, {TombstonesSchema, tombstonesSchema5}} {
		if len(rest) < 8 {
			return seg, fmt.Errorf("stream %d truncated", k)
		}
		n := binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		if n > uint64(len(rest)) {
			return seg, fmt.Errorf("stream %d of %d bytes in the %d left", k, n, len(rest))
		}
		rec, form, err := readStream(rest[:n], want, mem)
		if err != nil {
			return seg, fmt.Errorf("stream %d: %v", k, err)
		}
		recs[k], forms[k] = rec, form
		seg.recs = append(seg.recs, rec)
		seg.Bytes += int64(n)
		rest = rest[n:]
	}
	before6 := forms[0] == 4
	// Before version 7 the streams end the segment; from it, the settings
	// (u64 length, then the bytes) follow them and end it.
	if len(rest) != 0 {
		if before6 {
			return seg, fmt.Errorf("%d bytes after the last stream of a segment before version 6", len(rest))
		}
		if len(rest) < 8 {
			return seg, fmt.Errorf("settings truncated: %d bytes after the last stream", len(rest))
		}
		n := binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		switch {
		case n > MaxSettingsBytes:
			return seg, fmt.Errorf("settings of %d bytes, the limit is %d", n, MaxSettingsBytes)
		case n != uint64(len(rest)):
			return seg, fmt.Errorf("settings of %d bytes in the %d left", n, len(rest))
		}
		if n > 0 {
			seg.settings = bytes.Clone(rest)
			seg.Bytes += int64(n)
		}
	}
	switch {
	case before6 != (forms[2] == 1):
		return seg, fmt.Errorf("the tables and the tombstones are of different format versions")
	case before6:
		// Every row as published at the tenant's generation.
		recs[0] = withPublished(recs[0], tablesSchema7, e.Generation, mem)
		forms[0] = 3
		recs[2] = withPublished(recs[2], TombstonesSchema, e.Generation, mem)
		seg.recs[0], seg.recs[2] = recs[0], recs[2]
		seg.Bytes += 8 * (recs[0].NumRows() + recs[2].NumRows())
	}
	if forms[0] != 0 {
		// Every row without the columns its version lacks: no creation
		// id or field ids (before version 8), no Iceberg state (before
		// version 9), no earlier versions (before version 10).
		var added int64
		recs[0], added = widened(recs[0], mem)
		seg.recs[0] = recs[0]
		seg.Bytes += added
	}
	tc := recs[0].Columns()
	seg.Tables = TableColumns{Namespace: tc[0].(*array.String), Name: tc[1].(*array.String), TableType: tc[2].(*array.String),
		SchemaRef: tc[3].(*array.Int32), Location: tc[4].(*array.String), Version: tc[5].(*array.Int64),
		CreatedAt: tc[6].(*array.Timestamp), UpdatedAt: tc[7].(*array.Timestamp), Description: tc[8].(*array.String),
		Properties: tc[9].(*array.Map), UpdatedBy: tc[10].(*array.String), Op: tc[11].(*array.String), Published: tc[12].(*array.Uint64),
		CreationID: tc[13].(*array.String), FieldIDs: tc[14].(*array.Binary), IcebergState: tc[15].(*array.Binary),
		Earlier: tc[16].(*array.Binary)}
	seg.Schemas = recs[1].Column(0).(*array.Binary)
	dc := recs[2].Columns()
	seg.Tombstones = TombstoneColumns{Namespace: dc[0].(*array.String), Name: dc[1].(*array.String), Version: dc[2].(*array.Int64),
		CreationID: dc[3].(*array.String), DroppedAt: dc[4].(*array.Timestamp), DroppedBy: dc[5].(*array.String), ExpiresAt: dc[6].(*array.Timestamp),
		Published: dc[7].(*array.Uint64)}
	return seg, checkSegment(e, seg)
}

// withPublished returns rec (a record batch of a segment before version 6)
// with a last column, published, of gen in every row, as schema; it
// releases rec.
func withPublished(rec arrow.RecordBatch, schema *arrow.Schema, gen uint64, mem memory.Allocator) arrow.RecordBatch {
	defer rec.Release()
	b := array.NewUint64Builder(mem)
	defer b.Release()
	b.Reserve(int(rec.NumRows()))
	for range rec.NumRows() {
		b.UnsafeAppend(gen)
	}
	pub := b.NewArray()
	defer pub.Release()
	return array.NewRecordBatch(schema, append(slices.Clone(rec.Columns()), pub), rec.NumRows())
}

// widened returns rec (the tables of a segment before version 10, with
// published) with the columns of TablesSchema it lacks after its own:
// creation_id empty, field_ids null (before version 8), iceberg_state null
// (before version 9), earlier null in every row, as TablesSchema, and the
// bytes they add; it releases rec.
func widened(rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, int64) {
	defer rec.Release()
	n := int(rec.NumRows())
	cols := slices.Clone(rec.Columns())
	var added int64
	for k := len(cols); k < TablesSchema.NumFields(); k++ {
		var a arrow.Array
		if TablesSchema.Field(k).Type.ID() == arrow.STRING {
			b := array.NewStringBuilder(mem)
			b.AppendEmptyValues(n)
			a = b.NewArray()
			b.Release()
		} else {
			b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			b.AppendNulls(n)
			a = b.NewArray()
			b.Release()
		}
		defer a.Release()
		for _, b := range a.Data().Buffers() {
			if b != nil {
				added += int64(b.Len())
			}
		}
		cols = append(cols, a)
	}
	return array.NewRecordBatch(TablesSchema, cols, rec.NumRows()), added
}

// readStream reads one IPC stream of exactly one record batch of one of
// the schemas in want, and returns it and that schema's index; its schema
// message is verified before the IPC reader sees it.
func readStream(b []byte, want []*arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, int, error) {
	// The IPC reader recurses into field children with no depth limit, and
	// a stack overflow is a fatal error no recover() catches.
	if err := catalog.VerifySchemaMessage(b); err != nil {
		return nil, 0, fmt.Errorf("schema message: %v", err)
	}
	rdr, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(mem),
		ipc.WithMetadataSizeLimit(int64(len(b))), ipc.WithBodySizeLimit(int64(len(b))))
	if err != nil {
		return nil, 0, err
	}
	defer rdr.Release()
	k := slices.IndexFunc(want, rdr.Schema().Equal)
	if k < 0 {
		return nil, 0, fmt.Errorf("schema %s, want %s", rdr.Schema(), want[0])
	}
	if !rdr.Next() {
		if err := rdr.Err(); err != nil {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("no record batch")
	}
	rec := rdr.RecordBatch()
	rec.Retain()
	if rdr.Next() {
		rec.Release()
		return nil, 0, fmt.Errorf("more than one record batch")
	}
	if err := rdr.Err(); err != nil {
		rec.Release()
		return nil, 0, err
	}
	for i, col := range rec.Columns() {
		if err := array.ValidateFull(col); err != nil {
			rec.Release()
			return nil, 0, fmt.Errorf("column %s: %v", rec.Schema().Field(i).Name, err)
		}
		if !rec.Schema().Field(i).Nullable && col.NullN() != 0 {
			rec.Release()
			return nil, 0, fmt.Errorf("column %s has nulls", rec.Schema().Field(i).Name)
		}
	}
	return rec, k, nil
}

// checkSegment checks a decoded segment against its index entry: counts,
// names, order, schema references.
func checkSegment(e Entry, s *Segment) error {
	c := s.Tables
	n := c.Name.Len()
	if n != e.Tables {
		return fmt.Errorf("%d tables, index counts %d", n, e.Tables)
	}
	if s.Tombstones.Name.Len() != e.Tombstones {
		return fmt.Errorf("%d tombstones, index counts %d", s.Tombstones.Name.Len(), e.Tombstones)
	}
	if k := c.Properties.Keys(); k.NullN() != 0 {
		return fmt.Errorf("a property key is null")
	}
	if it := c.Properties.Items(); it.NullN() != 0 {
		return fmt.Errorf("a property value is null")
	}
	unavailable := 0
	for i := range n {
		ns, name := c.Namespace.Value(i), c.Name.Value(i)
		if err := catalog.ValidateName("namespace", ns); err != nil {
			return err
		}
		if err := catalog.ValidateName("table", name); err != nil {
			return err
		}
		if i > 0 && cmp.Or(strings.Compare(c.Namespace.Value(i-1), ns), strings.Compare(c.Name.Value(i-1), name)) >= 0 {
			return fmt.Errorf("tables out of order at %s.%s", ns, name)
		}
		if c.SchemaRef.IsNull(i) {
			unavailable++
		} else if r := c.SchemaRef.Value(i); r < 0 || int(r) >= s.Schemas.Len() {
			return fmt.Errorf("table %s.%s: schema reference %d out of range", ns, name, r)
		}
		// A row published after its tenant's last change would put the
		// change feed's cursor past rows published later.
		if p := c.Published.Value(i); p > e.Generation {
			return fmt.Errorf("table %s.%s published at generation %d, after the tenant's %d", ns, name, p, e.Generation)
		}
		if c.FieldIDs.IsValid(i) {
			if _, _, err := decodeFieldIDs(c.FieldIDs.Value(i)); err != nil {
				return fmt.Errorf("table %s.%s: %v", ns, name, err)
			}
		}
		if c.IcebergState.IsValid(i) {
			if n := c.IcebergState.ValueLen(i); n == 0 || n > MaxIcebergStateBytes {
				return fmt.Errorf("table %s.%s: iceberg state of %d bytes, want 1 to %d", ns, name, n, MaxIcebergStateBytes)
			}
		}
		if c.Earlier.IsValid(i) {
			if _, err := decodeEarlier(c.Earlier.Value(i), s.Schemas.Len(), c.Version.Value(i)); err != nil {
				return fmt.Errorf("table %s.%s: %v", ns, name, err)
			}
		}
	}
	if unavailable != e.SchemaUnavailable {
		return fmt.Errorf("%d tables without a schema, index counts %d", unavailable, e.SchemaUnavailable)
	}
	d := s.Tombstones
	for i := range d.Name.Len() {
		ns, name := d.Namespace.Value(i), d.Name.Value(i)
		if err := catalog.ValidateName("namespace", ns); err != nil {
			return err
		}
		if err := catalog.ValidateName("table", name); err != nil {
			return err
		}
		if i > 0 && cmp.Or(strings.Compare(d.Namespace.Value(i-1), ns), strings.Compare(d.Name.Value(i-1), name),
			strings.Compare(d.CreationID.Value(i-1), d.CreationID.Value(i))) >= 0 {
			return fmt.Errorf("tombstones out of order at %s.%s", ns, name)
		}
		if p := d.Published.Value(i); p > e.Generation {
			return fmt.Errorf("tombstone of %s.%s published at generation %d, after the tenant's %d", ns, name, p, e.Generation)
		}
	}
	return nil
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
