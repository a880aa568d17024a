// Package tablesync takes a table's file snapshot for the registration
// API's POST …/tables/{t}/sync (registerapi.Syncer): the table's files
// reached through the vending Door (the one door to table data: a local
// path under local mode's data root, or table-scoped credentials for
// s3://), Iceberg metadata written for them by internal/icebergsync under
// lake's own metadata store, and the result recorded in the catalog
// (catalog.PutIcebergState), from where refresh carries it into the
// snapshot and discovery's Iceberg REST catalog serves it from memory.
package tablesync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/preview"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Syncer serves registerapi.Syncer. Its fields are set once; it is safe for
// concurrent use: the syncs of one table in one Syncer run one at a time
// (the second starts from what the first recorded), and of two in
// different processes the second to write a metadata version finds it
// taken and fails, nothing lost.
type Syncer struct {
	// Catalog reads the tenant's allowed prefixes and the last sync, and
	// records the new one.
	Catalog *catalog.Catalog
	// Door gives access to the table's files.
	Door *vending.Door
	// Meta is lake's own metadata store; each table's files go under
	// MetadataPrefix(uuid): tables/<table-uuid>/metadata/, a shape the
	// vended credentials of that table (and only it) may read.
	Meta icebergsync.MetaStore
	// S3Config is the AWS configuration the S3 client that reads an s3://
	// table's files is built from (its endpoint settings: the SDK's
	// AWS_ENDPOINT_URL_S3); its credentials are the table's vended ones,
	// its region theirs when they name one. S3PathStyle is path-style
	// addressing (S3-compatible servers).
	S3Config    aws.Config
	S3PathStyle bool
	// Limits bound each sync (zero: icebergsync's defaults).
	Limits icebergsync.Limits
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	stripesOnce sync.Once
	seed        maphash.Seed
	stripes     [syncStripes]chan struct{} // lockTable's
}

// Sync takes ref's file snapshot (registerapi.Syncer). A refused location
// is the Door's error (vending.Code classifies it); a table dropped or
// registered again meanwhile, catalog.ErrConflict.
func (s *Syncer) Sync(ctx context.Context, who string, ref catalog.TableRef, reg catalog.Registration) (wire.SyncResult, error) {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	out := wire.SyncResult{Tenant: ref.Tenant, Namespace: ref.Namespace, Table: ref.Name}
	schema, err := reg.Schema()
	if err != nil {
		return out, fmt.Errorf("the table has no schema to check its files against: %w", err)
	}
	ids, _ := reg.FieldIDs()
	settings, err := s.Catalog.TenantSettings(ctx, ref.Tenant)
	if err != nil {
		return out, err
	}
	access, err := s.Door.Credentials(ctx, vending.TableRequest{Who: who, Tenant: ref.Tenant, Namespace: ref.Namespace, Table: ref.Name,
		Location: reg.Location(), Allowed: settings.AllowedPrefixes})
	if err != nil {
		return out, err
	}
	data, err := preview.FilesFor(access, s.S3Config, s.S3PathStyle)
	if err != nil {
		return out, err
	}
	unlock, err := s.lockTable(ctx, ref)
	if err != nil {
		return out, err
	}
	defer unlock()
	var prev icebergsync.State
	stored, had, err := s.Catalog.IcebergState(ctx, ref)
	if err != nil {
		return out, err
	}
	had = had && stored.CreationID == reg.CreationID()
	if had && len(stored.Sync) > 0 {
		if err := json.Unmarshal(stored.Sync, &prev); err != nil {
			prev = icebergsync.State{} // a record this version cannot read: start again
		}
	}
	earlier, err := EarlierSchemas(ctx, s.Catalog, ref, reg)
	if err != nil {
		return out, err
	}
	uuid := icebergrest.TableUUID(ref.Tenant, ref.Namespace, ref.Name, reg.CreationID())
	prefix := MetadataPrefix(uuid)
	res, err := icebergsync.Sync(ctx, icebergsync.Table{Tenant: ref.Tenant, Namespace: ref.Namespace, Name: ref.Name, UUID: uuid,
		Location: access.Location, Schema: schema, IDs: ids, SchemaID: int(reg.Version()), Earlier: earlier}, prev, data, s.Meta, prefix, s.Limits, now)
	if err != nil {
		return out, err
	}
	out.Changed, out.MetadataLocation, out.SnapshotID = res.Changed, res.MetadataLocation, res.SnapshotID
	out.Files, out.Records, out.Added, out.Removed = res.Files, res.Records, res.Added, res.Removed
	for _, k := range res.Skipped {
		out.Skipped = append(out.Skipped, wire.SyncSkip{Key: k.Key, Reason: k.Reason})
	}
	if res.State.MetadataLocation == "" {
		return out, nil // no file, no snapshot: nothing to serve
	}
	if !res.Changed && had && stored.MetadataLocation == res.State.MetadataLocation {
		if stored.Version == reg.Version() {
			return out, nil // recorded as it is
		}
		// The registration changed but for its schema (a description,
		// properties, an undrop) and its files did not: the same
		// metadata is recorded for the new version. (A new schema is a
		// new metadata file: icebergsync writes it.)
		stored.Version, stored.SyncedAt = reg.Version(), now().UTC()
		if err := s.Catalog.PutIcebergState(ctx, ref, stored); err != nil && !errors.Is(err, catalog.ErrConflict) {
			return out, err
		}
		return out, nil
	}
	// The metadata file of the current version, as stored, is what
	// discovery serves (read back once here, never on a request).
	md, err := s.Meta.Get(ctx, prefix+fmt.Sprintf("v%d.metadata.json", res.State.Version), catalog.MaxIcebergStateBytes)
	if err != nil {
		return out, fmt.Errorf("read back the metadata file %s: %w", res.State.MetadataLocation, err)
	}
	record, err := json.Marshal(res.State)
	if err != nil {
		return out, err
	}
	err = s.Catalog.PutIcebergState(ctx, ref, catalog.IcebergState{CreationID: reg.CreationID(), Version: reg.Version(),
		MetadataLocation: res.State.MetadataLocation, Metadata: md, SyncedAt: now().UTC(), Sync: record})
	if err != nil && !(errors.Is(err, catalog.ErrConflict) && !res.Changed) {
		return out, err
	}
	return out, nil
}

// MetadataPrefix is where a table's Iceberg metadata lives in lake's
// metadata store: tables/<table-uuid>/metadata/. The UUID names the table
// and its registration (icebergrest.TableUUID), holds only hex and '-'
// (a key, a session tag value and an IAM resource alike), and changes when
// the table is dropped and registered again.
func MetadataPrefix(uuid string) string { return "tables/" + uuid + "/metadata/" }
