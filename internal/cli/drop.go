package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
)

// DropOptions are `lake drop`'s inputs.
type DropOptions struct {
	// IO receives the result line.
	IO IOStreams
	// APIClient returns the registration API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Tenant, Namespace and Table name the table (--tenant, -n, -t).
	Tenant, Namespace, Table string
}

// NewCmdDrop returns `lake drop`. runF, when not nil, replaces dropRun.
func NewCmdDrop(f *Factory, runF func(context.Context, *DropOptions) error) *cobra.Command {
	opts := &DropOptions{}
	cmd := &cobra.Command{
		Use:   "drop",
		Short: "Drop a table's registration (its data is not touched)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dropRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	return cmd
}

func dropRun(ctx context.Context, opts *DropOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	if err := c.Drop(ctx, ref); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "dropped %s\n", ref)
	return nil
}
