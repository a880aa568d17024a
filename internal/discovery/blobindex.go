package discovery

import (
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// blobIndex serves a View from an opened snapshot blob: the manifest
// answers tenant lookups, and a tenant's segment is decompressed and
// decoded from memory when the tenant is prepared. Its record batches are
// served as they are: no rows are built in between.
type blobIndex struct{ blob *snapshot.Reader }

func (x blobIndex) tenant(name string) (snapshot.Entry, bool) { return x.blob.Entry(name) }

func (x blobIndex) segment(name string) (*snapshot.Segment, error) { return x.blob.Tenant(name) }
