// Package local runs the whole catalog in one process for local use: a
// RocksDB metastore, the registration HTTP API (the register Lambda's
// handler), refresh on a timer and soon after every write, the snapshot blob
// in a file, and the Flight SQL discovery server reading that file, on the
// discovery program's listeners (functions/discovery/program.Start), with
// the catalog browser beside it.
//
// It is the CLI's one door to the servers: `lake local` starts them through
// it, and the CLI's other commands are clients (pkg/wire, internal/apiclient,
// internal/flightclient).
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lake-catalog/lake/functions/discovery/program"
	"github.com/lake-catalog/lake/internal/apierror"
	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/blobstore"
	"github.com/lake-catalog/lake/internal/browser"
	"github.com/lake-catalog/lake/internal/discovery"
	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/refresh"
	"github.com/lake-catalog/lake/internal/registerapi"
	"github.com/lake-catalog/lake/internal/tablesync"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Files in the data folder. The folder is the owner's alone (0700, an
// existing one tightened at start) and the files lake writes there are
// 0600; RocksDB's own files under MetaDir keep RocksDB's modes, reachable
// only through the folder.
const (
	MetaDir    = "meta"             // RocksDB
	BlobFile   = "catalog.lakesnap" // the snapshot blob
	IcebergDir = "iceberg"          // Iceberg metadata written by lake sync
	SecretFile = "dev-secret"       // HS256 secret for dev tokens
	seededFile = "demo-seeded"      // present once the demo catalog was registered
)

// Config configures local mode. Zero values take the documented defaults.
type Config struct {
	// DataDir holds everything local mode keeps. Default ./.lake. Start
	// creates it 0700, or tightens an existing one to 0700.
	DataDir string
	// APIListen is the registration API address. Default 127.0.0.1:8181.
	APIListen string
	// FlightListen is the Flight SQL address. Default 127.0.0.1:50051.
	FlightListen string
	// HTTPListen serves discovery's /healthz, /status and /metrics. Default
	// 127.0.0.1:8182; "-" disables it.
	HTTPListen string
	// Pprof adds Go's profiles under /debug/pprof/ to HTTPListen, for
	// profiling a running local mode (behind the same Host check).
	Pprof bool
	// IcebergListen serves the Iceberg REST catalog (read side) for
	// engines: catalog uri http://<it>, warehouse = the tenant, the same
	// tokens. "" or "-" serves none (an embedder opts in; `lake local`
	// listens on 127.0.0.1:8184 by default).
	IcebergListen string
	// BrowserListen serves the read-only catalog browser (internal/browser).
	// Default 127.0.0.1:8183; "-" disables it. An address that is not
	// loopback is refused unless AllowRemoteBrowser: the browser mints dev
	// tokens for whoever reaches it.
	BrowserListen string
	// AllowRemoteBrowser lets BrowserListen be an address off loopback
	// (Start then logs a warning).
	AllowRemoteBrowser bool
	// AllowHosts are Host names the listeners answer besides localhost,
	// 127.0.0.1, [::1] and the addresses they listen on; only when a
	// listener is off loopback (see guard.go).
	AllowHosts []string
	// RefreshInterval is the periodic refresh. Default 30 s.
	RefreshInterval time.Duration
	// Debounce is how long after a write the refresh runs, so a burst of
	// writes makes one refresh. Default 200 ms.
	Debounce time.Duration
	// Demo registers the demo catalog on first start. Default false here;
	// `lake local` turns it on.
	Demo bool
	// DefaultCompatibility is the compatibility mode of tables registered
	// without one (schemadiff; "" is none).
	DefaultCompatibility schemadiff.Mode
	// Memory is how long drops stay restorable and how many versions are
	// kept (lake local --tombstone-retention, --history-versions,
	// --history-max-age: ParseMemory).
	Memory registerapi.Memory
	// Quota bounds each tenant's tables and registration bytes (zero
	// fields: the catalog's defaults).
	Quota catalog.Quota
	// DataRoot is lake local --data-root: a tenant's table locations under
	// its own folder of it, DataRoot/<tenant>/ (file:///… or an absolute
	// path), are readable through lake by path,
	// and `lake credentials` says so (access "path"); "" refuses every
	// local path. It must be an existing folder.
	DataRoot string
	// Vending vends s3:// locations (--vending-role-arn, --sts-endpoint,
	// --vending-duration); without a role they answer
	// vending_not_configured. Start sets its DataRoot and Hint.
	Vending vending.Config
	Log     *slog.Logger
}

