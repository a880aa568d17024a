package catalog_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/lake-catalog/lake/pkg/catalog"
)

func TestTableRefValidate(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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

// Names that would collide with another name or hide characters are
// rejected, with a reason that says which rule: each rule of ValidateName,
// for every part, and the tenant-only wildcards.
func TestValidateNameRejectsCollidingAndHiddenNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, part, value string
		wantReason        string // "" for valid
	}{
		{"nfc accent", "table", "caf\u00e9", ""},
		{"nfd accent", "table", "cafe\u0301", `not in Unicode NFC form; its NFC form is "caf\u00e9"`},
		{"nfd hangul", "namespace", "\u1112\u1161\u11ab", `not in Unicode NFC form; its NFC form is "\ud55c"`},
		{"zero width space", "table", "or\u200bders", "contains the invisible format character U+200B"},
		{"byte order mark", "tenant", "\ufeffacme", "contains the invisible format character U+FEFF"},
		{"soft hyphen", "namespace", "sa\u00adles", "contains the invisible format character U+00AD"},
		{"right-to-left override", "table", "evil\u202etxt.exe", "contains the bidi control character U+202E"},
		{"left-to-right mark", "table", "t\u200e", "contains the bidi control character U+200E"},
		{"right-to-left mark", "tenant", "\u200facme", "contains the bidi control character U+200F"},
		{"left-to-right isolate", "namespace", "a\u2066b", "contains the bidi control character U+2066"},
		{"pop directional isolate", "namespace", "a\u2069b", "contains the bidi control character U+2069"},
		{"arabic letter mark", "table", "a\u061cb", "contains the bidi control character U+061C"},
		{"line separator", "table", "a\u2028b", "contains the line or paragraph separator U+2028"},
		{"replacement character", "table", "t\ufffd", "contains U+FFFD, the replacement character of a decoding error"},
		{"next line control", "table", "t\u0085", "contains a control character"},
		{"leading space", "table", " orders", "starts with white space"},
		{"trailing space", "tenant", "acme ", "ends with white space"},
		{"leading no-break space", "namespace", "\u00a0sales", "starts with white space"},
		{"trailing ideographic space", "table", "\u58f2\u4e0a\u3000", "ends with white space"},
		{"inner space", "table", "order items", ""},
		{"dot", "table", ".", `"." and ".." are reserved: no URL path can address them`},
		{"dot dot", "namespace", "..", `"." and ".." are reserved: no URL path can address them`},
		{"dot dot tenant", "tenant", "..", `"." and ".." are reserved: no URL path can address them`},
		{"three dots", "table", "...", ""},
		{"dotted", "table", ".hidden", ""},
		{"star in tenant", "tenant", "ac*", `contains '*', a wildcard in IAM policy patterns`},
		{"question mark in tenant", "tenant", "a?me", `contains '?', a wildcard in IAM policy patterns`},
		{"star in non-ASCII tenant", "tenant", "\u00e1*", `contains '*', a wildcard in IAM policy patterns`},
		{"star in table", "table", "t*", ""},
		{"question mark in namespace", "namespace", "s?", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := catalog.ValidateName(tt.part, tt.value)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("ValidateName(%q, %+q) = %v, want nil", tt.part, tt.value, err)
				}
				return
			}
			var ne *catalog.NameError
			if !errors.As(err, &ne) || !errors.Is(err, catalog.ErrInvalidName) {
				t.Fatalf("ValidateName(%q, %+q) = %v, want a *NameError wrapping ErrInvalidName", tt.part, tt.value, err)
			}
			if ne.Part != tt.part || ne.Value != tt.value || ne.Reason != tt.wantReason {
				t.Fatalf("got NameError{%q, %+q, %q}, want {%q, %+q, %q}", ne.Part, ne.Value, ne.Reason, tt.part, tt.value, tt.wantReason)
			}
		})
	}
}

// An error message never carries a hidden character itself: the name is
// quoted with its invisible characters escaped.
func TestNameErrorShowsHiddenCharacters(t *testing.T) {
	t.Parallel()
	err := catalog.ValidateName("table", "a\u202eb")
	if got, want := err.Error(), `catalog: invalid table name "a\u202eb": contains the bidi control character U+202E`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestParseKeyRejects(t *testing.T) {
	t.Parallel()
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
	f.Add("ac*e", ".", "cafe\u0301")
	f.Add("\u202eacme", " s", "t\u200b")
	f.Add("acme", "..", "t\ufffd")
	f.Fuzz(func(t *testing.T, tenant, namespace, name string) {
		ref := catalog.TableRef{Tenant: tenant, Namespace: namespace, Name: name}
		key, err := ref.Key()
		if err != nil {
			var ne *catalog.NameError
			if !errors.Is(err, catalog.ErrInvalidName) || !errors.As(err, &ne) || ne.Reason == "" {
				t.Fatalf("Key() error %v is not a *NameError with a reason wrapping ErrInvalidName", err)
			}
			return
		}
		// What the validator accepts obeys every rule it documents.
		for part, v := range map[string]string{"tenant": tenant, "namespace": namespace, "table": name} {
			checkValidName(t, part, v)
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

// checkValidName fails t unless name, accepted by ValidateName, keeps each
// rule, checked here independently of the validator's own code.
func checkValidName(t testing.TB, part, name string) {
	t.Helper()
	fail := func(rule string) { t.Fatalf("accepted %s name %+q, which %s", part, name, rule) }
	if name == "" || len(name) > catalog.MaxNameBytes || !utf8.ValidString(name) {
		fail("is empty, too long or not UTF-8")
	}
	if !norm.NFC.IsNormalString(name) || norm.NFC.String(name) != name {
		fail("is not NFC")
	}
	if name == "." || name == ".." {
		fail("is a dot name")
	}
	if strings.TrimFunc(name, unicode.IsSpace) != name {
		fail("has white space at an end")
	}
	if part == "tenant" && strings.ContainsAny(name, "*?") {
		fail("has an IAM wildcard")
	}
	for _, r := range name {
		if r == '/' || r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Bidi_Control) {
			fail(fmt.Sprintf("holds %U", r))
		}
	}
}
