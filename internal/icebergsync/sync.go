package icebergsync

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// Table is the registration Sync makes Iceberg metadata for.
type Table struct {
	Tenant, Namespace, Name string
	// UUID is the table-uuid lake serves for the table.
	UUID string
	// Location is the table's location as engines know it (s3://… or
	// file:///…): the metadata's "location".
	Location string
	// Schema is the registered Arrow schema, IDs its field ids
	// (icebergschema.Assign) and SchemaID its Iceberg schema id.
	Schema   *arrow.Schema
	IDs      icebergschema.FieldIDs
	SchemaID int
	// Earlier are the Iceberg schemas of the registration's earlier kept
	// versions, oldest first, each with its own id and field ids
	// (icebergrest.Table.Earlier): every metadata file a Sync writes lists
	// them, and those of the metadata before it, ahead of Schema.
	Earlier []*iceberg.Schema
}

func (t Table) ref() string { return t.Tenant + "/" + t.Namespace + "/" + t.Name }

// Limits bound one Sync. A zero field takes its default.
type Limits struct {
	// MaxFiles bounds the objects at the location (default 100,000):
	// past it Sync fails with *TooManyFilesError and writes nothing.
	MaxFiles int
	// MaxFooterBytes bounds one file's footer (default
	// parquetschema.MaxFooterBytes): a file past it is skipped.
	MaxFooterBytes int64
	// MaxTotalFooterBytes bounds the bytes read from data files in one
	// Sync (default 1 GiB): past it Sync fails with ErrBudget and writes
	// nothing.
	MaxTotalFooterBytes int64
	// MaxMetadataBytes bounds one metadata object read back (the previous
	// metadata file, manifest list, manifest or file list; default 256 MiB).
	MaxMetadataBytes int64
	// Timeout bounds the whole Sync (default 5 minutes).
	Timeout time.Duration
	// Concurrency is how many footers are read at once (default 8).
	Concurrency int
}

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = 100_000
	}
	if l.MaxFooterBytes <= 0 {
		l.MaxFooterBytes = parquetschema.MaxFooterBytes
	}
	if l.MaxTotalFooterBytes <= 0 {
		l.MaxTotalFooterBytes = 1 << 30
	}
	if l.MaxMetadataBytes <= 0 {
		l.MaxMetadataBytes = 256 << 20
	}
	if l.Timeout <= 0 {
		l.Timeout = 5 * time.Minute
	}
	if l.Concurrency <= 0 {
		l.Concurrency = 8
	}
	return l
}

// TooManyFilesError is Sync's refusal of a location holding more than
// Limits.MaxFiles objects.
type TooManyFilesError struct {
	Location     string
	Count, Limit int
}

func (e *TooManyFilesError) Error() string {
	return fmt.Sprintf("icebergsync: %d files at %s, limit %d", e.Count, e.Location, e.Limit)
}

// ErrBudget is Sync's refusal (wrapped) when the footers to read are over
// Limits.MaxTotalFooterBytes.
var ErrBudget = errors.New("footer bytes over the sync's limit")

// Skip is a file left out of the table, and why: not Parquet, a footer
// over the limit, or a schema that conflicts with the registration's
// (naming the column).
type Skip struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// Snapshot is one Iceberg snapshot as State keeps it: what loadTable
// serves without reading the metadata file.
type Snapshot struct {
	ID       int64 `json:"id"`
	ParentID int64 `json:"parent,omitempty"` // 0: none
	// SequenceNumber is the snapshot's data sequence number.
	SequenceNumber int64  `json:"seq"`
	TimestampMS    int64  `json:"ts"`
	ManifestList   string `json:"manifestList"`
	// Summary is the snapshot's summary, "operation" included.
	Summary  map[string]string `json:"summary"`
	SchemaID int               `json:"schemaID"`
}