// ParseMemory reads lake local's --tombstone-retention, --history-versions
// and --history-max-age as the register Lambda reads its
// LAKE_TOMBSTONE_RETENTION, LAKE_HISTORY_VERSIONS and LAKE_HISTORY_MAX_AGE
// (registerapi.MemoryFromEnv, whose messages name those variables): ""
// takes the catalog's default.
func ParseMemory(tombstoneRetention, historyVersions, historyMaxAge string) (registerapi.Memory, error) {
	return registerapi.MemoryFromEnv(func(k string) string {
		return map[string]string{"LAKE_TOMBSTONE_RETENTION": tombstoneRetention, "LAKE_HISTORY_VERSIONS": historyVersions,
			"LAKE_HISTORY_MAX_AGE": historyMaxAge}[k]
	})
}

func (c *Config) defaults() {
	if c.DataDir == "" {
		c.DataDir = ".lake"
	}
	if c.APIListen == "" {
		c.APIListen = "127.0.0.1:8181"
	}
	if c.FlightListen == "" {
		c.FlightListen = "127.0.0.1:50051"
	}
	if c.HTTPListen == "" {
		c.HTTPListen = "127.0.0.1:8182"
	}
	if c.HTTPListen == "-" {
		c.HTTPListen = ""
	}
	if c.BrowserListen == "" {
		c.BrowserListen = "127.0.0.1:8183"
	}
	if c.IcebergListen == "-" {
		c.IcebergListen = ""
	}
	if c.BrowserListen == "-" {
		c.BrowserListen = ""
	}
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = 30 * time.Second
	}
	if c.Debounce <= 0 {
		c.Debounce = 200 * time.Millisecond
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
}

// Instance is a running local mode.
type Instance struct {
	cfg       Config
	hosts     map[string]bool // Host values the listeners answer
	store     *rocksdb.Store
	cat       *catalog.Catalog
	secret    []byte
	publisher *refresh.Publisher
	disc      *program.Server
	api       *http.Server
	apiLn     net.Listener
	browser   *http.Server
	browserLn net.Listener
	browse    *browser.Handler
	kick      chan struct{}
	closeDoor func() // stops the vend event observer
	refreshMu sync.Mutex
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// LoadSecret reads the dev-token secret of a data folder, creating it on
// first use.
func LoadSecret(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, SecretFile)
	b, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) < auth.MinSecretBytes {
			return nil, fmt.Errorf("local: %s holds %d bytes; delete it to generate a new secret", path, len(s))
		}
		return []byte(s), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("local: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("local: generate secret: %w", err)
	}
	secret := hex.EncodeToString(raw)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("local: write secret: %w", err)
	}
	return []byte(secret), nil
}

