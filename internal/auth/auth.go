// Package auth validates the bearer JWTs that Flight SQL clients send to
// discovery and returns the tenant they belong to. The tenant comes only from
// the validated token, never from anything else the client sends.
package auth

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// ErrUnauthenticated is wrapped by every rejection. Its message is what a
// client may see; the wrapped detail is for the server's log only.
var ErrUnauthenticated = errors.New("unauthenticated")

// MinSecretBytes is the shortest HS256 secret accepted (RFC 7518 §3.2: a key
// of at least the hash size).
const MinSecretBytes = 32

// MaxTokenBytes bounds a token.
const MaxTokenBytes = 8 << 10

// DefaultMaxLifetime is Config.MaxLifetime's default: the longest a token
// may be valid for, from its iat to its exp.
const DefaultMaxLifetime = 24 * time.Hour

// Config configures a Validator. At least one of HS256Secret, JWKS and
// JWKSURL is required; JWKS and JWKSURL exclude each other.
type Config struct {
	// HS256Secret verifies HS256 tokens.
	HS256Secret []byte
	// JWKS is a JSON Web Key Set (RFC 7517) of RSA and EC public keys that
	// verify RS256/RS384/RS512 and ES256/ES384/ES512 tokens: at most
	// MaxJWKSBytes holding at most MaxJWKSKeys keys. It requires Audience:
	// an identity provider's keys sign tokens for every service it serves,
	// and the audience is what says a token is for lake.
	JWKS []byte
	// JWKSURL serves the JWKS instead (an identity provider's jwks_uri), so
	// keys can rotate. It must be https, or http to a loopback host (tests,
	// a local sidecar); redirects obey the same rule. The set is fetched
	// when the Validator is built, which fails if that fetch fails, and
	// again every JWKSRefresh; a token naming a key ID the set lacks also
	// triggers a fetch, at most one a minute. Each fetch has 10 s, reads at
	// most MaxJWKSBytes and must hold at most MaxJWKSKeys RSA or EC public
	// keys. A fetch that fails changes nothing: the keys of the last good
	// one stay in use, and the error goes to JWKSRefreshError. Like JWKS, it
	// requires Audience.
	JWKSURL string
	// JWKSRefresh is how often JWKSURL is fetched again. Default
	// DefaultJWKSRefresh (15 min); at least MinJWKSRefresh (1 min).
	JWKSRefresh time.Duration
	// JWKSRefreshError receives each failed fetch of JWKSURL after the
	// first, for the caller to log. Required with JWKSURL. It is called
	// from the refresh goroutine or from Tenant, and must not block.
	JWKSRefreshError func(error)
	// Issuer, when set, must equal the token's iss.
	Issuer string
	// Audience, when set, must be among the token's aud. Required with JWKS
	// and JWKSURL.
	Audience string
	// MaxLifetime is the longest a token may be valid for, exp − iat.
	// Default DefaultMaxLifetime (24 h); negative is an error.
	MaxLifetime time.Duration
	// TenantClaim names the claim holding the tenant. Default "tenant".
	TenantClaim string
	// Leeway tolerates clock skew on exp, nbf and iat. Default 30 s.
	Leeway time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time

	// minJWKSRefresh replaces MinJWKSRefresh when set: tests refresh in
	// milliseconds (export_test.go).
	minJWKSRefresh time.Duration
}

// Validator checks tokens. It is safe for concurrent use.
type Validator struct {
	cfg    Config
	jwks   keyfunc.Keyfunc
	parser *jwt.Parser
	// stop ends the refresh of JWKSURL; nil without one.
	stop context.CancelFunc
	// verified remembers tokens that passed every check (see Identity).
	verified verifiedCache
}

// VerifiedTokenTTL is how long a token that passed every check is taken
// on its word again without a second verification: a client sends the
// same token with every call (two per Flight SQL query), and parsing and
// verifying it was half of discovery's work per request. The token's own
// exp applies to every use, and a token a JWKS key verified is taken again
// only while the key set still holds that very key under its key ID.
const VerifiedTokenTTL = time.Minute

