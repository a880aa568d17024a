package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/lake-catalog/lake/internal/auth"
)

// ecJWK is an ES256 key and its public JWK under kid.
type ecJWK struct {
	kid  string
	priv *ecdsa.PrivateKey
	pub  map[string]any
}

func newECJWK(t testing.TB, kid string) ecJWK {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicKey.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	raw := pub.Bytes() // 0x04 || X || Y
	return ecJWK{kid: kid, priv: k, pub: map[string]any{
		"kty": "EC", "kid": kid, "alg": "ES256", "use": "sig", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:]),
	}}
}

// token is a valid token for acme signed by k.
func (k ecJWK) token(t testing.TB) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims(nil))
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// keySet is the JWKS JSON of keys' public halves.
func keySet(t testing.TB, keys ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jwksServer is an identity provider's jwks_uri on 127.0.0.1 whose answer
// the test changes.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	status  int
	body    []byte
	fetches int
}

func newJWKSServer(t testing.TB, body []byte) *jwksServer {
	t.Helper()
	s := &jwksServer{status: http.StatusOK, body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		status, body := s.status, s.body
		s.fetches++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// serve makes the server answer status and body from now on.
func (s *jwksServer) serve(status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *jwksServer) fetchCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// refreshErrors collects what a Validator reports through
// Config.JWKSRefreshError.
type refreshErrors struct {
	mu   sync.Mutex
	errs []error
}

func (r *refreshErrors) report(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// since returns the errors reported after the first n.
func (r *refreshErrors) since(n int) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs[n:]...)
}

func (r *refreshErrors) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

// urlConfig is a Config with a JWKS URL and no other keys.
func urlConfig(u string, refresh time.Duration, errs *refreshErrors) auth.Config {
	return auth.Config{JWKSURL: u, JWKSRefresh: refresh, JWKSRefreshError: errs.report, Audience: "lake", Now: func() time.Time { return now }}
}

// eventually polls cond until it holds or ten seconds pass, and returns
// its last answer.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A JWKS URL is refreshed on its interval: a key published later is
// accepted, a key removed is refused from the next refresh on, and a
// refresh that fails (an error status, a response too large, too many
// keys, a private key, not JSON) is reported and keeps the last good keys,
// until the server recovers.
func TestJWKSURLRotation(t *testing.T) {
	k1, k2, k3 := newECJWK(t, "k1"), newECJWK(t, "k2"), newECJWK(t, "k3")
	tokens := map[string]string{"k1": k1.token(t), "k2": k2.token(t), "k3": k3.token(t)}
	srv := newJWKSServer(t, keySet(t, k1.pub))
	var errs refreshErrors
	cfg := auth.WithMinJWKSRefresh(urlConfig(srv.URL+"/jwks", 20*time.Millisecond, &errs), time.Millisecond)
	v, err := auth.NewContext(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)

	many := make([]map[string]any, auth.MaxJWKSKeys+1)
	for i := range many {
		many[i] = k3.pub
	}
	d, err := k3.priv.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	private := map[string]any{"kty": "EC", "kid": "k3", "crv": "P-256", "x": k3.pub["x"], "y": k3.pub["y"], "d": b64(d)}
	huge := append(keySet(t, k3.pub), strings.Repeat(" ", auth.MaxJWKSBytes)...)

	for _, step := range []struct {
		name       string
		status     int
		body       []byte
		wantReport string // part of the reported refresh error; "" for none
		accepted   []string
		refused    []string
	}{
		{"key 1 at start", http.StatusOK, keySet(t, k1.pub), "", []string{"k1"}, []string{"k2", "k3"}},
		{"key 2 published beside key 1", http.StatusOK, keySet(t, k1.pub, k2.pub), "", []string{"k1", "k2"}, []string{"k3"}},
		{"key 1 removed", http.StatusOK, keySet(t, k2.pub), "", []string{"k2"}, []string{"k1", "k3"}},
		{"server error keeps the last keys", http.StatusInternalServerError, keySet(t, k3.pub), "500", []string{"k2"}, []string{"k1", "k3"}},
		{"too large a response keeps the last keys", http.StatusOK, huge, "JWKS response of more than the 1048576 bytes allowed", []string{"k2"}, []string{"k1", "k3"}},
		{"too many keys keeps the last keys", http.StatusOK, keySet(t, many...), "JWKS holds 101 keys, more than the 100 allowed", []string{"k2"}, []string{"k1", "k3"}},
		{"a private key keeps the last keys", http.StatusOK, keySet(t, private), "JWKS key 0 is a private key", []string{"k2"}, []string{"k1", "k3"}},
		{"not JSON keeps the last keys", http.StatusOK, []byte("<html>maintenance</html>"), "JWKS is not JSON", []string{"k2"}, []string{"k1", "k3"}},
		{"server recovers with key 3", http.StatusOK, keySet(t, k3.pub), "", []string{"k3"}, []string{"k1", "k2"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			mark := errs.count()
			srv.serve(step.status, step.body)
			reported := func() bool {
				for _, err := range errs.since(mark) {
					if strings.Contains(err.Error(), step.wantReport) {
						return true
					}
				}
				return false
			}
			if step.wantReport != "" && !eventually(reported) {
				t.Fatalf("got refresh errors %v, want one saying %q", errs.since(mark), step.wantReport)
			}
			state := func() bool {
				for _, k := range step.accepted {
					if got, err := v.Tenant(tokens[k]); err != nil || got != "acme" {
						return false
					}
				}
				for _, k := range step.refused {
					if _, err := v.Tenant(tokens[k]); err == nil {
						return false
					}
				}
				return true
			}
			if !eventually(state) {
				for k, tok := range tokens {
					got, err := v.Tenant(tok)
					t.Errorf("token of %s: got %q, %v", k, got, err)
				}
				t.Fatalf("want the tokens of %v accepted and of %v refused", step.accepted, step.refused)
			}
			if step.wantReport == "" {
				if got := errs.since(mark); len(got) != 0 {
					t.Fatalf("got refresh errors %v, want none", got)
				}
			}
		})
	}
	for _, err := range errs.since(0) {
		if !strings.HasPrefix(err.Error(), "auth: refresh the JWKS from "+srv.URL+"/jwks (the last keys stay): ") {
			t.Errorf("got refresh error %q, want it to start with the package and the URL", err)
		}
	}
}

// A token naming a key ID the set lacks triggers one fetch at once (a key
// published since the last refresh is accepted without waiting for it), and
// the next such token within a minute is refused without a fetch: forged
// key IDs cannot make lake hammer the identity provider.
func TestJWKSURLUnknownKeyIDFetchesRateLimited(t *testing.T) {
	k1, k2, k3 := newECJWK(t, "k1"), newECJWK(t, "k2"), newECJWK(t, "k3")
	srv := newJWKSServer(t, keySet(t, k1.pub))
	var errs refreshErrors
	v, err := auth.NewContext(t.Context(), urlConfig(srv.URL, 0, &errs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	for _, tt := range []struct {
		name        string
		publish     []map[string]any // the set served from this step on; nil: unchanged
		token       string
		wantOK      bool
		wantFetches int
	}{
		{"known key, no fetch", nil, k1.token(t), true, 1},
		{"unknown key 2 fetches once", []map[string]any{k1.pub, k2.pub}, k2.token(t), true, 2},
		{"known key 2, no fetch", nil, k2.token(t), true, 2},
		{"unknown key 3 within the minute: refused, no fetch", []map[string]any{k1.pub, k2.pub, k3.pub}, k3.token(t), false, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.publish != nil {
				srv.serve(http.StatusOK, keySet(t, tt.publish...))
			}
			got, err := v.Tenant(tt.token)
			if tt.wantOK && (err != nil || got != "acme") {
				t.Fatalf("got %q, %v; want acme", got, err)
			}
			if !tt.wantOK && (got != "" || !errors.Is(err, auth.ErrUnauthenticated)) {
				t.Fatalf("got %q, %v; want ErrUnauthenticated", got, err)
			}
			if n := srv.fetchCount(); n != tt.wantFetches {
				t.Fatalf("got %d fetches, want %d", n, tt.wantFetches)
			}
		})
	}
}

// The first fetch must succeed: otherwise building the Validator fails,
// saying the URL and why, so discovery does not start without keys.
func TestJWKSURLFirstFetchMustSucceed(t *testing.T) {
	k := newECJWK(t, "k1")
	many := make([]map[string]any, auth.MaxJWKSKeys+1)
	for i := range many {
		many[i] = k.pub
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	redirect := httptest.NewServer(http.RedirectHandler("http://idp.example.com/jwks", http.StatusFound))
	t.Cleanup(redirect.Close)
	for _, tt := range []struct {
		name   string
		url    string // "" for a jwksServer answering status and body
		status int
		body   []byte
		want   string
	}{
		{name: "server error", status: http.StatusServiceUnavailable, body: keySet(t, k.pub), want: "503"},
		{name: "not JSON", status: http.StatusOK, body: []byte("{"), want: "JWKS is not JSON"},
		{name: "no keys", status: http.StatusOK, body: keySet(t), want: "JWKS holds no keys"},
		{name: "too many keys", status: http.StatusOK, body: keySet(t, many...), want: "JWKS holds 101 keys, more than the 100 allowed"},
		{name: "too large", status: http.StatusOK, body: make([]byte, auth.MaxJWKSBytes+1), want: "JWKS response of more than the 1048576 bytes allowed"},
		{name: "symmetric key", status: http.StatusOK, body: []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), want: "JWKS key 0 has kty oct"},
		{name: "nothing listening", url: gone.URL, want: "connection refused"},
		{name: "redirect to cleartext", url: redirect.URL, want: `Get "http://idp.example.com/jwks": redirect refused: http is accepted only to a loopback host`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.url
			if u == "" {
				srv := newJWKSServer(t, tt.body)
				srv.serve(tt.status, tt.body)
				u = srv.URL
			}
			var errs refreshErrors
			v, err := auth.NewContext(t.Context(), urlConfig(u, 0, &errs))
			if v != nil || err == nil || !strings.HasPrefix(err.Error(), "auth: fetch the JWKS from "+u+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, %v; want an error starting %q and saying %q", v, err, "auth: fetch the JWKS from "+u, tt.want)
			}
		})
	}
}

// A JWKS URL's settings are checked before anything is fetched.
func TestJWKSURLConfigRejects(t *testing.T) {
	_, _, jwks := keys(t)
	var errs refreshErrors
	good := urlConfig("https://idp.example.com/.well-known/jwks.json", 0, &errs)
	for _, tt := range []struct {
		name string
		mod  func(*auth.Config)
		want string
	}{
		{"cleartext to a remote host", func(c *auth.Config) { c.JWKSURL = "http://idp.example.com/jwks" }, "http is accepted only to a loopback host; use https"},
		{"another scheme", func(c *auth.Config) { c.JWKSURL = "ftp://idp.example.com/jwks" }, `scheme "ftp"; use https`},
		{"relative", func(c *auth.Config) { c.JWKSURL = "/jwks" }, "want an absolute URL"},
		{"no host", func(c *auth.Config) { c.JWKSURL = "https:///jwks" }, "want an absolute URL"},
		{"user information", func(c *auth.Config) { c.JWKSURL = "https://me:pw@idp.example.com/jwks" }, "user information is not allowed"},
		{"with a JWKS too", func(c *auth.Config) { c.JWKS = jwks }, "auth: configure a JWKS or a JWKS URL, not both"},
		{"no audience", func(c *auth.Config) { c.Audience = "" }, "auth: a JWKS needs an audience"},
		{"refresh under a minute", func(c *auth.Config) { c.JWKSRefresh = 59 * time.Second }, "auth: JWKS refresh interval 59s is shorter than the 1m0s minimum"},
		{"negative refresh", func(c *auth.Config) { c.JWKSRefresh = -time.Minute }, "shorter than the 1m0s minimum"},
		{"no error function", func(c *auth.Config) { c.JWKSRefreshError = nil }, "auth: a JWKS URL needs a JWKSRefreshError function"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.mod(&cfg)
			v, err := auth.NewContext(t.Context(), cfg)
			if v != nil || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, %v; want an error saying %q", v, err, tt.want)
			}
		})
	}
}

func TestCheckJWKSURL(t *testing.T) {
	for _, tt := range []struct {
		url    string
		wantOK bool
	}{
		{"https://idp.example.com/.well-known/jwks.json", true},
		{"https://idp.example.com:8443/keys", true},
		{"http://127.0.0.1:8080/jwks", true},
		{"http://127.1.2.3/jwks", true},
		{"http://localhost/jwks", true},
		{"http://[::1]:9000/jwks", true},
		{"http://idp.example.com/jwks", false},
		{"http://10.0.0.1/jwks", false},
		{"http://localhost.example.com/jwks", false},
		{"https://u:p@idp.example.com/jwks", false},
		{"file:///etc/jwks.json", false},
		{"idp.example.com/jwks", false},
		{"", false},
		{"https://%zz", false},
	} {
		t.Run(tt.url, func(t *testing.T) {
			err := auth.CheckJWKSURL(tt.url)
			if got := err == nil; got != tt.wantOK {
				t.Fatalf("got %v, want ok %v", err, tt.wantOK)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "auth: JWKS URL ") {
				t.Fatalf("got %q, want an error starting %q", err, "auth: JWKS URL ")
			}
		})
	}
}
