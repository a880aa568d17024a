package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"golang.org/x/time/rate"
)

// DefaultJWKSRefresh is Config.JWKSRefresh's default: how often the key set
// at JWKSURL is fetched again. Identity providers publish a new key well
// before they sign with it, so a quarter of an hour picks it up in time.
const DefaultJWKSRefresh = 15 * time.Minute

// MinJWKSRefresh is the shortest Config.JWKSRefresh accepted: fetching more
// often loads the identity provider without picking keys up much sooner.
const MinJWKSRefresh = time.Minute

// MaxJWKSBytes bounds a JWKS: a file, or a response from JWKSURL.
const MaxJWKSBytes = 1 << 20

// MaxJWKSKeys bounds the keys in a JWKS. Identity providers publish a few.
const MaxJWKSKeys = 100

const (
	// jwksFetchTimeout bounds one fetch of JWKSURL, and a token's wait for
	// a fetch triggered by its unknown key ID.
	jwksFetchTimeout = 10 * time.Second
	// unknownKIDRefresh spaces the fetches that tokens with an unknown key
	// ID trigger, so forged key IDs cannot make lake hammer the provider.
	unknownKIDRefresh = time.Minute
	// maxJWKSRedirects bounds the redirects one fetch follows.
	maxJWKSRedirects = 3
)

// CheckJWKSURL reports whether raw may serve a JWKS: an absolute https URL
// with a host and no user information, or http to a loopback host
// (localhost, 127.0.0.0/8, ::1), whose traffic never leaves the machine.
func CheckJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("auth: JWKS URL %q: %v", raw, err)
	}
	if problem := jwksURLProblem(u); problem != "" {
		return fmt.Errorf("auth: JWKS URL %q: %s", u.Redacted(), problem)
	}
	return nil
}

// jwksURLProblem says why u may not serve a JWKS, or "" when it may.
func jwksURLProblem(u *url.URL) string {
	switch {
	case u.Host == "" || !u.IsAbs():
		return "want an absolute URL such as https://idp.example.com/.well-known/jwks.json"
	case u.User != nil:
		return "user information is not allowed"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && loopback(u.Hostname()):
		return ""
	case u.Scheme == "http":
		return "http is accepted only to a loopback host; use https"
	default:
		return fmt.Sprintf("scheme %q; use https", u.Scheme)
	}
}

// loopback reports whether host names this machine without a resolver.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkJWKSConfig validates the JWKSURL settings and sets their defaults.
func checkJWKSConfig(cfg *Config) error {
	if err := CheckJWKSURL(cfg.JWKSURL); err != nil {
		return err
	}
	if cfg.JWKSRefreshError == nil {
		return errors.New("auth: a JWKS URL needs a JWKSRefreshError function to report failed refreshes")
	}
	floor := MinJWKSRefresh
	if cfg.minJWKSRefresh > 0 {
		floor = cfg.minJWKSRefresh
	}
	switch {
	case cfg.JWKSRefresh == 0:
		cfg.JWKSRefresh = DefaultJWKSRefresh
	case cfg.JWKSRefresh < floor:
		return fmt.Errorf("auth: JWKS refresh interval %v is shorter than the %v minimum", cfg.JWKSRefresh, floor)
	}
	return nil
}

// openJWKSURL fetches the key set at cfg.JWKSURL and starts its refresh,
// which runs until ctx ends or the returned function is called. keyfunc's
// jwkset does the fetching, the refreshing and the rate-limited fetch for
// an unknown key ID; lake's client bounds and checks every response first.
func openJWKSURL(ctx context.Context, cfg Config) (keyfunc.Keyfunc, context.CancelFunc, error) {
	ctx, cancel := context.WithCancel(ctx)
	client := &http.Client{
		Transport: jwksTransport{base: http.DefaultTransport.(*http.Transport).Clone()},
		Timeout:   jwksFetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxJWKSRedirects {
				return fmt.Errorf("more than %d redirects", maxJWKSRedirects)
			}
			if problem := jwksURLProblem(req.URL); problem != "" {
				return fmt.Errorf("redirect refused: %s", problem)
			}
			return nil
		},
	}
	u := cfg.JWKSURL
	// The refresh goroutine starts before the first fetch; cancel ends it
	// when that fetch fails.
	store, err := jwkset.NewStorageFromHTTP(u, jwkset.HTTPClientStorageOptions{
		Client:          client,
		Ctx:             ctx,
		HTTPTimeout:     jwksFetchTimeout,
		RefreshInterval: cfg.JWKSRefresh,
		RefreshErrorHandler: func(_ context.Context, err error) {
			cfg.JWKSRefreshError(fmt.Errorf("auth: refresh the JWKS from %s (the last keys stay): %w", u, err))
		},
	})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("auth: fetch the JWKS from %s: %w", u, err)
	}
	storage, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{u: store},
		RateLimitWaitMax:  jwksFetchTimeout,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(unknownKIDRefresh), 1),
	})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("auth: JWKS from %s: %w", u, err)
	}
	kf, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: storage})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("auth: JWKS from %s: %w", u, err)
	}
	return kf, cancel, nil
}

// jwksTransport bounds and checks a JWKS response before jwkset decodes
// it: a body of at most MaxJWKSBytes that checkJWKS accepts (at most
// MaxJWKSKeys RSA or EC public keys). Its error fails the fetch, and
// jwkset then keeps the keys it has. Responses other than 200 pass
// through: redirects to be followed, failures for jwkset to report.
type jwksTransport struct{ base http.RoundTripper }

func (t jwksTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the JWKS: %w", err)
	}
	if len(body) > MaxJWKSBytes {
		return nil, fmt.Errorf("JWKS response of more than the %d bytes allowed", MaxJWKSBytes)
	}
	if err := checkJWKS(body); err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}
