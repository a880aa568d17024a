package discovery

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// blobIndex serves a View from a verified blob: the index answers tenant
// lookups, and a tenant's segment is decompressed and decoded from memory
// when the tenant is prepared.
type blobIndex struct{ blob *catalog.Blob }

func (x blobIndex) tenant(name string) (tenantInfo, bool) {
	t, ok := x.blob.Tenant(name)
	if !ok {
		return tenantInfo{}, false
	}
	return tenantInfo{Tables: t.Tables, Hash: t.Hash, Generation: t.Generation, ChangedAt: t.ChangedAt}, true
}

func (x blobIndex) segment(name string) (segmentColumns, error) {
	return columnsOf(func(fn func(*catalog.Table) error) error { return x.blob.VisitTenant(name, fn) })
}

// columnsOf lays out a tenant's tables, straight from the decoded segment
// (walk is Blob.VisitTenant), as the columns serving reads: each distinct
// schema stored once, no table structs in between.
func columnsOf(walk func(func(*catalog.Table) error) error) (segmentColumns, error) {
	mem := memory.DefaultAllocator
	nsb, nb, tb := array.NewStringBuilder(mem), array.NewStringBuilder(mem), array.NewStringBuilder(mem)
	rb := array.NewInt32Builder(mem)
	sb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer func() {
		nsb.Release()
		nb.Release()
		tb.Release()
		rb.Release()
		sb.Release()
	}()
	seen := map[string]int32{}
	err := walk(func(t *catalog.Table) error {
		nsb.Append(t.Ref.Namespace)
		nb.Append(t.Ref.Name)
		tb.Append(t.TableType)
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
	}, nil
}
