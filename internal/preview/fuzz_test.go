package preview_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/lake-catalog/lake/internal/preview"
)

// FuzzPreview reads any bytes as a table's one file: Read must not panic
// (arrow-go's panics on corrupt input become errors), must not fetch past
// the byte cap and must not return more rows than the limit.
func FuzzPreview(f *testing.F) {
	good := writeFile(f, "", "", schema, 7, rowsFrom(0, 30, 4))
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(append([]byte("PAR1"), good[len(good)-200:]...))
	for _, at := range []int{4, 40, len(good) / 2, len(good) - 60, len(good) - 9} {
		b := append([]byte(nil), good...)
		b[at] ^= 0xff
		f.Add(b)
	}
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	// Dictionary pages and codecs, data pages of both versions.
	f.Add(writeFile(f, "", "", schema, 7, rowsFrom(0, 30, 4), parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(true)))
	f.Add(writeFile(f, "", "", schema, 7, rowsFrom(0, 30, 4), parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageVersion(parquet.DataPageV2)))
	lim := preview.Limits{MaxBytes: 1 << 20, MaxRows: 20, MaxFooterBytes: 64 << 10}
	f.Fuzz(func(t *testing.T, data []byte) {
		files := &memFiles{objs: map[string][]byte{"p.parquet": data}, keys: []string{"p.parquet"}}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		batches, st, err := preview.Read(context.Background(), files,
			preview.Request{Table: "t", Schema: schema, Limit: 15, Filters: []preview.Filter{{Column: 1, Op: preview.OpIsNotNull}}}, lim, mem)
		rows := 0
		for _, b := range batches {
			rows += int(b.NumRows())
			b.Release()
		}
		if err == nil && rows != int(st.Rows) {
			t.Fatalf("got %d rows, stats say %d", rows, st.Rows)
		}
		if rows > 15 || st.Rows > 15 || st.BytesRead > lim.MaxBytes || st.FilesOpened > 1 {
			t.Fatalf("over the caps: %d rows, %+v", rows, st)
		}
	})
}
