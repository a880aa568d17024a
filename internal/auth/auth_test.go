package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/pkg/catalog"
)

var (
	now    = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	secret = []byte("0123456789abcdef0123456789abcdef")
)

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func keys(t *testing.T) (*rsa.PrivateKey, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecdh, _ := ek.PublicKey.ECDH()
	raw := ecdh.Bytes() // 0x04 || X || Y
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]any{
		{"kty": "RSA", "kid": "rsa1", "alg": "RS256", "use": "sig", "n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes())},
		{"kty": "EC", "kid": "ec1", "alg": "ES256", "use": "sig", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])},
	}})
	return rk, ek, jwks
}

func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claims(mod func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{"tenant": "acme", "iss": "lake-test", "aud": "lake", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix(), "iat": now.Add(-time.Minute).Unix()}
	if mod != nil {
		mod(c)
	}
	return c
}

func TestTokens(t *testing.T) {
	rk, ek, jwks := keys(t)
	v, err := auth.New(auth.Config{HS256Secret: secret, JWKS: jwks, Issuer: "lake-test", Audience: "lake", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubPEM})
	otherRSA, _ := rsa.GenerateKey(rand.Reader, 2048)

	tests := []struct {
		name  string
		token string
		want  string // tenant, or "" for rejection
	}{
		{"hs256", sign(t, jwt.SigningMethodHS256, secret, "", claims(nil)), "acme"},
		{"rs256", sign(t, jwt.SigningMethodRS256, rk, "rsa1", claims(nil)), "acme"},
		{"es256", sign(t, jwt.SigningMethodES256, ek, "ec1", claims(nil)), "acme"},
		{"rs256 without kid", sign(t, jwt.SigningMethodRS256, rk, "", claims(nil)), "acme"},
		{"expired", sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() })), ""},
		{"no exp", sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { delete(c, "exp") })), ""},
		{"not yet valid", sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() })), ""},
		{"wrong issuer", sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["iss"] = "evil" })), ""},
		{"wrong audience", sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["aud"] = "other" })), ""},
		{"wrong secret", sign(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), "", claims(nil)), ""},
		{"wrong rsa key", sign(t, jwt.SigningMethodRS256, otherRSA, "rsa1", claims(nil)), ""},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claims(nil)), ""},
		{"alg confusion: HS256 keyed with the RSA public key", sign(t, jwt.SigningMethodHS256, pemBytes, "rsa1", claims(nil)), ""},
		{"hs384 not accepted", sign(t, jwt.SigningMethodHS384, secret, "", claims(nil)), ""},
		{"es256 with the rsa kid", sign(t, jwt.SigningMethodES256, ek, "rsa1", claims(nil)), ""},
		{"no tenant", sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { delete(c, "tenant") })), ""},
		{"tenant not a string", sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["tenant"] = 7 })), ""},
		{"invalid tenant name", sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["tenant"] = "a/b" })), ""},
		{"garbage", "not.a.jwt", ""},
		{"empty", "", ""},
		{"huge", strings.Repeat("a", auth.MaxTokenBytes+1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Tenant(tt.token)
			if tt.want == "" {
				if !errors.Is(err, auth.ErrUnauthenticated) || got != "" {
					t.Fatalf("Tenant = %q, %v; want ErrUnauthenticated", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Tenant = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// The limits every token keeps, each rejected with its reason for the
// log: iat is required and not in the future, exp - iat is at most the
// maximum lifetime (24 h by default), and a JWKS-verified token must carry
// the configured aud.
func TestTokenLimits(t *testing.T) {
	rk, _, jwks := keys(t)
	v, err := auth.New(auth.Config{HS256Secret: secret, JWKS: jwks, Audience: "lake", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	hs := func(mod func(jwt.MapClaims)) string { return sign(t, jwt.SigningMethodHS256, secret, "", claims(mod)) }
	rs := func(mod func(jwt.MapClaims)) string { return sign(t, jwt.SigningMethodRS256, rk, "rsa1", claims(mod)) }
	for _, tt := range []struct {
		name, token string
		wantReason  string // "" for accepted
	}{
		{"no iat", hs(func(c jwt.MapClaims) { delete(c, "iat") }), "token has no iat claim"},
		{"iat in the future", hs(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Hour).Unix() }), "token used before issued"},
		{"lifetime at the 24h default", hs(func(c jwt.MapClaims) { c["iat"], c["exp"] = now.Add(-time.Hour).Unix(), now.Add(23*time.Hour).Unix() }), ""},
		{"lifetime a second over the 24h default", hs(func(c jwt.MapClaims) {
			c["iat"], c["exp"] = now.Add(-time.Hour).Unix(), now.Add(23*time.Hour+time.Second).Unix()
		}),
			"token lifetime 24h0m1s (exp - iat) exceeds the 24h0m0s maximum"},
		{"rs256 living a year", rs(func(c jwt.MapClaims) { c["exp"] = now.Add(365 * 24 * time.Hour).Unix() }), "exceeds the 24h0m0s maximum"},
		{"rs256 without aud", rs(func(c jwt.MapClaims) { delete(c, "aud") }), "aud claim is required"},
		{"rs256 for another audience", rs(func(c jwt.MapClaims) { c["aud"] = []string{"billing"} }), "token has invalid audience"},
		{"rs256 with aud", rs(nil), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Tenant(tt.token)
			if tt.wantReason == "" {
				if err != nil || got != "acme" {
					t.Fatalf("got %q, %v; want acme", got, err)
				}
				return
			}
			if got != "" || !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), tt.wantReason) {
				t.Fatalf("got %q, %v; want ErrUnauthenticated saying %q", got, err, tt.wantReason)
			}
		})
	}
}

// A tenant claim obeys the catalog's tenant name rules: nothing that could
// collide with another tenant, hide characters or widen an IAM pattern.
func TestTenantClaimFollowsTenantNameRules(t *testing.T) {
	v, err := auth.New(auth.Config{HS256Secret: secret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, tenant, wantReason string
	}{
		{"wildcard star", "ac*", `contains '*'`},
		{"wildcard question mark", "ac?e", `contains '?'`},
		{"trailing space", "acme ", "ends with white space"},
		{"leading space", " acme", "starts with white space"},
		{"zero width space", "ac\u200bme", "format character U+200B"},
		{"right-to-left override", "\u202eacme", "bidi control character U+202E"},
		{"byte order mark", "\ufeffacme", "format character U+FEFF"},
		{"NFD", "cafe\u0301", "not in Unicode NFC form"},
		{"dot", ".", `"." and ".." are reserved`},
		{"dot dot", "..", `"." and ".." are reserved`},
		{"replacement character", "acme\ufffd", "U+FFFD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["tenant"] = tt.tenant }))
			got, err := v.Tenant(tok)
			if got != "" || !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), tt.wantReason) {
				t.Fatalf("got %q, %v; want ErrUnauthenticated saying %q", got, err, tt.wantReason)
			}
		})
	}
}

