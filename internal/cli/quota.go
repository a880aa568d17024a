package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/metastore"
	"github.com/lake-catalog/lake/pkg/metastore/dynamo"
	"github.com/lake-catalog/lake/pkg/metastore/rocksdb"
)

// QuotaRecomputeOptions are `lake quota recompute`'s inputs.
type QuotaRecomputeOptions struct {
	// IO receives the summary line.
	IO IOStreams
	// Store opens the metastore to count (the caller closes it).
	Store func(ctx context.Context) (metastore.Store, error)
}

// NewCmdQuota returns `lake quota` with its subcommand `recompute`. runF,
// when not nil, replaces quotaRecomputeRun.
func NewCmdQuota(f *Factory, runF func(context.Context, *QuotaRecomputeOptions) error) *cobra.Command {
	cmd := &cobra.Command{Use: "quota", Short: "Tenant quotas", Args: cobra.NoArgs}
	opts := &QuotaRecomputeOptions{}
	var table string
	recompute := &cobra.Command{
		Use:   "recompute",
		Short: "Count every tenant's usage again from its registrations (once, after upgrading)",
		Long: `Sets every tenant's quota usage to what its registrations take as stored (whole registrations:
schemas, descriptions, properties, locations and names), from one scan, and records that usage is
counted this way. Run it once after upgrading a deployment whose usage counted schema bytes alone
(or predates quotas), with credentials that may Scan the registrations table and write its quota/
items: --dynamodb-table NAME. Without it, it counts local mode's store in --data-dir (local mode
does this itself at start; stop it first, RocksDB admits one process).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO = f.IO
			opts.Store = func(ctx context.Context) (metastore.Store, error) {
				if table == "" {
					return rocksdb.Open(filepath.Join(f.DataDir, local.MetaDir), rocksdb.Options{})
				}
				cfg, err := f.AWSConfig(ctx)
				if err != nil {
					return nil, err
				}
				return dynamo.New(dynamodb.NewFromConfig(cfg, dynamo.RetryOptions(dynamo.RetryPolicy{})), dynamo.Options{Table: table})
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return quotaRecomputeRun(cmd.Context(), opts)
		},
	}
	recompute.Flags().StringVar(&table, "dynamodb-table", "", "the deployment's registrations table (output RegistrationsTable); empty: local mode's --data-dir")
	cmd.AddCommand(recompute)
	return cmd
}

func quotaRecomputeRun(ctx context.Context, opts *QuotaRecomputeOptions) error {
	st, err := opts.Store(ctx)
	if err != nil {
		return fmt.Errorf("quota recompute: %w", err)
	}
	defer st.Close()
	res, err := catalog.New(st, catalog.Options{}).RecomputeUsage(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "quota recompute: %d tenants counted, %d changed\n", res.Tenants, res.Changed)
	return nil
}
