package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// icebergMetadata is a minimal Iceberg table metadata object of format
// version 2.
func icebergMetadata(uuid string) json.RawMessage {
	return json.RawMessage(`{"format-version": 2, "table-uuid": "` + uuid + `", "location": "s3://b/t", "last-sequence-number": 0,
		"last-updated-ms": 1, "last-column-id": 1, "schemas": [{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a","required":false,"type":"long"}]}],
		"current-schema-id": 0, "partition-specs": [{"spec-id":0,"fields":[]}], "default-spec-id": 0, "last-partition-id": 999,
		"sort-orders": [{"order-id":0,"fields":[]}], "default-sort-order-id": 0}`)
}

const testUUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"

func TestIcebergStateCodec(t *testing.T) {
	t.Parallel()
	good := catalog.IcebergState{CreationID: "0a1b", Version: 3, MetadataLocation: "s3://b/lake-metadata/t/v3.metadata.json",
		Metadata: icebergMetadata(testUUID), SyncedAt: t0}
	b, err := catalog.EncodeIcebergState(good)
	if err != nil {
		t.Fatal(err)
	}
	got, err := catalog.DecodeIcebergState(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.CreationID != good.CreationID || got.Version != 3 || got.MetadataLocation != good.MetadataLocation || !got.SyncedAt.Equal(t0) {
		t.Fatalf("round trip %+v, want %+v", got, good)
	}
	var md map[string]any
	if err := json.Unmarshal(got.Metadata, &md); err != nil || md["table-uuid"] != testUUID {
		t.Fatalf("metadata %s: %v", got.Metadata, err)
	}
	if !strings.Contains(string(b), `"metadata":{"format-version":2`) {
		t.Fatalf("metadata not embedded as an object: %s", b)
	}
	for _, tc := range []struct {
		name string
		edit func(*catalog.IcebergState)
	}{
		{"no creation id", func(s *catalog.IcebergState) { s.CreationID = "" }},
		{"creation id not hex", func(s *catalog.IcebergState) { s.CreationID = "a/b" }},
		{"version 0", func(s *catalog.IcebergState) { s.Version = 0 }},
		{"no location", func(s *catalog.IcebergState) { s.MetadataLocation = "" }},
		{"long location", func(s *catalog.IcebergState) { s.MetadataLocation = "s3://" + strings.Repeat("a", 1024) }},
		{"control character", func(s *catalog.IcebergState) { s.MetadataLocation = "s3://b/\n" }},
		{"no time", func(s *catalog.IcebergState) { s.SyncedAt = time.Time{} }},
		{"metadata array", func(s *catalog.IcebergState) { s.Metadata = json.RawMessage(`[1]`) }},
		{"metadata none", func(s *catalog.IcebergState) { s.Metadata = nil }},
		{"format version 1", func(s *catalog.IcebergState) {
			s.Metadata = json.RawMessage(strings.Replace(string(icebergMetadata(testUUID)), `"format-version": 2`, `"format-version": 1`, 1))
		}},
		{"no uuid", func(s *catalog.IcebergState) { s.Metadata = json.RawMessage(`{"format-version": 2}`) }},
		{"bad uuid", func(s *catalog.IcebergState) { s.Metadata = icebergMetadata("not-a-uuid") }},
		{"too large", func(s *catalog.IcebergState) {
			s.Metadata = json.RawMessage(`{"format-version": 2, "table-uuid": "` + testUUID + `", "pad": "` + strings.Repeat("x", catalog.MaxIcebergStateBytes) + `"}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.edit(&s)
			if _, err := catalog.EncodeIcebergState(s); !errors.Is(err, catalog.ErrInvalidIcebergState) {
				t.Fatalf("encode: got %v, want ErrInvalidIcebergState", err)
			}
		})
	}
	for _, raw := range []string{"", "{", `{"creation_id":"0a"}`, strings.Repeat(" ", catalog.MaxIcebergStateBytes+1)} {
		if _, err := catalog.DecodeIcebergState([]byte(raw)); !errors.Is(err, catalog.ErrInvalidIcebergState) {
			t.Fatalf("decode %.20q: got %v, want ErrInvalidIcebergState", raw, err)
		}
	}
}

// PutIcebergState on memstore and on DynamoDB (dynalite): written while
// the registration has the state's creation id, signalled, never replaced
// by an older sync, refused for a table dropped or registered again, and
// deleted by a drop (an undrop does not bring it back).
func TestPutIcebergState(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"memstore", "dynamo"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var st metastore.Store
			if backend == "memstore" {
				m := memstore.New(memstore.Options{})
				t.Cleanup(func() { m.Close() })
				st = m
			} else {
				d := testenv.SharedDynamoDB(t)
				dst, err := dynamo.New(d.Client(), dynamo.Options{Table: d.NewTable(t)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dst.Close() })
				st = dst
			}
			testPutIcebergState(t, st)
		})
	}
}

func testPutIcebergState(t *testing.T, st metastore.Store) {
	clk := &clock{now: t0}
	c := catalog.New(st, catalog.Options{Now: clk.Now})
	ctx := context.Background()
	if _, ok, err := c.IcebergState(ctx, orders); ok || err != nil {
		t.Fatalf("state before any = %v, %v; want none", ok, err)
	}
	reg := mustRegister(t, c, orders, catalog.TableSpec{Location: "s3://b/orders/", Schema: catalogtest.WideSchema(1, 2)})
	st1 := catalog.IcebergState{CreationID: reg.CreationID(), Version: reg.Version(), MetadataLocation: "s3://b/m/v1.metadata.json",
		Metadata: icebergMetadata(testUUID), SyncedAt: t0.Add(time.Minute)}
	before, _ := catalog.ReadChanges(ctx, st)
	if err := c.PutIcebergState(ctx, orders, st1); err != nil {
		t.Fatal(err)
	}
	if n, _ := catalog.ReadChanges(ctx, st); n != before+1 {
		t.Fatalf("change counter %d → %d, want one add", before, n)
	}
	got, ok, err := c.IcebergState(ctx, orders)
	if err != nil || !ok || got.MetadataLocation != st1.MetadataLocation || got.Version != reg.Version() {
		t.Fatalf("read back %+v, %v, %v", got, ok, err)
	}
	// The same again writes nothing; an older sync is refused.
	if err := c.PutIcebergState(ctx, orders, st1); err != nil {
		t.Fatalf("same state again: %v", err)
	}
	older := st1
	older.MetadataLocation, older.SyncedAt = "s3://b/m/v0.metadata.json", t0
	if err := c.PutIcebergState(ctx, orders, older); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("older sync: got %v, want ErrConflict", err)
	}
	newer := st1
	newer.MetadataLocation, newer.SyncedAt = "s3://b/m/v2.metadata.json", t0.Add(2*time.Minute)
	if err := c.PutIcebergState(ctx, orders, newer); err != nil {
		t.Fatalf("newer sync: %v", err)
	}
	if got, _, _ := c.IcebergState(ctx, orders); got.MetadataLocation != newer.MetadataLocation {
		t.Fatalf("after a newer sync: %s, want %s", got.MetadataLocation, newer.MetadataLocation)
	}
	// Another registration's creation id: refused, nothing written.
	other := newer
	other.CreationID, other.SyncedAt = "ffff", t0.Add(time.Hour)
	if err := c.PutIcebergState(ctx, orders, other); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("state of another registration: got %v, want ErrConflict", err)
	}
	if got, _, _ := c.IcebergState(ctx, orders); got.CreationID != reg.CreationID() {
		t.Fatalf("a refused state was written: %+v", got)
	}
	// A drop deletes it; an undrop does not restore it.
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.IcebergState(ctx, orders); ok || err != nil {
		t.Fatalf("state after drop = %v, %v; want none", ok, err)
	}
	if err := c.PutIcebergState(ctx, orders, newer); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("state of a dropped table: got %v, want ErrConflict", err)
	}
	if _, err := c.Undrop(ctx, orders, reg.CreationID()); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.IcebergState(ctx, orders); ok || err != nil {
		t.Fatalf("state after undrop = %v, %v; want none", ok, err)
	}
	// Invalid: refused with its kind.
	bad := newer
	bad.Metadata = json.RawMessage(`{}`)
	if err := c.PutIcebergState(ctx, orders, bad); !errors.Is(err, catalog.ErrInvalidIcebergState) {
		t.Fatalf("invalid state: got %v, want ErrInvalidIcebergState", err)
	}
	// A drop leaves the state of a later registration of the name.
	if err := st.Put(ctx, catalog.IcebergPrefix+orders.String(), mustEncode(t, other)); err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(ctx, orders); err != nil {
		t.Fatal(err)
	}
	if raw, err := st.Get(ctx, catalog.IcebergPrefix+orders.String()); err != nil || len(raw) == 0 {
		t.Fatalf("a drop deleted another registration's state: %v", err)
	}
}

func mustEncode(tb testing.TB, s catalog.IcebergState) []byte {
	tb.Helper()
	b, err := catalog.EncodeIcebergState(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
