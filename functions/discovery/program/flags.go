package program

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/browser"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/vending"
)

// openVending builds lake.credentials' Door: with a role, the AWS
// configuration is loaded (the task role's credentials, the SDK's endpoint
// variables such as AWS_ENDPOINT_URL_STS and AWS_ENDPOINT_URL_S3, which
// the S3 clients reading tables' rows with vended credentials use too);
// without one, no AWS configuration is needed.
func openVending(ctx context.Context, c vending.Config, log *slog.Logger) (*vending.Door, aws.Config, func(), error) {
	if c.RoleARN == "" {
		return &vending.Door{Hint: c.Hint}, aws.Config{}, func() {}, nil
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, aws.Config{}, nil, fmt.Errorf("vending: load AWS config: %w", err)
	}
	door, closeDoor, err := vending.Open(c, awsCfg, log)
	return door, awsCfg, closeDoor, err
}

// Flags is the discovery program's configuration: its flags, each with an
// environment variable (a flag on the command line wins).
type Flags struct {
	Listen, HTTPListen, AdminListen, Snapshot string
	// AdminPprof is -admin-pprof: Go's profiles on the admin listener.
	AdminPprof                  bool
	PollInterval, ShutdownGrace time.Duration
	// MaxStaleness is how old the last successful poll may grow before
	// health says unhealthy (Config.MaxStaleness); 0 disables the check.
	MaxStaleness time.Duration
	// SegmentRetryMax is the longest wait before a degraded tenant's
	// segment is fetched again (Config.SegmentRetryMax).
	SegmentRetryMax           time.Duration
	TLSCert, TLSKey           string
	HS256Secret               string // LAKE_JWT_HS256_SECRET: the secret itself (env only)
	HS256SecretFile, JWKSFile string
	// JWKSURL serves the JWKS instead of JWKSFile, refreshed every
	// JWKSRefresh (auth.Config.JWKSURL).
	JWKSURL                       string
	JWKSRefresh                   time.Duration
	Issuer, Audience, TenantClaim string
	// MaxLifetime is the longest token lifetime exp - iat accepted.
	MaxLifetime time.Duration
	BatchBytes  int
	// CacheBytes bounds everything discovery keeps that is derived from
	// the segments (discovery.Options.CacheBytes); 0 means
	// discovery.DefaultCacheBytes() (40% of the container's memory limit).
	CacheBytes int64
	// RequestTimeout is every Flight call's server-side deadline
	// (discovery.Options.RequestTimeout).
	RequestTimeout time.Duration
	S3PathStyle    bool
	// BrowserListen is the catalog browser's HTTP address; "" serves
	// none.
	BrowserListen string
	// IcebergListen serves the Iceberg REST catalog (-iceberg-listen); ""
	// serves none.
	IcebergListen string
	// Vending is how lake.credentials vends (-vending-role-arn,
	// -vending-duration, -vending-own-buckets, -vending-event-bus); no
	// role: lake.credentials answers UNIMPLEMENTED.
	Vending vending.Config
}