// MaxVerifiedTokens bounds the tokens remembered; past it, the cache
// starts over.
const MaxVerifiedTokens = 4096

// verifiedCache maps a token's exact bytes to what it said when it
// passed. The key is the token itself, kept (a copy) for at most
// VerifiedTokenTTL: a map lookup hashes it in tens of nanoseconds, where
// a SHA-256 of it took half a microsecond, a third of a warm Iceberg
// loadTable's whole server time. A token is a bearer secret either way;
// the process holds every token it is sent while it serves the request.
type verifiedCache struct {
	mu sync.RWMutex
	m  map[string]verifiedToken
	// verifications counts full verifications that passed, for tests.
	verifications atomic.Int64
}

type verifiedToken struct {
	id Identity
	// from and until bound the clock readings at which the entry stands
	// for a verification: from the one that passed until the earlier of
	// VerifiedTokenTTL later and the token's exp plus the leeway (the
	// parser's own rule: valid while now < exp + leeway).
	from, until time.Time
	// key is the JWKS key that verified the token, found under alg and
	// kid; nil for the HS256 secret, which never changes.
	key      crypto.PublicKey
	alg, kid string
}

func (c *verifiedCache) get(key string, now time.Time) (verifiedToken, bool) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if !ok || now.Before(e.from) || !now.Before(e.until) {
		return verifiedToken{}, false
	}
	return e, true
}

func (c *verifiedCache) put(key string, e verifiedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= MaxVerifiedTokens {
		c.m = make(map[string]verifiedToken)
	}
	// A copy: the caller's string may share a larger buffer (a request's
	// headers).
	c.m[strings.Clone(key)] = e
}

// stillHolds reports whether the key set still verifies alg and kid with
// key: a rotated or removed key ends its tokens' cache entries at once.
func (v *Validator) stillHolds(e verifiedToken) bool {
	if e.key == nil {
		return true
	}
	cur, err := v.jwks.Keyfunc(&jwt.Token{Header: map[string]any{"alg": e.alg, "kid": e.kid}})
	if err != nil {
		return false
	}
	k, ok := cur.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(e.key)
}

var (
	hmacAlgs       = []string{"HS256"}
	asymmetricAlgs = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512"}
)

// New is NewContext with context.Background(): with a JWKSURL, the
// refresh runs until Close.
func New(cfg Config) (*Validator, error) {
	return NewContext(context.Background(), cfg)
}