// privateDataDir creates the data folder 0700, or tightens an existing one
// that others may read or enter, and the dev secret and the blob in it, to
// the owner's bits alone (0700, 0600), saying so in the log. The tokens'
// secret and every table's name and schema are kept there.
func privateDataDir(ctx context.Context, dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("local: data folder: %w", err)
	}
	if err := tighten(ctx, log, dir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{SecretFile, BlobFile} {
		if err := tighten(ctx, log, filepath.Join(dir, name), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// tighten clears the permission bits of path outside limit, logging when
// there were any.
func tighten(ctx context.Context, log *slog.Logger, path string, limit fs.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	was := fi.Mode().Perm()
	if was&^limit == 0 {
		return nil
	}
	now := was & limit
	if err := os.Chmod(path, now); err != nil {
		return fmt.Errorf("local: %s has mode %v, open to others; making it %v: %w", path, was, now, err)
	}
	log.WarnContext(ctx, "local: tightened permissions open to others", slog.String("path", path), slog.String("was", was.String()), slog.String("now", now.String()))
	return nil
}

// Start opens the data folder and starts every part. Call Close to stop.
func Start(ctx context.Context, cfg Config) (*Instance, error) {
	cfg.defaults()
	if cfg.BrowserListen != "" && !isLoopback(cfg.BrowserListen) {
		if !cfg.AllowRemoteBrowser {
			return nil, fmt.Errorf("local: --browser-listen %q is not a loopback address: the catalog browser hands out dev tokens to whoever reaches it; pass --allow-remote-browser to serve it there anyway", cfg.BrowserListen)
		}
		cfg.Log.WarnContext(ctx, "local: the catalog browser listens off loopback: anyone who reaches it gets read-only dev tokens for the dev tenants", slog.String("listen", cfg.BrowserListen))
	}
	hosts, err := allowedHosts(cfg.AllowHosts, cfg.APIListen, cfg.BrowserListen, cfg.HTTPListen, cfg.IcebergListen)
	if err != nil {
		return nil, err
	}
	if err := privateDataDir(ctx, cfg.DataDir, cfg.Log); err != nil {
		return nil, err
	}
	secret, err := LoadSecret(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	store, err := rocksdb.Open(filepath.Join(cfg.DataDir, MetaDir), rocksdb.Options{})
	if err != nil {
		return nil, fmt.Errorf("local: %w (is another `lake local` using %s?)", err, cfg.DataDir)
	}
	in := &Instance{cfg: cfg, hosts: hosts, store: store, cat: catalog.New(store, catalog.Options{Quota: cfg.Quota, DefaultCompatibility: cfg.DefaultCompatibility,
		TombstoneRetention: cfg.Memory.TombstoneRetention, HistoryVersions: cfg.Memory.HistoryVersions, HistoryMaxAge: cfg.Memory.HistoryMaxAge}), secret: secret, kick: make(chan struct{}, 1)}
	validator, err := auth.New(auth.Config{HS256Secret: secret})
	if err != nil {
		store.Close()
		return nil, err
	}
	blobs, err := blobstore.Open(ctx, filepath.Join(cfg.DataDir, BlobFile), blobstore.OpenOptions{})
	if err != nil {
		store.Close()
		return nil, err
	}
	in.publisher = &refresh.Publisher{Store: store, Blobs: blobs}

	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	in.cancel = cancel
	// Usage counted before whole registrations were (or before quotas) is
	// counted again, once: nothing else writes this store yet.
	if err := recomputeUsage(rctx, store, in.cat, cfg.Log); err != nil {
		cancel()
		store.Close()
		return nil, err
	}
	if cfg.Demo {
		if err := in.seedDemo(rctx); err != nil {
			cancel()
			store.Close()
			return nil, err
		}
	}
	// Publish before discovery starts, so it serves from its first poll.
	// A full scan: the store may have been written while lake was stopped.
	if _, err := in.publisher.RunFull(rctx); err != nil {
		cfg.Log.WarnContext(ctx, "local: first refresh", slog.String("error", err.Error()))
	}
	door, awsCfg, closeDoor, err := openVending(rctx, cfg)
	if err != nil {
		cancel()
		store.Close()
		return nil, err
	}
	in.closeDoor = closeDoor
	in.disc, err = program.Start(rctx, program.Config{
		Listen: cfg.FlightListen, AdminListen: cfg.HTTPListen, AdminPprof: cfg.Pprof, Blobs: blobs, PollInterval: cfg.RefreshInterval,
		Auth: validator, Log: cfg.Log, Service: discovery.Options{Version: "local", Door: door,
			// Flight SQL statements over tables' rows read through the
			// same Door, as the preview route does.
			Rows: discovery.RowsOptions{S3Config: awsCfg, S3PathStyle: os.Getenv("LAKE_S3_PATH_STYLE") == "true"}},
		WrapAdmin:     func(h http.Handler) http.Handler { return newGuard(h, in.hosts) },
		IcebergListen: cfg.IcebergListen,
		WrapIceberg:   func(h http.Handler) http.Handler { return newGuard(h, in.hosts) },
		Collectors:    []prometheus.Collector{CatalogCollector(in.cat)},
	})
	if err != nil {
		cancel()
		store.Close()
		return nil, err
	}

	// Load the first snapshot before the registration API and the browser
	// listen: a client that reaches them (the sign lake local is up) finds
	// discovery answering, not "not loaded yet".
	if _, err := in.Refresh(rctx); err != nil {
		cfg.Log.WarnContext(ctx, "local: first load", slog.String("error", err.Error()))
	}

	api, err := registerapi.New(in.cat, registerapi.Options{
		Authorize:      tokenAuthorizer(validator),
		AuthorizeAdmin: adminAuthorizer(validator),
		Door:           door,
		Sync: &tablesync.Syncer{Catalog: in.cat, Door: door, Meta: icebergsync.NewLocalMetaStore(filepath.Join(cfg.DataDir, IcebergDir)),
			S3Config: awsCfg, S3PathStyle: os.Getenv("LAKE_S3_PATH_STYLE") == "true"},
		SyncOnWrite: true,
		// Previews read through the same Door; the catalog browser's
		// read-only dev tokens may preview too.
		Preview: registerapi.PreviewOptions{Authorize: previewAuthorizer(validator), S3Config: awsCfg,
			S3PathStyle: os.Getenv("LAKE_S3_PATH_STYLE") == "true"},
		Log:     cfg.Log,
		OnWrite: in.requestRefresh,
	})
	if err != nil {
		in.closeParts()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/tenants/", api)
	mux.HandleFunc("POST /v1/refresh", in.serveRefresh(validator))
	mux.Handle("/", api) // JSON 404s for everything else
	if in.apiLn, err = net.Listen("tcp", cfg.APIListen); err != nil {
		in.closeParts()
		return nil, fmt.Errorf("local: listen %s: %w", cfg.APIListen, err)
	}
	in.api = &http.Server{Handler: newGuard(mux, hosts), ReadHeaderTimeout: 10 * time.Second}
	in.wg.Go(func() { _ = in.api.Serve(in.apiLn) })
	if err := in.startBrowser(api); err != nil {
		in.Close()
		return nil, err
	}

	in.wg.Go(func() { in.refreshLoop(rctx) })
	return in, nil
}

// recomputeUsage runs catalog.RecomputeUsage unless the store's usage is
// already counted in whole registrations.
func recomputeUsage(ctx context.Context, store *rocksdb.Store, cat *catalog.Catalog, log *slog.Logger) error {
	counted, err := catalog.UsageCounted(ctx, store)
	if err != nil || counted {
		return err
	}
	res, err := cat.RecomputeUsage(ctx)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	log.InfoContext(ctx, "local: counted tenant usage in whole registrations", slog.Int("tenants", res.Tenants), slog.Int("changed", res.Changed))
	return nil
}

// DevTenants are the tenants local mode offers dev tokens for (the demo
// catalog's).
func DevTenants() []string { return []string{"acme", "globex"} }

// devTokenTTL is how long a dev token the browser mints is valid.
const devTokenTTL = 12 * time.Hour

// startBrowser serves the catalog browser on cfg.BrowserListen, asking this
// instance's discovery, minting dev tokens with its dev secret, and
// previewing rows through api (the registration API, in process).
func (in *Instance) startBrowser(api http.Handler) error {
	if in.cfg.BrowserListen == "" {
		return nil
	}
	h, err := browser.New(browser.Options{
		Discovery:  "grpc://" + in.disc.Addr(),
		DevTenants: DevTenants(),
		DevToken:   in.devToken,
		History: func(ctx context.Context, ref catalog.TableRef) ([]catalog.Version, error) {
			vs, _, err := in.cat.History(ctx, ref, "", 0, catalog.MaxHistoryPage)
			return vs, err
		},
		PreviewAPI: api,
	})
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	ln, err := net.Listen("tcp", in.cfg.BrowserListen)
	if err != nil {
		_ = h.Close()
		return fmt.Errorf("local: listen %s: %w", in.cfg.BrowserListen, err)
	}
	in.browse, in.browserLn = h, ln
	in.browser = &http.Server{Handler: newGuard(h, in.hosts), ReadHeaderTimeout: 10 * time.Second}
	in.wg.Go(func() { _ = in.browser.Serve(ln) })
	return nil
}

// tokenAuthorizer allows a request when its bearer token is a valid write
// token (not the browser's read-only dev token) naming the tenant in the
// path. The caller the catalog records is the token's subject (`lake
// --as`), or "tenant:<tenant>" for a token without a usable one.
func tokenAuthorizer(v *auth.Validator) registerapi.Authorizer {
	return tenantAuthorizer(func(tok string) (auth.Identity, error) { return writeIdentity(v, tok) })
}

// previewAuthorizer allows a preview, which only reads, as tokenAuthorizer
// allows a write, and also with the catalog browser's read-only dev
// tokens (BrowserAudience) naming the tenant in the path.
func previewAuthorizer(v *auth.Validator) registerapi.Authorizer {
	return tenantAuthorizer(v.Identity)
}

// tenantAuthorizer allows a request when identity takes its bearer token
// and the token names the tenant in the path.
func tenantAuthorizer(identity func(tok string) (auth.Identity, error)) registerapi.Authorizer {
	return func(r *http.Request, tenant string) (string, error) {
		tok, ok := auth.BearerToken(r.Header.Get("Authorization"))
		if !ok {
			return "", registerapi.ErrUnauthenticated
		}
		id, err := identity(tok)
		if err != nil {
			return "", fmt.Errorf("%w: %v", registerapi.ErrUnauthenticated, err)
		}
		if id.Tenant != tenant {
			return "", fmt.Errorf("token for tenant %q", id.Tenant)
		}
		if id.Subject == "" {
			return "tenant:" + id.Tenant, nil
		}
		return id.Subject, nil
	}
}

// adminAuthorizer allows a request to the admin routes when its bearer
// token is valid and carries AdminAudience; the caller recorded is the
// token's subject ("admin" without one).
func adminAuthorizer(v *auth.Validator) registerapi.Authorizer {
	return func(r *http.Request, _ string) (string, error) {
		tok, ok := auth.BearerToken(r.Header.Get("Authorization"))
		if !ok {
			return "", registerapi.ErrUnauthenticated
		}
		id, err := v.Identity(tok)
		if err != nil {
			return "", fmt.Errorf("%w: %v", registerapi.ErrUnauthenticated, err)
		}
		if !slices.Contains(id.Audience, AdminAudience) {
			return "", fmt.Errorf("the token is not an operator's (mint one with `lake token --admin`)")
		}
		if id.Subject == "" {
			return "admin", nil
		}
		return id.Subject, nil
	}
}

// writeIdentity validates a token for the registration API: any valid
// token but the catalog browser's read-only dev tokens (BrowserAudience).
func writeIdentity(v *auth.Validator, tok string) (auth.Identity, error) {
	id, err := v.Identity(tok)
	if err != nil {
		return auth.Identity{}, err
	}
	if slices.Contains(id.Audience, BrowserAudience) {
		return auth.Identity{}, errors.New("a catalog browser dev token is read-only")
	}
	return id, nil
}

// serveRefresh runs a refresh now (any valid token) and answers its outcome
// for the caller's tenant, and that tenant's generation and table count:
// nothing about other tenants.
func (in *Instance) serveRefresh(v *auth.Validator) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, _ := auth.BearerToken(r.Header.Get("Authorization"))
		id, err := writeIdentity(v, tok)
		tenant := id.Tenant
		if err != nil {
			apierror.Write(w, http.StatusUnauthorized, wire.CodeUnauthenticated, "missing or invalid credentials")
			return
		}
		var before uint64
		if view := in.disc.View(); view != nil {
			before = view.TenantGeneration(tenant)
		}
		_, err = in.refresh(r.Context(), true)
		if err != nil {
			// The cause is for the log; the client learns the kind.
			in.cfg.Log.ErrorContext(r.Context(), "local: refresh", slog.String("error", err.Error()))
			apierror.Write(w, http.StatusServiceUnavailable, wire.CodeRefreshFailed, "the refresh failed; see the lake local log, and retry")
			return
		}
		// The answer speaks of the caller's tenant alone: catalog-wide
		// counts and skipped keys (other tenants' names) stay in the log.
		// The generation is the tenant's own (when its tables last
		// changed): the blob's would tell it when others write. So is the
		// outcome: published when the tenant's tables changed in what
		// discovery now serves, unchanged otherwise, whatever the run wrote
		// for other tenants (and whichever run, this or the debounced one,
		// wrote it).
		tables, gen := 0, uint64(0)
		if view := in.disc.View(); view != nil {
			tables, gen = view.TenantTables(tenant), view.TenantGeneration(tenant)
		}
		outcome := refresh.Unchanged
		if gen != before {
			outcome = refresh.Published
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(wire.RefreshResult{Outcome: string(outcome), Generation: gen, Tenant: tenant, TenantTables: tables})
	}
}

// requestRefresh asks for a refresh soon (after the debounce).
func (in *Instance) requestRefresh() {
	select {
	case in.kick <- struct{}{}:
	default:
	}
}

// Refresh publishes a new blob if anything changed and loads it into
// discovery at once.
func (in *Instance) Refresh(ctx context.Context) (refresh.Result, error) {
	return in.refresh(ctx, false)
}

// refresh runs the publisher (a full scan when full) and loads what it
// published.
func (in *Instance) refresh(ctx context.Context, full bool) (refresh.Result, error) {
	in.refreshMu.Lock()
	defer in.refreshMu.Unlock()
	run := in.publisher.Run
	if full {
		run = in.publisher.RunFull
	}
	res, err := run(ctx)
	if err != nil {
		return res, err
	}
	if res.Outcome == refresh.Published || in.disc.Source().Status().Generation != res.Generation {
		if _, err := in.disc.Source().Poll(ctx); err != nil {
			return res, fmt.Errorf("local: load the new snapshot: %w", err)
		}
	}
	return res, nil
}

// sweepEvery is how often local mode purges tombstones past retention
// (and the history they kept): DynamoDB's TTL does it on AWS.
const sweepEvery = time.Hour

// sweep purges expired tombstones when the last sweep is sweepEvery old.
func (in *Instance) sweep(ctx context.Context, last *time.Time) {
	if time.Since(*last) < sweepEvery {
		return
	}
	*last = time.Now()
	p, err := in.cat.PurgeExpired(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		in.cfg.Log.WarnContext(ctx, "local: purge expired tombstones", slog.String("error", err.Error()))
	case p.Tombstones > 0:
		in.cfg.Log.InfoContext(ctx, "local: purged expired tombstones", slog.Int("tombstones", p.Tombstones), slog.Int("versions", p.Versions))
	}
}

func (in *Instance) refreshLoop(ctx context.Context) {
	t := time.NewTicker(in.cfg.RefreshInterval)
	defer t.Stop()
	var lastSweep time.Time
	for {
		in.sweep(ctx, &lastSweep)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-in.kick:
			select {
			case <-ctx.Done():
				return
			case <-time.After(in.cfg.Debounce):
			}
		}
		if res, err := in.Refresh(ctx); err != nil {
			if ctx.Err() == nil {
				in.cfg.Log.WarnContext(ctx, "local: refresh", slog.String("error", err.Error()))
			}
		} else if res.Outcome == refresh.Published {
			in.cfg.Log.InfoContext(ctx, "local: published", slog.Uint64("generation", res.Generation), slog.Int("tables", res.Counts.Tables))
		}
	}
}

// Endpoints of a running instance.
type Endpoints struct {
	API, FlightSQL, HTTP string
	// Browser is the catalog browser's URL; empty when disabled.
	Browser string
	// Iceberg is the Iceberg REST catalog's URI (an engine's catalog
	// uri); empty when disabled.
	Iceberg string
}

// Endpoints returns where the parts listen.
func (in *Instance) Endpoints() Endpoints {
	ep := Endpoints{API: "http://" + in.apiLn.Addr().String(), FlightSQL: "grpc://" + in.disc.Addr(), HTTP: in.disc.AdminAddr()}
	if in.browserLn != nil {
		ep.Browser = "http://" + in.browserLn.Addr().String() + "/"
	}
	if a := in.disc.IcebergAddr(); a != "" {
		ep.Iceberg = "http://" + a
	}
	return ep
}

// Token mints a dev token for tenant, valid for ttl: a write token, as
// `lake local` prints them.
func (in *Instance) Token(tenant string, ttl time.Duration) (string, error) {
	return auth.IssueHS256(in.secret, auth.TokenClaims{Tenant: tenant, TTL: ttl, Now: time.Now()})
}

// devToken mints the catalog browser's read-only dev token for tenant:
// audience BrowserAudience, which discovery takes and the registration API
// refuses (but for a preview of rows, which only reads).
func (in *Instance) devToken(tenant string) (string, error) {
	return auth.IssueHS256(in.secret, auth.TokenClaims{Tenant: tenant, Audience: BrowserAudience, TTL: devTokenTTL, Now: time.Now()})
}

func (in *Instance) closeParts() {
	in.cancel()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in.disc.Shutdown(sctx)
	in.closeDoor()
	in.store.Close()
}

// Close stops every part and closes the store; data stays in DataDir.
func (in *Instance) Close() {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = in.api.Shutdown(sctx)
	if in.browser != nil {
		_ = in.browser.Shutdown(sctx)
		_ = in.browse.Close()
	}
	in.cancel()
	in.wg.Wait()
	in.disc.Shutdown(sctx)
	in.closeDoor()
	in.store.Close()
}

// openVending builds the Door local mode's surfaces answer through: local
// paths under cfg.DataRoot, and s3:// locations through STS when a role is
// given (the AWS configuration from the environment, us-east-1 when it
// names no region; --sts-endpoint overrides STS's endpoint).
func openVending(ctx context.Context, cfg Config) (*vending.Door, aws.Config, func(), error) {
	vc := cfg.Vending
	vc.Hint = "start lake local with --vending-role-arn ARN (and --sts-endpoint URL, or AWS credentials for STS in the environment)"
	if cfg.DataRoot != "" {
		root, err := filepath.Abs(cfg.DataRoot)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(root); err == nil && !fi.IsDir() {
				err = errors.New("not a folder")
			}
		}
		if err != nil {
			return nil, aws.Config{}, nil, fmt.Errorf("local: --data-root %s: %w", cfg.DataRoot, err)
		}
		vc.DataRoot = root
	}
	var awsCfg aws.Config
	if vc.RoleARN != "" {
		var err error
		if awsCfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return nil, aws.Config{}, nil, fmt.Errorf("local: vending: load AWS config: %w", err)
		}
		if awsCfg.Region == "" {
			awsCfg.Region = "us-east-1"
		}
	}
	door, closeDoor, err := vending.Open(vc, awsCfg, cfg.Log)
	return door, awsCfg, closeDoor, err
}
