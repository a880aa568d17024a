package local

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/lake-catalog/lake/internal/apierror"
	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/pkg/wire"
)

// What keeps web pages out of local mode.
//
// Local mode's HTTP listeners (the registration API with POST /v1/refresh,
// the catalog browser, and discovery's admin listener with /status and
// /metrics) serve the person at this machine, and any web
// page that person opens can send requests to 127.0.0.1. Three checks keep
// those pages out:
//
//   - Host: a request is answered only when its Host names a loopback
//     address (localhost, 127.0.0.1, [::1], any port) or one of
//     Config.AllowHosts. A DNS-rebinding page reaches 127.0.0.1 under its own
//     name, which is refused.
//   - Origin: a request that may change something (any method but GET, HEAD
//     and OPTIONS) needs an Origin naming this very listener (http://<its
//     Host>), as a page served by it sends, or no Origin and either a
//     bearer token ("Authorization: Bearer …") or the RequestHeader. A form
//     can send neither, and a page on another site can send them only after
//     a CORS preflight that local mode never grants; no browser adds a
//     bearer token by itself (it does add cookies, and Basic credentials it
//     once was asked for, so those count as no credentials). curl, Python
//     requests and SDKs therefore write with the token alone, as on AWS;
//     the lake command (internal/apiclient) also sends RequestHeader.
//   - Tokens: the browser's dev tokens carry BrowserAudience, and the
//     registration API and POST /v1/refresh refuse them: a dev token reads
//     (discovery takes it, and the API's GET …/preview, which only reads
//     rows), it never writes.

// RequestHeader is the header (value "1") a client that is not a web page
// sends with a request that may change something and carries no Origin.
const RequestHeader = "X-Lake-Request"

// BrowserAudience is the aud claim of the catalog browser's dev tokens,
// which local mode's registration API refuses on every route but the
// read-only GET …/preview.
const BrowserAudience = "lake-local-browser"

// AdminAudience is the aud claim of an operator's token (`lake token
// --admin`): the registration API's admin routes (a tenant's allowed
// prefixes) take only tokens that carry it, so a tenant's own tokens never
// change what lake may vend for it.
const AdminAudience = "lake-admin"

// AdminTenant is the tenant claim of the tokens the lake command signs for
// the admin routes, which name the tenant they act on in the path.
const AdminTenant = "lake-admin"

// loopbackHosts are the Host values (without port) every local listener
// answers.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// guard answers only requests addressed to an allowed host and, when they
// may change something, from the listener's own origin or a client that
// is not a web page.
type guard struct {
	hosts map[string]bool
	next  http.Handler
}

func newGuard(next http.Handler, hosts map[string]bool) http.Handler {
	return &guard{hosts: hosts, next: next}
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hosts[hostOnly(r.Host)] {
		apierror.Write(w, http.StatusForbidden, wire.CodeForbiddenHost,
			"this server answers requests addressed to localhost, 127.0.0.1 or [::1] only (lake local --allow-host adds names)")
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if msg := sameOrigin(r); msg != "" {
			apierror.Write(w, http.StatusForbidden, wire.CodeCrossOrigin, msg)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// sameOrigin is "" when r may change something: its Origin is this
// listener's own, or it has none and carries a bearer token or
// RequestHeader.
func sameOrigin(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" {
		if _, bearer := auth.BearerToken(r.Header.Get("Authorization")); !bearer && r.Header.Get(RequestHeader) == "" {
			return "a request without Origin needs a bearer token (Authorization: Bearer <token>) or the " + RequestHeader + ": 1 header"
		}
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || !strings.EqualFold(u.Host, r.Host) {
		return "requests from other sites are refused"
	}
	return ""
}

// hostOnly is a Host header's host, lower case, without port or brackets.
func hostOnly(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

// isLoopback reports whether a listen address binds loopback only.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// allowedHosts are the Host values the listeners answer: loopback, the
// hosts of listen addresses that bind one address off loopback, and
// extra, which is refused unless such a listen address exists.
func allowedHosts(extra []string, listens ...string) (map[string]bool, error) {
	hosts := map[string]bool{}
	for _, h := range loopbackHosts {
		hosts[h] = true
	}
	remote := false
	for _, l := range listens {
		if l == "" || isLoopback(l) {
			continue
		}
		remote = true
		if host, _, err := net.SplitHostPort(l); err == nil {
			if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
				hosts[hostOnly(host)] = true
			}
		}
	}
	if len(extra) > 0 && !remote {
		return nil, fmt.Errorf("local: --allow-host %s: every listener is on loopback, which answers localhost, 127.0.0.1 and [::1] alone", strings.Join(extra, ","))
	}
	for _, h := range extra {
		hosts[hostOnly(h)] = true
	}
	return hosts, nil
}
