// Package discoverybrowser is the discovery program as the discovery
// command runs it: discovery.MainWith with the catalog browser
// (internal/browser) on -browser-listen. It lives apart from both because
// the browser imports discovery, so discovery cannot import the browser.
package discoverybrowser

import (
	"context"
	"io"
	"net/http"

	"github.com/lake-catalog/lake/internal/browser"
	"github.com/lake-catalog/lake/internal/discovery"
)

// Main is discovery.MainWith serving Handler on -browser-listen.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return discovery.MainWith(ctx, args, getenv, stdout, stderr, Handler)
}

// Handler is the catalog browser asking the discovery server at flightAddr
// with the token each request carries. It offers no dev tokens: the page
// asks for a token to paste. It is a discovery.BrowserFunc.
func Handler(flightAddr string) (http.Handler, error) {
	return browser.New(browser.Options{Discovery: flightAddr})
}

var _ discovery.BrowserFunc = Handler
