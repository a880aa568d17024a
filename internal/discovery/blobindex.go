package discovery

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// blobIndex serves a View from a verified blob: the index answers tenant
// lookups, and a tenant's segment is decompressed and decoded from memory
// when the tenant is prepared.
type blobIndex struct{ blob *catalog.Blob }

func (x blobIndex) tenant(name string) (catalog.TenantInfo, bool) {
	return x.blob.Tenant(name)
}

func (x blobIndex) segment(name string) (segmentColumns, error) {
	return columnsOf(func(fn func(*catalog.Table) error) error { return x.blob.VisitTenant(name, fn) })
}

// columnsOf lays out a tenant's tables, straight from the decoded segment
// (walk is Blob.VisitTenant), as the columns serving reads: each distinct
// schema stored once, describe's columns beside the names (properties
// encoded once as JSON), no table structs in between.
func columnsOf(walk func(func(*catalog.Table) error) error) (segmentColumns, error) {
	mem := memory.DefaultAllocator
	nsb, nb, tb := array.NewStringBuilder(mem), array.NewStringBuilder(mem), array.NewStringBuilder(mem)
	rb := array.NewInt32Builder(mem)
	sb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	lb, db := array.NewStringBuilder(mem), array.NewStringBuilder(mem)
	vb, cb, ub := array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	pb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	builders := []array.Builder{nsb, nb, tb, rb, sb, lb, db, vb, cb, ub, pb}
	defer func() {
		for _, b := range builders {
			b.Release()
		}
	}()
	seen := map[string]int32{}
	err := walk(func(t *catalog.Table) error {
		nsb.Append(t.Ref.Namespace)
		nb.Append(t.Ref.Name)
		tb.Append(t.TableType)
		lb.Append(t.Location)
		vb.Append(t.Version)
		cb.Append(t.CreatedAt.UnixMicro())
		ub.Append(t.UpdatedAt.UnixMicro())
		db.Append(t.Description)
		if len(t.Properties) == 0 {
			pb.AppendNull()
		} else {
			j, err := json.Marshal(t.Properties) // sorted keys
			if err != nil {
				return err
			}
			pb.Append(j)
		}
		if t.SchemaIPC == nil {
			rb.AppendNull()
			return nil
		}
		r, ok := seen[string(t.SchemaIPC)]
		if !ok {
			r = int32(len(seen))
			seen[string(t.SchemaIPC)] = r
			sb.Append(t.SchemaIPC)
		}
		rb.Append(r)
		return nil
	})
	if err != nil {
		return segmentColumns{}, err
	}
	return segmentColumns{
		Namespace: nsb.NewStringArray(), Name: nb.NewStringArray(), TableType: tb.NewStringArray(),
		SchemaRef: rb.NewInt32Array(), Schemas: sb.NewBinaryArray(),
		Location: lb.NewStringArray(), Description: db.NewStringArray(), Version: vb.NewInt64Array(),
		CreatedAt: cb.NewInt64Array(), UpdatedAt: ub.NewInt64Array(), Properties: pb.NewBinaryArray(),
	}, nil
}
