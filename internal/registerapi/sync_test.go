package registerapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/wire"
)

// fakeSyncer answers with err, or a result naming the table and its location.
type fakeSyncer struct {
	err   error
	calls []string
}

func (f *fakeSyncer) Sync(_ context.Context, who string, ref catalog.TableRef, reg catalog.Registration) (wire.SyncResult, error) {
	f.calls = append(f.calls, who+" "+ref.String()+" "+reg.Location())
	if f.err != nil {
		return wire.SyncResult{}, f.err
	}
	return wire.SyncResult{Tenant: ref.Tenant, Namespace: ref.Namespace, Table: ref.Name, Changed: true, Files: 2, Records: 10}, nil
}

// POST …/sync runs the Syncer for the registered table and classifies its
// errors: a refused location 403, a table changed meanwhile 409, anything
// else 502 with the reason; without a Syncer 501; a missing table 404.
func TestSyncRoute(t *testing.T) {
	for _, tt := range []struct {
		name   string
		syncer *fakeSyncer
		status int
		code   string
	}{
		{"synced", &fakeSyncer{}, http.StatusOK, ""},
		{"location not allowed", &fakeSyncer{err: &vending.LocationError{Location: "s3://x/y/", Err: vending.ErrOutsideDataRoot}}, http.StatusForbidden, wire.CodeLocationNotAllowed},
		{"changed meanwhile", &fakeSyncer{err: &catalog.Error{Kind: catalog.ErrConflict}}, http.StatusConflict, wire.CodeConflict},
		{"files unreadable", &fakeSyncer{err: errors.New("list s3://x/y/: connection refused")}, http.StatusBadGateway, wire.CodeSyncFailed},
		{"not configured", nil, http.StatusNotImplemented, wire.CodeSyncNotConfigured},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := registerapi.Options{Authorize: registerapi.AllowAll(func(*http.Request) string { return "producer" })}
			if tt.syncer != nil {
				opts.Sync = tt.syncer
			}
			h := newAPI(t, opts)
			registerAt(t, h, "orders", "s3://tenant-data/acme/orders/")
			r := do(t, h, "POST", base+"/orders/sync", "", nil)
			if r.status != tt.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.code != "" {
				if c := errorCode(t, r); c != tt.code {
					t.Fatalf("code %s, want %s", c, tt.code)
				}
			} else {
				var res wire.SyncResult
				if err := json.Unmarshal(r.body, &res); err != nil || !res.Changed || res.Files != 2 || res.Table != "orders" {
					t.Fatalf("result %s", r.body)
				}
			}
			if tt.syncer != nil && (len(tt.syncer.calls) != 1 || !strings.HasSuffix(tt.syncer.calls[0], "acme/sales/orders s3://tenant-data/acme/orders/")) {
				t.Fatalf("Sync calls %q", tt.syncer.calls)
			}
			if tt.status == http.StatusBadGateway && !strings.Contains(string(r.body), "connection refused") {
				t.Fatalf("the 502 does not say why: %s", r.body)
			}
		})
	}
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil), Sync: &fakeSyncer{}})
	if r := do(t, h, "POST", base+"/nothere/sync", "", nil); r.status != http.StatusNotFound {
		t.Fatalf("missing table: %d %s", r.status, r.body)
	}
}

// chanSyncer tells of each sync on a channel.
type chanSyncer struct{ calls chan string }

func (c chanSyncer) Sync(_ context.Context, who string, ref catalog.TableRef, reg catalog.Registration) (wire.SyncResult, error) {
	c.calls <- ref.String() + " v" + strconv.FormatInt(reg.Version(), 10)
	return wire.SyncResult{}, errors.New("the folder is empty")
}

// SyncOnWrite syncs a table after its register and update, in the
// background, and a failed sync leaves the write's answer alone; a drop
// syncs nothing.
func TestSyncOnWrite(t *testing.T) {
	calls := make(chan string, 4)
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil), Sync: chanSyncer{calls}, SyncOnWrite: true})
	registerAt(t, h, "orders", "s3://tenant-data/acme/orders/")
	next := func() string {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(30 * time.Second): // a bound against a hang, not a timing claim
			t.Fatal("no sync after the write")
			return ""
		}
	}
	if c := next(); c != "acme/sales/orders v1" {
		t.Fatalf("sync after register: %q", c)
	}
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	if r := do(t, h, "PUT", base+"/orders", "application/json", body(t, map[string]any{"schema": ipcB64(s)})); r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	if c := next(); c != "acme/sales/orders v2" {
		t.Fatalf("sync after update: %q", c)
	}
	if r := do(t, h, "DELETE", base+"/orders", "", nil); r.status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.status, r.body)
	}
	select {
	case c := <-calls:
		t.Fatalf("a drop synced %q", c)
	case <-time.After(200 * time.Millisecond):
	}
}

// With SyncInline (a Lambda) the write's sync has run when the write is
// answered, and its failure leaves the answer alone.
func TestSyncOnWriteInline(t *testing.T) {
	calls := make(chan string, 4)
	h := newAPI(t, registerapi.Options{Authorize: registerapi.AllowAll(nil), Sync: chanSyncer{calls}, SyncOnWrite: true, SyncInline: true})
	registerAt(t, h, "orders", "s3://tenant-data/acme/orders/") // 201 although the sync failed
	select {
	case c := <-calls:
		if c != "acme/sales/orders v1" {
			t.Fatalf("sync %q", c)
		}
	default:
		t.Fatal("the register was answered before its sync ran")
	}
}
