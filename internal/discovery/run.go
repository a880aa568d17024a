package discovery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lake-catalog/lake/internal/blobstore"
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
	// Blobs is where the snapshot blob is read from.
	Blobs blobstore.Store
	// PollInterval is how often the blob is checked for a new version.
	PollInterval time.Duration
	// Auth validates bearer tokens.
	Auth Authenticator
	// TLS, when set, serves gRPC over TLS.
	TLS *tls.Config
	// Service options (server name, version, batch size).
	Service Options
	Log     *slog.Logger
}

// Server is a running discovery server.
type Server struct {
	cfg         Config
	svc         *Service
	src         *Source
	health      *health.Server
	grpc        *grpc.Server
	http, admin *http.Server
	gl, hl, al  net.Listener
	cancel      context.CancelFunc
	done        chan struct{}
}

// Start listens, loads the first snapshot in the background (requests get
// UNAVAILABLE and health says NOT_SERVING until it lands) and polls.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Blobs == nil || cfg.Auth == nil {
		return nil, errors.New("discovery: Config.Blobs and Config.Auth are required")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := NewMetrics(reg)
	cfg.Service.Metrics = metrics
	s := &Server{cfg: cfg, svc: NewService(cfg.Service), health: health.NewServer(), done: make(chan struct{})}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.src = NewSource(cfg.Blobs, s.svc, metrics, cfg.Log)
	s.src.OnLoad = func(*View) { s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING) }

	var opts []grpc.ServerOption
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	s.grpc = NewGRPCServer(s.svc, cfg.Auth, s.health, cfg.Log, opts...)
	var err error
	if s.gl, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("discovery: listen %s: %w", cfg.Listen, err)
	}
	if cfg.HTTPListen != "" {
		if s.hl, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
			s.gl.Close()
			return nil, fmt.Errorf("discovery: listen %s: %w", cfg.HTTPListen, err)
		}
		s.http = &http.Server{Handler: HealthHandler(s.src), ReadHeaderTimeout: 10 * time.Second}
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
		s.admin = &http.Server{Handler: AdminHandler(s.src, reg), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = s.admin.Serve(s.al) }()
	}
	go func() { _ = s.grpc.Serve(s.gl) }()
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	go func() {
		defer close(s.done)
		s.src.Run(pctx, cfg.PollInterval)
	}()
	cfg.Log.InfoContext(ctx, "discovery listening", slog.String("flight_sql", s.gl.Addr().String()),
		slog.String("http", s.HTTPAddr()), slog.String("admin", s.AdminAddr()), slog.String("snapshot", cfg.Blobs.Location()), slog.Bool("tls", cfg.TLS != nil))
	return s, nil
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
func (s *Server) Source() *Source { return s.src }

// View returns the serving view, or nil before the first snapshot.
func (s *Server) View() *View { return s.svc.View() }

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
	for _, h := range []*http.Server{s.http, s.admin} {
		if h != nil {
			_ = h.Shutdown(ctx)
		}
	}
	<-s.done
}
