package snapshot_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

// A row's Iceberg state is carried verbatim, through CopyTenant too; the
// writer refuses one over the bound and writes an empty one as none.
func TestIcebergStateColumn(t *testing.T) {
	t.Parallel()
	rows := fixtureRows(t)
	acme := rows["acme"]
	for i := range acme.tables {
		if acme.tables[i].Name == "customers" {
			acme.tables[i].IcebergState = []byte{}
		}
	}
	b := write(t, snapshot.WriterOptions{Generation: 3, CreatedAt: t0}, rows)
	r := snapshottest.Open(t, b.Blob)
	w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 4, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Entries() {
		if err := w.CopyTenant(r, e.Tenant); err != nil {
			t.Fatal(err)
		}
	}
	copied, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := copied.Blob()
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range []*snapshot.Reader{r, snapshottest.Open(t, blob)} {
		seg := snapshottest.Tenant(t, rd, "acme")
		for i, name := range snapshottest.Names(seg) {
			want := fixtureIcebergState(t, name)
			if got := seg.Tables.IcebergStateOf(i); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("%s: iceberg state %q, want %q", name, got, want)
			}
		}
	}

	rows = fixtureRows(t)
	rows["acme"].tables[0].IcebergState = []byte(strings.Repeat("x", snapshot.MaxIcebergStateBytes+1))
	w, err = snapshot.NewWriter(snapshot.WriterOptions{Generation: 1, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddTenant("acme", rows["acme"].tables, nil); err == nil || !strings.Contains(err.Error(), "iceberg state") {
		t.Fatalf("AddTenant of a state over the bound: %v, want an error", err)
	}
	if _, err := w.Finish(); err == nil {
		t.Fatal("Finish after a refused tenant succeeded")
	}
}
