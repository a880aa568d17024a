package icebergrest_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/lake-catalog/lake/internal/icebergrest"
	"github.com/lake-catalog/lake/pkg/icebergschema"
)

// The chain discovery will run: an Arrow schema, its ids (icebergschema),
// served here, read back by iceberg-go's client equal, with its name
// mapping and last column id.
func TestArrowSchemaThroughIcebergGoClient(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"who"})},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 12, Scale: 3}, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "where", Type: arrow.StructOf(
			arrow.Field{Name: "lat", Type: arrow.PrimitiveTypes.Float64},
			arrow.Field{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		), Nullable: true},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	ids := icebergschema.Assign(nil, icebergschema.FieldIDs{}, s)
	want, err := icebergschema.ToIceberg(s, ids, 2)
	if err != nil {
		t.Fatalf("ToIceberg: %v", err)
	}
	mapping, err := icebergschema.NameMapping(s, ids)
	if err != nil {
		t.Fatalf("NameMapping: %v", err)
	}
	src := &fakeSource{tables: map[string]map[string]map[string]icebergrest.Table{
		"acme": {"geo": {"places": {
			Location: "s3://acme-data/geo/places/", Schema: want, LastColumnID: int(ids.LastColumnID),
			UpdatedAt: time.UnixMilli(1765000000000), Version: 2, NameMapping: mapping,
		}}},
	}}
	h, err := icebergrest.New(icebergrest.Options{Source: src, Authenticate: authenticate})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "lake", srv.URL, rest.WithOAuthToken("tok-acme"), rest.WithWarehouseLocation("acme"))
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	tbl, err := cat.LoadTable(ctx, table.Identifier{"geo", "places"})
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	if got := tbl.Schema(); !got.Equals(want) || got.ID != 2 {
		t.Errorf("schema\n%s (id %d)\nwant\n%s (id 2)", got, got.ID, want)
	}
	if got := tbl.Metadata().LastColumnID(); got != int(ids.LastColumnID) {
		t.Errorf("last column id %d, want %d", got, ids.LastColumnID)
	}
	var wantMapping iceberg.NameMapping
	if err := json.Unmarshal(mapping, &wantMapping); err != nil {
		t.Fatal(err)
	}
	if got := tbl.NameMapping(); got.String() != wantMapping.String() {
		t.Errorf("name mapping %s, want %s", got, wantMapping)
	}
}
