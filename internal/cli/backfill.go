package cli

import (
	"context"

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
would change.`,
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
	return cmd
}

func backfillRun(ctx context.Context, opts *BackfillOptions) error {
	tenant, err := needTenant(opts.Tenant)
	if err != nil {
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
		API: api, S3: opts.S3, Apply: opts.Apply, Out: opts.IO.Out,
		Progress: &backfill.Bar{W: opts.IO.ErrOut},
	})
	return err
}
