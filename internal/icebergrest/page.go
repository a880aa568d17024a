package icebergrest

import (
	"encoding/base64"
	"net/url"
	"sort"
	"strconv"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// Listing kinds, the first byte of a page token: a token of one listing
// is refused by another.
const (
	kindNamespaces = 'n'
	kindTables     = 't'
)

// pageRequest is a listing's paging: names after After, at most Size.
type pageRequest struct {
	After string
	Size  int
}

// parsePage reads pageToken and pageSize (see the package documentation).
func parsePage(q url.Values, kind byte) (pageRequest, *apiError) {
	p := pageRequest{Size: MaxPageSize}
	if q.Has("pageToken") {
		p.Size = DefaultPageSize
		if tok := q.Get("pageToken"); tok != "" {
			after, ok := decodeToken(tok, kind)
			if !ok {
				return p, badRequest("invalid pageToken")
			}
			p.After = after
		}
	}
	if s := q.Get("pageSize"); s != "" || q.Has("pageSize") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return p, badRequest("invalid pageSize: want a whole number of at least 1")
		}
		p.Size = min(n, MaxPageSize)
	}
	return p, nil
}

// page cuts the sorted names to p's page and returns the token of the
// next page, "" after the last.
func page(names []string, p pageRequest, kind byte) ([]string, string) {
	i := 0
	if p.After != "" {
		i = sort.Search(len(names), func(j int) bool { return names[j] > p.After })
	}
	end := min(len(names), i+p.Size)
	out := names[i:end]
	if end == len(names) {
		return out, ""
	}
	return out, encodeToken(out[len(out)-1], kind)
}

func encodeToken(last string, kind byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, last...))
}

// decodeToken returns the last name of the page before tok.
func decodeToken(tok string, kind byte) (string, bool) {
	if len(tok) > base64.RawURLEncoding.EncodedLen(1+catalog.MaxNameBytes) {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 2 || b[0] != kind {
		return "", false
	}
	last := string(b[1:])
	if validName("namespace", last) != nil {
		return "", false
	}
	return last, true
}
