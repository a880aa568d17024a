package snapshot_test

import (
	"errors"
	"testing"

	"github.com/lake-catalog/lake/pkg/snapshot"
	"github.com/lake-catalog/lake/pkg/snapshot/snapshottest"
)

// The writer's first error sticks, as pebble's sstable.Writer's does: every
// later AddTenant, CopyTenant and AddEntry returns it and Finish reports it,
// so a caller that ignores a refused tenant cannot finish a blob without it.
func TestWriterErrorSticks(t *testing.T) {
	t.Parallel()
	rows := func() []snapshot.Table {
		return []snapshot.Table{{Namespace: "n", Name: "t", Location: "/x", TableType: "TABLE"}}
	}
	// The source of the later calls' tenants: y (copied) and z (referenced).
	src, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"y", "z"} {
		if err := src.AddTenant(name, rows(), nil); err != nil {
			t.Fatal(err)
		}
	}
	written, err := src.Finish()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := written.Blob()
	if err != nil {
		t.Fatal(err)
	}
	r := snapshottest.Open(t, blob)
	z, _ := r.Entry("z")

	for _, tc := range []struct {
		name  string
		first func(w *snapshot.Writer) error
	}{
		{"a bad tenant name", func(w *snapshot.Writer) error { return w.AddTenant("a/b", rows(), nil) }},
		{"two tables of one name", func(w *snapshot.Writer) error { return w.AddTenant("a", append(rows(), rows()...), nil) }},
		{"a row published after the blob", func(w *snapshot.Writer) error {
			tables := rows()
			tables[0].Published = 9
			return w.AddTenant("a", tables, nil)
		}},
		{"tenants out of order", func(w *snapshot.Writer) error {
			if err := w.AddTenant("b", rows(), nil); err != nil {
				t.Fatal(err)
			}
			return w.AddTenant("a", rows(), nil)
		}},
		{"a copy of a tenant the reader lacks", func(w *snapshot.Writer) error { return w.CopyTenant(r, "nobody") }},
		{"a reference to an empty entry", func(w *snapshot.Writer) error { return w.AddEntry(snapshot.Entry{Tenant: "a"}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := snapshot.NewWriter(snapshot.WriterOptions{Generation: 2})
			if err != nil {
				t.Fatal(err)
			}
			first := tc.first(w)
			if first == nil {
				t.Fatal("first call: got nil error, want a refusal")
			}
			// Each call would succeed on a writer that had not failed.
			if err := w.AddTenant("x", rows(), nil); !errors.Is(err, first) {
				t.Errorf("AddTenant after the refusal: got %v, want the first error %v", err, first)
			}
			if err := w.CopyTenant(r, "y"); !errors.Is(err, first) {
				t.Errorf("CopyTenant after the refusal: got %v, want the first error %v", err, first)
			}
			if err := w.AddEntry(z); !errors.Is(err, first) {
				t.Errorf("AddEntry after the refusal: got %v, want the first error %v", err, first)
			}
			if out, err := w.Finish(); out != nil || !errors.Is(err, first) {
				t.Errorf("Finish after the refusal: got a blob %v, error %v; want no blob and the first error %v", out != nil, err, first)
			}
		})
	}
}
