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
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/lake-catalog/lake/internal/auth"
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

func TestHS256OnlyRejectsAsymmetric(t *testing.T) {
	rk, _, _ := keys(t)
	v, err := auth.New(auth.Config{HS256Secret: secret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Tenant(sign(t, jwt.SigningMethodRS256, rk, "rsa1", claims(nil))); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("RS256 token with no JWKS configured: %v", err)
	}
	tok, err := auth.IssueHS256(secret, "", "globex", "", "", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.Tenant(tok); err != nil || got != "globex" {
		t.Fatalf("issued token = %q, %v", got, err)
	}
}

func TestConfigRejects(t *testing.T) {
	for name, cfg := range map[string]auth.Config{
		"nothing":      {},
		"short secret": {HS256Secret: []byte("short")},
		"oct jwks":     {JWKS: []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`)},
		"private jwks": {JWKS: []byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","d":"AQAB"}]}`)},
		"empty jwks":   {JWKS: []byte(`{"keys":[]}`)},
		"not json":     {JWKS: []byte(`{`)},
	} {
		if _, err := auth.New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
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
	good, _ := auth.IssueHS256(secret, "", "acme", "", "", time.Hour, now)
	f.Add(good)
	f.Add("eyJhbGciOiJub25lIn0.eyJ0ZW5hbnQiOiJhY21lIn0.")
	f.Add(good[:len(good)-3] + "AAA")
	f.Fuzz(func(t *testing.T, token string) {
		tenant, err := v.Tenant(token)
		if err != nil {
			if !errors.Is(err, auth.ErrUnauthenticated) || tenant != "" {
				t.Fatalf("rejection %q, %v", tenant, err)
			}
			return
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
