package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// UpdateOptions are `lake update`'s inputs.
type UpdateOptions struct {
	// IO receives the result line, and the breaking changes of a refused
	// update (on ErrOut).
	IO IOStreams
	// APIClient returns the registration API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Tenant, Namespace and Table name the table (--tenant, -n, -t).
	Tenant, Namespace, Table string
	// Parquet, SchemaJSON and SchemaIPC are the new schema's source files:
	// at most one is set; none keeps the stored schema.
	Parquet, SchemaJSON, SchemaIPC string
	// ColumnComments are --column-comment values, as for register.
	ColumnComments []string
	// Location, TableType and Description replace the current ones when
	// set; Properties (--property) replace them all when any is given.
	Location, TableType, Description string
	Properties                       []string
	// Compatibility is --compatibility: empty keeps the table's mode.
	Compatibility string
	// IfMatch is --if-match: apply only to the registration in the state
	// this ETag names.
	IfMatch string
	// Protect and Unprotect are --protect and --unprotect: set or unset
	// the table's protection from drops (at most one).
	Protect, Unprotect bool
}

// NewCmdUpdate returns `lake update`. runF, when not nil, replaces
// updateRun.
func NewCmdUpdate(f *Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{}
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Replace a table's schema (checked against its compatibility mode), and its location, type, description, properties, mode or protection",
		Example: `  lake update --tenant acme -n sales -t orders --schema-json orders.v2.schema.json
  lake update --tenant acme -n sales -t orders --parquet part-9.parquet --compatibility backward
  lake update --tenant acme -n sales -t orders --schema-json breaking.json --compatibility none   # on purpose
  lake update --tenant acme -n sales -t orders --protect                                          # keeps the schema`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return updateRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	schemaFlags(cmd, "new schema", &opts.Parquet, &opts.SchemaJSON, &opts.SchemaIPC)
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.ColumnComments, "column-comment", nil, "column=text: a column's comment, stored as its ARROW:FLIGHT:SQL:REMARKS field metadata (repeatable)")
	fl.StringVar(&opts.Location, "location", "", "a new location (default: keep)")
	fl.StringVar(&opts.TableType, "table-type", "", "a new table type (default: keep)")
	fl.StringVar(&opts.Description, "description", "", "a new description (default: keep)")
	fl.StringArrayVar(&opts.Properties, "property", nil, "key=value: the table's properties, replacing all of them (repeatable; default: keep)")
	fl.StringVar(&opts.Compatibility, "compatibility", "", "set the compatibility mode: none, backward, forward or full (default: keep the table's); this update is checked against it")
	fl.StringVar(&opts.IfMatch, "if-match", "", "apply only if the registration is still in the state this ETag names (lake show --json prints it)")
	fl.BoolVar(&opts.Protect, "protect", false, "protect the table: its drop is refused until --unprotect")
	fl.BoolVar(&opts.Unprotect, "unprotect", false, "lift the table's protection from drops")
	cmd.MarkFlagsMutuallyExclusive("protect", "unprotect")
	return cmd
}

func updateRun(ctx context.Context, opts *UpdateOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	props, err := parseProperties(opts.Properties)
	if err != nil {
		return err
	}
	mode, err := modeFlag("compatibility", opts.Compatibility)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	var schema *arrow.Schema
	if opts.Parquet == "" && opts.SchemaJSON == "" && opts.SchemaIPC == "" {
		// No new schema: keep the stored one (to change only the mode,
		// the protection, the description, …).
		if _, schema, err = storedSchema(ctx, c, ref); err != nil {
			return err
		}
		if schema == nil {
			return fmt.Errorf("%s: no schema is stored; give one with --parquet, --schema-json or --schema-ipc", ref)
		}
	} else if schema, err = schemaFrom(opts.Parquet, opts.SchemaJSON, opts.SchemaIPC); err != nil {
		return err
	}
	if schema, err = withColumnComments(schema, opts.ColumnComments); err != nil {
		return err
	}
	ipc, err := catalog.EncodeSchema(schema)
	if err != nil {
		return err
	}
	var protected *bool
	if opts.Protect || opts.Unprotect {
		protected = &opts.Protect
	}
	t, err := c.Update(ctx, ref, apiclient.Spec{Location: opts.Location, TableType: opts.TableType, SchemaIPC: ipc,
		Description: opts.Description, Properties: props, Compatibility: string(mode), Protected: protected}, apiclient.UpdateOptions{IfMatch: opts.IfMatch})
	if ae, ok := errors.AsType[*apiclient.Error](err); ok && len(ae.BreakingChanges) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "breaking changes:\n")
		for _, b := range ae.BreakingChanges {
			change := b.Change
			switch {
			case b.From != "" && b.To != "":
				change += " from " + b.From + " to " + b.To
			case b.To != "":
				change += " (" + b.To + ")"
			case b.From != "":
				change += " (" + b.From + ")"
			}
			fmt.Fprintf(opts.IO.ErrOut, "  %s: %s: %s\n", b.Path, change, b.Reason)
		}
		if more := ae.BreakingChangesTotal - len(ae.BreakingChanges); more > 0 {
			fmt.Fprintf(opts.IO.ErrOut, "  … and %d more\n", more)
		}
		return fmt.Errorf("%s: the schema breaks the table's compatibility mode; nothing was changed (add --compatibility none to change it anyway)", ref)
	}
	if err != nil {
		return err
	}
	guard := ""
	if t.Protected {
		guard = ", protected"
	}
	fmt.Fprintf(opts.IO.Out, "updated %s/%s/%s to version %d (%d columns, compatibility %s%s)\n", t.Tenant, t.Namespace, t.Name, t.Version, schema.NumFields(), tableMode(t), guard)
	return nil
}
