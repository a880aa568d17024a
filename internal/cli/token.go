package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/auth"
)

// TokenOptions are `lake token`'s inputs.
type TokenOptions struct {
	// IO receives the token.
	IO IOStreams
	// Tenant is --tenant, the token's tenant claim; As is --as, its
	// subject (the tenant when empty).
	Tenant, As string
	// TTL is --ttl: more than zero and at most auth.DefaultMaxLifetime,
	// the longest-lived token discovery accepts by default.
	TTL time.Duration
	// Now is the issuing time's clock.
	Now func() time.Time
	// Secret returns the HS256 signing secret.
	Secret func() ([]byte, error)
}

// NewCmdToken returns `lake token`. runF, when not nil, replaces tokenRun.
func NewCmdToken(f *Factory, runF func(context.Context, *TokenOptions) error) *cobra.Command {
	opts := &TokenOptions{}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print a discovery token for --tenant (signed with LAKE_JWT_HS256_SECRET, else local mode's dev secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.Tenant, opts.Now, opts.Secret = f.IO, f.Tenant, f.Now, f.signingSecret
			// A token printed is handed to someone else (a tool, a
			// producer): its subject is --as when given, else the tenant,
			// never the OS user who printed it.
			if fl := cmd.Flag("as"); (fl != nil && fl.Changed) || f.Getenv("LAKE_AS") != "" {
				opts.As = f.As
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return tokenRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.TTL, "ttl", auth.DefaultMaxLifetime, fmt.Sprintf("how long the token is valid (at most %v)", auth.DefaultMaxLifetime))
	return cmd
}

func tokenRun(_ context.Context, opts *TokenOptions) error {
	tenant, err := needTenant(opts.Tenant)
	if err != nil {
		return err
	}
	switch {
	case opts.TTL <= 0:
		return fmt.Errorf("--ttl %v: a token must be valid for some time", opts.TTL)
	case opts.TTL > auth.DefaultMaxLifetime:
		return fmt.Errorf("--ttl %v: at most %v; discovery refuses tokens that live longer", opts.TTL, auth.DefaultMaxLifetime)
	}
	secret, err := opts.Secret()
	if err != nil {
		return err
	}
	tok, err := auth.IssueHS256(secret, auth.TokenClaims{Tenant: tenant, Subject: opts.As, TTL: opts.TTL, Now: opts.Now()})
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, tok)
	return nil
}
