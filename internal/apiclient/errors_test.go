package apiclient

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// FuzzDecodeError: any answer body decodes to an *Error with a non-empty
// message and a kind that errors.Is agrees with, and never panics.
func FuzzDecodeError(f *testing.F) {
	f.Add(404, []byte(`{"error":{"code":"not_found","message":"catalog: acme/sales/orders: catalog: table not found"}}`))
	f.Add(400, []byte(`{"error":{"code":"invalid_schema","message":"catalog: register a/b/c: catalog: invalid schema: bad"}}`))
	f.Add(403, []byte(`{"message":"Forbidden"}`))
	f.Add(502, []byte("<html>bad gateway</html>"))
	f.Add(412, []byte(`{"error":{"code":"version_mismatch","message":""}}`))
	f.Add(400, []byte(`{"error":{"code":"invalid_name","message":": : :"}}`))
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := decodeError(status, body, ref)
		if e.Status != status || e.Code == "" {
			t.Fatalf("decodeError(%d, %q) = %+v", status, body, e)
		}
		msg := e.Error()
		if msg == "" {
			t.Fatalf("empty message for %q", body)
		}
		if utf8.ValidString(string(body)) && strings.Count(msg, "acme/sales/orders") > 1+strings.Count(string(body), "acme/sales/orders") {
			t.Fatalf("message %q says the ref more often than the answer did", msg)
		}
		if e.kind != nil && !errors.Is(e, e.kind) {
			t.Fatalf("errors.Is(e, %v) is false", e.kind)
		}
	})
}

func TestDetail(t *testing.T) {
	ref := catalog.TableRef{Tenant: "acme", Namespace: "sales", Name: "orders"}
	tests := []struct{ msg, phrase, want string }{
		{"catalog: register acme/sales/orders: catalog: invalid schema: field 3: bad", "invalid schema", "field 3: bad"},
		{"acme/sales/orders: invalid schema: field 3: bad", "invalid schema", "field 3: bad"},
		{"field 3: bad", "invalid schema", "field 3: bad"},
		{"catalog: acme/sales/orders: catalog: too large: registration of 5 bytes, limit 4", "too large", "registration of 5 bytes, limit 4"},
		{"schema IPC of 262145 bytes exceeds the 262144-byte limit", "too large", "schema IPC of 262145 bytes exceeds the 262144-byte limit"},
		{`catalog: invalid table name "a/b": contains '/'`, "", `invalid table name "a/b": contains '/'`},
		{"catalog: table not found", "table not found", ""},
		{"", "invalid schema", ""},
	}
	for _, tt := range tests {
		if got := detail(tt.msg, ref, tt.phrase); got != tt.want {
			t.Errorf("detail(%q, %q) = %q, want %q", tt.msg, tt.phrase, got, tt.want)
		}
	}
}
