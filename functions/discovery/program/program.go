// Package program is the discovery program, beside its main
// (functions/discovery): its flags and their environment variables
// (ParseFlags), the token keys, the TLS pair, signals and the shutdown grace
// (Main), and the listeners: Flight SQL over gRPC, /healthz for the load
// balancer, the admin listener (/healthz, /status, /metrics, and Go's
// profiles with -admin-pprof) and the catalog browser (-browser-listen), a
// client of the Flight SQL listener (Start, Server).
//
// The server it runs is internal/discovery, which imports no client: the
// browser is wired here. Local mode (internal/local) starts the same
// listeners with Start.
package program

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/icebergrest"
)

// Config assembles a discovery server.
type Config struct {
	// Listen is the gRPC (Flight SQL) address, e.g. ":50051".
	Listen string
	// HTTPListen serves /healthz alone (what a load balancer checks); ""
	// disables it.
	HTTPListen string
	// AdminListen serves /healthz, /status and /metrics, which show the
	// blob's location, errors and catalog-wide counts: keep it off any
	// address a load balancer or a client reaches (the program's default is
	// loopback). "" disables it.
	AdminListen string
	// WrapAdmin, when set, wraps the AdminListen handler (local mode puts
	// its Host check in front, so a web page cannot read /status).
	WrapAdmin func(http.Handler) http.Handler
	// AdminPprof adds Go's profiles (net/http/pprof, under /debug/pprof/)
	// to the AdminListen handler, for operators profiling a running
	// server. Off by default: a profile costs CPU while it runs, and no
	// token guards the admin listener.
	AdminPprof bool
	// Blobs is where the snapshot blob is read from.
	Blobs blobstore.Store
	// PollInterval is how often the blob is checked for a new version, with
	// a conditional read (304 while unchanged). Default DefaultPollInterval.
	PollInterval time.Duration
	// MaxStaleness, when more than zero, is how old the last successful
	// poll (a 304 or a load; not a failed read or a rejected blob) may be:
	// past it, /healthz answers 503 and the gRPC health service says
	// NOT_SERVING, while requests are still answered from the serving
	// snapshot; a successful poll makes it healthy again. It must be more
	// than PollInterval. 0 disables the check (the program's default is
	// DefaultMaxStaleness).
	MaxStaleness time.Duration
	// SegmentRetryMax is the longest wait before a degraded tenant's
	// segment is fetched again (Source.SegmentRetryMax); 0 means
	// DefaultSegmentRetryMax.
	SegmentRetryMax time.Duration
	// IcebergListen serves the Iceberg REST catalog (internal/icebergrest,
	// read side) from the same in-memory snapshot, over TLS when TLS is
	// set; "" disables it.
	IcebergListen string
	// WrapIceberg, when set, wraps the IcebergListen handler (local mode's
	// Host check).
	WrapIceberg func(http.Handler) http.Handler
	// Auth validates bearer tokens.
	Auth discovery.Authenticator
	// TLS, when set, serves gRPC over TLS.
	TLS *tls.Config
	// Service options (server name, version, batch size).
	Service discovery.Options
	Log     *slog.Logger

	// Collectors are served in the admin listener's /metrics beside
	// discovery's own (local mode adds its catalog's,
	// local.CatalogCollector).
	Collectors []prometheus.Collector
}

// Defaults of the program's -poll-interval and -max-staleness.
const (
	// DefaultPollInterval: a poll of an unchanged blob is a conditional GET
	// answered 304 with no body, cheap enough to make every 2 s.
	DefaultPollInterval = 2 * time.Second
	// DefaultMaxStaleness: 150 polls at the default interval.
	DefaultMaxStaleness = 5 * time.Minute
)

// Server is a running discovery server.
type Server struct {
	cfg         Config
	svc         *discovery.Service
	src         *discovery.Source
	health      *health.Server
	grpc        *grpc.Server
	http, admin *http.Server
	iceberg     *http.Server
	gl, hl, al  net.Listener
	il          net.Listener
	cancel      context.CancelFunc
	done        sync.WaitGroup

	healthMu sync.Mutex // guards serving; held while the health service is set
	serving  bool       // what the gRPC health service was last told
}

