package tablesync

import (
	"bytes"
	"context"
	"slices"

	"github.com/apache/iceberg-go"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// EarlierSchemas returns the Iceberg schemas of reg's earlier kept
// versions (catalog.History below reg's version), oldest first, each with
// its version as schema id and the field ids it recorded
// (icebergschema.ToIceberg): icebergsync.Table.Earlier. A version whose
// schema bytes are the version before it's is left out (Iceberg lists a
// schema once), and so is one without a schema or whose schema Iceberg
// cannot represent (its table could not be served then either). A
// registration made before creation ids has no history: none. It reads
// the history a page at a time, one store read a kept version.
func EarlierSchemas(ctx context.Context, cat *catalog.Catalog, ref catalog.TableRef, reg catalog.Registration) ([]*iceberg.Schema, error) {
	if reg.CreationID() == "" {
		return nil, nil
	}
	var kept []catalog.Version // newest first
	for before := reg.Version(); before > 1; {
		vs, next, err := cat.History(ctx, ref, reg.CreationID(), before, catalog.MaxHistoryPage)
		if err != nil {
			return nil, err
		}
		kept = append(kept, vs...)
		if next == 0 || next >= before {
			break
		}
		before = next
	}
	var out []*iceberg.Schema
	var last []byte
	for _, v := range slices.Backward(kept) {
		raw := v.Registration.SchemaIPC()
		if raw == nil || bytes.Equal(raw, last) {
			continue
		}
		last = raw
		sc, err := v.Registration.Schema()
		if err != nil {
			continue
		}
		ids, ok := v.Registration.FieldIDs()
		if !ok {
			continue
		}
		isc, err := icebergschema.ToIceberg(sc, ids, int(v.Version))
		if err != nil {
			continue
		}
		out = append(out, isc)
	}
	return out, nil
}
