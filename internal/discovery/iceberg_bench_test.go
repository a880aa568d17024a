package discovery_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/icebergrest"
)

// BenchmarkIcebergLoadTable is a warm loadTable of one of a tenant's 1,000
// tables answered in process (no network): what discovery adds to the
// transport, per request.
func BenchmarkIcebergLoadTable(b *testing.B) {
	e := newEnv(b, discovery.Options{})
	for i := range 1000 {
		e.register("acme", "sales", "t"+strconv.Itoa(i), wide(i))
	}
	e.publish()
	v, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		b.Fatal(err)
	}
	h, err := icebergrest.New(icebergrest.Options{Source: e.svc.Iceberg(), Authenticate: func(r *http.Request) (string, error) {
		tok, _ := auth.BearerToken(r.Header.Get("Authorization"))
		return v.Tenant(tok)
	}})
	if err != nil {
		b.Fatal(err)
	}
	tok := "Bearer " + token(b, "acme")
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest("GET", "/v1/acme/namespaces/sales/tables/t"+strconv.Itoa(i), nil)
		reqs[i].Header.Set("Authorization", tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, reqs[i]) // warm: every answer kept
		if w.Code != http.StatusOK {
			b.Fatalf("load t%d: %d %s", i, w.Code, w.Body)
		}
	}
	b.Run("recorder", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, reqs[i%len(reqs)])
			if w.Code != http.StatusOK {
				b.Fatal(w.Code)
			}
		}
	})
	// What the handler itself costs: a writer that keeps nothing (net/http's
	// own costs are the replay's too).
	b.Run("discard", func(b *testing.B) {
		w := &discardWriter{header: http.Header{}}
		b.ReportAllocs()
		for i := range b.N {
			w.code = 0
			h.ServeHTTP(w, reqs[i%len(reqs)])
			if w.code != http.StatusOK {
				b.Fatal(w.code)
			}
		}
	})
}

// discardWriter is an http.ResponseWriter that keeps the status alone.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(p), nil
}