// ParseFlags reads the program's flags from args, with defaults from
// getenv, and validates them. It returns flag.ErrHelp for -h.
func ParseFlags(args []string, getenv func(string) string, output io.Writer) (Flags, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var c Flags
	fs := flag.NewFlagSet("discovery", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&c.Listen, "listen", env("LAKE_LISTEN", ":50051"), "Flight SQL (gRPC) listen address [LAKE_LISTEN]")
	fs.StringVar(&c.HTTPListen, "http-listen", env("LAKE_HTTP_LISTEN", ":8080"), "HTTP address for /healthz alone (the load balancer's check); - disables [LAKE_HTTP_LISTEN]")
	fs.StringVar(&c.AdminListen, "admin-listen", env("LAKE_ADMIN_LISTEN", "127.0.0.1:8081"), "HTTP address for /healthz, /status and /metrics, which show the blob location, errors and catalog-wide counts: keep it unreachable from the load balancer and clients; - disables [LAKE_ADMIN_LISTEN]")
	fs.BoolVar(&c.AdminPprof, "admin-pprof", env("LAKE_ADMIN_PPROF", "") == "true", "also serve Go's profiles (net/http/pprof) under /debug/pprof/ on -admin-listen, for operators; off by default [LAKE_ADMIN_PPROF=true]")
	fs.StringVar(&c.BrowserListen, "browser-listen", env("LAKE_BROWSER_LISTEN", ""), "HTTP address for the catalog browser (page and JSON API; every answer asks this server with the token the page sends); plaintext HTTP: put it on a private address or behind a TLS listener; not with -tls-cert; default off; - disables [LAKE_BROWSER_LISTEN]")
	fs.StringVar(&c.IcebergListen, "iceberg-listen", env("LAKE_ICEBERG_LISTEN", ""), "Iceberg REST catalog (read side) listen address: engines' catalog uri, warehouse = the tenant, the same bearer tokens; TLS with -tls-cert; default off; - disables [LAKE_ICEBERG_LISTEN]")
	fs.StringVar(&c.Snapshot, "snapshot", env("LAKE_SNAPSHOT", ""), "snapshot blob: s3://bucket/key, file:///path or a path (required) [LAKE_SNAPSHOT]")
	poll := fs.String("poll-interval", env("LAKE_POLL_INTERVAL", DefaultPollInterval.String()), "how often to check the blob for a new version: a conditional GET, answered 304 with no body while it is unchanged [LAKE_POLL_INTERVAL]")
	staleness := fs.String("max-staleness", env("LAKE_MAX_STALENESS", ""), "health turns unhealthy (/healthz 503, gRPC NOT_SERVING) when the last successful poll is older than this; requests are still answered from the last good snapshot; more than -poll-interval; 0 disables (default 5m, or 3 × -poll-interval when that is longer) [LAKE_MAX_STALENESS]")
	segmentRetry := fs.String("segment-retry-max", env("LAKE_SEGMENT_RETRY_MAX", ""), "the longest wait before a segment that failed to load (its tenant degraded: damaged, missing or unreachable) is fetched again; the first wait is 2s (or this when shorter), doubling after each failure; at least -poll-interval (default 1m, or -poll-interval when that is longer) [LAKE_SEGMENT_RETRY_MAX]")
	grace := fs.String("shutdown-grace", env("LAKE_SHUTDOWN_GRACE", "20s"), "how long running requests may finish after SIGTERM [LAKE_SHUTDOWN_GRACE]")
	fs.StringVar(&c.TLSCert, "tls-cert", env("LAKE_TLS_CERT", ""), "PEM certificate file; with -tls-key serves TLS [LAKE_TLS_CERT]")
	fs.StringVar(&c.TLSKey, "tls-key", env("LAKE_TLS_KEY", ""), "PEM private key file [LAKE_TLS_KEY]")
	fs.StringVar(&c.HS256SecretFile, "jwt-hs256-secret-file", env("LAKE_JWT_HS256_SECRET_FILE", ""), "file holding the HS256 secret (at least 32 bytes) [LAKE_JWT_HS256_SECRET_FILE]; or set LAKE_JWT_HS256_SECRET")
	fs.StringVar(&c.JWKSFile, "jwks-file", env("LAKE_JWKS_FILE", ""), "JWKS file of RS256/ES256 public keys [LAKE_JWKS_FILE]")
	fs.StringVar(&c.JWKSURL, "jwks-url", env("LAKE_JWKS_URL", ""), "https URL of the identity provider's JWKS (its jwks_uri), fetched at start and every -jwks-refresh; http only to a loopback host; not with -jwks-file [LAKE_JWKS_URL]")
	jwksRefresh := fs.String("jwks-refresh", env("LAKE_JWKS_REFRESH", "15m"), "how often to fetch -jwks-url again, at least 1m; a failed fetch is logged and the last keys stay [LAKE_JWKS_REFRESH]")
	maxLifetime := fs.String("jwt-max-lifetime", env("LAKE_JWT_MAX_LIFETIME", "24h"), "longest token lifetime (exp - iat) accepted [LAKE_JWT_MAX_LIFETIME]")
	fs.StringVar(&c.Issuer, "jwt-issuer", env("LAKE_JWT_ISSUER", ""), "required token issuer (iss) [LAKE_JWT_ISSUER]")
	fs.StringVar(&c.Audience, "jwt-audience", env("LAKE_JWT_AUDIENCE", ""), "required token audience (aud) [LAKE_JWT_AUDIENCE]")
	fs.StringVar(&c.TenantClaim, "tenant-claim", env("LAKE_TENANT_CLAIM", "tenant"), "token claim holding the tenant [LAKE_TENANT_CLAIM]")
	cache := fs.String("cache-bytes", env("LAKE_CACHE_BYTES", "0"), "bytes kept in memory of everything derived from the segments (prepared tenants, SQL engines and results, kept answers), all together; 0: 40% of the container's memory limit (cgroup, GOMEMLIMIT), 256 MiB without one [LAKE_CACHE_BYTES]")
	batch := fs.String("batch-bytes", env("LAKE_BATCH_BYTES", strconv.Itoa(discovery.DefaultBatchBytes)), "bytes (names, schemas, offsets) per record batch at most [LAKE_BATCH_BYTES]")
	reqTimeout := fs.String("request-timeout", env("LAKE_REQUEST_TIMEOUT", discovery.DefaultRequestTimeout.String()), "server-side deadline of every Flight SQL call (a client's shorter deadline still wins), 1s to 1h [LAKE_REQUEST_TIMEOUT]")
	fs.StringVar(&c.Vending.RoleARN, "vending-role-arn", env("LAKE_VENDING_ROLE_ARN", ""), "the data-reader role lake.credentials assumes (STS AssumeRole with a session policy naming the table's prefix); empty: vending off [LAKE_VENDING_ROLE_ARN]")
	vendDuration := fs.String("vending-duration", env("LAKE_VENDING_DURATION", ""), "how long vended credentials last, 15m to 12h and at most the role's maximum session (default 15m) [LAKE_VENDING_DURATION]")
	ownBuckets := fs.String("vending-own-buckets", env("LAKE_VENDING_OWN_BUCKETS", ""), "lake's own buckets, comma-separated: never vended for, whatever a tenant is allowed [LAKE_VENDING_OWN_BUCKETS]")
	fs.StringVar(&c.Vending.EventBus, "vending-event-bus", env("LAKE_VENDING_EVENT_BUS", ""), "EventBridge bus that gets a 'Credentials Vended' event for every vend; empty: the log line only [LAKE_VENDING_EVENT_BUS]")
	pathStyle := fs.String("s3-path-style", env("LAKE_S3_PATH_STYLE", "false"), "path-style S3 addressing for S3-compatible servers [LAKE_S3_PATH_STYLE]")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q: discovery takes only flags", fs.Args())
	}
	c.HS256Secret = getenv("LAKE_JWT_HS256_SECRET")
	vc, err := vending.ConfigFromEnv(func(k string) string {
		return map[string]string{"LAKE_VENDING_DURATION": *vendDuration, "LAKE_VENDING_OWN_BUCKETS": *ownBuckets}[k]
	})
	if err != nil {
		return c, fmt.Errorf("-vending-duration: %w", err)
	}
	c.Vending.Duration, c.Vending.OwnBuckets, c.Vending.Hint = vc.Duration, vc.OwnBuckets, "start discovery with -vending-role-arn (the stack sets it when deployed with data buckets)"
	if c.PollInterval, err = time.ParseDuration(*poll); err != nil || c.PollInterval < 100*time.Millisecond {
		return c, fmt.Errorf("-poll-interval %q: want a duration of at least 100ms, such as 2s", *poll)
	}
	if c.MaxStaleness, err = maxStaleness(*staleness, c.PollInterval); err != nil {
		return c, err
	}
	c.SegmentRetryMax = max(discovery.DefaultSegmentRetryMax, c.PollInterval)
	if *segmentRetry != "" {
		if c.SegmentRetryMax, err = time.ParseDuration(*segmentRetry); err != nil || c.SegmentRetryMax < c.PollInterval {
			return c, fmt.Errorf("-segment-retry-max %q: want a duration of at least -poll-interval (%v), such as 1m", *segmentRetry, c.PollInterval)
		}
	}
	if c.ShutdownGrace, err = time.ParseDuration(*grace); err != nil || c.ShutdownGrace < 0 {
		return c, fmt.Errorf("-shutdown-grace %q: want a duration such as 20s", *grace)
	}
	if c.JWKSRefresh, err = time.ParseDuration(*jwksRefresh); err != nil || c.JWKSRefresh < auth.MinJWKSRefresh {
		return c, fmt.Errorf("-jwks-refresh %q: want a duration of at least %v, such as 15m", *jwksRefresh, auth.MinJWKSRefresh)
	}
	if c.MaxLifetime, err = time.ParseDuration(*maxLifetime); err != nil || c.MaxLifetime <= 0 {
		return c, fmt.Errorf("-jwt-max-lifetime %q: want a duration of more than zero, such as 24h", *maxLifetime)
	}
	if c.CacheBytes, err = strconv.ParseInt(*cache, 10, 64); err != nil || c.CacheBytes < 0 {
		return c, fmt.Errorf("-cache-bytes %q: want a whole number of bytes, 0 for the default", *cache)
	}
	if c.BatchBytes, err = strconv.Atoi(*batch); err != nil || c.BatchBytes < 4<<10 || c.BatchBytes > 3<<20 {
		return c, fmt.Errorf("-batch-bytes %q: want a whole number of bytes from 4096 to 3145728 (gRPC's default receive limit is 4 MiB)", *batch)
	}
	if c.RequestTimeout, err = time.ParseDuration(*reqTimeout); err != nil || c.RequestTimeout < time.Second || c.RequestTimeout > time.Hour {
		return c, fmt.Errorf("-request-timeout %q: want a duration from 1s to 1h, such as 30s", *reqTimeout)
	}
	if c.S3PathStyle, err = strconv.ParseBool(*pathStyle); err != nil {
		return c, fmt.Errorf("-s3-path-style %q: want true or false", *pathStyle)
	}
	if c.HTTPListen == "-" {
		c.HTTPListen = ""
	}
	if c.AdminListen == "-" {
		c.AdminListen = ""
	}
	if c.BrowserListen == "-" {
		c.BrowserListen = ""
	}
	if c.BrowserListen != "" && (c.BrowserListen == c.HTTPListen || c.BrowserListen == c.AdminListen) {
		return c, fmt.Errorf("-browser-listen %q: must differ from -http-listen and -admin-listen", c.BrowserListen)
	}
	if c.AdminListen != "" && c.AdminListen == c.HTTPListen {
		return c, fmt.Errorf("-admin-listen %q: must differ from -http-listen, which load balancers reach", c.AdminListen)
	}
	if c.Snapshot == "" {
		return c, errors.New("-snapshot (LAKE_SNAPSHOT) is required: s3://bucket/key or a file path")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, errors.New("-tls-cert and -tls-key go together")
	}
	if c.BrowserListen != "" && c.TLSCert != "" {
		return c, errors.New("-browser-listen with -tls-cert: the browser asks this server on 127.0.0.1 and cannot verify its certificate for that address; serve discovery without TLS (behind a TLS load balancer or on a private network) or run the browser apart")
	}
	if c.HS256SecretFile == "" && c.HS256Secret == "" && c.JWKSFile == "" && c.JWKSURL == "" {
		return c, errors.New("configure token validation: -jwt-hs256-secret-file, LAKE_JWT_HS256_SECRET, -jwks-file or -jwks-url")
	}
	if c.JWKSURL != "" {
		if c.JWKSFile != "" {
			return c, errors.New("-jwks-url and -jwks-file exclude each other: take the keys from one place")
		}
		if err := auth.CheckJWKSURL(c.JWKSURL); err != nil {
			return c, fmt.Errorf("-jwks-url: %w", err)
		}
	}
	return c, nil
}

