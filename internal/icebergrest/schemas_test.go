package icebergrest_test

import (
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/icebergrest"
)

// The metadata built for a table lists its earlier kept versions' schemas
// with their own ids and field ids, an equal schema once, and the current
// one as current-schema-id.
func TestBuildMetadataListsEarlierSchemas(t *testing.T) {
	id := iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}
	name := iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String}
	amount := iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64}
	v1 := iceberg.NewSchema(1, id, name)
	v2 := iceberg.NewSchema(2, id, name)         // a description change: the same schema
	v3 := iceberg.NewSchema(3, id, name, amount) // a column added
	v4 := iceberg.NewSchema(4, id, amount)       // name dropped: the others keep their ids
	tests := []struct {
		name        string
		earlier     []*iceberg.Schema
		current     *iceberg.Schema
		wantIDs     []int
		wantCurrent int
		wantFields  map[int][]int // schema id → its field ids
	}{
		{"none kept", nil, v3, []int{3}, 3, map[int][]int{3: {1, 2, 3}}},
		{"one earlier", []*iceberg.Schema{v1}, v3, []int{1, 3}, 3, map[int][]int{1: {1, 2}, 3: {1, 2, 3}}},
		{"equal schemas once", []*iceberg.Schema{v1, v2}, v3, []int{1, 3}, 3, nil},
		{"a column dropped", []*iceberg.Schema{v1, v2, v3}, v4, []int{1, 3, 4}, 4, map[int][]int{4: {1, 3}}},
		{"back to an earlier schema", []*iceberg.Schema{v1, v3}, iceberg.NewSchema(5, id, name), []int{1, 3}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, raw, err := icebergrest.BuildMetadata("acme", "sales", "orders", icebergrest.Table{
				Location: "s3://acme-data/sales/orders/", Schema: tt.current, Earlier: tt.earlier, Version: int64(tt.current.ID),
			})
			if err != nil {
				t.Fatal(err)
			}
			md, err := table.ParseMetadataBytes(raw)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int
			for _, sc := range md.Schemas() {
				ids = append(ids, sc.ID)
				if want, ok := tt.wantFields[sc.ID]; ok {
					var got []int
					for _, f := range sc.Fields() {
						got = append(got, f.ID)
					}
					if !slices.Equal(got, want) {
						t.Errorf("schema %d field ids %v, want %v", sc.ID, got, want)
					}
				}
			}
			if !slices.Equal(ids, tt.wantIDs) {
				t.Errorf("schema ids %v, want %v", ids, tt.wantIDs)
			}
			if got := md.CurrentSchema().ID; got != tt.wantCurrent {
				t.Errorf("current-schema-id %d, want %d", got, tt.wantCurrent)
			}
			if got := md.LastColumnID(); got != 3 {
				t.Errorf("last-column-id %d, want 3", got)
			}
			// The callers' schemas are copied, not renumbered.
			if v2.ID != 2 {
				t.Errorf("v2's id changed to %d", v2.ID)
			}
		})
	}
}
