package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/pkg/wire"
)

// SearchOptions are `lake search`'s inputs.
type SearchOptions struct {
	// IO receives the matches (Out) and the count and notes (ErrOut).
	IO IOStreams
	// FlightClient returns the discovery client acting as a tenant.
	FlightClient func(tenant string) (*flightclient.Client, error)
	// Discovery names the endpoint in error messages.
	Discovery string
	// Tenant is --tenant.
	Tenant string
	// TablePattern (--table) and ColumnPattern (--column) are LIKE
	// patterns; empty filters nothing.
	TablePattern, ColumnPattern string
	// JSON is --json.
	JSON bool
}

// NewCmdSearch returns `lake search`. runF, when not nil, replaces
// searchRun.
func NewCmdSearch(f *Factory, runF func(context.Context, *SearchOptions) error) *cobra.Command {
	opts := &SearchOptions{}
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Find a tenant's tables by table name or column name (from discovery)",
		Long: `Find a tenant's tables by table name (--table) and by column (--column), from discovery's
snapshot. Both are LIKE patterns: % matches any run of characters, _ exactly one, and a
backslash makes the next %, _ or \ literal (customer\_id). A column matches by its name or by
its dotted path from the top level (customer.address.zip), at any depth of structs, lists,
maps (key, value) and unions; with --column, only tables with a matching column are shown,
with those columns. At most ` + fmt.Sprint(wire.MaxSearchMatches) + ` tables are returned.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.FlightClient, opts.Discovery, opts.Tenant = f.IO, f.FlightClient, f.Discovery, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return searchRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.TablePattern, "table", "t", "", "table name LIKE pattern (% and _ wildcards, \\ escapes)")
	cmd.Flags().StringVarP(&opts.ColumnPattern, "column", "c", "", "column name or dotted path LIKE pattern (% and _ wildcards, \\ escapes)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func searchRun(ctx context.Context, opts *SearchOptions) error {
	tenant, err := needTenant(opts.Tenant)
	if err != nil {
		return err
	}
	d, err := opts.FlightClient(tenant)
	if err != nil {
		return err
	}
	defer d.Close()
	res, err := d.Search(ctx, opts.TablePattern, opts.ColumnPattern)
	if err != nil {
		return discoveryErr(opts.Discovery, "tenant "+tenant, err)
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res.Matches); err != nil {
			return err
		}
	} else {
		t := newTable("")
		if opts.ColumnPattern != "" {
			t.add("NAMESPACE", "TABLE", "COLUMNS")
		} else {
			t.add("NAMESPACE", "TABLE")
		}
		for _, m := range res.Matches {
			if opts.ColumnPattern == "" {
				t.add(m.Namespace, m.Table)
				continue
			}
			paths := make([]string, len(m.Columns))
			for i, c := range m.Columns {
				paths[i] = c.Path
			}
			t.add(m.Namespace, m.Table, strings.Join(paths, ", "))
		}
		if err := t.write(opts.IO.Out); err != nil {
			return err
		}
	}
	if res.Truncated {
		fmt.Fprintf(opts.IO.ErrOut, "note: more tables match; these are the first %d (narrow --table or --column)\n", len(res.Matches))
	}
	fmt.Fprintf(opts.IO.ErrOut, "%d tables in %s\n", len(res.Matches), tenant)
	return nil
}
