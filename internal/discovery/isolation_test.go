package discovery_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/like"
	"github.com/lake-catalog/lake/pkg/wire"
)

// ownedSchema marks a schema with its tenant so a leaked schema is caught
// even when names collide.
func ownedSchema(tenant string, i int) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "owner", Type: arrow.BinaryTypes.String, Metadata: arrow.NewMetadata([]string{"tenant"}, []string{tenant})},
		{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int64},
	}, nil)
}

func schemaOwner(t *testing.T, b []byte) string {
	t.Helper()
	s, err := flight.DeserializeSchema(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := s.Field(0).Metadata.GetValue("tenant")
	return v
}

// Tenants whose names are LIKE patterns of each other, with the same
// namespaces and tables: every command with every filter is tried by every
// tenant, and no answer may carry another tenant's row or schema.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discovery.Options{})
	tenants := []string{"acme", "acme2", "acm_", "a%", "ACME", "globex", `ac\me`}
	for _, tn := range tenants {
		for i, tbl := range []string{"orders", "order_items", "secret_" + strings.ToLower(strings.Trim(tn, `%_\`))} {
			e.register(tn, "sales", tbl, ownedSchema(tn, i))
			e.register(tn, tn+"_private", tbl, ownedSchema(tn, i))
		}
	}
	e.register("quiet", "hr", "people", nil) // a legacy table in another tenant
	e.publish()

	filters := []*string{nil, strp(""), strp("%"), strp("_%"), strp("a%"), strp("acme"), strp("acme%"), strp(`a\%`), strp("%2"), strp("ACME"), strp("globex"), strp(`ac\\me`), strp("quiet")}
	for _, me := range tenants {
		ctx := as(t, me)
		check := func(what, catalogName string) {
			t.Helper()
			if catalogName != me {
				t.Fatalf("tenant %q saw catalog %q via %s", me, catalogName, what)
			}
		}
		_, recs, err := e.fetch(ctx)(e.client.GetCatalogs(ctx))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			for i := 0; i < int(r.NumRows()); i++ {
				check("GetCatalogs", r.Column(0).(*array.String).Value(i))
			}
		}
		for _, cf := range filters {
			for _, nf := range filters {
				_, recs, err := e.fetch(ctx)(e.client.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{Catalog: cf, DbSchemaFilterPattern: nf}))
				if err != nil && codeOf(err) != codes.InvalidArgument {
					t.Fatal(err)
				}
				for _, r := range recs {
					for i := 0; i < int(r.NumRows()); i++ {
						check("GetDbSchemas", r.Column(0).(*array.String).Value(i))
						if ns := r.Column(1).(*array.String).Value(i); ns != "sales" && ns != me+"_private" {
							t.Fatalf("tenant %q saw namespace %q", me, ns)
						}
					}
				}
				for _, tf := range filters {
					for _, include := range []bool{false, true} {
						rows, err := e.tables(ctx, &flightsql.GetTablesOpts{Catalog: cf, DbSchemaFilterPattern: nf, TableNameFilterPattern: tf, IncludeSchema: include})
						if err != nil {
							if c := codeOf(err); c != codes.InvalidArgument {
								t.Fatalf("GetTables as %q: %v", me, err)
							}
							continue
						}
						for _, r := range rows {
							check("GetTables", r.catalog)
							if include && schemaOwner(t, r.schema) != me {
								t.Fatalf("tenant %q got a schema of %q", me, schemaOwner(t, r.schema))
							}
						}
					}
				}
			}
		}
		_, recs, err = e.fetch(ctx)(e.client.GetSqlInfo(ctx, []flightsql.SqlInfo{wire.SqlInfoTenantTables}))
		if err != nil {
			t.Fatal(err)
		}
		u := recs[0].Column(1).(*array.DenseUnion)
		if n := u.Field(2).(*array.Int64).Value(int(u.ValueOffset(0))); n != 6 {
			t.Fatalf("tenant %q is told of %d tables, want its own 6", me, n)
		}
	}
	// The legacy table of another tenant never fails anyone else's request.
	if _, err := e.tables(as(t, "acme"), &flightsql.GetTablesOpts{IncludeSchema: true}); err != nil {
		t.Fatalf("another tenant's legacy table failed acme's request: %v", err)
	}
}

// A randomized property: for random catalogs and random patterns, the
// server's answer equals a reference filter over the caller's own tables.
func TestTenantIsolationProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(42, 7))
	alphabet := []string{"a", "b", "_", "%", "x", "\\"}
	word := func(n int) string {
		var b strings.Builder
		for range 1 + rng.IntN(n) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for round := range 6 {
		e := newEnv(t, discovery.Options{})
		type entry struct{ tenant, ns, name string }
		var all []entry
		seen := map[entry]bool{}
		tenants := []string{"t" + word(2), "t" + word(2), "t" + word(2)}
		for range 60 {
			en := entry{tenants[rng.IntN(len(tenants))], word(3), word(4)}
			if strings.Contains(en.ns+en.name, "/") || seen[en] {
				continue
			}
			seen[en] = true
			all = append(all, en)
			e.register(en.tenant, en.ns, en.name, ownedSchema(en.tenant, len(all)))
		}
		// A quarter dropped: their tombstones feed lake.dropped and
		// lake.changes, which must stay as isolated as the tables.
		dropped := map[entry]bool{}
		var live []entry
		for _, en := range all {
			if rng.IntN(4) == 0 {
				if err := e.cat.Drop(context.Background(), catalog.TableRef{Tenant: en.tenant, Namespace: en.ns, Name: en.name}); err != nil {
					t.Fatal(err)
				}
				dropped[en] = true
				continue
			}
			live = append(live, en)
		}
		all = live
		e.publish()
		for _, me := range tenants {
			var wantDropped, wantChanges []string
			for en := range dropped {
				if en.tenant == me {
					wantDropped = append(wantDropped, en.ns+"\x00"+en.name)
					wantChanges = append(wantChanges, "drop\x00"+en.ns+"\x00"+en.name)
				}
			}
			for _, en := range all {
				if en.tenant == me {
					wantChanges = append(wantChanges, "create\x00"+en.ns+"\x00"+en.name)
				}
			}
			dp, err := e.dropped(as(t, me), `{"limit":500}`)
			if err != nil {
				t.Fatal(err)
			}
			var gotDropped []string
			for _, d := range dp.Dropped {
				gotDropped = append(gotDropped, d.Namespace+"\x00"+d.Table)
			}
			cp, err := e.changes(as(t, me), `{"limit":500}`)
			if err != nil {
				t.Fatal(err)
			}
			var gotChanges []string
			for _, c := range cp.Changes {
				gotChanges = append(gotChanges, c.Op+"\x00"+c.Namespace+"\x00"+c.Table)
			}
			for _, l := range [][]string{wantDropped, gotDropped, wantChanges, gotChanges} {
				slices.Sort(l)
			}
			if dp.Tenant != me || !slices.Equal(gotDropped, wantDropped) {
				t.Fatalf("round %d: tenant %q lake.dropped %q, want %q", round, me, gotDropped, wantDropped)
			}
			if cp.Tenant != me || !slices.Equal(gotChanges, wantChanges) {
				t.Fatalf("round %d: tenant %q lake.changes %q, want %q", round, me, gotChanges, wantChanges)
			}
		}
		for range 40 {
			me := tenants[rng.IntN(len(tenants))]
			var cf, nf, tf *string
			if rng.IntN(2) == 0 {
				cf = strp(tenants[rng.IntN(len(tenants))])
			}
			if rng.IntN(2) == 0 {
				nf = strp(word(3))
			}
			if rng.IntN(2) == 0 {
				tf = strp(word(4))
			}
			rows, err := e.tables(as(t, me), &flightsql.GetTablesOpts{Catalog: cf, DbSchemaFilterPattern: nf, TableNameFilterPattern: tf, IncludeSchema: true})
			var want []string
			valid := true
			for _, f := range []*string{nf, tf} {
				if f != nil {
					if _, err := like.Compile(*f); err != nil {
						valid = false
					}
				}
			}
			if !valid {
				if codeOf(err) != codes.InvalidArgument {
					t.Fatalf("round %d: invalid pattern answered %v", round, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			for _, en := range all {
				if en.tenant != me || (cf != nil && *cf != me) || !matches(nf, en.ns) || !matches(tf, en.name) {
					continue
				}
				want = append(want, en.ns+"\x00"+en.name)
			}
			slices.Sort(want)
			var got []string
			for _, r := range rows {
				if r.catalog != me || schemaOwner(t, r.schema) != me {
					t.Fatalf("round %d: tenant %q got a row of %q", round, me, r.catalog)
				}
				got = append(got, r.ns+"\x00"+r.name)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: tenant %q catalog %v ns %v table %v:\n got %q\nwant %q", round, me, deref(cf), deref(nf), deref(tf), got, want)
			}
		}
	}
}

func matches(p *string, s string) bool {
	if p == nil {
		return true
	}
	c, err := like.Compile(*p)
	return err == nil && c.Match(s)
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *p)
}