// NewContext validates cfg and returns a Validator. With a JWKSURL it
// fetches the key set before it returns, and returns an error when that
// fetch fails or ctx ends first; it then refreshes the set every
// JWKSRefresh until ctx ends or Close is called, after which the Validator
// keeps the last keys it fetched.
func NewContext(ctx context.Context, cfg Config) (*Validator, error) {
	if cfg.HS256Secret == nil && cfg.JWKS == nil && cfg.JWKSURL == "" {
		return nil, errors.New("auth: configure an HS256 secret, a JWKS or a JWKS URL")
	}
	if cfg.HS256Secret != nil && len(cfg.HS256Secret) < MinSecretBytes {
		return nil, fmt.Errorf("auth: the HS256 secret has %d bytes; use at least %d", len(cfg.HS256Secret), MinSecretBytes)
	}
	if cfg.JWKS != nil && cfg.JWKSURL != "" {
		return nil, errors.New("auth: configure a JWKS or a JWKS URL, not both")
	}
	if (cfg.JWKS != nil || cfg.JWKSURL != "") && cfg.Audience == "" {
		return nil, errors.New("auth: a JWKS needs an audience: set the audience lake's tokens carry in aud (-jwt-audience, LAKE_JWT_AUDIENCE)")
	}
	if cfg.JWKSURL != "" {
		if err := checkJWKSConfig(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.MaxLifetime < 0 {
		return nil, fmt.Errorf("auth: maximum token lifetime %v is negative", cfg.MaxLifetime)
	}
	if cfg.MaxLifetime == 0 {
		cfg.MaxLifetime = DefaultMaxLifetime
	}
	if cfg.TenantClaim == "" {
		cfg.TenantClaim = "tenant"
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Validator{cfg: cfg}
	var algs []string
	if cfg.HS256Secret != nil {
		algs = append(algs, hmacAlgs...)
	}
	switch {
	case cfg.JWKS != nil:
		if err := checkJWKS(cfg.JWKS); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		kf, err := keyfunc.NewJWKSetJSON(json.RawMessage(cfg.JWKS))
		if err != nil {
			return nil, fmt.Errorf("auth: JWKS: %w", err)
		}
		v.jwks = kf
		algs = append(algs, asymmetricAlgs...)
	case cfg.JWKSURL != "":
		kf, stop, err := openJWKSURL(ctx, cfg)
		if err != nil {
			return nil, err
		}
		v.jwks, v.stop = kf, stop
		algs = append(algs, asymmetricAlgs...)
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(algs),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
		jwt.WithIssuedAt(),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// Close stops the refresh of JWKSURL; the Validator goes on validating
// with the last keys it fetched. It does nothing without a JWKSURL and may
// be called more than once.
func (v *Validator) Close() {
	if v.stop != nil {
		v.stop()
	}
}

// checkJWKS bounds a key set (MaxJWKSBytes, MaxJWKSKeys) and rejects one
// holding symmetric ("oct") or private keys: a JWKS is for public keys
// only. Its errors name the JWKS and leave the package prefix to the
// caller.
func checkJWKS(raw []byte) error {
	if len(raw) > MaxJWKSBytes {
		return fmt.Errorf("JWKS of %d bytes, more than the %d allowed", len(raw), MaxJWKSBytes)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return fmt.Errorf("JWKS is not JSON: %w", err)
	}
	if len(set.Keys) == 0 {
		return errors.New("JWKS holds no keys")
	}
	if len(set.Keys) > MaxJWKSKeys {
		return fmt.Errorf("JWKS holds %d keys, more than the %d allowed", len(set.Keys), MaxJWKSKeys)
	}
	for i, k := range set.Keys {
		switch k["kty"] {
		case "RSA", "EC":
		default:
			return fmt.Errorf("JWKS key %d has kty %v; only RSA and EC public keys are allowed", i, k["kty"])
		}
		if _, private := k["d"]; private {
			return fmt.Errorf("JWKS key %d is a private key; publish only public keys", i)
		}
	}
	return nil
}

// keyFor picks the key by the token's algorithm, so an algorithm can only
// ever be verified with a key of its own kind (no algorithm confusion).
func (v *Validator) keyFor(t *jwt.Token) (any, error) {
	switch alg := t.Method.Alg(); {
	case alg == "HS256" && v.cfg.HS256Secret != nil:
		return v.cfg.HS256Secret, nil
	case strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "ES"):
		if v.jwks == nil {
			return nil, fmt.Errorf("no key set for %s", alg)
		}
		return v.jwks.Keyfunc(t)
	default:
		return nil, fmt.Errorf("algorithm %q not accepted", alg)
	}
}

// Tenant validates a token and returns the tenant in its tenant claim. The
// token must have a valid signature by an accepted algorithm, exp and iat
// (iat not in the future), a lifetime exp − iat of at most MaxLifetime,
// nbf when present, iss and aud when configured, a payload of valid UTF-8
// with no claim named twice, and a tenant claim that is a valid tenant name
// (catalog.ValidateName). Every failure wraps ErrUnauthenticated; the rest
// of the message says why, for the server's log. With a JWKSURL, a token
// naming a key ID the set lacks may wait up to 10 s for a fetch of the set
// (at most one a minute; the others are refused at once).
func (v *Validator) Tenant(token string) (string, error) {
	if len(token) <= MaxTokenBytes {
		// The remembered answer, without the copy of the audience
		// Identity makes: every request of a Flight SQL or Iceberg REST
		// client asks this.
		if e, ok := v.verified.get(token, v.cfg.Now()); ok && v.stillHolds(e) {
			return e.id.Tenant, nil
		}
	}
	id, err := v.Identity(token)
	return id.Tenant, err
}

// Identity is what a valid token says of its bearer.
type Identity struct {
	// Tenant is the tenant claim's value.
	Tenant string
	// Subject is the token's sub: who the bearer is, which the catalog
	// records as the author of a change. Empty when the token has none, or
	// one that is not a string of 1 to MaxSubjectBytes bytes of printable
	// UTF-8 (the token is valid all the same: the subject grants nothing).
	Subject string
	// Audience is the token's aud (none when it has none).
	Audience []string
}

// MaxSubjectBytes bounds the subject an Identity reports.
const MaxSubjectBytes = 256

// subjectOf is claims' sub when it is a string fit to record (see
// Identity.Subject), else "".
func subjectOf(claims jwt.MapClaims) string {
	sub, ok := claims["sub"].(string)
	if !ok || sub == "" || len(sub) > MaxSubjectBytes || !utf8.ValidString(sub) {
		return ""
	}
	for _, r := range sub {
		if !unicode.IsPrint(r) {
			return ""
		}
	}
	return sub
}

// Identity validates a token as Tenant does and returns its tenant and
// audience, for a caller that grants less to some audiences (local mode's
// registration API refuses the catalog browser's read-only dev tokens).
//
// A token that passed is remembered for
// VerifiedTokenTTL, or until its exp if sooner: the same bytes within that
// time get the same answer without a second parse. A token that failed is
// never remembered.
func (v *Validator) Identity(token string) (Identity, error) {
	if len(token) > MaxTokenBytes {
		return Identity{}, fmt.Errorf("%w: token of %d bytes", ErrUnauthenticated, len(token))
	}
	key := token
	now := v.cfg.Now()
	if e, ok := v.verified.get(key, now); ok && v.stillHolds(e) {
		return Identity{Tenant: e.id.Tenant, Subject: e.id.Subject, Audience: slices.Clone(e.id.Audience)}, nil
	}
	tenant, claims, used, err := v.tenantOf(token)
	if err != nil {
		return Identity{}, err
	}
	aud, err := claims.GetAudience()
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil { // checked by the parser; kept for safety
		return Identity{}, fmt.Errorf("%w: token has no exp claim", ErrUnauthenticated)
	}
	v.verified.verifications.Add(1)
	id := Identity{Tenant: tenant, Subject: subjectOf(claims), Audience: aud}
	if used.cacheable {
		until := now.Add(VerifiedTokenTTL)
		if end := exp.Add(v.cfg.Leeway); end.Before(until) {
			until = end
		}
		used.entry.id = Identity{Tenant: id.Tenant, Subject: id.Subject, Audience: slices.Clone(aud)}
		used.entry.from, used.entry.until = now, until
		v.verified.put(key, used.entry)
	}
	return id, nil
}

// usedKey is the key a verification used, as a cache entry would name it.
type usedKey struct {
	// cacheable: one key verified the token (the HS256 secret, or a JWKS
	// key found by the token's kid), not a set of candidates.
	cacheable bool
	entry     verifiedToken
}

// tenantOf checks token (see Tenant) and returns its tenant, its claims and
// the key that verified it.
func (v *Validator) tenantOf(token string) (string, jwt.MapClaims, usedKey, error) {
	var used usedKey
	if token == "" {
		return "", nil, used, fmt.Errorf("%w: no token", ErrUnauthenticated)
	}
	if len(token) > MaxTokenBytes {
		return "", nil, used, fmt.Errorf("%w: token of %d bytes", ErrUnauthenticated, len(token))
	}
	claims := jwt.MapClaims{}
	keyFor := func(t *jwt.Token) (any, error) {
		k, err := v.keyFor(t)
		if err != nil {
			return nil, err
		}
		alg := t.Method.Alg()
		kid, hasKID := t.Header["kid"].(string)
		switch k := k.(type) {
		case []byte: // the HS256 secret
			used = usedKey{cacheable: true}
		case crypto.PublicKey:
			if _, isSet := k.(jwt.VerificationKeySet); !isSet && hasKID {
				used = usedKey{cacheable: true, entry: verifiedToken{key: k, alg: alg, kid: kid}}
			}
		}
		return k, nil
	}
	if _, err := v.parser.ParseWithClaims(token, claims, keyFor); err != nil {
		return "", nil, usedKey{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	if err := v.checkPayload(token); err != nil {
		return "", nil, usedKey{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	if err := v.checkLifetime(claims); err != nil {
		return "", nil, usedKey{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	tenant, ok := claims[v.cfg.TenantClaim].(string)
	if !ok {
		return "", nil, usedKey{}, fmt.Errorf("%w: no string claim %q", ErrUnauthenticated, v.cfg.TenantClaim)
	}
	if err := catalog.ValidateName("tenant", tenant); err != nil {
		return "", nil, usedKey{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	return tenant, claims, used, nil
}

// checkPayload decodes the claims segment of a token that parsed and
// rejects it unless it is valid UTF-8 (encoding/json would turn the bytes
// into U+FFFD) and a JSON object that names no claim twice. encoding/json
// keeps the last of two "tenant" members, other parsers the first: the
// tenant a token grants must not depend on who reads it (RFC 7519 §4).
func (v *Validator) checkPayload(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("token of %d segments", len(parts))
	}
	payload, err := v.parser.DecodeSegment(parts[1])
	if err != nil {
		return fmt.Errorf("claims segment: %v", err)
	}
	if !utf8.Valid(payload) {
		return errors.New("claims are not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("claims are not a JSON object")
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("claims: %v", err)
		}
		name, _ := tok.(string) // an object's member names are strings
		if seen[name] {
			return fmt.Errorf("claim %q appears more than once", name)
		}
		seen[name] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("claim %q: %v", name, err)
		}
	}
	return nil
}

// checkLifetime requires iat and a lifetime exp − iat of at most
// MaxLifetime. The parser has checked that exp is present and not past,
// and that iat, when present, is not in the future.
func (v *Validator) checkLifetime(claims jwt.MapClaims) error {
	iat, err := claims.GetIssuedAt()
	if err != nil {
		return err
	}
	if iat == nil {
		return errors.New("token has no iat claim")
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return errors.New("token has no exp claim")
	}
	if life := exp.Sub(iat.Time); life > v.cfg.MaxLifetime {
		return fmt.Errorf("token lifetime %v (exp - iat) exceeds the %v maximum", life, v.cfg.MaxLifetime)
	}
	return nil
}

// BearerToken extracts the token from an authorization header value
// ("Bearer <token>", scheme case-insensitive).
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// TokenClaims are what IssueHS256 signs.
type TokenClaims struct {
	// TenantClaim names the claim that carries the tenant ("tenant" when
	// empty).
	TenantClaim string
	Tenant      string
	// Subject is the sub claim: who the bearer is (the tenant when empty).
	Subject string
	// Issuer and Audience, when set, are the iss and aud claims.
	Issuer, Audience string
	// TTL is how long the token is valid from Now.
	TTL time.Duration
	Now time.Time
}

// IssueHS256 signs a token of c with secret: what `lake token`, the CLI
// and local mode's dev tokens use. A Validator rejects it when c.TTL
// exceeds its MaxLifetime.
func IssueHS256(secret []byte, c TokenClaims) (string, error) {
	if c.TenantClaim == "" {
		c.TenantClaim = "tenant"
	}
	if c.Subject == "" {
		c.Subject = c.Tenant
	}
	claims := jwt.MapClaims{
		c.TenantClaim: c.Tenant,
		"sub":         c.Subject,
		"iat":         c.Now.Unix(),
		"nbf":         c.Now.Unix(),
		"exp":         c.Now.Add(c.TTL).Unix(),
	}
	if c.Issuer != "" {
		claims["iss"] = c.Issuer
	}
	if c.Audience != "" {
		claims["aud"] = c.Audience
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}
