package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/wire"
)

// DroppedOptions are `lake dropped`'s inputs.
type DroppedOptions struct {
	IO        IOStreams
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	Tenant    string
	JSON      bool
}

// NewCmdDropped returns `lake dropped`. runF, when not nil, replaces
// droppedRun.
func NewCmdDropped(f *Factory, runF func(context.Context, *DroppedOptions) error) *cobra.Command {
	opts := &DroppedOptions{}
	cmd := &cobra.Command{
		Use:   "dropped",
		Short: "List a tenant's dropped tables that can still be restored",
		Long: `List the tenant's dropped tables still in retention (7 days by default), newest drop first,
from the registration API (GET /v1/tenants/{tenant}/dropped): each with the version it was
dropped at, its creation id (what lake undrop takes), who dropped it and when, and when it can
no longer be restored. Local mode lists a drop as soon as it is made; the AWS deployment
answers from the published snapshot, so a drop is listed once refresh has published it (seconds).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return droppedRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// dropped lists the tenant's dropped tables in retention, newest drop
// first, with the registration API.
func dropped(ctx context.Context, c *apiclient.Client, tenant string) ([]wire.DroppedTable, error) {
	page, err := c.Dropped(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("tenant %s: %w", tenant, err)
	}
	return page.Dropped, nil
}

func droppedRun(ctx context.Context, opts *DroppedOptions) error {
	tenant, err := needTenant(opts.Tenant)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, tenant)
	if err != nil {
		return err
	}
	all, err := dropped(ctx, c, tenant)
	if err != nil {
		return err
	}
	if opts.JSON {
		if all == nil {
			all = []wire.DroppedTable{}
		}
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	t := newTable("")
	t.add("NAMESPACE", "TABLE", "VERSION", "CREATION ID", "DROPPED", "BY", "RESTORABLE UNTIL")
	for _, x := range all {
		until := "-"
		if !x.ExpiresAt.IsZero() {
			until = x.ExpiresAt.Format(time.RFC3339)
		}
		t.add(x.Namespace, x.Table, fmt.Sprint(x.Version), x.CreationID, x.DroppedAt.Format(time.RFC3339), orDash(x.DroppedBy), until)
	}
	if err := t.write(opts.IO.Out); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "%s in %s\n", plural(len(all), "dropped table"), tenant)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// UndropOptions are `lake undrop`'s inputs.
type UndropOptions struct {
	IO        IOStreams
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Tenant, Namespace and Table name the table (--tenant, -n, -t);
	// CreationID (--creation-id) the drop to undo; empty: the newest drop
	// of that name, as lake dropped lists it.
	Tenant, Namespace, Table, CreationID string
}

// NewCmdUndrop returns `lake undrop`. runF, when not nil, replaces
// undropRun.
func NewCmdUndrop(f *Factory, runF func(context.Context, *UndropOptions) error) *cobra.Command {
	opts := &UndropOptions{}
	cmd := &cobra.Command{
		Use:   "undrop",
		Short: "Restore a dropped table (its registration as it was, history kept)",
		Long: `Restore a table dropped within retention: its registration as it was when dropped, with
its creation id and the next version. Without --creation-id the newest drop of that name is
restored (as lake dropped lists it). Refused when the name has been registered again since the
drop: drop or rename that table first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return undropRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	cmd.Flags().StringVar(&opts.CreationID, "creation-id", "", "the drop to undo, as lake dropped lists it (default: the newest drop of the table)")
	return cmd
}

func undropRun(ctx context.Context, opts *UndropOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	id := opts.CreationID
	if id == "" {
		all, err := dropped(ctx, c, ref.Tenant)
		if err != nil {
			return err
		}
		for _, x := range all { // newest first
			if x.Namespace == ref.Namespace && x.Table == ref.Name {
				id = x.CreationID
				break
			}
		}
		if id == "" {
			return fmt.Errorf("%s: no dropped table of that name in retention (lake dropped lists them; on AWS a drop is listed once refresh has published it, seconds after)", ref)
		}
	}
	t, err := c.Undrop(ctx, ref, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "restored %s (creation id %s) at version %d\n", ref, id, t.Version)
	return nil
}