// signPayload signs a claims segment written by hand, which jwt.MapClaims
// cannot produce (a member twice, bytes that are not UTF-8).
func signPayload(t testing.TB, payload string) string {
	t.Helper()
	head := b64([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + b64([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(head, secret)
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + b64(sig)
}

// A claims segment that names a claim twice is refused, whichever value
// encoding/json would keep: RFC 7519 §4 leaves parsers to keep either the
// first or the last, so the tenant would depend on who reads the token.
func TestDuplicateClaimRejected(t *testing.T) {
	v, err := auth.New(auth.Config{HS256Secret: secret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	times := fmt.Sprintf(`"iat":%d,"exp":%d`, now.Add(-time.Minute).Unix(), now.Add(time.Hour).Unix())
	for _, tt := range []struct {
		name, payload string
		want          string // the tenant, or part of the rejection's reason
		ok            bool
	}{
		{"one tenant", `{"tenant":"acme",` + times + `}`, "acme", true},
		{"nested duplicates are not claims", `{"tenant":"acme","x":{"a":1,"a":2},` + times + `}`, "acme", true},
		{"tenant twice", `{"tenant":"acme","tenant":"globex",` + times + `}`, `claim "tenant" appears more than once`, false},
		{"tenant twice, same value", `{"tenant":"acme",` + times + `,"tenant":"acme"}`, `claim "tenant" appears more than once`, false},
		{"tenant twice, once escaped", `{"tenant":"acme","ten\u0061nt":"globex",` + times + `}`, `claim "tenant" appears more than once`, false},
		{"exp twice", `{"tenant":"acme",` + times + `,"exp":99999999999}`, `claim "exp" appears more than once`, false},
		{"not UTF-8", `{"tenant":"acme","note":"` + "\xff" + `",` + times + `}`, "claims are not valid UTF-8", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Tenant(signPayload(t, tt.payload))
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if got != "" || !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, %v; want ErrUnauthenticated saying %q", got, err, tt.want)
			}
		})
	}
}

// Config.MaxLifetime bounds exp - iat: a token that lives longer is
// refused even while it is current; zero means DefaultMaxLifetime.
func TestMaxLifetime(t *testing.T) {
	for _, tt := range []struct {
		name     string
		max      time.Duration
		lifetime time.Duration
		ok       bool
	}{
		{"default, a day", 0, 24 * time.Hour, true},
		{"default, a day and a second", 0, 24*time.Hour + time.Second, false},
		{"default, a year", 0, 365 * 24 * time.Hour, false},
		{"an hour, an hour", time.Hour, time.Hour, true},
		{"an hour, two", time.Hour, 2 * time.Hour, false},
		{"a week, a week", 7 * 24 * time.Hour, 7 * 24 * time.Hour, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := auth.New(auth.Config{HS256Secret: secret, MaxLifetime: tt.max, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			iat := now.Add(-time.Minute)
			tok, err := auth.IssueHS256(secret, auth.TokenClaims{Tenant: "acme", TTL: tt.lifetime, Now: iat})
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.Tenant(tok)
			if tt.ok {
				if err != nil || got != "acme" {
					t.Fatalf("got %q, %v; want acme", got, err)
				}
				return
			}
			if want := "exceeds the"; got != "" || !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %q, %v; want ErrUnauthenticated saying %q", got, err, want)
			}
		})
	}
}

func TestHS256OnlyRejectsAsymmetric(t *testing.T) {
	rk, _, _ := keys(t)
	v, err := auth.New(auth.Config{HS256Secret: secret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Tenant(sign(t, jwt.SigningMethodRS256, rk, "rsa1", claims(nil))); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("RS256 token with no JWKS configured: %v", err)
	}
	tok, err := auth.IssueHS256(secret, auth.TokenClaims{Tenant: "globex", TTL: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.Tenant(tok); err != nil || got != "globex" {
		t.Fatalf("issued token = %q, %v", got, err)
	}
}

func TestConfigRejects(t *testing.T) {
	_, _, jwks := keys(t)
	for name, cfg := range map[string]auth.Config{
		"nothing":               {},
		"short secret":          {HS256Secret: []byte("short")},
		"oct jwks":              {JWKS: []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), Audience: "lake"},
		"private jwks":          {JWKS: []byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","d":"AQAB"}]}`), Audience: "lake"},
		"empty jwks":            {JWKS: []byte(`{"keys":[]}`), Audience: "lake"},
		"not json":              {JWKS: []byte(`{`), Audience: "lake"},
		"negative max lifetime": {HS256Secret: secret, MaxLifetime: -time.Hour},
		"jwks of too many keys": {JWKS: []byte(`{"keys":[` + strings.Repeat(`{"kty":"EC"},`, auth.MaxJWKSKeys) + `{"kty":"EC"}]}`), Audience: "lake"},
		"jwks over 1 MiB":       {JWKS: append(jwks, make([]byte, auth.MaxJWKSBytes)...), Audience: "lake"},
	} {
		if _, err := auth.New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := auth.New(auth.Config{JWKS: jwks, Audience: "lake"}); err != nil {
		t.Fatalf("JWKS with an audience: got %v, want success", err)
	}
}

// A JWKS without an audience is a configuration error at start: an
// identity provider's keys sign tokens for all its services, and only aud
// says a token is meant for lake.
func TestJWKSRequiresAudience(t *testing.T) {
	_, _, jwks := keys(t)
	for _, cfg := range []auth.Config{{JWKS: jwks}, {JWKS: jwks, HS256Secret: secret, Issuer: "lake-test"}} {
		v, err := auth.New(cfg)
		if want := "auth: a JWKS needs an audience"; v != nil || err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("got %v, %v; want an error starting %q", v, err, want)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for in, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "": "", "Bearer ": ""} {
		got, ok := auth.BearerToken(in)
		if got != want || ok != (want != "") {
			t.Errorf("BearerToken(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func FuzzTenant(f *testing.F) {
	v, err := auth.New(auth.Config{HS256Secret: secret, Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := auth.IssueHS256(secret, auth.TokenClaims{Tenant: "acme", TTL: time.Hour, Now: now})
	f.Add(good)
	f.Add("eyJhbGciOiJub25lIn0.eyJ0ZW5hbnQiOiJhY21lIn0.")
	f.Add(good[:len(good)-3] + "AAA")
	f.Add(signPayload(f, fmt.Sprintf(`{"tenant":"acme","tenant":"globex","iat":%d,"exp":%d}`, now.Unix(), now.Add(time.Hour).Unix())))
	f.Add(signPayload(f, fmt.Sprintf(`{"tenant":"ac*","iat":%d,"exp":%d}`, now.Unix(), now.Add(time.Hour).Unix())))
	f.Fuzz(func(t *testing.T, token string) {
		tenant, err := v.Tenant(token)
		if err != nil {
			if !errors.Is(err, auth.ErrUnauthenticated) || tenant != "" {
				t.Fatalf("rejection %q, %v", tenant, err)
			}
			return
		}
		if err := catalog.ValidateName("tenant", tenant); err != nil {
			t.Fatalf("accepted the invalid tenant %q: %v", tenant, err)
		}
		// Only a token signed with the secret can pass: re-signing its
		// claims must give the same token.
		parts := strings.Split(token, ".")
		if len(parts) != 3 {
			t.Fatalf("accepted a token of %d parts", len(parts))
		}
		sig, _ := jwt.SigningMethodHS256.Sign(parts[0]+"."+parts[1], secret)
		if b64(sig) != parts[2] && base64.RawURLEncoding.EncodeToString(sig) != strings.TrimRight(parts[2], "=") {
			t.Fatalf("accepted a token whose signature is not the secret's")
		}
	})
}

// Identity reports the token's sub as the bearer's subject (what the
// catalog records as the author of a change), the same from the verified
// cache as from a full verification; a sub unfit to record (not a string,
// too long, control or format characters) is no subject, and the token is
// valid all the same. IssueHS256 signs the subject it is given, else the
// tenant.
func TestIdentitySubject(t *testing.T) {
	v, err := auth.New(auth.Config{HS256Secret: secret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		sub  any
		want string
	}{
		{"a name", "alice", "alice"},
		{"an ARN", "arn:aws:iam::123456789012:role/producer", "arn:aws:iam::123456789012:role/producer"},
		{"none", nil, ""},
		{"a number", 42, ""},
		{"empty", "", ""},
		{"a newline", "alice\nbob", ""},
		{"a right-to-left override", "\u202ealice", ""},
		{"too long", strings.Repeat("a", auth.MaxSubjectBytes+1), ""},
		{"the longest", strings.Repeat("a", auth.MaxSubjectBytes), strings.Repeat("a", auth.MaxSubjectBytes)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) {
				if tt.sub != nil {
					c["sub"] = tt.sub
				}
			}))
			for _, pass := range []string{"verified", "cached"} {
				id, err := v.Identity(tok)
				if err != nil || id.Tenant != "acme" || id.Subject != tt.want {
					t.Fatalf("%s: Identity = %+v, %v; want tenant acme, subject %q", pass, id, err, tt.want)
				}
			}
		})
	}
	for _, tt := range []struct{ subject, want string }{{"bob", "bob"}, {"", "acme"}} {
		tok, err := auth.IssueHS256(secret, auth.TokenClaims{Tenant: "acme", Subject: tt.subject, TTL: time.Hour, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if id, err := v.Identity(tok); err != nil || id.Subject != tt.want {
			t.Fatalf("IssueHS256(subject %q): Identity = %+v, %v; want subject %q", tt.subject, id, err, tt.want)
		}
	}
}