// maxStaleness parses -max-staleness: "" is the default (DefaultMaxStaleness,
// or 3 × the poll interval when that is longer), 0 disables, anything else
// must be more than the poll interval.
func maxStaleness(v string, poll time.Duration) (time.Duration, error) {
	if v == "" {
		return max(DefaultMaxStaleness, 3*poll), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d > 0 && d <= poll) {
		return 0, fmt.Errorf("-max-staleness %q: want a duration of more than -poll-interval (%v), such as 5m, or 0 to disable", v, poll)
	}
	return d, nil
}

// authConfig is the token validator's configuration: the secret and JWKS
// read from their files, and a failed JWKS refresh logged on log.
func (c Flags) authConfig(log *slog.Logger) (auth.Config, error) {
	cfg := auth.Config{
		Issuer: c.Issuer, Audience: c.Audience, TenantClaim: c.TenantClaim, MaxLifetime: c.MaxLifetime,
		JWKSURL: c.JWKSURL, JWKSRefresh: c.JWKSRefresh,
	}
	if c.JWKSURL != "" {
		cfg.JWKSRefreshError = func(err error) { log.Error("discovery: JWKS refresh", slog.String("error", err.Error())) }
	}
	if c.HS256Secret != "" {
		cfg.HS256Secret = []byte(c.HS256Secret)
	}
	if c.HS256SecretFile != "" {
		b, err := os.ReadFile(c.HS256SecretFile)
		if err != nil {
			return cfg, fmt.Errorf("read the HS256 secret: %w", err)
		}
		cfg.HS256Secret = []byte(strings.TrimSpace(string(b)))
	}
	if c.JWKSFile != "" {
		var err error
		if cfg.JWKS, err = os.ReadFile(c.JWKSFile); err != nil {
			return cfg, fmt.Errorf("read the JWKS: %w", err)
		}
	}
	return cfg, nil
}

