package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lake-catalog/lake/pkg/catalog"
)

func TestTableRefValidate(t *testing.T) {
	long := strings.Repeat("x", catalog.MaxNameBytes)
	tests := []struct {
		name    string
		ref     catalog.TableRef
		wantErr string // part of the message; "" for valid
	}{
		{"simple", catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}, ""},
		{"unicode and punctuation", catalog.TableRef{Tenant: "ácme", Namespace: "売上", Name: "order_items-2024.v1 %"}, ""},
		{"longest", catalog.TableRef{Tenant: long, Namespace: long, Name: long}, ""},
		{"empty tenant", catalog.TableRef{Namespace: "s", Name: "t"}, "tenant name \"\": empty"},
		{"empty namespace", catalog.TableRef{Tenant: "a", Name: "t"}, "namespace name \"\": empty"},
		{"empty table", catalog.TableRef{Tenant: "a", Namespace: "s"}, "table name \"\": empty"},
		{"slash", catalog.TableRef{Tenant: "a/b", Namespace: "s", Name: "t"}, "contains '/'"},
		{"control", catalog.TableRef{Tenant: "a", Namespace: "s\n", Name: "t"}, "control character"},
		{"nul", catalog.TableRef{Tenant: "a", Namespace: "s", Name: "t\x00"}, "control character"},
		{"invalid utf8", catalog.TableRef{Tenant: "a", Namespace: "s", Name: "t\xff"}, "not valid UTF-8"},
		{"too long", catalog.TableRef{Tenant: long + "x", Namespace: "s", Name: "t"}, "256 bytes, limit 255"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := tt.ref.Key()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Key() error = %v, want none", err)
				}
				if want := "tbl/" + tt.ref.Tenant + "/" + tt.ref.Namespace + "/" + tt.ref.Name; key != want {
					t.Fatalf("Key() = %q, want %q", key, want)
				}
				back, err := catalog.ParseKey(strings.TrimPrefix(key, catalog.KeyPrefix))
				if err != nil || back != tt.ref {
					t.Fatalf("ParseKey(Key()) = %+v, %v; want %+v", back, err, tt.ref)
				}
				return
			}
			if !errors.Is(err, catalog.ErrInvalidName) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Key() error = %v, want ErrInvalidName mentioning %q", err, tt.wantErr)
			}
			if key != "" {
				t.Fatalf("Key() returned %q alongside an error", key)
			}
		})
	}
}

func TestParseKeyRejects(t *testing.T) {
	for _, k := range []string{"", "a", "a/b", "a/b/c/d", "a//c", "/b/c", "a/b/", "a/b/c\x01"} {
		if ref, err := catalog.ParseKey(k); !errors.Is(err, catalog.ErrInvalidName) {
			t.Errorf("ParseKey(%q) = %+v, %v; want ErrInvalidName", k, ref, err)
		}
	}
}

func FuzzTableRef(f *testing.F) {
	f.Add("acme", "sales", "orders")
	f.Add("", "a/b", "\x00")
	f.Add("ü", "日本", strings.Repeat("z", 300))
	f.Fuzz(func(t *testing.T, tenant, namespace, name string) {
		ref := catalog.TableRef{Tenant: tenant, Namespace: namespace, Name: name}
		key, err := ref.Key()
		if err != nil {
			if !errors.Is(err, catalog.ErrInvalidName) {
				t.Fatalf("Key() error %v does not wrap ErrInvalidName", err)
			}
			return
		}
		back, err := catalog.ParseKey(strings.TrimPrefix(key, catalog.KeyPrefix))
		if err != nil || back != ref {
			t.Fatalf("round trip of %q: %+v, %v", key, back, err)
		}
		// A parsed key always yields a valid reference, or an error.
		if r, err := catalog.ParseKey(tenant + "/" + namespace); err == nil {
			t.Fatalf("ParseKey of two parts gave %+v", r)
		}
	})
}
