package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Actions of `lake tenant`.
const (
	tenantShow       = "show"
	tenantAllow      = "allow-prefix"
	tenantDisallow   = "disallow-prefix"
	tenantSetAllowed = "set-prefixes"
)

// TenantOptions are the inputs of `lake tenant`'s subcommands.
type TenantOptions struct {
	// IO receives the allowed prefixes (Out) and who changed them (ErrOut).
	IO IOStreams
	// AdminClient returns the registration API client acting as an
	// operator.
	AdminClient func(ctx context.Context) (*apiclient.Client, error)
	// Action is the subcommand: show, allow-prefix, disallow-prefix or
	// set-prefixes.
	Action string
	// Tenant is the first argument.
	Tenant string
	// Prefixes are the other arguments ("s3://bucket/prefix/").
	Prefixes []string
	// JSON is --json: print the settings as the API answers them
	// (wire.TenantSettings).
	JSON bool
}

const tenantLong = `An operator's settings for one tenant, stored in the catalog (durable, and carried to
discovery with the tenant's tables): the S3 prefixes under which lake may vend credentials for
the tenant's tables.

lake vends read credentials for a table (lake credentials, discovery's lake.credentials) only
when its location is under one of the tenant's allowed prefixes, on a path-segment boundary
(s3://data/acme/ allows s3://data/acme/orders/, not s3://data/acme-old/), and never in lake's own
buckets, which the API refuses as a prefix. A tenant starts with none: nothing is vended until an
operator allows a prefix. This is the durable form of lake backfill's --allow-prefix
TENANT=s3://bucket/prefix/, which scopes one backfill run and is stored nowhere.

Operators only: the admin routes (/v1/admin/tenants/{tenant}/…) never take a tenant's own token.
Against local mode lake signs an operator's token (lake token --admin prints one; --token sends
another); against AWS (--sigv4) IAM decides who may call /v1/admin/*.

Each subcommand prints the tenant's allowed prefixes, one a line, and on stderr who changed them
last and when; --json prints the settings as the API answers them.`

// NewCmdTenant returns `lake tenant` with its subcommands show,
// allow-prefix, disallow-prefix and set-prefixes. runF, when not nil,
// replaces tenantRun.
func NewCmdTenant(f *Factory, runF func(context.Context, *TenantOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "An operator's settings for a tenant: the S3 prefixes lake may vend credentials under",
		Long:  tenantLong,
		Args:  cobra.NoArgs,
	}
	sub := func(action, use, short string, args cobra.PositionalArgs) *cobra.Command {
		opts := &TenantOptions{Action: action}
		c := &cobra.Command{
			Use:   use,
			Short: short,
			Long:  short + ".\n\n" + tenantLong,
			Args:  args,
			RunE: func(cmd *cobra.Command, args []string) error {
				opts.IO, opts.AdminClient = f.IO, f.AdminClient
				opts.Tenant, opts.Prefixes = args[0], args[1:]
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return tenantRun(cmd.Context(), opts)
			},
		}
		c.Flags().BoolVar(&opts.JSON, "json", false, "print the settings as JSON (wire.TenantSettings)")
		return c
	}
	cmd.AddCommand(
		sub(tenantShow, "show TENANT", "Print a tenant's allowed prefixes", cobra.ExactArgs(1)),
		sub(tenantAllow, "allow-prefix TENANT s3://bucket/prefix/ [more…]", "Allow lake to vend credentials for the tenant's tables under these prefixes too", cobra.MinimumNArgs(2)),
		sub(tenantDisallow, "disallow-prefix TENANT s3://bucket/prefix/ [more…]", "Allow these prefixes no more (credentials vended before expire on their own)", cobra.MinimumNArgs(2)),
		sub(tenantSetAllowed, "set-prefixes TENANT [s3://bucket/prefix/ …]", "Replace a tenant's allowed prefixes with these (none: allow none)", cobra.MinimumNArgs(1)),
	)
	return cmd
}

func tenantRun(ctx context.Context, opts *TenantOptions) error {
	tenant, err := needTenant(opts.Tenant)
	if err != nil {
		return err
	}
	c, err := opts.AdminClient(ctx)
	if err != nil {
		return err
	}
	var s wire.TenantSettings
	switch opts.Action {
	case tenantShow:
		s, err = c.TenantSettings(ctx, tenant)
	case tenantSetAllowed:
		s, err = c.SetAllowedPrefixes(ctx, tenant, opts.Prefixes)
	case tenantAllow, tenantDisallow:
		// One call a prefix, each atomic on the server; a refusal stops
		// the rest, and what was changed before it is said.
		call, done := c.AllowPrefix, "allowed"
		if opts.Action == tenantDisallow {
			call, done = c.DisallowPrefix, "disallowed"
		}
		for i, p := range opts.Prefixes {
			if s, err = call(ctx, tenant, p); err != nil {
				if i > 0 {
					fmt.Fprintf(opts.IO.ErrOut, "%s %s before %s was refused\n", done, strings.Join(opts.Prefixes[:i], " "), p)
				}
				return err
			}
		}
	default:
		return fmt.Errorf("lake tenant: no action %q", opts.Action)
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		if s.AllowedPrefixes == nil {
			s.AllowedPrefixes = []string{}
		}
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	for _, p := range s.AllowedPrefixes {
		fmt.Fprintln(opts.IO.Out, p)
	}
	footer := "1 allowed prefix"
	if n := len(s.AllowedPrefixes); n != 1 {
		footer = fmt.Sprintf("%d allowed prefixes", n)
	}
	footer += " for " + tenant
	switch {
	case s.UpdatedAt.IsZero() && s.UpdatedBy == "":
		footer += " (never set: lake vends nothing for its tables)"
	case len(s.AllowedPrefixes) == 0:
		footer += fmt.Sprintf(" (lake vends nothing for its tables); changed by %s at %s", orDash(s.UpdatedBy), s.UpdatedAt.Format(time.RFC3339))
	default:
		footer += fmt.Sprintf("; changed by %s at %s", orDash(s.UpdatedBy), s.UpdatedAt.Format(time.RFC3339))
	}
	fmt.Fprintln(opts.IO.ErrOut, footer)
	return nil
}