// State is what lake stores for a table between syncs: small (the
// snapshots, not the files), enough to answer loadTable from memory, and
// what the next Sync starts from. The zero State is a table never synced.
type State struct {
	// MetadataLocation is the current metadata file's URI, Version its
	// number (v<Version>.metadata.json).
	MetadataLocation string     `json:"metadataLocation,omitempty"`
	Version          int        `json:"version,omitempty"`
	CurrentSnapshot  int64      `json:"currentSnapshot,omitempty"`
	Snapshots        []Snapshot `json:"snapshots,omitempty"`
	// Skipped are the files the current snapshot leaves out.
	Skipped []Skip `json:"skipped,omitempty"`
	// Schema is the SHA-256 of the metadata file's current schema
	// (schemaFingerprint): a Sync that finds the registration's schema
	// changed writes a new metadata file even when no file changed. Empty
	// in a State written before it: the current snapshot's
	// lake.schema-sha256 stands for it.
	Schema string `json:"schema,omitempty"`
}

// schema is the fingerprint of the current metadata file's current schema
// ("" before the first metadata file).
func (s State) schema() string {
	if s.Schema != "" {
		return s.Schema
	}
	if cur := s.current(); cur != nil {
		return cur.Summary[schemaKey]
	}
	return ""
}

func (s State) current() *Snapshot {
	for i := range s.Snapshots {
		if s.Snapshots[i].ID == s.CurrentSnapshot {
			return &s.Snapshots[i]
		}
	}
	return nil
}

// Result is what one Sync did.
type Result struct {
	// Changed: a new snapshot was written (the table's rows changed).
	// When false, State is the previous one but for Skipped and, when the
	// registration's schema alone changed, the new metadata file written
	// for it (MetadataLocation, State.MetadataLocation and State.Version
	// name it; the snapshots as they were); otherwise nothing was written.
	Changed bool
	// SchemaChanged: a new metadata file was written for a change of the
	// registration's schema alone (Changed is false).
	SchemaChanged bool
	// MetadataLocation is the new metadata file, or the previous one.
	MetadataLocation string
	// SnapshotID is the current snapshot (0: none yet).
	SnapshotID int64
	// Added and Removed count the data files this snapshot added and
	// removed; Files and Records are the table's totals after it.
	Added, Removed, Files int
	Records               int64
	// Skipped are the files left out of the table, in key order
	// (State.Skipped).
	Skipped []Skip
	// FooterBytes is what this Sync read from data files; DataBytes the
	// size of the files it read them from.
	FooterBytes, DataBytes int64
	// State is what to store for the next Sync and for loadTable.
	State State
}

// Summary keys lake adds to a snapshot's summary.
const (
	// fingerprintKey is the SHA-256 of the table's schema and every listed
	// object's key, size and version: equal at the next Sync means
	// nothing changed.
	fingerprintKey = "lake.files-sha256"
	// schemaKey is the SHA-256 of the table's Iceberg schema.
	schemaKey = "lake.schema-sha256"
	// filesKey is the location of the snapshot's file list.
	filesKey = "lake.files"
)

// fileList is the object lake writes beside each snapshot: every listed
// file with its identity, the manifest that holds it (an index into
// Manifests) or the reason it was skipped. It is how the next Sync tells
// what changed without reading a footer or a manifest.
type fileList struct {
	Manifests []string    `json:"manifests"`
	Files     []fileEntry `json:"files"`
}

type fileEntry struct {
	Key      string `json:"k"`
	Size     int64  `json:"s"`
	Version  string `json:"v"`
	Manifest int    `json:"m"` // -1 when skipped
	Skip     string `json:"skip,omitempty"`
}

