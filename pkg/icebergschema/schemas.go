package icebergschema

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// AddSchemas adds to b the schemas of a table's earlier kept versions,
// oldest first, and then its current schema, which it makes current: the
// schema list of the metadata lake builds (discovery, for a table never
// synced) and writes (a sync) alike. The builder keeps an equal schema
// once, under the first one's id (current-schema-id is that id when the
// current schema equals an earlier one), and gives a schema whose id is
// taken by another schema the next free id. Each schema is copied: the
// builder writes its id, and the callers' schemas may be shared. Schemas
// already in b stay.
func AddSchemas(b *table.MetadataBuilder, earlier []*iceberg.Schema, current *iceberg.Schema) error {
	for _, sc := range earlier {
		if err := b.AddSchema(iceberg.NewSchemaWithIdentifiers(sc.ID, sc.IdentifierFieldIDs, sc.Fields()...)); err != nil {
			return fmt.Errorf("icebergschema: earlier schema %d: %w", sc.ID, err)
		}
	}
	if err := b.AddSchema(iceberg.NewSchemaWithIdentifiers(current.ID, current.IdentifierFieldIDs, current.Fields()...)); err != nil {
		return fmt.Errorf("icebergschema: schema %d: %w", current.ID, err)
	}
	return b.SetCurrentSchemaID(-1)
}
