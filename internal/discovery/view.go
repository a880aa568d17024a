package discovery

import (
	"time"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/snapshot"
)

// View is one loaded snapshot blob: its header figures and its tenant
// index. Tenants are prepared from it on demand (see Service). A View is
// immutable and safe for concurrent use.
type View struct {
	Generation uint64
	CreatedAt  time.Time
	Counts     catalog.Counts
	// Tenants is how many tenants the blob holds.
	Tenants int
	index   tenantIndex
}

// TenantTables is how many tables the tenant has in this view (0 when none).
func (v *View) TenantTables(tenant string) int {
	info, _ := v.index.tenant(tenant)
	return info.Tables
}

// TenantGeneration is the generation in which the tenant's tables last
// changed in this view (0 when it has none): what a tenant may learn of
// the snapshot without learning when other tenants write.
func (v *View) TenantGeneration(tenant string) uint64 {
	info, _ := v.index.tenant(tenant)
	return info.Generation
}

// tenantIndex is what a View serves from: the blob's tenant index and its
// segments. Both methods are safe for concurrent use and do no I/O.
type tenantIndex interface {
	// tenant returns the blob index's entry of a tenant; false when the
	// blob holds neither tables nor tombstones of it.
	tenant(name string) (snapshot.Entry, bool)
	// segment decodes and checks a tenant's segment (memory only).
	segment(name string) (*snapshot.Segment, error)
}