// version is what GetSqlInfo reports as the server version. The linker sets
// it (-ldflags "-X github.com/lake-catalog/lake/functions/discovery/program.version=…",
// the Dockerfile's VERSION build argument); nothing else writes it.
var version = "dev"

// Main is the discovery program: it parses the configuration from args and
// getenv, loads the token keys and TLS pair, opens the blob
// (blobstore.Open), serves until ctx ends, SIGTERM or Ctrl-C, and drains for
// the shutdown grace; with -browser-listen it also serves the catalog
// browser (internal/browser), which asks this server over Flight SQL. Logs
// are JSON lines on stdout; -h prints the flags on stderr. It returns the
// exit code: 0 after a clean stop or -h, 2 for a configuration error, 1 for
// a failure to start.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	c, err := ParseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		log.Error("discovery: configuration", slog.String("error", err.Error()))
		return 2
	}
	if err := run(ctx, c, log); err != nil {
		log.Error("discovery", slog.String("error", err.Error()))
		return 1
	}
	return 0
}

func run(ctx context.Context, c Flags, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	authCfg, err := c.authConfig(log)
	if err != nil {
		return err
	}
	validator, err := auth.NewContext(ctx, authCfg)
	if err != nil {
		return err
	}
	defer validator.Close()
	blobs, err := blobstore.Open(ctx, c.Snapshot, blobstore.OpenOptions{S3PathStyle: c.S3PathStyle})
	if err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return fmt.Errorf("load TLS key pair: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	door, awsCfg, closeDoor, err := openVending(ctx, c.Vending, log)
	if err != nil {
		return err
	}
	defer closeDoor()
	if c.IcebergListen == "-" {
		c.IcebergListen = ""
	}
	srv, err := Start(ctx, Config{
		IcebergListen: c.IcebergListen,
		Listen:        c.Listen, HTTPListen: c.HTTPListen, AdminListen: c.AdminListen, AdminPprof: c.AdminPprof, Blobs: blobs, PollInterval: c.PollInterval,
		MaxStaleness: c.MaxStaleness, SegmentRetryMax: c.SegmentRetryMax, Auth: validator, TLS: tlsCfg, Log: log,
		Service: discovery.Options{Version: version, BatchBytes: c.BatchBytes, CacheBytes: c.CacheBytes, RequestTimeout: c.RequestTimeout, Door: door,
			Rows: discovery.RowsOptions{S3Config: awsCfg, S3PathStyle: c.S3PathStyle}},
	})
	if err != nil {
		return err
	}
	var web *browserServer
	if c.BrowserListen != "" {
		if web, err = serveBrowser(c.BrowserListen, srv.Addr(), log); err != nil {
			srv.Shutdown(ctx)
			return err
		}
		log.InfoContext(ctx, "discovery browser listening", slog.String("browser", web.l.Addr().String()))
	}
	<-ctx.Done()
	log.Info("discovery shutting down", slog.Duration("grace", c.ShutdownGrace))
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownGrace)
	defer cancel()
	if web != nil {
		web.shutdown(sctx)
	}
	srv.Shutdown(sctx)
	return nil
}

