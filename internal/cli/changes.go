package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/pkg/wire"
)

// ChangesOptions are `lake changes`'s inputs.
type ChangesOptions struct {
	IO           IOStreams
	FlightClient func(tenant string) (*flightclient.Client, error)
	Discovery    string
	Tenant       string
	// Since is --since, a cursor a previous run printed; Follow (--follow)
	// keeps asking every Interval (--interval) until the command is
	// stopped; JSON prints one JSON change a line.
	Since    string
	Follow   bool
	Interval time.Duration
	JSON     bool
}

// NewCmdChanges returns `lake changes`. runF, when not nil, replaces
// changesRun.
func NewCmdChanges(f *Factory, runF func(context.Context, *ChangesOptions) error) *cobra.Command {
	opts := &ChangesOptions{}
	cmd := &cobra.Command{
		Use:   "changes",
		Short: "Print the tenant's change feed (from discovery); --follow keeps printing new changes",
		Long: `Print the tenant's changes in the order refresh published them, from discovery's snapshot:
each table's latest change (create, update, undrop) and each drop in retention, with its version
and who made it. A table changed twice between two snapshots shows its latest change (lake
history has every version). The last line on stderr is the cursor to pass as --since to go on
from there: it resumes after every change printed and before every change published since, so
with --follow the command prints each new change once as discovery publishes it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.FlightClient, opts.Discovery, opts.Tenant = f.IO, f.FlightClient, f.Discovery, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return changesRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Since, "since", "", "the cursor a previous run printed (default: from the first change)")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new changes until stopped")
	cmd.Flags().DurationVar(&opts.Interval, "interval", 2*time.Second, "with --follow, how often to ask")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON change a line")
	return cmd
}

func changesRun(ctx context.Context, opts *ChangesOptions) error {
	tenant, err := needTenant(opts.Tenant)
	if err != nil {
		return err
	}
	if opts.Follow && opts.Interval < 100*time.Millisecond {
		return fmt.Errorf("--interval must be at least 100ms")
	}
	d, err := opts.FlightClient(tenant)
	if err != nil {
		return err
	}
	defer d.Close()
	cursor, n := opts.Since, 0
	for {
		page, err := d.Changes(ctx, cursor, wire.MaxChangesLimit)
		if err != nil {
			if ctx.Err() != nil && opts.Follow {
				break
			}
			return discoveryErr(opts.Discovery, "tenant "+tenant, err)
		}
		for _, c := range page.Changes {
			if opts.JSON {
				b, err := json.Marshal(c)
				if err != nil {
					return err
				}
				fmt.Fprintln(opts.IO.Out, string(b))
			} else {
				fmt.Fprintf(opts.IO.Out, "%s  %-6s  %s.%s  version %d  by %s\n", c.At.Format(time.RFC3339Nano), c.Op, c.Namespace, c.Table, c.Version, orDash(c.By))
			}
		}
		n += len(page.Changes)
		cursor = page.Next
		if len(page.Changes) == wire.MaxChangesLimit {
			continue // more now
		}
		if !opts.Follow {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(opts.Interval):
			continue
		}
		break
	}
	fmt.Fprintf(opts.IO.ErrOut, "%s in %s; go on with --since %s\n", plural(n, "change"), tenant, cursor)
	return nil
}
