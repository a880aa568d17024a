package discovery

import (
	"context"

	"github.com/lake-catalog/lake/pkg/snapshot"
)

// blobIndex serves a View from an opened snapshot blob: the manifest
// answers tenant lookups, and a tenant's segment is decompressed and
// decoded from memory when the tenant is prepared. Its record batches are
// served as they are: no rows are built in between.
//
// A degraded tenant (degraded.go) has no segment attached to blob: it
// serves from lastGood (a one-tenant reader of its last good state, whose
// entry it answers) when the task had one, else its requests are refused
// before they reach the index (View.unavailable).
type blobIndex struct {
	blob     *snapshot.Reader
	lastGood map[string]*snapshot.Reader
	degraded map[string]degradedTenant
}

func (x blobIndex) tenant(name string) (snapshot.Entry, bool) {
	if r, ok := x.lastGood[name]; ok {
		return r.Entry(name)
	}
	return x.blob.Entry(name)
}

// segment decodes a tenant's segment from what the readers hold: they are
// opened without a Fetch, so Tenant does no I/O and needs no context.
func (x blobIndex) segment(name string) (*snapshot.Segment, error) {
	r := x.blob
	if lg, ok := x.lastGood[name]; ok {
		r = lg
	}
	return r.Tenant(context.Background(), name)
}

// stored is a tenant's verified stored segment as x serves it (false for a
// degraded tenant without a last good state).
func (x blobIndex) stored(name string) (snapshot.Entry, []byte, bool) {
	r := x.blob
	if lg, ok := x.lastGood[name]; ok {
		r = lg
	}
	e, ok := r.Entry(name)
	if !ok {
		return e, nil, false
	}
	b, err := r.Stored(name)
	return e, b, err == nil
}
