// Package cli is the lake command: local mode, tokens, and the commands that
// register, list, show, refresh, drop and backfill tables, against local
// mode or the AWS deployment.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

// globals are the flags every command shares; each has an environment
// variable.
type globals struct {
	dataDir, api, discovery, token, tenant string
	sigv4                                  bool
	out, errOut                            io.Writer
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// New returns the root command. out and errOut receive the output.
func New(out, errOut io.Writer) *cobra.Command {
	g := &globals{out: out, errOut: errOut}
	root := &cobra.Command{
		Use:   "lake",
		Short: "lake: a multi-tenant table catalog with exact Arrow schemas, discovered over Flight SQL",
		Long: `lake registers tables with their exact Arrow schemas and serves them to SQL tools over
Arrow Flight SQL. "lake local" runs the whole catalog on this machine; the other commands work
against local mode (the default endpoints) or an AWS deployment (--api with --sigv4, --discovery
with --token).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	pf := root.PersistentFlags()
	pf.StringVar(&g.dataDir, "data-dir", env("LAKE_DATA_DIR", ".lake"), "local mode's data folder; its dev secret signs tokens when --token is not given [LAKE_DATA_DIR]")
	pf.StringVar(&g.api, "api", env("LAKE_API", "http://127.0.0.1:8181"), "registration API base URL [LAKE_API]")
	pf.StringVar(&g.discovery, "discovery", env("LAKE_DISCOVERY", "grpc://127.0.0.1:50051"), "Flight SQL endpoint: host:port, grpc://… or grpc+tls://… [LAKE_DISCOVERY]")
	pf.StringVar(&g.token, "token", env("LAKE_TOKEN", ""), "bearer token for discovery (and the local API) [LAKE_TOKEN]")
	pf.StringVar(&g.tenant, "tenant", env("LAKE_TENANT", ""), "tenant to act as [LAKE_TENANT]")
	pf.BoolVar(&g.sigv4, "sigv4", env("LAKE_SIGV4", "") == "true", "sign registration API calls with AWS SigV4 (the AWS deployment) [LAKE_SIGV4]")

	root.AddCommand(g.localCmd(), g.tokenCmd(), g.registerCmd(), g.listCmd(), g.showCmd(), g.refreshCmd(), g.dropCmd(), g.backfillCmd())
	return root
}

// Main runs the command line and returns the process exit code.
func Main(args []string) int {
	cmd := New(os.Stdout, os.Stderr)
	cmd.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "lake:", err)
		return 1
	}
	return 0
}

// needTenant returns --tenant or a usage error.
func (g *globals) needTenant() (string, error) {
	if g.tenant == "" {
		return "", errors.New("--tenant (LAKE_TENANT) is required")
	}
	if err := catalog.ValidateName("tenant", g.tenant); err != nil {
		return "", err
	}
	return g.tenant, nil
}

// signingSecret returns the HS256 secret tokens are signed with:
// LAKE_JWT_HS256_SECRET (the deployment's secret, from Secrets Manager) when
// set, else local mode's dev secret in --data-dir.
func (g *globals) signingSecret() ([]byte, error) {
	if v := os.Getenv("LAKE_JWT_HS256_SECRET"); v != "" {
		return []byte(v), nil
	}
	if _, err := os.Stat(filepath.Join(g.dataDir, local.SecretFile)); err != nil {
		return nil, fmt.Errorf("no --token, no LAKE_JWT_HS256_SECRET and no local dev secret in %s (start `lake local`, or pass --token)", g.dataDir)
	}
	return local.LoadSecret(g.dataDir)
}

// bearer returns --token, or mints a one-hour token for the tenant with the
// signing secret.
func (g *globals) bearer(tenant string) (string, error) {
	if g.token != "" {
		return g.token, nil
	}
	secret, err := g.signingSecret()
	if err != nil {
		return "", err
	}
	return auth.IssueHS256(secret, "", tenant, "", "", time.Hour, time.Now())
}

func (g *globals) apiClient(ctx context.Context, tenant string) (*apiClient, error) {
	tok := ""
	if !g.sigv4 {
		var err error
		if tok, err = g.bearer(tenant); err != nil {
			return nil, err
		}
	}
	return newAPIClient(ctx, g.api, tok, g.sigv4)
}

func (g *globals) discoveryClient(tenant string) (*discoveryClient, error) {
	tok, err := g.bearer(tenant)
	if err != nil {
		return nil, err
	}
	return newDiscoveryClient(g.discovery, tok)
}

func (g *globals) localCmd() *cobra.Command {
	var cfg local.Config
	var noDemo bool
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run the whole catalog on this machine (RocksDB, registration API, refresh, Flight SQL)",
		Long: `Runs local mode: a RocksDB metastore in --data-dir, the registration API, refresh on a timer and
soon after every write, the snapshot blob in a file, and the Flight SQL discovery server. On first
start it registers a small demo catalog. Ctrl-C stops it; the data stays in --data-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.DataDir, cfg.Demo = g.dataDir, !noDemo
			cfg.Log = slog.New(slog.NewTextHandler(g.errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
			in, err := local.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer in.Close()
			ep := in.Endpoints()
			fmt.Fprintf(g.out, "lake local is running (data in %s)\n", cfg.DataDir)
			fmt.Fprintf(g.out, "  registration API  %s\n", ep.API)
			fmt.Fprintf(g.out, "  Flight SQL        %s\n", ep.FlightSQL)
			if ep.HTTP != "" {
				fmt.Fprintf(g.out, "  health, metrics   http://%s/healthz  http://%s/metrics\n", ep.HTTP, ep.HTTP)
			}
			for _, t := range []string{"acme", "globex"} {
				tok, err := in.Token(t, 24*time.Hour)
				if err != nil {
					return err
				}
				fmt.Fprintf(g.out, "  dev token (%s, 24 h): %s\n", t, tok)
			}
			fmt.Fprintf(g.out, "Try: lake list --tenant acme    (Ctrl-C stops)\n")
			<-cmd.Context().Done()
			fmt.Fprintln(g.out, "stopping")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.APIListen, "api-listen", env("LAKE_API_LISTEN", "127.0.0.1:8181"), "registration API listen address [LAKE_API_LISTEN]")
	f.StringVar(&cfg.FlightListen, "flight-listen", env("LAKE_FLIGHT_LISTEN", "127.0.0.1:50051"), "Flight SQL listen address [LAKE_FLIGHT_LISTEN]")
	f.StringVar(&cfg.HTTPListen, "http-listen", env("LAKE_HTTP_LISTEN", "127.0.0.1:8182"), "health and metrics listen address; - disables [LAKE_HTTP_LISTEN]")
	f.DurationVar(&cfg.RefreshInterval, "refresh-interval", 30*time.Second, "periodic refresh (writes also refresh soon after)")
	f.BoolVar(&noDemo, "no-demo", false, "do not register the demo catalog on first start")
	return cmd
}

func (g *globals) tokenCmd() *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print a discovery token for --tenant (signed with LAKE_JWT_HS256_SECRET, else local mode's dev secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, err := g.needTenant()
			if err != nil {
				return err
			}
			secret, err := g.signingSecret()
			if err != nil {
				return err
			}
			tok, err := auth.IssueHS256(secret, "", tenant, "", "", ttl, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(g.out, tok)
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token is valid")
	return cmd
}

// refFlags adds --namespace and --table.
func refFlags(cmd *cobra.Command, ns, table *string) {
	cmd.Flags().StringVarP(ns, "namespace", "n", "", "namespace (Flight SQL db_schema)")
	cmd.Flags().StringVarP(table, "table", "t", "", "table name")
	_ = cmd.MarkFlagRequired("namespace")
	_ = cmd.MarkFlagRequired("table")
}

func (g *globals) ref(ns, table string) (catalog.TableRef, error) {
	tenant, err := g.needTenant()
	if err != nil {
		return catalog.TableRef{}, err
	}
	ref := catalog.TableRef{Tenant: tenant, Namespace: ns, Name: table}
	return ref, ref.Validate()
}

// schemaFrom reads a schema from exactly one of the three sources.
func schemaFrom(parquetPath, jsonPath, ipcPath string) (*arrow.Schema, error) {
	set := 0
	for _, p := range []string{parquetPath, jsonPath, ipcPath} {
		if p != "" {
			set++
		}
	}
	if set != 1 {
		return nil, errors.New("give exactly one of --parquet, --schema-json and --schema-ipc")
	}
	switch {
	case parquetPath != "":
		return parquetschema.FromFile(parquetPath)
	case jsonPath != "":
		b, err := os.ReadFile(jsonPath)
		if err != nil {
			return nil, err
		}
		return schemajson.Parse(b)
	}
	b, err := os.ReadFile(ipcPath)
	if err != nil {
		return nil, err
	}
	return catalog.DecodeSchema(b)
}

func (g *globals) registerCmd() *cobra.Command {
	var ns, table, location, tableType, parquetPath, jsonPath, ipcPath string
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Register a table with its exact schema (from a Parquet file's footer, a JSON schema or IPC bytes)",
		Example: `  lake register --tenant acme -n sales -t orders --location s3://lake/sales/orders/ --parquet part-0.parquet
  lake register --tenant acme -n sales -t events --location /data/events --schema-json events.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := g.ref(ns, table)
			if err != nil {
				return err
			}
			if location == "" && parquetPath != "" {
				if location, err = filepath.Abs(filepath.Dir(parquetPath)); err != nil {
					return err
				}
			}
			schema, err := schemaFrom(parquetPath, jsonPath, ipcPath)
			if err != nil {
				return err
			}
			ipc, err := catalog.EncodeSchema(schema)
			if err != nil {
				return err
			}
			c, err := g.apiClient(cmd.Context(), ref.Tenant)
			if err != nil {
				return err
			}
			t, code, err := c.register(cmd.Context(), ref, location, tableType, ipc)
			if err != nil {
				return err
			}
			verb := "registered"
			if code == 200 {
				verb = "already registered, identical"
			}
			fmt.Fprintf(g.out, "%s %s/%s/%s (version %d, %d columns) at %s\n", verb, t.Tenant, t.Namespace, t.Name, t.Version, schema.NumFields(), t.Location)
			return nil
		},
	}
	refFlags(cmd, &ns, &table)
	f := cmd.Flags()
	f.StringVar(&location, "location", "", "where the table's data lives (URI or absolute path; default: the Parquet file's folder)")
	f.StringVar(&tableType, "table-type", "TABLE", "table type")
	f.StringVar(&parquetPath, "parquet", "", "read the schema from this Parquet file's footer")
	f.StringVar(&jsonPath, "schema-json", "", "read the schema from this JSON schema file (see pkg/schemajson)")
	f.StringVar(&ipcPath, "schema-ipc", "", "read the schema from this Arrow IPC schema file")
	return cmd
}

func (g *globals) listCmd() *cobra.Command {
	var nsPattern string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a tenant's tables (from discovery)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, err := g.needTenant()
			if err != nil {
				return err
			}
			d, err := g.discoveryClient(tenant)
			if err != nil {
				return err
			}
			defer d.Close()
			opts := &flightsql.GetTablesOpts{IncludeSchema: true}
			if nsPattern != "" {
				opts.DbSchemaFilterPattern = &nsPattern
			}
			rows, err := d.tables(cmd.Context(), opts)
			withSchemas := true
			if status.Code(err) == codes.FailedPrecondition {
				// Some table has no stored schema: list the names, then ask
				// for the schemas of each namespace, table by table where a
				// namespace holds such a table.
				withSchemas = false
				rows, err = d.schemasWherePossible(cmd.Context(), opts)
			}
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					tableRow
					Columns *int `json:"columns,omitempty"`
				}
				out := make([]row, len(rows))
				for i, r := range rows {
					out[i] = row{tableRow: r}
					if r.Schema != nil {
						n := r.Schema.NumFields()
						out[i].Columns = &n
					}
				}
				enc := json.NewEncoder(g.out)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(g.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAMESPACE\tTABLE\tTYPE\tCOLUMNS")
			for _, r := range rows {
				cols := "?"
				if r.Schema != nil {
					cols = fmt.Sprint(r.Schema.NumFields())
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.Type, cols)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if !withSchemas {
				fmt.Fprintln(g.errOut, "note: some tables have no stored schema (COLUMNS ?); `lake backfill` can add them")
			}
			fmt.Fprintf(g.errOut, "%d tables in %s\n", len(rows), tenant)
			return nil
		},
	}
	cmd.Flags().StringVarP(&nsPattern, "namespace", "n", "", "namespace LIKE pattern (% and _ wildcards)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (g *globals) showCmd() *cobra.Command {
	var ns, table string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show one table's exact schema (from discovery)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := g.ref(ns, table)
			if err != nil {
				return err
			}
			d, err := g.discoveryClient(ref.Tenant)
			if err != nil {
				return err
			}
			defer d.Close()
			nsp, tp := escapeLike(ref.Namespace), escapeLike(ref.Name)
			rows, err := d.tables(cmd.Context(), &flightsql.GetTablesOpts{DbSchemaFilterPattern: &nsp, TableNameFilterPattern: &tp, IncludeSchema: true})
			if status.Code(err) == codes.FailedPrecondition {
				return fmt.Errorf("%s has no stored schema; `lake backfill` can add it from its Parquet files", ref)
			}
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				return fmt.Errorf("no table %s (a new registration appears after the next refresh)", ref)
			}
			s := rows[0].Schema
			if asJSON {
				b, err := schemajson.Format(s)
				if err != nil {
					return err
				}
				fmt.Fprintln(g.out, string(b))
				return nil
			}
			fmt.Fprintf(g.out, "%s  (%s, %d columns)\n", ref, rows[0].Type, s.NumFields())
			printFields(g.out, s.Fields(), "  ")
			if md := s.Metadata(); md.Len() > 0 {
				fmt.Fprintln(g.out, "metadata:")
				for i, k := range md.Keys() {
					fmt.Fprintf(g.out, "  %s = %s\n", k, md.Values()[i])
				}
			}
			return nil
		},
	}
	refFlags(cmd, &ns, &table)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the schema in lake's JSON schema form")
	return cmd
}

// printFields prints a field tree, children indented.
func printFields(w io.Writer, fs []arrow.Field, indent string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range fs {
		null := ""
		if !f.Nullable {
			null = "not null"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", indent, f.Name, f.Type, null)
	}
	_ = tw.Flush()
}

func (g *globals) refreshCmd() *cobra.Command {
	var function string
	cmd := &cobra.Command{
		Use:   "refresh",
		Short: "Publish a new snapshot now (local mode's API, or the refresh Lambda with --function)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if function != "" {
				return g.invokeRefresh(cmd.Context(), function)
			}
			tenant := g.tenant
			if tenant == "" {
				tenant = "admin"
			}
			c, err := g.apiClient(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			var res struct {
				Outcome    string
				Generation uint64
				Counts     catalog.Counts
			}
			if _, err := c.do(cmd.Context(), "POST", "/v1/refresh", nil, nil, &res); err != nil {
				return err
			}
			g.printRefresh(res.Outcome, res.Generation, res.Counts)
			return nil
		},
	}
	cmd.Flags().StringVar(&function, "function", env("LAKE_REFRESH_FUNCTION", ""), "on AWS: the refresh Lambda's name or ARN, invoked with a scheduled event [LAKE_REFRESH_FUNCTION]")
	return cmd
}

// invokeRefresh runs the deployed refresh Lambda once, synchronously, with
// the same event the schedule sends.
func (g *globals) invokeRefresh(ctx context.Context, function string) error {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	payload, _ := json.Marshal(map[string]any{"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "detail": map[string]any{}})
	out, err := lambda.NewFromConfig(cfg).Invoke(ctx, &lambda.InvokeInput{FunctionName: &function, Payload: payload})
	if err != nil {
		return fmt.Errorf("invoke %s: %w", function, err)
	}
	if out.FunctionError != nil {
		return fmt.Errorf("refresh failed: %s", out.Payload)
	}
	var res struct {
		Outcome    string
		Generation uint64
		Counts     catalog.Counts
	}
	if err := json.Unmarshal(out.Payload, &res); err != nil {
		return fmt.Errorf("refresh answered %s: %w", out.Payload, err)
	}
	g.printRefresh(res.Outcome, res.Generation, res.Counts)
	return nil
}

func (g *globals) printRefresh(outcome string, generation uint64, c catalog.Counts) {
	fmt.Fprintf(g.out, "refresh: %s, generation %d, %d tables (%d without schema, %d skipped)\n",
		outcome, generation, c.Tables, c.SchemaUnavailable, c.Skipped)
}

func (g *globals) dropCmd() *cobra.Command {
	var ns, table string
	cmd := &cobra.Command{
		Use:   "drop",
		Short: "Drop a table's registration (its data is not touched)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := g.ref(ns, table)
			if err != nil {
				return err
			}
			c, err := g.apiClient(cmd.Context(), ref.Tenant)
			if err != nil {
				return err
			}
			if err := c.drop(cmd.Context(), ref); err != nil {
				return err
			}
			fmt.Fprintf(g.out, "dropped %s\n", ref)
			return nil
		},
	}
	refFlags(cmd, &ns, &table)
	return cmd
}

// s3Client builds an S3 client from the default AWS configuration, for
// reading Parquet footers at s3:// locations.
func s3Client(ctx context.Context) (*s3.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = os.Getenv("LAKE_S3_PATH_STYLE") == "true" }), nil
}
