package cli

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// Message says the ref and the kind once, whatever wraps the error.
func TestMessage(t *testing.T) {
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	nameErr := catalog.ValidateName("table", "a/b")
	tests := []struct {
		name string
		err  error
		want string
		is   error
	}{
		{"name error, wrapped", fmt.Errorf("catalog: register x: %w", nameErr), `invalid table name "a/b": contains '/'`, catalog.ErrInvalidName},
		{"not discovered", &refError{ref: ref, msg: msgNotDiscovered, kind: catalog.ErrNotFound},
			"acme/sales/orders: table not found (a new registration appears after the next refresh)", catalog.ErrNotFound},
		{"no stored schema", &refError{ref: ref, msg: msgNoSchema},
			"acme/sales/orders: no stored schema; `lake backfill` can add it from its Parquet files", nil},
		{"discovery unavailable", discoveryErr("grpc://d:1", ref.String(), status.Error(codes.Unavailable, "connection refused")),
			"acme/sales/orders: discovery is unavailable at grpc://d:1: connection refused", nil},
		{"discovery unauthenticated, code restated", discoveryErr("grpc://d:1", "tenant acme", status.Error(codes.Unauthenticated, "unauthenticated: send a valid bearer token")),
			"tenant acme: missing or invalid token: send a valid bearer token", nil},
		{"discovery, other code", discoveryErr("grpc://d:1", "tenant acme", status.Error(codes.Internal, "boom")),
			"tenant acme: discovery answered Internal: boom", nil},
		{"plain", errNoTenant, "--tenant (LAKE_TENANT) is required", errNoTenant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Message(tt.err); got != tt.want {
				t.Errorf("Message = %q, want %q", got, tt.want)
			}
			if tt.is != nil && !errors.Is(tt.err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, tt.is)
			}
		})
	}
}

// The table writer pads by display width: CJK characters take two cells,
// combining accents none.
func TestTableWidth(t *testing.T) {
	tests := []struct {
		name string
		rows [][]string
		want string
	}{
		{"ascii", [][]string{{"a", "b"}, {"ccc", "d"}}, "a    b\nccc  d\n"},
		{"cjk", [][]string{{"販売", "x"}, {"sales", "y"}}, "販売   x\nsales  y\n"},
		{"combining", [][]string{{"e\u0301te\u0301", "x"}, {"abcd", "y"}}, "e\u0301te\u0301   x\nabcd  y\n"},
		{"empty last cell", [][]string{{"id", "int32", ""}, {"name", "utf8", "not null"}}, "id    int32\nname  utf8   not null\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := newTable("")
			for _, r := range tt.rows {
				tab.add(r...)
			}
			var b bytesBuffer
			if err := tab.write(&b); err != nil {
				t.Fatal(err)
			}
			if got := string(b); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 changes"}, {1, "1 change"}, {2, "2 changes"}} {
		if got := plural(tt.n, "change"); got != tt.want {
			t.Errorf("plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
