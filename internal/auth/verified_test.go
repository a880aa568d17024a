package auth_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/lake-catalog/lake/internal/auth"
)

// A token that passed is answered from the cache of verified tokens: the
// same bytes again cost no verification, while its exp, the cache's TTL
// and any other bytes (a forged signature, another tenant) are checked as
// before.
func TestVerifiedTokensAreRemembered(t *testing.T) {
	clock := now
	v, err := auth.New(auth.Config{HS256Secret: secret, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	exp := now.Add(3 * time.Minute)
	tok := sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["exp"] = exp.Unix() }))
	for range 3 {
		if got, err := v.Tenant(tok); got != "acme" || err != nil {
			t.Fatalf("Tenant = %q, %v", got, err)
		}
	}
	if n := v.Verifications(); n != 1 {
		t.Fatalf("%d verifications for one token used three times, want 1", n)
	}

	// Another signature over the same claims is other bytes: verified, and
	// refused.
	forged := tok[:len(tok)-4] + "AAAA"
	if got, err := v.Tenant(forged); got != "" || !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("forged signature: %q, %v", got, err)
	}
	// A failure is not remembered as one either: the real token still passes.
	if got, err := v.Tenant(tok); got != "acme" || err != nil {
		t.Fatalf("after a failure: %q, %v", got, err)
	}

	// Past the TTL the token is verified again.
	clock = now.Add(auth.VerifiedTokenTTL + time.Second)
	if got, err := v.Tenant(tok); got != "acme" || err != nil {
		t.Fatalf("after the TTL: %q, %v", got, err)
	}
	if n := v.Verifications(); n != 2 {
		t.Fatalf("%d verifications after the TTL, want 2", n)
	}

	// Past exp + leeway (30 s) the cached token is refused, though it was
	// verified less than a TTL ago.
	clock = exp.Add(29 * time.Second)
	if _, err := v.Tenant(tok); err != nil {
		t.Fatalf("within the leeway: %v", err)
	}
	clock = exp.Add(31 * time.Second)
	if got, err := v.Tenant(tok); got != "" || !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("expired token answered from the cache: %q, %v", got, err)
	}

	// A clock that goes back before the verification does not use it: the
	// token is checked again (and its iat is now in the future).
	clock = now.Add(-10 * time.Minute)
	if got, err := v.Tenant(tok); got != "" || !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("token used before its iat: %q, %v", got, err)
	}
}

// The cache is bounded: past MaxVerifiedTokens distinct tokens it starts
// over, and each token still gets its own tenant.
func TestVerifiedTokensBounded(t *testing.T) {
	v, err := auth.New(auth.Config{HS256Secret: secret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	n := auth.MaxVerifiedTokens + 10
	toks := make([]string, n)
	for i := range toks {
		toks[i] = sign(t, jwt.SigningMethodHS256, secret, "", claims(func(c jwt.MapClaims) { c["tenant"] = fmt.Sprintf("t%d", i) }))
		if got, err := v.Tenant(toks[i]); err != nil || got != fmt.Sprintf("t%d", i) {
			t.Fatalf("token %d: %q, %v", i, got, err)
		}
	}
	// The first token was dropped when the cache started over: verified again.
	before := v.Verifications()
	if got, err := v.Tenant(toks[0]); err != nil || got != "t0" {
		t.Fatalf("token 0 again: %q, %v", got, err)
	}
	if v.Verifications() != before+1 {
		t.Fatalf("token 0 answered from a cache that should have started over")
	}
	// The last one is still remembered.
	before = v.Verifications()
	if got, err := v.Tenant(toks[n-1]); err != nil || got != fmt.Sprintf("t%d", n-1) {
		t.Fatalf("last token: %q, %v", got, err)
	}
	if v.Verifications() != before {
		t.Fatalf("the last token was verified again")
	}
}

// A token a JWKS key verified is remembered with that key: found by its
// key ID it is verified once; without a key ID (checked against every key
// of the set) it is verified each time.
func TestVerifiedJWKSTokens(t *testing.T) {
	rk, _, jwks := keys(t)
	v, err := auth.New(auth.Config{JWKS: jwks, Audience: "lake", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	withKID := sign(t, jwt.SigningMethodRS256, rk, "rsa1", claims(nil))
	noKID := sign(t, jwt.SigningMethodRS256, rk, "", claims(nil))
	for range 3 {
		for _, tok := range []string{withKID, noKID} {
			if got, err := v.Tenant(tok); got != "acme" || err != nil {
				t.Fatalf("Tenant = %q, %v", got, err)
			}
		}
	}
	if n := v.Verifications(); n != 1+3 {
		t.Fatalf("%d verifications, want 1 (key ID) + 3 (no key ID)", n)
	}
}
