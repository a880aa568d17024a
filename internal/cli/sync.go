package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
)

// SyncOptions are `lake sync`'s inputs.
type SyncOptions struct {
	// IO receives the result.
	IO IOStreams
	// APIClient returns the registration API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Tenant, Namespace and Table name the table (--tenant, -n, -t).
	Tenant, Namespace, Table string
	// JSON is --json: the API's answer (wire.SyncResult).
	JSON bool
}

// NewCmdSync returns `lake sync`. runF, when not nil, replaces syncRun.
func NewCmdSync(f *Factory, runF func(context.Context, *SyncOptions) error) *cobra.Command {
	opts := &SyncOptions{}
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Take a table's file snapshot: its Parquet files into Iceberg metadata, for engines",
		Long: `Asks the registration API to sync one table (POST …/tables/{table}/sync): lake lists the
Parquet files at the table's location (with the table's own read credentials, or by path under
local mode's --data-root), reads their footers, leaves out (and names) files whose columns do not
match the registered schema, and writes Iceberg manifests and metadata, so engines reading the
table through lake's Iceberg REST catalog see its rows. A sync that finds no change writes
nothing; one that does appends an Iceberg snapshot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return syncRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the API's answer as JSON")
	return cmd
}

func syncRun(ctx context.Context, opts *SyncOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	res, err := c.Sync(ctx, ref)
	if err != nil {
		return credentialsHint(err, ref.Tenant)
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	w := opts.IO.Out
	if res.Changed {
		fmt.Fprintf(w, "synced %s: snapshot %d, %d files (%d added, %d removed), %d rows\n", ref, res.SnapshotID, res.Files, res.Added, res.Removed, res.Records)
	} else {
		fmt.Fprintf(w, "%s unchanged: %d files, %d rows\n", ref, res.Files, res.Records)
	}
	if res.MetadataLocation != "" {
		fmt.Fprintf(w, "  metadata  %s\n", res.MetadataLocation)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "  skipped   %s: %s\n", s.Key, s.Reason)
	}
	return nil
}