// Sync makes the table's Iceberg metadata match the Parquet files in data:
// it lists them, reads the footers of the files that are new or changed
// since prev (a file is its key, size and version), and when the set of
// files differs from prev's writes under metaPrefix of meta, with
// iceberg-go's writers, a manifest of the added files, a rewrite of each
// manifest that held a removed file (its other files EXISTING, the removed
// ones DELETED), a manifest list carrying every other manifest forward
// unchanged, the file list, and v<N+1>.metadata.json (format version 2,
// unpartitioned, the previous snapshots kept, main at the new snapshot).
// When nothing changed it writes nothing. now stamps the snapshot.
//
// Files that cannot be in the table are left out and named in
// Result.Skipped. Sync fails with nothing written past Limits.MaxFiles
// (*TooManyFilesError), Limits.MaxTotalFooterBytes (ErrBudget), the
// Timeout, or ctx; a concurrent Sync of the same table that wrote the
// same version first fails this one with ErrExists.
func Sync(ctx context.Context, t Table, prev State, data Files, meta MetaStore, metaPrefix string, lim Limits, now func() time.Time) (Result, error) {
	lim = lim.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	res, err := syncTable(ctx, t, prev, data, meta, metaPrefix, lim, now)
	if err != nil {
		var tm *TooManyFilesError
		if errors.As(err, &tm) {
			return Result{}, err
		}
		return Result{}, fmt.Errorf("icebergsync: sync %s: %w", t.ref(), err)
	}
	return res, nil
}

