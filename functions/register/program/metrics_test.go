package program_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lake-catalog/lake/functions/register/program"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/testenv"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/catalog/catalogtest"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/memstore"
)

// failingVersionPuts fails every write of a version record, and nothing
// else (fault injection).
type failingVersionPuts struct{ metastore.Store }

func (s failingVersionPuts) Put(ctx context.Context, key string, value []byte) error {
	if strings.HasPrefix(key, catalog.VersionPrefix) {
		return errors.New("injected: the version records' partition is unavailable")
	}
	return s.Store.Put(ctx, key, value)
}

// emfLine is what the register Lambda's metrics line holds.
type emfLine struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	SideWritesFailed       int
	SideWritesFailedByPart map[string]int
	Commits                int
	Method                 string
	Status                 int
}

// A side write that fails under the registration API is visible to
// operators: each invocation of the register Lambda writes one EMF line
// whose SideWritesFailed metric counts that request's failed side writes
// (by part in SideWritesFailedByPart), 0 when none failed, so a
// CloudWatch alarm on its sum sees every one.
func TestEMFCountsFailedSideWritesPerRequest(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	cat := catalog.New(failingVersionPuts{st}, catalog.Options{})
	api, err := registerapi.New(cat, registerapi.Options{Authorize: registerapi.AllowAll(nil), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var metrics strings.Builder
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h := program.Measured(program.LambdaHandler(api), cat, &metrics, func() time.Time { return at })
	ipc, err := catalog.EncodeSchema(catalogtest.WideSchema(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	const tables = "/v1/tenants/acme/namespaces/sales/tables"
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		failed       int
	}{
		{"POST", tables, map[string]any{"name": "orders", "location": "/o", "schema": base64.StdEncoding.EncodeToString(ipc)}, http.StatusCreated, 1},
		{"GET", tables + "/orders", nil, http.StatusOK, 0},
		{"DELETE", tables + "/orders", nil, http.StatusNoContent, 1},
	} {
		t.Run(tc.method, func(t *testing.T) {
			metrics.Reset()
			resp, err := h(context.Background(), testenv.APIGatewayEvent(tc.method, tc.path, tc.body, "arn:aws:iam::1:role/p"))
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("%s %s: %d %s, %v; want %d", tc.method, tc.path, resp.StatusCode, resp.Body, err, tc.status)
			}
			sc := bufio.NewScanner(strings.NewReader(metrics.String()))
			var lines []emfLine
			for sc.Scan() {
				var l emfLine
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatalf("metrics line %s: %v", sc.Bytes(), err)
				}
				lines = append(lines, l)
			}
			if len(lines) != 1 {
				t.Fatalf("%d metrics lines, want 1:\n%s", len(lines), metrics.String())
			}
			l := lines[0]
			if l.SideWritesFailed != tc.failed || l.SideWritesFailedByPart[string(catalog.PartVersion)] != tc.failed || l.Method != tc.method || l.Status != tc.status {
				t.Fatalf("metrics line %s; want SideWritesFailed %d (the version record), method %s, status %d", metrics.String(), tc.failed, tc.method, tc.status)
			}
			m := l.AWS.CloudWatchMetrics
			if l.AWS.Timestamp != at.UnixMilli() || len(m) != 1 || m[0].Namespace != "lake" ||
				!strings.Contains(metrics.String(), `{"Name":"SideWritesFailed","Unit":"Count"}`) {
				t.Fatalf("metrics line %s; want an EMF line declaring SideWritesFailed in namespace lake", metrics.String())
			}
		})
	}
}
