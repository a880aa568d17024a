package discovery_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// recordingAssumer stands in for STS and keeps every AssumeInput by the
// table its session tags name.
type recordingAssumer struct {
	mu    sync.Mutex
	calls map[string][]vending.AssumeInput
}

func (a *recordingAssumer) AssumeRole(_ context.Context, in vending.AssumeInput) (vending.Credentials, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, tag := range in.Tags {
		if tag.Key == vending.TagTable {
			a.calls[tag.Value] = append(a.calls[tag.Value], in)
		}
	}
	return vending.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "token", Expiration: time.Now().Add(in.Duration)}, nil
}

func (a *recordingAssumer) of(table string) []vending.AssumeInput {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls[table])
}

// A synced table's credentials, from lake.credentials and from the Iceberg
// REST source alike, read its Iceberg metadata prefix in lake's metadata
// bucket too (one read-only grant, named by session tags), even though the
// bucket is lake's own and outside the tenant's allowed prefixes; a table
// without a current state (never synced, updated since, a local metadata
// file, a file outside its own prefix) gets its data's grant alone.
func TestCredentialsCarrySyncedMetadata(t *testing.T) {
	t.Parallel()
	a := &recordingAssumer{calls: map[string][]vending.AssumeInput{}}
	v, err := vending.New(a, vending.NewGuard([]string{"lake-snapshots", "lake-iceberg"}), vending.Options{RoleARN: "arn:aws:iam::123456789012:role/reader"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, discovery.Options{Door: &vending.Door{Vendor: v}})
	ctx := context.Background()
	if _, err := e.cat.UpdateTenantSettings(ctx, "acme", "ops", func(s *catalog.TenantSettings) error {
		s.AllowedPrefixes = []string{"s3://tenant-data/acme/"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// metadata is where each table's state says its metadata file is, given
	// its table-uuid; "" writes no state.
	tests := []struct {
		table    string
		metadata func(uuid string) string
		update   bool // updated after the sync: the state is of an older version
		want     bool // the credentials read the table's metadata prefix
	}{
		{"synced", func(u string) string { return "s3://lake-iceberg/tables/" + u + "/metadata/v3.metadata.json" }, false, true},
		{"unsynced", nil, false, false},
		{"updated", func(u string) string { return "s3://lake-iceberg/tables/" + u + "/metadata/v3.metadata.json" }, true, false},
		{"local", func(u string) string { return "file:///var/lake/iceberg/tables/" + u + "/metadata/v3.metadata.json" }, false, false},
		{"elsewhere", func(u string) string { return "s3://lake-iceberg/tables/" + u + "/metadata/old/v3.metadata.json" }, false, false},
		{"another-uuid", func(string) string {
			return "s3://lake-iceberg/tables/" + icebergrest.TableUUID("acme", "sales", "x", "00") + "/metadata/v3.metadata.json"
		}, false, false},
	}
	uuids := map[string]string{}
	for _, tt := range tests {
		ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: tt.table}
		spec := catalog.TableSpec{Location: "s3://tenant-data/acme/" + tt.table + "/", Schema: wide(1)}
		reg, _, err := e.cat.Register(ctx, ref, spec)
		if err != nil {
			t.Fatal(err)
		}
		uuids[tt.table] = icebergrest.TableUUID(ref.Tenant, ref.Namespace, ref.Name, reg.CreationID())
		if tt.metadata == nil {
			continue
		}
		if err := e.cat.PutIcebergState(ctx, ref, catalog.IcebergState{CreationID: reg.CreationID(), Version: reg.Version(),
			MetadataLocation: tt.metadata(uuids[tt.table]), Metadata: json.RawMessage(syncedMetadata), SyncedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if tt.update {
			spec.Description = "changed"
			if _, err := e.cat.Update(ctx, ref, spec, catalog.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.publish()
	acme := as(t, "acme")
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			if _, err := e.credentials(acme, `{"namespace":"sales","table":"`+tt.table+`"}`); err != nil {
				t.Fatalf("lake.credentials: %v", err)
			}
			c, err := e.svc.Iceberg().Credentials(ctx, "acme", "sales", tt.table)
			if err != nil {
				t.Fatalf("Iceberg source credentials: %v", err)
			}
			if c.Location != "s3://tenant-data/acme/"+tt.table+"/" {
				t.Fatalf("Iceberg source credentials for %s", c.Location)
			}
			// Both surfaces ask the same of the Door: one AssumeRole, the
			// second answered from its cache.
			calls := a.of(tt.table)
			if len(calls) != 1 {
				t.Fatalf("AssumeRole calls for %s = %d, want 1 (both surfaces ask for the same)", tt.table, len(calls))
			}
			in := calls[0]
			meta := "tables/" + uuids[tt.table] + "/metadata/"
			grant := "arn:aws:s3:::lake-iceberg/" + meta + "*"
			tagged := slices.Contains(in.Tags, vending.Tag{Key: vending.TagMetaPrefix, Value: meta}) &&
				slices.Contains(in.Tags, vending.Tag{Key: vending.TagMetaBucket, Value: "lake-iceberg"})
			if got := strings.Contains(string(in.Policy), grant); got != tt.want || tagged != tt.want {
				t.Fatalf("policy %s\ntags %v\nwant the metadata grant %s and its tags: %v", in.Policy, in.Tags, grant, tt.want)
			}
			if !tt.want && (strings.Contains(string(in.Policy), "lake-iceberg") || len(in.Tags) != 5) {
				t.Fatalf("policy %s, tags %v: want no metadata grant or tags", in.Policy, in.Tags)
			}
		})
	}
}
