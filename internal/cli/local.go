package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// LocalOptions are `lake local`'s inputs.
type LocalOptions struct {
	// IO receives the endpoints and tokens (Out) and warnings (ErrOut).
	IO IOStreams
	// Config is local mode's configuration from the flags.
	Config local.Config
	// NoDemo is --no-demo.
	NoDemo bool
	// DefaultCompatibility is --default-compatibility.
	DefaultCompatibility string
	// TombstoneRetention and HistoryVersions are --tombstone-retention and
	// --history-versions, as their environment variables take them.
	TombstoneRetention, HistoryVersions, HistoryMaxAge string
	// Ready, when set, is called with the running instance before waiting
	// for the context's end (tests use it to learn the endpoints).
	Ready func(*local.Instance)
}

// NewCmdLocal returns `lake local`. runF, when not nil, replaces localRun.
func NewCmdLocal(f *Factory, runF func(context.Context, *LocalOptions) error) *cobra.Command {
	opts := &LocalOptions{}
	env := func(name, def string) string {
		if v := f.Getenv(name); v != "" {
			return v
		}
		return def
	}
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run the whole catalog on this machine (RocksDB, registration API, refresh, Flight SQL)",
		Long: `Runs local mode: a RocksDB metastore in --data-dir, the registration API, refresh on a timer and
soon after every write, the snapshot blob in a file, and the Flight SQL discovery server. On first
start it registers a small demo catalog. Ctrl-C stops it; the data stays in --data-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO = f.IO
			opts.Config.DataDir, opts.Config.Demo = f.DataDir, !opts.NoDemo
			opts.Config.Log = slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
			mode, err := modeFlag("default-compatibility", opts.DefaultCompatibility)
			if err != nil {
				return err
			}
			opts.Config.DefaultCompatibility = mode
			memory, err := local.ParseMemory(opts.TombstoneRetention, opts.HistoryVersions, opts.HistoryMaxAge)
			if err != nil {
				return err
			}
			opts.Config.Memory = memory
			if d := opts.Config.Vending.Duration; d < vending.MinDuration || d > vending.MaxDuration {
				return fmt.Errorf("--vending-duration %v: want %v to %v", d, vending.MinDuration, vending.MaxDuration)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return localRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Config.APIListen, "api-listen", env("LAKE_API_LISTEN", "127.0.0.1:8181"), "registration API listen address [LAKE_API_LISTEN]")
	fl.StringVar(&opts.Config.FlightListen, "flight-listen", env("LAKE_FLIGHT_LISTEN", "127.0.0.1:50051"), "Flight SQL listen address [LAKE_FLIGHT_LISTEN]")
	fl.StringVar(&opts.Config.HTTPListen, "http-listen", env("LAKE_HTTP_LISTEN", "127.0.0.1:8182"), "health and metrics listen address; - disables [LAKE_HTTP_LISTEN]")
	fl.StringVar(&opts.Config.IcebergListen, "iceberg-listen", env("LAKE_ICEBERG_LISTEN", "127.0.0.1:8184"), "Iceberg REST catalog listen address, for engines (Spark, Trino, PyIceberg, DuckDB): catalog uri http://ADDR, warehouse = the tenant, a dev token as the bearer token; - disables [LAKE_ICEBERG_LISTEN]")
	fl.StringVar(&opts.Config.BrowserListen, "browser-listen", env("LAKE_BROWSER_LISTEN", "127.0.0.1:8183"), "catalog browser (web page) listen address; loopback unless --allow-remote-browser; - disables [LAKE_BROWSER_LISTEN]")
	fl.BoolVar(&opts.Config.AllowRemoteBrowser, "allow-remote-browser", false, "let --browser-listen be an address off loopback: whoever reaches it gets read-only dev tokens (a warning is logged)")
	fl.StringSliceVar(&opts.Config.AllowHosts, "allow-host", nil, "Host names the listeners answer besides localhost, 127.0.0.1, [::1] and the addresses they listen on; only with a listener off loopback")
	fl.DurationVar(&opts.Config.RefreshInterval, "refresh-interval", 30*time.Second, "periodic refresh (writes also refresh soon after)")
	fl.BoolVar(&opts.NoDemo, "no-demo", false, "do not register the demo catalog on first start")
	fl.BoolVar(&opts.Config.Pprof, "pprof", false, "also serve Go's profiles (net/http/pprof) under /debug/pprof/ on --http-listen")
	fl.StringVar(&opts.DefaultCompatibility, "default-compatibility", env("LAKE_DEFAULT_COMPATIBILITY", "none"), "compatibility mode of tables registered without one: none, backward, forward or full [LAKE_DEFAULT_COMPATIBILITY]")
	fl.StringVar(&opts.TombstoneRetention, "tombstone-retention", env("LAKE_TOMBSTONE_RETENTION", ""), "how long a drop stays restorable (lake undrop), at least 1h, or off (default 168h) [LAKE_TOMBSTONE_RETENTION]")
	fl.StringVar(&opts.HistoryMaxAge, "history-max-age", env("LAKE_HISTORY_MAX_AGE", ""), "versions older than this are no longer kept, at least 1h (default: no age bound) [LAKE_HISTORY_MAX_AGE]")
	fl.StringVar(&opts.HistoryVersions, "history-versions", env("LAKE_HISTORY_VERSIONS", ""), "versions of each table kept (lake history), 1 to 100000, or off (default 100) [LAKE_HISTORY_VERSIONS]")
	fl.Int64Var(&opts.Config.Quota.MaxTables, "tenant-max-tables", catalog.DefaultMaxTables, "most tables one tenant may register; -1: no limit")
	fl.Int64Var(&opts.Config.Quota.MaxBytes, "tenant-max-bytes", catalog.DefaultMaxBytes, "most bytes one tenant's registrations may take together as stored (schemas, descriptions, properties, locations, names); -1: no limit")
	fl.Int64Var(&opts.Config.Quota.MaxBytes, "tenant-max-schema-bytes", catalog.DefaultMaxBytes, "former name of --tenant-max-bytes")
	_ = fl.MarkDeprecated("tenant-max-schema-bytes", "use --tenant-max-bytes (it counts whole registrations)")
	fl.StringVar(&opts.Config.DataRoot, "data-root", env("LAKE_DATA_ROOT", ""), "folder whose tenant folders hold their tables' files: a tenant's tables located under DIR/<tenant>/ (file:// locations or absolute paths) are readable through lake by path, and only those; lake credentials answers \"the path is the access\"; default none [LAKE_DATA_ROOT]")
	fl.StringVar(&opts.Config.Vending.RoleARN, "vending-role-arn", env("LAKE_VENDING_ROLE_ARN", ""), "data-reader role to assume for s3:// tables (STS AssumeRole with a session policy naming the table's prefix, under the prefixes an operator allowed: lake tenant allow-prefix); default: s3:// vending off [LAKE_VENDING_ROLE_ARN]")
	fl.StringVar(&opts.Config.Vending.STSEndpoint, "sts-endpoint", env("AWS_ENDPOINT_URL_STS", ""), "STS endpoint for --vending-role-arn (default: AWS's, from the region) [AWS_ENDPOINT_URL_STS]")
	fl.DurationVar(&opts.Config.Vending.Duration, "vending-duration", vending.DefaultDuration, "how long vended credentials last, 15m to 12h")
	return cmd
}

// localRun starts local mode, prints its endpoints and dev tokens, and
// runs until ctx ends.
func localRun(ctx context.Context, opts *LocalOptions) error {
	in, err := local.Start(ctx, opts.Config)
	if err != nil {
		return err
	}
	defer in.Close()
	out := opts.IO.Out
	ep := in.Endpoints()
	fmt.Fprintf(out, "lake local is running (data in %s)\n", opts.Config.DataDir)
	fmt.Fprintf(out, "  registration API  %s\n", ep.API)
	fmt.Fprintf(out, "  Flight SQL        %s\n", ep.FlightSQL)
	if ep.HTTP != "" {
		fmt.Fprintf(out, "  health, metrics   http://%s/healthz  http://%s/metrics\n", ep.HTTP, ep.HTTP)
	}
	if ep.Browser != "" {
		fmt.Fprintf(out, "  catalog browser   %s\n", ep.Browser)
	}
	if ep.Iceberg != "" {
		fmt.Fprintf(out, "  Iceberg REST      %s  (catalog uri; warehouse = the tenant; token = a dev token)\n", ep.Iceberg)
	}
	if opts.Config.DataRoot != "" {
		fmt.Fprintf(out, "  data root         %s (a tenant's tables located under its folder, <root>/<tenant>/, are readable by path)\n", opts.Config.DataRoot)
	}
	if opts.Config.Vending.RoleARN != "" {
		fmt.Fprintf(out, "  vending           s3:// tables through %s, under each tenant's allowed prefixes (lake tenant)\n", opts.Config.Vending.RoleARN)
	}
	for _, t := range local.DevTenants() {
		tok, err := in.Token(t, 24*time.Hour)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  dev token (%s, 24 h): %s\n", t, tok)
	}
	fmt.Fprintf(out, "Try: lake list --tenant acme    (Ctrl-C stops)\n")
	if opts.Ready != nil {
		opts.Ready(in)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	return nil
}
