package discovery

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// snapshotIndex serves a decoded v1 snapshot (interim until blob v2).
type snapshotIndex struct {
	snap  *catalog.Snapshot
	infos map[string]tenantInfo
}

func newSnapshotIndex(snap *catalog.Snapshot) *snapshotIndex {
	x := &snapshotIndex{snap: snap, infos: map[string]tenantInfo{}}
	for _, t := range snap.Tenants() {
		h := sha256.New()
		tables := snap.Tenant(t)
		for _, tb := range tables {
			for _, s := range []string{tb.Ref.Namespace, tb.Ref.Name, tb.TableType, string(tb.SchemaIPC)} {
				_ = binary.Write(h, binary.LittleEndian, uint64(len(s)))
				h.Write([]byte(s))
			}
		}
		var sum [32]byte
		h.Sum(sum[:0])
		x.infos[t] = tenantInfo{Tables: len(tables), Hash: sum, Generation: snap.Generation, ChangedAt: snap.CreatedAt}
	}
	return x
}

func (x *snapshotIndex) tenant(name string) (tenantInfo, bool) {
	i, ok := x.infos[name]
	return i, ok
}

func (x *snapshotIndex) segment(name string) (segmentColumns, error) {
	mem := memory.DefaultAllocator
	tables := x.snap.Tenant(name)
	nsb, nb, tb := array.NewStringBuilder(mem), array.NewStringBuilder(mem), array.NewStringBuilder(mem)
	rb := array.NewInt32Builder(mem)
	sb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	seen := map[string]int32{}
	for _, t := range tables {
		nsb.Append(t.Ref.Namespace)
		nb.Append(t.Ref.Name)
		tb.Append(t.TableType)
		if t.SchemaIPC == nil {
			rb.AppendNull()
			continue
		}
		r, ok := seen[string(t.SchemaIPC)]
		if !ok {
			r = int32(len(seen))
			seen[string(t.SchemaIPC)] = r
			sb.Append(t.SchemaIPC)
		}
		rb.Append(r)
	}
	return segmentColumns{
		Namespace: nsb.NewStringArray(), Name: nb.NewStringArray(), TableType: tb.NewStringArray(),
		SchemaRef: rb.NewInt32Array(), Schemas: sb.NewBinaryArray(),
	}, nil
}
