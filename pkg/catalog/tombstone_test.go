package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestTombstoneRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	reg, err := NewRegistration(TableSpec{Location: "s3://b/t/", Schema: arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)}, now)
	if err != nil {
		t.Fatal(err)
	}
	reg = reg.withChange(OpCreate, "arn:aws:iam::1:user/alice")
	ts := Tombstone{Ref: TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}, Registration: reg,
		DroppedAt: now.Add(time.Hour), DroppedBy: "bob", ExpiresAt: now.Add(7 * 24 * time.Hour)}
	key, err := ts.Key()
	if err != nil {
		t.Fatal(err)
	}
	if want := "dropped/acme/sales/orders/" + reg.CreationID(); key != want {
		t.Fatalf("key = %q, want %q", key, want)
	}
	b, err := EncodeTombstone(ts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTombstone(strings.TrimPrefix(key, TombstonePrefix), b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ref != ts.Ref || !got.DroppedAt.Equal(ts.DroppedAt) || got.DroppedBy != "bob" || !got.ExpiresAt.Equal(ts.ExpiresAt) {
		t.Fatalf("got %+v, want %+v", got, ts)
	}
	if got.Registration.UpdatedBy() != "arn:aws:iam::1:user/alice" || got.Registration.Op() != OpCreate || got.Registration.CreationID() != reg.CreationID() {
		t.Fatalf("registration lost its change fields: by %q op %q", got.Registration.UpdatedBy(), got.Registration.Op())
	}
	if got.Expired(now.Add(24*time.Hour)) || !got.Expired(now.Add(8*24*time.Hour)) {
		t.Fatal("Expired disagrees with ExpiresAt")
	}
}

func TestDecodeTombstoneRejects(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	reg, err := NewRegistration(TableSpec{Location: "s3://b/t/", Schema: arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)}, now)
	if err != nil {
		t.Fatal(err)
	}
	good, err := EncodeTombstone(Tombstone{Ref: TableRef{Tenant: "a", Namespace: "n", Name: "t"}, Registration: reg, DroppedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, key string
		value     []byte
		want      error
	}{
		{"no creation id", "a/n/t", good, ErrInvalidName},
		{"bad name", "a/n/../" + reg.CreationID(), good, ErrInvalidName},
		{"other creation id", "a/n/t/x", good, ErrInvalidRegistration},
		{"not json", "a/n/t/" + reg.CreationID(), []byte("{"), ErrInvalidRegistration},
		{"no drop time", "a/n/t/" + reg.CreationID(), []byte(`{"registration":{"location":"s3://b/"}}`), ErrInvalidRegistration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := DecodeTombstone(tc.key, tc.value); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRegistrationOpValidated(t *testing.T) {
	t.Parallel()
	if _, err := DecodeRegistration([]byte(`{"location":"s3://b/","op":"explode"}`)); !errors.Is(err, ErrInvalidRegistration) {
		t.Fatalf("err = %v, want ErrInvalidRegistration", err)
	}
	r, err := DecodeRegistration([]byte(`{"location":"s3://b/","op":"undrop","updated_by":"carol"}`))
	if err != nil || r.Op() != OpUndrop || r.UpdatedBy() != "carol" {
		t.Fatalf("got op %q by %q, err %v", r.Op(), r.UpdatedBy(), err)
	}
}

// FuzzDecodeTombstone reads arbitrary keys and values as refresh reads
// them from the store: an error wraps one of the package's kinds, never a
// panic; a tombstone that decodes names a valid table and the creation id
// of its key, and encodes and decodes to itself.
func FuzzDecodeTombstone(f *testing.F) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	reg, _ := NewRegistration(TableSpec{Location: "s3://b/t/", Schema: arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)}, now)
	reg = reg.withChange(OpDrop, "bob")
	ts := Tombstone{Ref: TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}, Registration: reg, DroppedAt: now, DroppedBy: "bob", ExpiresAt: now.Add(time.Hour)}
	good, _ := EncodeTombstone(ts)
	f.Add("acme/sales/orders/"+reg.CreationID(), good)
	f.Add("acme/sales/orders/0123456789abcdef", good)
	f.Add("acme/sales/orders", good)
	f.Add("acme/sales/orders/x", []byte(`{"registration":{},"dropped_at":"2026-12-03T10:00:00Z"}`))
	f.Add("a/b/c/d", []byte(`{"registration":null}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		d, err := DecodeTombstone(key, value)
		if err != nil {
			if !errors.Is(err, ErrInvalidRegistration) && !errors.Is(err, ErrInvalidName) {
				t.Fatalf("error %v wraps neither ErrInvalidRegistration nor ErrInvalidName", err)
			}
			return
		}
		if err := d.Ref.Validate(); err != nil || !strings.HasSuffix(key, "/"+d.Registration.CreationID()) {
			t.Fatalf("decoded %+v from key %q: %v", d.Ref, key, err)
		}
		b, err := EncodeTombstone(d)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := DecodeTombstone(key, b)
		if err != nil || back.Ref != d.Ref || !back.DroppedAt.Equal(d.DroppedAt) || back.DroppedBy != d.DroppedBy || back.Registration.Version() != d.Registration.Version() {
			t.Fatalf("re-decode: %+v, %v", back, err)
		}
	})
}
