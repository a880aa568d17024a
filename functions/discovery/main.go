// Command discovery is lake's Arrow Flight SQL discovery server: it loads the
// snapshot blob (from S3 or a file), polls it for new versions, and answers
// tenant-filtered metadata requests from memory. It never talks to DynamoDB.
//
// Every flag has an environment variable; a flag given on the command line
// wins. Run with -h for the list.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/discovery"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

type settings struct {
	listen, httpListen, snapshot  string
	pollInterval, shutdownGrace   time.Duration
	tlsCert, tlsKey               string
	hsSecretFile, jwksFile        string
	issuer, audience, tenantClaim string
	batchBytes                    int
	s3PathStyle                   bool
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func load(args []string) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("discovery", flag.ContinueOnError)
	fs.StringVar(&s.listen, "listen", envOr("LAKE_LISTEN", ":50051"), "Flight SQL (gRPC) listen address [LAKE_LISTEN]")
	fs.StringVar(&s.httpListen, "http-listen", envOr("LAKE_HTTP_LISTEN", ":8080"), "HTTP address for /healthz, /status and /metrics; empty disables [LAKE_HTTP_LISTEN]")
	fs.StringVar(&s.snapshot, "snapshot", envOr("LAKE_SNAPSHOT", ""), "snapshot blob: s3://bucket/key or a file path (required) [LAKE_SNAPSHOT]")
	poll := fs.String("poll-interval", envOr("LAKE_POLL_INTERVAL", "10s"), "how often to check the blob for a new version [LAKE_POLL_INTERVAL]")
	grace := fs.String("shutdown-grace", envOr("LAKE_SHUTDOWN_GRACE", "20s"), "how long running requests may finish after SIGTERM [LAKE_SHUTDOWN_GRACE]")
	fs.StringVar(&s.tlsCert, "tls-cert", envOr("LAKE_TLS_CERT", ""), "PEM certificate file; with -tls-key serves TLS [LAKE_TLS_CERT]")
	fs.StringVar(&s.tlsKey, "tls-key", envOr("LAKE_TLS_KEY", ""), "PEM private key file [LAKE_TLS_KEY]")
	fs.StringVar(&s.hsSecretFile, "jwt-hs256-secret-file", envOr("LAKE_JWT_HS256_SECRET_FILE", ""), "file holding the HS256 secret (at least 32 bytes) [LAKE_JWT_HS256_SECRET_FILE]; or set LAKE_JWT_HS256_SECRET")
	fs.StringVar(&s.jwksFile, "jwks-file", envOr("LAKE_JWKS_FILE", ""), "JWKS file of RS256/ES256 public keys [LAKE_JWKS_FILE]")
	fs.StringVar(&s.issuer, "jwt-issuer", envOr("LAKE_JWT_ISSUER", ""), "required token issuer (iss) [LAKE_JWT_ISSUER]")
	fs.StringVar(&s.audience, "jwt-audience", envOr("LAKE_JWT_AUDIENCE", ""), "required token audience (aud) [LAKE_JWT_AUDIENCE]")
	fs.StringVar(&s.tenantClaim, "tenant-claim", envOr("LAKE_TENANT_CLAIM", "tenant"), "token claim holding the tenant [LAKE_TENANT_CLAIM]")
	fs.IntVar(&s.batchBytes, "batch-bytes", discovery.DefaultBatchBytes, "schema bytes per record batch at most")
	fs.BoolVar(&s.s3PathStyle, "s3-path-style", envOr("LAKE_S3_PATH_STYLE", "") == "true", "path-style S3 addressing for S3-compatible servers [LAKE_S3_PATH_STYLE]")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	var err error
	if s.pollInterval, err = time.ParseDuration(*poll); err != nil || s.pollInterval < 100*time.Millisecond {
		return s, fmt.Errorf("-poll-interval %q: want a duration of at least 100ms, such as 10s", *poll)
	}
	if s.shutdownGrace, err = time.ParseDuration(*grace); err != nil || s.shutdownGrace < 0 {
		return s, fmt.Errorf("-shutdown-grace %q: want a duration such as 20s", *grace)
	}
	if s.snapshot == "" {
		return s, errors.New("-snapshot (LAKE_SNAPSHOT) is required: s3://bucket/key or a file path")
	}
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return s, errors.New("-tls-cert and -tls-key go together")
	}
	if s.hsSecretFile == "" && os.Getenv("LAKE_JWT_HS256_SECRET") == "" && s.jwksFile == "" {
		return s, errors.New("configure token validation: -jwt-hs256-secret-file, LAKE_JWT_HS256_SECRET or -jwks-file")
	}
	return s, nil
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("discovery", slog.String("error", err.Error()))
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	s, err := load(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	authCfg := auth.Config{Issuer: s.issuer, Audience: s.audience, TenantClaim: s.tenantClaim}
	if v := os.Getenv("LAKE_JWT_HS256_SECRET"); v != "" {
		authCfg.HS256Secret = []byte(v)
	}
	if s.hsSecretFile != "" {
		b, err := os.ReadFile(s.hsSecretFile)
		if err != nil {
			return fmt.Errorf("read the HS256 secret: %w", err)
		}
		authCfg.HS256Secret = []byte(strings.TrimSpace(string(b)))
	}
	if s.jwksFile != "" {
		if authCfg.JWKS, err = os.ReadFile(s.jwksFile); err != nil {
			return fmt.Errorf("read the JWKS: %w", err)
		}
	}
	validator, err := auth.New(authCfg)
	if err != nil {
		return err
	}
	blobs, err := openBlobs(ctx, s)
	if err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if s.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(s.tlsCert, s.tlsKey)
		if err != nil {
			return fmt.Errorf("load TLS key pair: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	srv, err := discovery.Start(ctx, discovery.Config{
		Listen: s.listen, HTTPListen: s.httpListen, Blobs: blobs, PollInterval: s.pollInterval,
		Auth: validator, TLS: tlsCfg, Log: log,
		Service: discovery.Options{Version: version, BatchBytes: s.batchBytes},
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("discovery shutting down", slog.Duration("grace", s.shutdownGrace))
	sctx, cancel := context.WithTimeout(context.Background(), s.shutdownGrace)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}

// openBlobs opens s3://bucket/key with the default AWS configuration, or a
// file path.
func openBlobs(ctx context.Context, s settings) (blobstore.Store, error) {
	if !strings.HasPrefix(s.snapshot, "s3://") {
		return blobstore.NewFile(s.snapshot), nil
	}
	u, err := url.Parse(s.snapshot)
	if err != nil || u.Host == "" || len(u.Path) < 2 {
		return nil, fmt.Errorf("-snapshot %q: want s3://bucket/key", s.snapshot)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = s.s3PathStyle })
	return blobstore.NewS3(client, u.Host, strings.TrimPrefix(u.Path, "/"), 0)
}
