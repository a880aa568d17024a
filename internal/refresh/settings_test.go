package refresh_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
)

// allowPrefixes sets tenant's allowed prefixes through the catalog (which
// bumps the change counter) and returns the settings item as stored.
func allowPrefixes(t *testing.T, c *catalog.Catalog, st metastore.Store, tenant string, prefixes ...string) []byte {
	t.Helper()
	ctx := context.Background()
	if _, err := c.UpdateTenantSettings(ctx, tenant, "ops", func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = prefixes
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	raw, err := st.Get(ctx, catalog.TenantKey(tenant))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// publishedSettings are tenant's settings in the published snapshot.
func publishedSettings(t *testing.T, blobs blobstore.Store, tenant string) []byte {
	t.Helper()
	cur, err := blobs.Get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	seg, err := load(t, blobs, cur.Data).Tenant(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Release()
	return seg.Settings()
}

// An operator's settings change (catalog.UpdateTenantSettings) reaches the
// published snapshot through its stream batch, rewriting its tenant's
// segment alone, and through a scheduled run, which sees the counter move.
func TestSettingsChangeReachesTheSnapshot(t *testing.T) {
	t.Parallel()
	t.Run("stream batch", func(t *testing.T) {
		t.Parallel()
		c, st, p, blobs, clk := counted(t)
		registerIn(t, c, "acme", "a", 1)
		registerIn(t, c, "globex", "g", 2)
		run(t, p)
		if got := publishedSettings(t, blobs, "acme"); got != nil {
			t.Fatalf("acme settings before any: %q", got)
		}
		globex := manifestEntry(t, blobs, "globex")
		want := allowPrefixes(t, c, st.Store, "acme", "s3://data/acme/")
		clk.t = clk.t.Add(time.Second)
		st.scans = 0
		res, err := p.Apply(context.Background(), []string{catalog.TenantKey("acme")})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Incremental || st.scans != 0 || res.Outcome != refresh.Published || res.Tenants != 1 || res.SegmentsWritten != 1 || res.Reads != 1 {
			t.Fatalf("apply = %+v with %d scans; want incremental, published, acme's segment alone written, 1 read", res, st.scans)
		}
		if got := publishedSettings(t, blobs, "acme"); !bytes.Equal(got, want) {
			t.Fatalf("acme settings %q, want %q", got, want)
		}
		if e := manifestEntry(t, blobs, "globex"); e.Address != globex.Address || e.Generation != globex.Generation {
			t.Fatalf("globex entry %+v, want it unchanged, %+v", e, globex)
		}
		// The batch accounted for the settings' bump: the next scheduled
		// run is idle.
		if res := run(t, p); res.Scanned || res.Outcome != refresh.Unchanged {
			t.Fatalf("scheduled run after the batch = %+v, want idle", res)
		}
	})
	t.Run("scheduled run", func(t *testing.T) {
		t.Parallel()
		c, st, p, blobs, clk := counted(t)
		registerIn(t, c, "acme", "a", 1)
		allowPrefixes(t, c, st.Store, "acme", "s3://data/acme/")
		run(t, p)
		want := allowPrefixes(t, c, st.Store, "acme", "s3://data/acme/", "s3://data/shared/")
		clk.t = clk.t.Add(time.Second)
		res := run(t, p)
		if !res.Scanned || res.Outcome != refresh.Published {
			t.Fatalf("scheduled run after a settings change = %+v, want a published scan", res)
		}
		if got := publishedSettings(t, blobs, "acme"); !bytes.Equal(got, want) {
			t.Fatalf("acme settings %q, want %q", got, want)
		}
	})
}
