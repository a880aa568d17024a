package icebergrest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// uuidSpace is the name space of the table-uuids derived for tables whose
// Source gives none.
var uuidSpace = uuid.MustParse("5b0e1c55-8f7e-4f0b-9a43-1a6b3c0de7a1")

// metadataLocation is loadTable's metadata-location while a table has no
// metadata file: a stable name under the table's location for its version.
// It names no object; it is under the location because iceberg-go's client
// picks its file IO by this location's scheme, even to scan a table
// without snapshots (a lake:// name fails the scan: "io scheme not
// registered"). A table without a location gets a lake:// name.
func metadataLocation(tenant, ns, name string, t Table) string {
	file := "metadata/v" + strconv.FormatInt(t.Version, 10) + ".lake.metadata.json"
	if t.Location == "" {
		return "lake://" + url.PathEscape(tenant) + "/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/" + file
	}
	return strings.TrimSuffix(t.Location, "/") + "/" + file
}

// TableUUID is a table's Iceberg table-uuid: a name-based (SHA-1) UUID of
// its tenant, namespace, name and creation id, so it is the same in every
// task, restart, refresh and sync, and differs once the table is dropped
// and registered again. Discovery serves it and a sync writes it.
func TableUUID(tenant, namespace, name, creationID string) string {
	return uuid.NewSHA1(lakeUUIDSpace, []byte(tenant+"\x00"+namespace+"\x00"+name+"\x00"+creationID)).String()
}

// lakeUUIDSpace is the name space of lake's table UUIDs.
var lakeUUIDSpace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/lake-catalog/lake/iceberg-table"))

// BuildMetadata is what loadTable answers for a table the Source gives
// without a metadata file (Table.Metadata nil): the metadata built from its
// schema and the stable location it is named by. A Source may call it to
// keep the answer (discovery keeps it in its one cache) and give it back
// as Table.MetadataLocation and Table.Metadata, answered verbatim.
func BuildMetadata(tenant, ns, name string, t Table) (location string, metadata []byte, err error) {
	md, err := buildMetadata(tenant, ns, name, t)
	if err != nil {
		return "", nil, err
	}
	return metadataLocation(tenant, ns, name, t), md, nil
}

// buildMetadata returns the TableMetadata JSON of t, built with
// iceberg-go's metadata builder: format version 2 (3 when the schema holds
// types version 2 cannot), the earlier kept versions' schemas and the
// current one (current-schema-id), unpartitioned, unsorted, no snapshots
// (current-snapshot-id absent).
func buildMetadata(tenant, ns, name string, t Table) ([]byte, error) {
	if t.Schema == nil {
		return nil, fmt.Errorf("icebergrest: table %s/%s/%s has no schema", tenant, ns, name)
	}
	md, err := buildVersion(2, tenant, ns, name, t)
	if err != nil {
		var err3 error
		if md, err3 = buildVersion(3, tenant, ns, name, t); err3 != nil {
			return nil, fmt.Errorf("icebergrest: metadata of %s/%s/%s: %w", tenant, ns, name, err)
		}
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("icebergrest: metadata of %s/%s/%s: %w", tenant, ns, name, err)
	}
	// The builder sets last-updated-ms to now and last-column-id to the
	// schema's highest id; the table's own time and counter are the truth.
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("icebergrest: metadata of %s/%s/%s: %w", tenant, ns, name, err)
	}
	if !t.UpdatedAt.IsZero() {
		doc["last-updated-ms"] = json.RawMessage(strconv.FormatInt(t.UpdatedAt.UnixMilli(), 10))
	}
	if t.LastColumnID > md.LastColumnID() {
		doc["last-column-id"] = json.RawMessage(strconv.Itoa(t.LastColumnID))
	}
	return json.Marshal(doc)
}

func buildVersion(formatVersion int, tenant, ns, name string, t Table) (table.Metadata, error) {
	b, err := table.NewMetadataBuilder(formatVersion)
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(t.UUID)
	if err != nil || id == uuid.Nil {
		id = uuid.NewSHA1(uuidSpace, []byte(tenant+"\x00"+ns+"\x00"+name))
	}
	if err := b.SetUUID(id); err != nil {
		return nil, err
	}
	if err := b.SetLoc(t.Location); err != nil {
		return nil, err
	}
	if err := icebergschema.AddSchemas(b, t.Earlier, t.Schema); err != nil {
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
	if err := b.SetProperties(properties(t)); err != nil {
		return nil, err
	}
	return b.Build()
}

// properties are t's properties without Iceberg's reserved ones, with the
// description as "comment" and the name mapping.
func properties(t Table) iceberg.Properties {
	p := make(iceberg.Properties, len(t.Properties)+2)
	maps.Copy(p, t.Properties)
	for _, k := range table.ReservedProperties {
		delete(p, k)
	}
	if t.Description != "" {
		p["comment"] = t.Description
	}
	if t.NameMapping != nil {
		p[table.DefaultNameMappingKey] = string(t.NameMapping)
	}
	return p
}