// browserServer is the catalog browser's listener (-browser-listen).
type browserServer struct {
	l    net.Listener
	srv  *http.Server
	h    *browser.Handler
	done chan struct{}
}

// serveBrowser listens on addr and serves the catalog browser asking the
// Flight SQL server at flightListen with the token each request carries
// (dialled plaintext, on loopback when discovery listens on every
// interface). It offers no dev tokens: the page asks for a token to paste.
func serveBrowser(addr, flightListen string, log *slog.Logger) (*browserServer, error) {
	h, err := browser.New(browser.Options{Discovery: loopbackFlight(flightListen)})
	if err != nil {
		return nil, fmt.Errorf("catalog browser: %w", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("catalog browser: %w", err)
	}
	b := &browserServer{l: l, h: h, done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}}
	go func() {
		defer close(b.done)
		if err := b.srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			log.Error("discovery: catalog browser", slog.String("error", err.Error()))
		}
	}()
	return b, nil
}

func (b *browserServer) shutdown(ctx context.Context) {
	_ = b.srv.Shutdown(ctx)
	<-b.done
	_ = b.h.Close()
}

// loopbackFlight is the plaintext address at which this process reaches its
// own Flight SQL listener: the listen address itself, or loopback when it
// listens on every interface.
func loopbackFlight(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "grpc://" + listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "grpc://" + net.JoinHostPort(host, port)
}
