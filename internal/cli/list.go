package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/flightclient"
)

// ListOptions are `lake list`'s inputs.
type ListOptions struct {
	// IO receives the table (Out) and the count and notes (ErrOut).
	IO IOStreams
	// FlightClient returns the discovery client acting as a tenant.
	FlightClient func(tenant string) (*flightclient.Client, error)
	// Discovery names the endpoint in error messages.
	Discovery string
	// Tenant is --tenant.
	Tenant string
	// NamespacePattern is -n, a LIKE pattern; empty lists every namespace.
	NamespacePattern string
	// JSON is --json.
	JSON bool
}

// NewCmdList returns `lake list`. runF, when not nil, replaces listRun.
func NewCmdList(f *Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a tenant's tables (from discovery)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.FlightClient, opts.Discovery, opts.Tenant = f.IO, f.FlightClient, f.Discovery, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.NamespacePattern, "namespace", "n", "", "namespace LIKE pattern (% and _ wildcards)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	tenant, err := needTenant(opts.Tenant)
	if err != nil {
		return err
	}
	d, err := opts.FlightClient(tenant)
	if err != nil {
		return err
	}
	defer d.Close()
	q := &flightsql.GetTablesOpts{IncludeSchema: true}
	if opts.NamespacePattern != "" {
		q.DbSchemaFilterPattern = &opts.NamespacePattern
	}
	rows, err := d.Tables(ctx, q)
	withSchemas := true
	if status.Code(err) == codes.FailedPrecondition {
		// Some table has no stored schema: list the names, then ask for the
		// schemas of each namespace, table by table where a namespace holds
		// such a table.
		withSchemas = false
		rows, err = d.TablesWherePossible(ctx, q)
	}
	if err != nil {
		return discoveryErr(opts.Discovery, "tenant "+tenant, err)
	}
	if opts.JSON {
		type row struct {
			flightclient.Table
			Columns *int `json:"columns,omitempty"`
		}
		out := make([]row, len(rows))
		for i, r := range rows {
			out[i] = row{Table: r}
			if r.Schema != nil {
				n := r.Schema.NumFields()
				out[i].Columns = &n
			}
		}
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	t := newTable("")
	t.add("NAMESPACE", "TABLE", "TYPE", "COLUMNS")
	for _, r := range rows {
		cols := "?"
		if r.Schema != nil {
			cols = fmt.Sprint(r.Schema.NumFields())
		}
		t.add(r.Namespace, r.Name, r.Type, cols)
	}
	if err := t.write(opts.IO.Out); err != nil {
		return err
	}
	if !withSchemas {
		fmt.Fprintln(opts.IO.ErrOut, "note: some tables have no stored schema (COLUMNS ?); `lake backfill` can add them")
	}
	fmt.Fprintf(opts.IO.ErrOut, "%d tables in %s\n", len(rows), tenant)
	return nil
}
