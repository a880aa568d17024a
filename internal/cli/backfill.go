package cli

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/backfill"
	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// BackfillOptions are `lake backfill`'s inputs.
type BackfillOptions struct {
	// IO receives one line per table and the summary (Out) and the progress bar (ErrOut).
	IO IOStreams
	// APIClient returns the registration API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// FlightClient returns the discovery client that lists the tables.
	FlightClient func(tenant string) (*flightclient.Client, error)
	// S3 returns the client for s3:// locations.
	S3 func(ctx context.Context) (parquetschema.S3API, error)
	// Discovery names the endpoint in error messages.
	Discovery string
	// Tenant is --tenant.
	Tenant string
	// NamespacePattern is -n, a LIKE pattern; empty covers every namespace.
	NamespacePattern string
	// Apply is --apply; false is a dry run.
	Apply bool
	// AllowPrefixes is --allow-prefix (LAKE_BACKFILL_ALLOW_PREFIXES): the
	// s3:// prefixes whose locations may be read, each for one tenant
	// (TENANT=s3://bucket/prefix/); none refuses every s3:// location.
	AllowPrefixes []string
	// LocalRoot is --local-root (LAKE_BACKFILL_LOCAL_ROOT): the folder local
	// locations must lie in; empty refuses every local location.
	LocalRoot string
}

// NewCmdBackfill returns `lake backfill`. runF, when not nil, replaces
// backfillRun.
func NewCmdBackfill(f *Factory, runF func(context.Context, *BackfillOptions) error) *cobra.Command {
	opts := &BackfillOptions{}
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Give registrations without a schema the schema of their Parquet files (dry run unless --apply)",
		Long: `Finds the tenant's registrations that carry no schema (written before schemas were stored), reads
the schema from the first Parquet file at each table's location (a local path or s3:// prefix;
only the footer is read), and with --apply updates each with a conditional write: a
registration that changed meanwhile is never overwritten. Without --apply it lists what it
would change.

A location is written by its tenant but read with your credentials, so backfill reads only
s3:// locations under an --allow-prefix given for that tenant (--allow-prefix
acme=s3://bucket/acme/) and local paths under --local-root; it refuses any
other location (reported, never read).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.FlightClient, opts.S3 = f.IO, f.APIClient, f.FlightClient, f.s3Client
			opts.Discovery, opts.Tenant = f.Discovery, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return backfillRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Apply, "apply", false, "write the schemas (default: dry run)")
	cmd.Flags().StringVarP(&opts.NamespacePattern, "namespace", "n", "", "only namespaces matching this LIKE pattern")
	cmd.Flags().StringArrayVar(&opts.AllowPrefixes, "allow-prefix", splitList(f.Getenv("LAKE_BACKFILL_ALLOW_PREFIXES")),
		"TENANT=s3://bucket/prefix/: an S3 prefix whose locations may be read for that tenant alone; repeat for more (default: none, every s3:// location is refused) [LAKE_BACKFILL_ALLOW_PREFIXES, comma-separated]")
	cmd.Flags().StringVar(&opts.LocalRoot, "local-root", f.Getenv("LAKE_BACKFILL_LOCAL_ROOT"),
		"the folder local locations must lie in (default: none, every local location is refused) [LAKE_BACKFILL_LOCAL_ROOT]")
	return cmd
}

// splitList splits a comma-separated list, dropping empty items and the
// spaces around each.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func backfillRun(ctx context.Context, opts *BackfillOptions) error {
	tenant, err := needTenant(opts.Tenant)
	if err != nil {
		return err
	}
	scope := backfill.Scope{Tenant: tenant, S3Prefixes: opts.AllowPrefixes, LocalRoot: opts.LocalRoot}
	if err := scope.Validate(); err != nil {
		return err
	}
	d, err := opts.FlightClient(tenant)
	if err != nil {
		return err
	}
	defer d.Close()
	api, err := opts.APIClient(ctx, tenant)
	if err != nil {
		return err
	}
	q := &flightsql.GetTablesOpts{}
	if opts.NamespacePattern != "" {
		q.DbSchemaFilterPattern = &opts.NamespacePattern
	}
	rows, err := d.Tables(ctx, q)
	if err != nil {
		return discoveryErr(opts.Discovery, "tenant "+tenant, err)
	}
	refs := make([]catalog.TableRef, len(rows))
	for i, r := range rows {
		refs[i] = catalog.TableRef{Tenant: tenant, Namespace: r.Namespace, Name: r.Name}
	}
	_, err = backfill.Run(ctx, refs, backfill.Options{
		API: api, S3: opts.S3, Scope: scope, Apply: opts.Apply, Out: opts.IO.Out,
		Progress: &backfill.Bar{W: opts.IO.ErrOut},
	})
	return err
}
