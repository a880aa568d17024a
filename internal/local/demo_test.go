package local

import (
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// Every demo table has a valid, unique reference and a schema the catalog
// accepts and keeps exactly, so the first `lake local` never fails seeding.
func TestDemoCatalog(t *testing.T) {
	seen := map[catalog.TableRef]bool{}
	for _, tbl := range demoCatalog() {
		if err := tbl.Ref.Validate(); err != nil {
			t.Errorf("%s: %v", tbl.Ref, err)
		}
		if seen[tbl.Ref] {
			t.Errorf("%s: listed twice", tbl.Ref)
		}
		seen[tbl.Ref] = true
		if _, err := catalog.EncodeSchema(tbl.Schema); err != nil {
			t.Errorf("%s: %v", tbl.Ref, err)
		}
	}
	if got, want := len(seen), 6; got != want {
		t.Fatalf("got %d demo tables, want %d", got, want)
	}
	if got := everyTypeSchema().NumFields(); got < 60 {
		t.Fatalf("every_type has %d fields, want every type (at least 60)", got)
	}
}