func syncTable(ctx context.Context, t Table, prev State, data Files, meta MetaStore, metaPrefix string, lim Limits, now func() time.Time) (Result, error) {
	if t.Schema == nil {
		return Result{}, errors.New("the table has no schema")
	}
	sc, err := icebergschema.ToIceberg(t.Schema, t.IDs, t.SchemaID)
	if err != nil {
		return Result{}, err
	}
	tableUUID, err := uuid.Parse(t.UUID)
	if err != nil {
		return Result{}, fmt.Errorf("table uuid %q: %w", t.UUID, err)
	}
	mapping, err := icebergschema.NameMapping(t.Schema, t.IDs)
	if err != nil {
		return Result{}, err
	}
	props := iceberg.Properties{"schema.name-mapping.default": string(mapping)}

	// List.
	var objs []Object
	count := 0
	err = data.List(ctx, func(o Object) error {
		count++
		if count <= lim.MaxFiles {
			objs = append(objs, o)
		}
		return ctx.Err()
	})
	if err != nil {
		return Result{}, err
	}
	if count > lim.MaxFiles {
		return Result{}, &TooManyFilesError{Location: t.Location, Count: count, Limit: lim.MaxFiles}
	}
	slices.SortFunc(objs, func(a, b Object) int { return cmpString(a.Key, b.Key) })
	schemaFP := schemaFingerprint(sc)
	fp := fingerprint(schemaFP, objs)

	// Unchanged: the files are the current snapshot's (its fingerprint,
	// taken with the schema of its time) and the schema the metadata's.
	cur := prev.current()
	schemaChanged := cur != nil && prev.schema() != schemaFP
	if cur != nil && !schemaChanged && cur.Summary[fingerprintKey] == fingerprint(cur.Summary[schemaKey], objs) {
		return unchanged(prev), nil
	}

	// What the previous snapshot had.
	var old fileList
	if cur != nil {
		b, err := meta.Get(ctx, metaPrefix+path.Base(cur.Summary[filesKey]), lim.MaxMetadataBytes)
		if err != nil {
			return Result{}, err
		}
		if err := json.Unmarshal(b, &old); err != nil {
			return Result{}, fmt.Errorf("file list %s: %w", cur.Summary[filesKey], err)
		}
	}
	oldByKey := make(map[string]fileEntry, len(old.Files))
	for _, f := range old.Files {
		oldByKey[f.Key] = f
	}

	// Diff: a file whose key, size and version are the previous one's is
	// kept as it was (in its manifest, or skipped); every other is read.
	// After a change of the registration's schema, files left out are
	// read again: the new schema may take them.
	var toRead []Object
	keep := make(map[string]fileEntry, len(objs))
	rereadSkipped := schemaChanged
	for _, o := range objs {
		if f, ok := oldByKey[o.Key]; ok && f.Size == o.Size && f.Version == o.Version && (f.Manifest >= 0 || !rereadSkipped) {
			keep[o.Key] = f
			continue
		}
		toRead = append(toRead, o)
	}
	removedByManifest := map[int][]string{} // manifest index → data file locations removed
	removed := 0
	for _, f := range old.Files {
		if _, ok := keep[f.Key]; ok || f.Manifest < 0 {
			continue
		}
		removedByManifest[f.Manifest] = append(removedByManifest[f.Manifest], data.Location(f.Key))
		removed++
	}

	// Read the footers of the new and changed files.
	read, err := readFooters(ctx, t, sc, props, data, toRead, lim)
	if err != nil {
		return Result{}, err
	}
	var added []iceberg.DataFile
	for _, r := range read {
		if r.df != nil {
			added = append(added, r.df)
		}
	}
	if len(added) == 0 && removed == 0 {
		// Only files left out changed, or none: the table's rows did
		// not. They are read again next time. A new schema is written
		// all the same, the snapshots as they are.
		res := unchanged(prev)
		res.Skipped = nil
		for _, o := range objs {
			if f, ok := keep[o.Key]; ok && f.Manifest < 0 {
				res.Skipped = append(res.Skipped, Skip{Key: f.Key, Reason: f.Skip})
			}
		}
		for _, r := range read {
			if r.df == nil {
				res.Skipped = append(res.Skipped, Skip{Key: r.obj.Key, Reason: r.skip})
			}
		}
		slices.SortFunc(res.Skipped, func(a, b Skip) int { return cmpString(a.Key, b.Key) })
		res.State.Skipped = res.Skipped
		for _, r := range read {
			res.FooterBytes += r.footer
			res.DataBytes += r.obj.Size
		}
		if schemaChanged {
			w := writer{ctx: ctx, meta: meta, prefix: metaPrefix, sc: sc, lim: lim, commit: uuid.New()}
			md, err := w.metadata(t, tableUUID, sc, props, prev, nil)
			if err != nil {
				return Result{}, err
			}
			// The builder stamps a change without a snapshot with the
			// wall clock; now is the time of everything a Sync writes.
			b, err := json.Marshal(md)
			if err != nil {
				return Result{}, err
			}
			if b, err = withLastUpdated(b, now()); err != nil {
				return Result{}, err
			}
			loc, version, err := w.putMetadata(b, prev)
			if err != nil {
				return Result{}, err
			}
			res.SchemaChanged, res.MetadataLocation = true, loc
			res.State.MetadataLocation, res.State.Version, res.State.Schema = loc, version, schemaFP
		}
		return res, nil
	}

	w := writer{ctx: ctx, meta: meta, prefix: metaPrefix, sc: sc, lim: lim, commit: uuid.New()}
	snapID, err := newSnapshotID(prev)
	if err != nil {
		return Result{}, err
	}
	var parent *int64
	var seq int64 = 1
	for _, s := range prev.Snapshots {
		seq = max(seq, s.SequenceNumber+1)
	}
	if cur != nil {
		parent = &cur.ID
	}

	// Manifests: the previous ones carried forward, those with removals
	// rewritten, one more for the added files. A manifest left with
	// DELETED entries alone recorded its snapshot's removals and is not
	// carried further.
	var manifests []iceberg.ManifestFile
	if cur != nil {
		if manifests, err = w.manifestList(cur.ManifestList); err != nil {
			return Result{}, err
		}
		manifests = slices.DeleteFunc(manifests, func(m iceberg.ManifestFile) bool {
			return m.AddedDataFiles()+m.ExistingDataFiles() == 0
		})
	}
	byPath := make(map[string]int, len(manifests))
	for i, m := range manifests {
		byPath[m.FilePath()] = i
	}
	var sizeRemoved, recordsRemoved int64
	for mi, locs := range removedByManifest {
		if mi >= len(old.Manifests) {
			return Result{}, fmt.Errorf("file list %s: manifest %d of %d", cur.Summary[filesKey], mi, len(old.Manifests))
		}
		i, ok := byPath[old.Manifests[mi]]
		if !ok {
			return Result{}, fmt.Errorf("manifest %s is not in %s", old.Manifests[mi], cur.ManifestList)
		}
		nm, size, recs, err := w.rewrite(manifests[i], locs, snapID)
		if err != nil {
			return Result{}, err
		}
		manifests[i] = nm
		sizeRemoved += size
		recordsRemoved += recs
	}
	var sizeAdded, recordsAdded int64
	if len(added) > 0 {
		m, err := w.added(added, snapID)
		if err != nil {
			return Result{}, err
		}
		manifests = append(manifests, m)
		for _, df := range added {
			sizeAdded += df.FileSizeBytes()
			recordsAdded += df.Count()
		}
	}

	// The new file list, in listing order.
	var list fileList
	for _, m := range manifests {
		list.Manifests = append(list.Manifests, m.FilePath())
	}
	newFile := make(map[string]fileEntry, len(read))
	for _, r := range read {
		e := fileEntry{Key: r.obj.Key, Size: r.obj.Size, Version: r.obj.Version, Manifest: -1}
		if r.df != nil {
			e.Manifest = len(manifests) - 1
		} else {
			e.Skip = r.skip
		}
		newFile[r.obj.Key] = e
	}
	var skipped []Skip
	var totalFiles int
	var totalRecords, totalSize int64
	for _, o := range objs {
		e, ok := keep[o.Key]
		if ok && e.Manifest >= 0 {
			// Its manifest may have been rewritten: same position.
			e.Manifest = byPath[old.Manifests[e.Manifest]]
		} else if !ok {
			e = newFile[o.Key]
		}
		list.Files = append(list.Files, e)
		if e.Manifest < 0 {
			skipped = append(skipped, Skip{Key: e.Key, Reason: e.Skip})
		}
	}
	for _, m := range manifests {
		totalFiles += int(m.AddedDataFiles() + m.ExistingDataFiles())
		totalRecords += m.AddedRows() + m.ExistingRows()
	}
	if cur != nil {
		totalSize, _ = strconv.ParseInt(cur.Summary["total-files-size"], 10, 64)
	}
	totalSize += sizeAdded - sizeRemoved
	listName := w.commit.String() + "-files.json"
	lb, err := json.Marshal(list)
	if err != nil {
		return Result{}, err
	}
	if err := meta.Put(ctx, metaPrefix+listName, lb); err != nil {
		return Result{}, err
	}

	// Manifest list.
	var mlb bytes.Buffer
	if err := iceberg.WriteManifestList(2, &mlb, snapID, parent, &seq, 0, manifests); err != nil {
		return Result{}, fmt.Errorf("manifest list: %w", err)
	}
	mlName := fmt.Sprintf("snap-%d-1-%s.avro", snapID, w.commit)
	if err := meta.Put(ctx, metaPrefix+mlName, mlb.Bytes()); err != nil {
		return Result{}, err
	}

	op := table.OpOverwrite
	switch {
	case removed == 0:
		op = table.OpAppend
	case len(added) == 0:
		op = table.OpDelete
	}
	summary := iceberg.Properties{
		"added-data-files":       strconv.Itoa(len(added)),
		"deleted-data-files":     strconv.Itoa(removed),
		"added-records":          strconv.FormatInt(recordsAdded, 10),
		"deleted-records":        strconv.FormatInt(recordsRemoved, 10),
		"added-files-size":       strconv.FormatInt(sizeAdded, 10),
		"removed-files-size":     strconv.FormatInt(sizeRemoved, 10),
		"total-data-files":       strconv.Itoa(totalFiles),
		"total-records":          strconv.FormatInt(totalRecords, 10),
		"total-files-size":       strconv.FormatInt(totalSize, 10),
		"total-delete-files":     "0",
		"total-position-deletes": "0",
		"total-equality-deletes": "0",
		fingerprintKey:           fp,
		schemaKey:                schemaFP,
		filesKey:                 meta.Location(metaPrefix + listName),
	}

	md, err := w.metadata(t, tableUUID, sc, props, prev, &table.Snapshot{
		SnapshotID: snapID, ParentSnapshotID: parent, SequenceNumber: seq, TimestampMs: now().UnixMilli(),
		ManifestList: meta.Location(metaPrefix + mlName), Summary: &table.Summary{Operation: op, Properties: summary},
	})
	if err != nil {
		return Result{}, err
	}
	mdb, err := json.Marshal(md)
	if err != nil {
		return Result{}, err
	}
	mdLoc, version, err := w.putMetadata(mdb, prev)
	if err != nil {
		return Result{}, err
	}

	st := State{MetadataLocation: mdLoc, Version: version, CurrentSnapshot: snapID, Skipped: skipped, Schema: schemaFP}
	for _, s := range md.Snapshots() {
		st.Snapshots = append(st.Snapshots, stateSnapshot(s))
	}
	res := Result{
		Changed: true, MetadataLocation: st.MetadataLocation, SnapshotID: snapID,
		Added: len(added), Removed: removed, Files: totalFiles, Records: totalRecords,
		Skipped: skipped, State: st,
	}
	for _, r := range read {
		res.FooterBytes += r.footer
		res.DataBytes += r.obj.Size
	}
	return res, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// unchanged is the Result of a Sync that writes nothing.
func unchanged(prev State) Result {
	res := Result{MetadataLocation: prev.MetadataLocation, SnapshotID: prev.CurrentSnapshot, Skipped: prev.Skipped, State: prev}
	if cur := prev.current(); cur != nil {
		files, _ := strconv.Atoi(cur.Summary["total-data-files"])
		res.Files = files
		res.Records, _ = strconv.ParseInt(cur.Summary["total-records"], 10, 64)
	}
	return res
}

func fingerprint(schemaFP string, objs []Object) string {
	h := sha256.New()
	h.Write([]byte(schemaFP))
	var n [8]byte
	for _, o := range objs {
		h.Write([]byte(o.Key))
		h.Write([]byte{0})
		binary.LittleEndian.PutUint64(n[:], uint64(o.Size))
		h.Write(n[:])
		h.Write([]byte(o.Version))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// schemaFingerprint is the SHA-256 of the Iceberg schema's text (its
// fields with their ids, types and requiredness).
func schemaFingerprint(sc *iceberg.Schema) string {
	h := sha256.Sum256([]byte(sc.String()))
	return hex.EncodeToString(h[:])
}

// newSnapshotID is a random positive id no previous snapshot has.
func newSnapshotID(prev State) (int64, error) {
	for {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		id := int64(binary.LittleEndian.Uint64(b[:]) & math.MaxInt64)
		if id == 0 || slices.ContainsFunc(prev.Snapshots, func(s Snapshot) bool { return s.ID == id }) {
			continue
		}
		return id, nil
	}
}

func stateSnapshot(s table.Snapshot) Snapshot {
	out := Snapshot{ID: s.SnapshotID, SequenceNumber: s.SequenceNumber, TimestampMS: s.TimestampMs, ManifestList: s.ManifestList}
	if s.ParentSnapshotID != nil {
		out.ParentID = *s.ParentSnapshotID
	}
	if s.SchemaID != nil {
		out.SchemaID = *s.SchemaID
	}
	if s.Summary != nil {
		out.Summary = make(map[string]string, len(s.Summary.Properties)+1)
		maps.Copy(out.Summary, s.Summary.Properties)
		out.Summary["operation"] = string(s.Summary.Operation)
	}
	return out
}

// footerRead is one file read: its DataFile, or why it was skipped.
type footerRead struct {
	obj    Object
	df     iceberg.DataFile
	skip   string
	footer int64
}

// readFooters reads the footers of objs, Limits.Concurrency at a time,
// within Limits.MaxTotalFooterBytes.
func readFooters(ctx context.Context, t Table, sc *iceberg.Schema, props iceberg.Properties, data Files, objs []Object, lim Limits) ([]footerRead, error) {
	out := make([]footerRead, len(objs))
	var total atomic.Int64
	var seen atomic.Int64 // the largest footer (and tail) read so far
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(lim.Concurrency)
	for i, o := range objs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			r := footerRead{obj: o}
			tail, n, err := readTail(gctx, data, o, firstReadFor(seen.Load()), lim.MaxFooterBytes)
			r.footer = n
			if err == nil {
				for l := int64(binary.LittleEndian.Uint32(tail[len(tail)-8:])); ; {
					cur := seen.Load()
					if l <= cur || seen.CompareAndSwap(cur, l) {
						break
					}
				}
			}
			if total.Add(n) > lim.MaxTotalFooterBytes {
				return fmt.Errorf("%w: over %d bytes after %s", ErrBudget, lim.MaxTotalFooterBytes, o.Key)
			}
			if err == nil {
				r.df, err = dataFile(gctx, data.Location(o.Key), o, tail, t, sc, props)
			}
			var se *skipError
			switch {
			case errors.As(err, &se):
				r.skip = se.reason
			case err != nil:
				return err
			}
			out[i] = r
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// writer writes one snapshot's metadata objects.
type writer struct {
	ctx    context.Context
	meta   MetaStore
	prefix string
	sc     *iceberg.Schema
	lim    Limits
	commit uuid.UUID
	n      int // manifests written
}

func (w *writer) get(loc string) ([]byte, error) {
	return w.meta.Get(w.ctx, w.prefix+path.Base(loc), w.lim.MaxMetadataBytes)
}

func (w *writer) manifestList(loc string) ([]iceberg.ManifestFile, error) {
	b, err := w.get(loc)
	if err != nil {
		return nil, err
	}
	ms, err := iceberg.ReadManifestList(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("manifest list %s: %w", loc, err)
	}
	return ms, nil
}

func (w *writer) put(out *bytes.Buffer, mw *iceberg.ManifestWriter) (iceberg.ManifestFile, error) {
	if err := mw.Close(); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-m%d.avro", w.commit, w.n)
	w.n++
	m, err := mw.ToManifestFile(w.meta.Location(w.prefix+name), int64(out.Len()))
	if err != nil {
		return nil, err
	}
	if err := w.meta.Put(w.ctx, w.prefix+name, out.Bytes()); err != nil {
		return nil, err
	}
	return m, nil
}

// added writes the manifest of the files a snapshot adds.
func (w *writer) added(dfs []iceberg.DataFile, snapID int64) (iceberg.ManifestFile, error) {
	var out bytes.Buffer
	mw, err := iceberg.NewManifestWriter(2, &out, *iceberg.UnpartitionedSpec, w.sc, snapID)
	if err != nil {
		return nil, err
	}
	for _, df := range dfs {
		if err := mw.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snapID, nil, nil, df)); err != nil {
			return nil, fmt.Errorf("manifest entry %s: %w", df.FilePath(), err)
		}
	}
	return w.put(&out, mw)
}

// rewrite writes m again with the files at removed DELETED and the other
// live ones EXISTING (entries deleted by an earlier snapshot dropped), and
// returns it with the size and records removed.
func (w *writer) rewrite(m iceberg.ManifestFile, removed []string, snapID int64) (iceberg.ManifestFile, int64, int64, error) {
	b, err := w.get(m.FilePath())
	if err != nil {
		return nil, 0, 0, err
	}
	entries, err := iceberg.ReadManifest(m, bytes.NewReader(b), true)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
	}
	gone := make(map[string]bool, len(removed))
	for _, l := range removed {
		gone[l] = true
	}
	var out bytes.Buffer
	mw, err := iceberg.NewManifestWriter(2, &out, *iceberg.UnpartitionedSpec, w.sc, snapID)
	if err != nil {
		return nil, 0, 0, err
	}
	var size, recs int64
	for _, e := range entries {
		if gone[e.DataFile().FilePath()] {
			size += e.DataFile().FileSizeBytes()
			recs += e.DataFile().Count()
			err = mw.Delete(e)
		} else {
			err = mw.Existing(e)
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("manifest entry %s: %w", e.DataFile().FilePath(), err)
		}
	}
	nm, err := w.put(&out, mw)
	return nm, size, recs, err
}

// putMetadata writes b, a metadata file's JSON, as the version after
// prev's, v<N+1>.metadata.json, and returns its location and number.
func (w *writer) putMetadata(b []byte, prev State) (string, int, error) {
	version := prev.Version + 1
	key := fmt.Sprintf("%sv%d.metadata.json", w.prefix, version)
	if err := w.meta.Put(w.ctx, key, b); err != nil {
		return "", 0, err
	}
	return w.meta.Location(key), version, nil
}

// withLastUpdated returns the metadata JSON b with last-updated-ms at.
func withLastUpdated(b []byte, at time.Time) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	doc["last-updated-ms"] = json.RawMessage(strconv.FormatInt(at.UnixMilli(), 10))
	return json.Marshal(doc)
}

