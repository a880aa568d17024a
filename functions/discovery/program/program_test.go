package program_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lake-catalog/lake/functions/discovery/program"
	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/flightclient"
)

// waitUntil polls cond every 10 ms until it holds, failing after 20 s (a
// bound against hangs, not a performance claim). cond returns what it saw,
// for the failure message.
func waitUntil(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	var saw string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var ok bool
		if ok, saw = cond(); ok {
			return
		}
	}
	t.Fatalf("timed out waiting for %s; last saw %s", what, saw)
}

// get returns an HTTP GET's status code and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// Health turns unhealthy when the last successful poll is older than
// MaxStaleness, on every surface (the gRPC health service, /healthz on both
// listeners, /status), while requests are still answered from the serving
// snapshot; it turns healthy again when polls succeed. The blob store's
// reads are made to fail, and then to hang (no poll ends, so only the
// server's own staleness clock can see it), to get there.
func TestStalenessTurnsHealthUnhealthy(t *testing.T) {
	// Not parallel: it waits for health to follow a 500 ms staleness bound, a matter of timing.
	f := newBlobFile(t)
	f.write(t, 1, "orders")
	validator, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 500 * time.Millisecond
	srv, err := program.Start(t.Context(), program.Config{
		Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Blobs: f.store, PollInterval: 20 * time.Millisecond, MaxStaleness: bound, Auth: validator, Log: quietLog(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	hc := healthpb.NewHealthClient(cc)
	client, err := flightsql.NewClient(srv.Addr(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	// health reads every surface at once and says whether they all agree
	// with want.
	health := func(want bool) (bool, string) {
		wantGRPC, wantCode := healthpb.HealthCheckResponse_SERVING, http.StatusOK
		if !want {
			wantGRPC, wantCode = healthpb.HealthCheckResponse_NOT_SERVING, http.StatusServiceUnavailable
		}
		resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		code, body := get(t, "http://"+srv.HTTPAddr()+"/healthz")
		adminCode, _ := get(t, "http://"+srv.AdminAddr()+"/healthz")
		_, raw := get(t, "http://"+srv.AdminAddr()+"/status")
		var st struct {
			Loaded             bool      `json:"loaded"`
			Stale              bool      `json:"stale"`
			LastSuccessfulPoll time.Time `json:"last_successful_poll"`
			MaxStaleness       float64   `json:"max_staleness_seconds"`
		}
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatalf("/status: %v: %s", err, raw)
		}
		saw := fmt.Sprintf("gRPC %v, /healthz %d %q, admin /healthz %d, /status %s", resp.Status, code, body, adminCode, raw)
		ok := resp.Status == wantGRPC && code == wantCode && adminCode == wantCode && st.Loaded && st.Stale == !want &&
			!st.LastSuccessfulPoll.IsZero() && st.MaxStaleness == bound.Seconds()
		if !want {
			ok = ok && strings.HasPrefix(body, "snapshot stale: no successful poll for ")
		}
		return ok, saw
	}
	for _, tc := range []struct {
		name        string
		fail, hang  bool
		wantHealthy bool
	}{
		{name: "polls succeed", wantHealthy: true},
		{name: "reads fail past the bound", fail: true, wantHealthy: false},
		{name: "reads work again", wantHealthy: true},
		{name: "a read hangs past the bound", hang: true, wantHealthy: false},
		{name: "the read ends", wantHealthy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.store.fail.Store(tc.fail)
			f.store.hang.Store(tc.hang)
			waitUntil(t, fmt.Sprintf("every health surface to say healthy=%v", tc.wantHealthy), func() (bool, string) { return health(tc.wantHealthy) })
			rows, err := flightclient.GetTables(as(t, "acme"), client, &flightsql.GetTablesOpts{IncludeSchema: true})
			if err != nil || len(rows) != 1 || rows[0].Name != "orders" {
				t.Fatalf("GetTables: got %v, %v; want orders, answered from the serving snapshot", rows, err)
			}
			if tc.fail {
				if st := srv.Source().Status(); !strings.Contains(st.LastError, errInjected.Error()) {
					t.Fatalf("last error: got %q, want the injected failure", st.LastError)
				}
			}
		})
	}
}

// Start refuses a staleness bound that a poll interval cannot meet.
func TestStartChecksMaxStaleness(t *testing.T) {
	t.Parallel()
	validator, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		poll, max time.Duration
		wantErr   string
	}{
		{name: "equal to the poll interval", poll: time.Second, max: time.Second, wantErr: "discovery: Config.MaxStaleness 1s must be more than PollInterval 1s"},
		{name: "under the default poll interval", max: time.Second, wantErr: "must be more than PollInterval 2s"},
		{name: "negative", max: -time.Second, wantErr: "discovery: Config.MaxStaleness -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, err := program.Start(t.Context(), program.Config{
				Listen: "127.0.0.1:0", Blobs: newBlobFile(t).store, PollInterval: tc.poll, MaxStaleness: tc.max, Auth: validator, Log: quietLog(),
			})
			if err == nil {
				srv.Shutdown(t.Context())
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// Go's profiles are on the admin listener only when AdminPprof asks for
// them; /metrics is there either way, and /healthz on the load balancer's
// listener never has them.
func TestAdminPprofIsOptIn(t *testing.T) {
	t.Parallel()
	f := newBlobFile(t)
	f.write(t, 1, "orders")
	validator, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		srv, err := program.Start(t.Context(), program.Config{
			Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", AdminPprof: on,
			Blobs: f.store, PollInterval: time.Hour, Auth: validator, Log: quietLog(),
		})
		if err != nil {
			t.Fatal(err)
		}
		get := func(addr, path string) int {
			t.Helper()
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		if got := get(srv.AdminAddr(), "/debug/pprof/"); got != want {
			t.Errorf("AdminPprof %v: /debug/pprof/ on the admin listener is %d, want %d", on, got, want)
		}
		if got := get(srv.AdminAddr(), "/metrics"); got != http.StatusOK {
			t.Errorf("AdminPprof %v: /metrics is %d", on, got)
		}
		if got := get(srv.HTTPAddr(), "/debug/pprof/"); got != http.StatusNotFound {
			t.Errorf("AdminPprof %v: /debug/pprof/ on the health listener is %d, want 404", on, got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(ctx)
		cancel()
	}
}

func TestRequestTimeoutFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    time.Duration
		wantErr string
	}{
		{"default", nil, nil, discovery.DefaultRequestTimeout, ""},
		{"env", nil, map[string]string{"LAKE_REQUEST_TIMEOUT": "5s"}, 5 * time.Second, ""},
		{"flag wins", []string{"-request-timeout", "2m"}, map[string]string{"LAKE_REQUEST_TIMEOUT": "5s"}, 2 * time.Minute, ""},
		{"zero", []string{"-request-timeout", "0"}, nil, 0, "-request-timeout"},
		{"too long", []string{"-request-timeout", "2h"}, nil, 0, "-request-timeout"},
		{"not a duration", []string{"-request-timeout", "soon"}, nil, 0, "-request-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"LAKE_SNAPSHOT": "/tmp/x.lakesnap", "LAKE_JWT_HS256_SECRET": strings.Repeat("s", 32)}
			for k, v := range tt.env {
				env[k] = v
			}
			c, err := program.ParseFlags(tt.args, func(k string) string { return env[k] }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.RequestTimeout != tt.want {
				t.Fatalf("got %v, want %v", c.RequestTimeout, tt.want)
			}
		})
	}
}
