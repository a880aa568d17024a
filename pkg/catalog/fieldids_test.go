package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

func fieldIDs(tb testing.TB, reg catalog.Registration) icebergschema.FieldIDs {
	tb.Helper()
	ids, ok := reg.FieldIDs()
	if !ok {
		tb.Fatalf("version %d has no field ids", reg.Version())
	}
	return ids
}

func wantIDs(tb testing.TB, what string, got icebergschema.FieldIDs, ids []int32, last int32) {
	tb.Helper()
	if !slices.Equal(got.IDs, ids) || got.LastColumnID != last {
		tb.Fatalf("%s: field ids %v last %d, want %v last %d", what, got.IDs, got.LastColumnID, ids, last)
	}
}

func cols(fs ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fs, nil) }

var (
	colID   = arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	colName = arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}
	colTags = arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}
	colNote = arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}
)

// Every register and update records the schema's Iceberg field ids: fresh
// at registration, then each field keeps its id and a new one gets the
// next after the last column id; a field removed and added back is new.
// The version records keep each version's ids, the stored JSON carries
// them and an undrop restores the dropped version's.
func TestFieldIDsAreRecorded(t *testing.T) {
	t.Parallel()
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	update := func(s *arrow.Schema) catalog.Registration {
		t.Helper()
		reg, err := c.Update(ctx, orders, catalog.TableSpec{Schema: s}, catalog.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	v1 := mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: cols(colID, colName, colTags)})
	wantIDs(t, "registered", fieldIDs(t, v1), []int32{1, 2, 3, 4}, 4)

	v2 := update(cols(colID, colNote, colName, colTags))
	wantIDs(t, "note added", fieldIDs(t, v2), []int32{1, 5, 2, 3, 4}, 5)

	v3 := update(cols(colID, colName, colTags))
	wantIDs(t, "note removed", fieldIDs(t, v3), []int32{1, 2, 3, 4}, 5)

	v4 := update(cols(colID, colName, colTags, colNote))
	wantIDs(t, "note added back", fieldIDs(t, v4), []int32{1, 2, 3, 4, 6}, 6)

	// An update that leaves the schema keeps its ids.
	v5, err := c.Update(ctx, orders, catalog.TableSpec{Schema: cols(colID, colName, colTags, colNote), Description: "orders"}, catalog.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "description changed", fieldIDs(t, v5), []int32{1, 2, 3, 4, 6}, 6)

	got, err := c.Get(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "read back", fieldIDs(t, got), []int32{1, 2, 3, 4, 6}, 6)
	raw, err := st.Get(ctx, catalog.KeyPrefix+orders.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"iceberg_field_ids":{"ids":[1,2,3,4,6],"last_column_id":6}`) {
		t.Fatalf("stored registration lacks its ids: %s", raw)
	}

	versions, _, err := c.History(ctx, orders, "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64][]int32{1: {1, 2, 3, 4}, 2: {1, 5, 2, 3, 4}, 3: {1, 2, 3, 4}, 4: {1, 2, 3, 4, 6}}
	for _, v := range versions {
		if w, ok := want[v.Version]; ok {
			wantIDs(t, "history", fieldIDs(t, v.Registration), w, fieldIDs(t, v.Registration).LastColumnID)
		}
	}

	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	back, err := c.Undrop(ctx, orders, v1.CreationID())
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "undropped", fieldIDs(t, back), []int32{1, 2, 3, 4, 6}, 6)
	v7 := update(cols(colID, colName))
	wantIDs(t, "after the undrop", fieldIDs(t, v7), []int32{1, 2}, 6)
}

// A registration written before ids were recorded has the fresh ids of
// its schema, and its next update assigns from them.
func TestFieldIDsOfALegacyRegistration(t *testing.T) {
	t.Parallel()
	c, st, _ := newCatalog(t)
	ctx := context.Background()
	mustRegister(t, c, orders, catalog.TableSpec{Location: "/o", Schema: cols(colID, colTags)})
	key := catalog.KeyPrefix + orders.String()
	raw, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "iceberg_field_ids")
	legacy, _ := json.Marshal(doc)
	reg, err := catalog.DecodeRegistration(legacy)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "legacy", fieldIDs(t, reg), []int32{1, 2, 3}, 3)
	if b, _ := json.Marshal(reg); strings.Contains(string(b), "iceberg_field_ids") {
		t.Fatalf("a legacy registration re-encodes with ids it never had: %s", b)
	}
	if err := st.CompareAndSwap(ctx, key, raw, legacy); err != nil {
		t.Fatal(err)
	}
	next, err := c.Update(ctx, orders, catalog.TableSpec{Schema: cols(colName, colID, colTags)}, catalog.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "updated", fieldIDs(t, next), []int32{4, 1, 2, 3}, 4)
}

func TestFieldIDsRoundTripAndRefusals(t *testing.T) {
	t.Parallel()
	reg, err := catalog.NewRegistration(catalog.TableSpec{Location: "/o", Schema: cols(colID, colTags)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := catalog.DecodeRegistration(b)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "round trip", fieldIDs(t, back), []int32{1, 2, 3}, 3)
	// The caller owns what FieldIDs returns.
	ids := fieldIDs(t, back)
	ids.IDs[0] = 99
	wantIDs(t, "after the caller's change", fieldIDs(t, back), []int32{1, 2, 3}, 3)

	s := string(b)
	for name, ids := range map[string]string{
		"zero":       `{"ids":[0,1,2],"last_column_id":3}`,
		"above last": `{"ids":[1,2,4],"last_column_id":3}`,
		"twice":      `{"ids":[1,1,2],"last_column_id":3}`,
		"not ints":   `{"ids":["a"],"last_column_id":3}`,
	} {
		doc := strings.Replace(s, `"iceberg_field_ids":{"ids":[1,2,3],"last_column_id":3}`, `"iceberg_field_ids":`+ids, 1)
		if doc == s {
			t.Fatalf("stored shape changed: %s", s)
		}
		if _, err := catalog.DecodeRegistration([]byte(doc)); !errors.Is(err, catalog.ErrInvalidRegistration) {
			t.Errorf("%s: error = %v, want ErrInvalidRegistration", name, err)
		}
	}
	// Without a schema there are no ids.
	noSchema := `{"location":"/x","iceberg_field_ids":{"ids":[1],"last_column_id":1}}`
	reg, err = catalog.DecodeRegistration([]byte(noSchema))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.FieldIDs(); ok {
		t.Fatal("a registration without a schema has field ids")
	}
}