// metadata builds the next metadata: from the previous file when there is
// one (its schemas, snapshots and logs kept), else new like icebergrest's;
// the table's earlier kept schemas listed and its schema current
// (icebergschema.AddSchemas), its name mapping set, and snap, when not
// nil, added with main pointing at it (nil: a change of the schema
// alone, the snapshots as they were).
func (w *writer) metadata(t Table, id uuid.UUID, sc *iceberg.Schema, props iceberg.Properties, prev State, snap *table.Snapshot) (table.Metadata, error) {
	var b *table.MetadataBuilder
	if prev.MetadataLocation != "" {
		raw, err := w.get(prev.MetadataLocation)
		if err != nil {
			return nil, err
		}
		base, err := table.ParseMetadataBytes(raw)
		if err != nil {
			return nil, fmt.Errorf("metadata %s: %w", prev.MetadataLocation, err)
		}
		if b, err = table.MetadataBuilderFromBase(base, prev.MetadataLocation); err != nil {
			return nil, err
		}
	} else {
		var err error
		if b, err = table.NewMetadataBuilder(2); err != nil {
			return nil, err
		}
		if err := b.SetUUID(id); err != nil {
			return nil, err
		}
		if err := b.SetLoc(t.Location); err != nil {
			return nil, err
		}
		if err := icebergschema.AddSchemas(b, t.Earlier, sc); err != nil {
			return nil, err
		}
		spec := iceberg.NewPartitionSpecID(0)
		if err := b.AddPartitionSpec(&spec, true); err != nil {
			return nil, err
		}
		if err := b.SetDefaultSpecID(-1); err != nil {
			return nil, err
		}
		order := table.UnsortedSortOrder
		if err := b.AddSortOrder(&order); err != nil {
			return nil, err
		}
		if err := b.SetDefaultSortOrderID(table.UnsortedSortOrderID); err != nil {
			return nil, err
		}
	}
	if err := icebergschema.AddSchemas(b, t.Earlier, sc); err != nil {
		return nil, err
	}
	if err := b.SetProperties(props); err != nil {
		return nil, err
	}
	if snap == nil {
		return b.Build()
	}
	schemaID := b.CurrentSchema().ID
	snap.SchemaID = &schemaID
	if err := b.AddSnapshot(snap); err != nil {
		return nil, err
	}
	if err := b.SetSnapshotRef(table.MainBranch, snap.SnapshotID, table.BranchRef); err != nil {
		return nil, err
	}
	return b.Build()
}