// Start listens, loads the first snapshot in the background (requests get
// UNAVAILABLE and health says NOT_SERVING until it lands) and polls. With
// MaxStaleness set, health also says NOT_SERVING while the last successful
// poll is older than it.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Blobs == nil || cfg.Auth == nil {
		return nil, errors.New("discovery: Config.Blobs and Config.Auth are required")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.MaxStaleness < 0 || (cfg.MaxStaleness > 0 && cfg.MaxStaleness <= cfg.PollInterval) {
		return nil, fmt.Errorf("discovery: Config.MaxStaleness %v must be more than PollInterval %v, or 0 to disable", cfg.MaxStaleness, cfg.PollInterval)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cfg.Collectors...)
	metrics := discovery.NewMetrics(reg)
	cfg.Service.Metrics = metrics
	s := &Server{cfg: cfg, svc: discovery.NewService(cfg.Service), health: health.NewServer()}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.src = discovery.NewSource(cfg.Blobs, s.svc, metrics, cfg.Log)
	s.src.MaxStaleness = cfg.MaxStaleness
	s.src.SegmentRetryMax = cfg.SegmentRetryMax
	s.src.OnPoll = s.updateHealth

	var opts []grpc.ServerOption
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	s.grpc = discovery.NewGRPCServer(s.svc, cfg.Auth, s.health, cfg.Log, opts...)
	var err error
	if s.gl, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("discovery: listen %s: %w", cfg.Listen, err)
	}
	if cfg.HTTPListen != "" {
		if s.hl, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
			s.gl.Close()
			return nil, fmt.Errorf("discovery: listen %s: %w", cfg.HTTPListen, err)
		}
		s.http = &http.Server{Handler: discovery.HealthHandler(s.src), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = s.http.Serve(s.hl) }()
	}
	if cfg.AdminListen != "" {
		if s.al, err = net.Listen("tcp", cfg.AdminListen); err != nil {
			s.gl.Close()
			if s.hl != nil {
				s.hl.Close()
			}
			return nil, fmt.Errorf("discovery: listen %s: %w", cfg.AdminListen, err)
		}
		var h http.Handler = discovery.AdminHandler(s.src, reg)
		if cfg.AdminPprof {
			h = withPprof(h)
		}
		if cfg.WrapAdmin != nil {
			h = cfg.WrapAdmin(h)
		}
		s.admin = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = s.admin.Serve(s.al) }()
	}
	if cfg.IcebergListen != "" {
		if err := s.serveIceberg(); err != nil {
			s.closeListeners()
			return nil, err
		}
	}
	go func() { _ = s.grpc.Serve(s.gl) }()
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		s.src.Run(pctx, cfg.PollInterval)
	}()
	if cfg.MaxStaleness > 0 {
		// A poll that hangs must not hold health at SERVING: staleness is
		// checked on its own clock too.
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			s.watchHealth(pctx, min(cfg.PollInterval, cfg.MaxStaleness/4))
		}()
	}
	cfg.Log.InfoContext(ctx, "discovery listening", slog.String("flight_sql", s.gl.Addr().String()),
		slog.String("http", s.HTTPAddr()), slog.String("admin", s.AdminAddr()), slog.String("iceberg", s.IcebergAddr()),
		slog.String("snapshot", cfg.Blobs.Location()), slog.Bool("tls", cfg.TLS != nil))
	return s, nil
}

// serveIceberg listens on IcebergListen and serves the Iceberg REST
// catalog from the service's memory, authenticated by the same bearer
// tokens as Flight SQL (the tenant comes from the token alone).
func (s *Server) serveIceberg() error {
	cfg := s.cfg
	var h http.Handler
	h, err := icebergrest.New(icebergrest.Options{Source: s.svc.Iceberg(), Logger: cfg.Log, Authenticate: func(r *http.Request) (string, error) {
		tok, ok := auth.BearerToken(r.Header.Get("Authorization"))
		if !ok {
			return "", errors.New("no bearer token")
		}
		return cfg.Auth.Tenant(tok)
	}})
	if err != nil {
		return err
	}
	if cfg.WrapIceberg != nil {
		h = cfg.WrapIceberg(h)
	}
	if s.il, err = net.Listen("tcp", cfg.IcebergListen); err != nil {
		return fmt.Errorf("discovery: listen %s: %w", cfg.IcebergListen, err)
	}
	s.iceberg = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg.TLS}
	go func() {
		if cfg.TLS != nil {
			_ = s.iceberg.ServeTLS(s.il, "", "")
			return
		}
		_ = s.iceberg.Serve(s.il)
	}()
	return nil
}

// closeListeners closes the listeners Start opened, when it fails.
func (s *Server) closeListeners() {
	for _, l := range []net.Listener{s.gl, s.hl, s.al} {
		if l != nil {
			l.Close()
		}
	}
	for _, h := range []*http.Server{s.http, s.admin} {
		if h != nil {
			h.Close()
		}
	}
}

// IcebergAddr is the Iceberg REST listen address, or "".
func (s *Server) IcebergAddr() string {
	if s.il == nil {
		return ""
	}
	return s.il.Addr().String()
}

// updateHealth tells the gRPC health service whether the source can serve
// (a snapshot is loaded and not stale), and logs each change.
func (s *Server) updateHealth() {
	ok, reason := s.src.Health(time.Now())
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if ok == s.serving {
		return
	}
	s.serving = ok
	if ok {
		s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		s.cfg.Log.Info("discovery healthy")
		return
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.cfg.Log.Warn("discovery unhealthy; requests are still answered from the serving snapshot", slog.String("reason", reason))
}

// watchHealth checks staleness every tick until ctx ends.
func (s *Server) watchHealth(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.updateHealth()
		}
	}
}

// Addr is the Flight SQL listen address.
func (s *Server) Addr() string { return s.gl.Addr().String() }

// HTTPAddr is the health listen address, or "".
func (s *Server) HTTPAddr() string {
	if s.hl == nil {
		return ""
	}
	return s.hl.Addr().String()
}

// AdminAddr is the admin listen address (/status, /metrics), or "".
func (s *Server) AdminAddr() string {
	if s.al == nil {
		return ""
	}
	return s.al.Addr().String()
}

// Source returns the snapshot source (status, manual polls).
func (s *Server) Source() *discovery.Source { return s.src }

// View returns the serving view, or nil before the first snapshot.
func (s *Server) View() *discovery.View { return s.svc.View() }

// Shutdown stops taking new requests (health NOT_SERVING), lets running
// ones finish until ctx ends, then stops everything.
func (s *Server) Shutdown(ctx context.Context) {
	s.health.Shutdown()
	s.cancel()
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
	}
	for _, h := range []*http.Server{s.http, s.admin, s.iceberg} {
		if h != nil {
			_ = h.Shutdown(ctx)
		}
	}
	s.done.Wait()
}

// withPprof serves Go's profiles under /debug/pprof/ (net/http/pprof's
// handlers: index, cmdline, profile, symbol, trace and the named profiles)
// and h for everything else.
func withPprof(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}
