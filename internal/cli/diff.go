package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/schemadiff"
)

// DiffOptions are `lake diff`'s inputs.
type DiffOptions struct {
	// IO receives the changes and the verdict.
	IO IOStreams
	// APIClient returns the registration API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Tenant, Namespace and Table name the table (--tenant, -n, -t).
	Tenant, Namespace, Table string
	// Parquet, SchemaJSON and SchemaIPC are the candidate schema's source
	// files; exactly one is set.
	Parquet, SchemaJSON, SchemaIPC string
	// Compatibility is --compatibility: the mode to judge by (default: the
	// table's own).
	Compatibility string
	// From and To (--from, --to) compare two kept versions instead (To 0:
	// the newest kept); no schema file then. CreationID (--creation-id)
	// names a dropped registration's versions; JSON (--json) prints the
	// registration API's answer.
	From, To   int64
	CreationID string
	JSON       bool
}

// NewCmdDiff returns `lake diff`. runF, when not nil, replaces diffRun.
func NewCmdDiff(f *Factory, runF func(context.Context, *DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{}
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show what a candidate schema changes in a registered table's, field by field, and whether its compatibility mode allows it (exit 1 when not)",
		Example: `  lake diff --tenant acme -n sales -t orders --parquet part-9.parquet
  lake diff --tenant acme -n sales -t orders --schema-json orders.v2.schema.json --compatibility full
  lake diff --tenant acme -n sales -t orders --from 3 --to 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return diffRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	schemaFlags(cmd, "candidate schema", &opts.Parquet, &opts.SchemaJSON, &opts.SchemaIPC)
	cmd.Flags().StringVar(&opts.Compatibility, "compatibility", "", "judge by this mode: none, backward, forward or full (default: the table's)")
	cmd.Flags().Int64Var(&opts.From, "from", 0, "compare two kept versions: this one (lake history lists them) …")
	cmd.Flags().Int64Var(&opts.To, "to", 0, "… with this one (default: the newest kept, the registration now or its drop)")
	cmd.Flags().StringVar(&opts.CreationID, "creation-id", "", "with --from: the versions of a dropped registration (lake dropped lists them)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "with --from: print the registration API's answer as JSON")
	return cmd
}

func diffRun(ctx context.Context, opts *DiffOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	if opts.From < 0 || opts.To < 0 || opts.To > 0 && opts.From == 0 {
		return fmt.Errorf("--from and --to take version numbers ≥ 1, --to only with --from")
	}
	if opts.From > 0 {
		if opts.Parquet != "" || opts.SchemaJSON != "" || opts.SchemaIPC != "" {
			return fmt.Errorf("--from compares kept versions: give no schema file with it")
		}
		c, err := opts.APIClient(ctx, ref.Tenant)
		if err != nil {
			return err
		}
		return diffVersions(ctx, opts, c, ref)
	}
	if opts.CreationID != "" || opts.JSON {
		return fmt.Errorf("--creation-id and --json go with --from (kept versions)")
	}
	mode, err := modeFlag("compatibility", opts.Compatibility)
	if err != nil {
		return err
	}
	candidate, err := schemaFrom(opts.Parquet, opts.SchemaJSON, opts.SchemaIPC)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	t, current, err := storedSchema(ctx, c, ref)
	if err != nil {
		return err
	}
	if current == nil {
		return fmt.Errorf("%s: the registration has no schema to compare with (backfill it first)", ref)
	}
	if mode == "" {
		mode = tableMode(t)
	}
	// The first schemadiff.MaxChanges changes, and the count of the rest
	// and of those the mode refuses.
	changes, total := schemadiff.Diff(current, candidate, schemadiff.MaxChanges)
	_, breaking := schemadiff.Check(mode, current, candidate, 0)
	out := opts.IO.Out
	if total == 0 {
		fmt.Fprintf(out, "%s: no changes from version %d\n", ref, t.Version)
		return nil
	}
	fmt.Fprintf(out, "%s: %s from version %d:\n", ref, plural(total, "change"), t.Version)
	for _, ch := range changes {
		line := "  " + ch.String()
		if r := schemadiff.Reason(mode, ch); r != "" {
			line += "  BREAKS " + string(mode) + ": " + r
		}
		fmt.Fprintln(out, line)
	}
	if more := total - len(changes); more > 0 {
		fmt.Fprintf(out, "  … and %d more\n", more)
	}
	if breaking > 0 {
		// The changes are printed already; the error is the exit status.
		return fmt.Errorf("%s: %s", ref, schemadiff.Breaking(breaking, mode))
	}
	fmt.Fprintf(out, "compatible under %s\n", mode)
	return nil
}
