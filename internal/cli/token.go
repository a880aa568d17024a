package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/local"
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
	// Admin is --admin: an operator's token for the registration API's
	// admin routes (aud local.AdminAudience, tenant local.AdminTenant;
	// subject --as, else local.AdminTenant), which name the tenant they
	// act on in the path, so --tenant is not needed.
	Admin bool
}

// NewCmdToken returns `lake token`. runF, when not nil, replaces tokenRun.
func NewCmdToken(f *Factory, runF func(context.Context, *TokenOptions) error) *cobra.Command {
	opts := &TokenOptions{}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print a discovery token for --tenant (signed with LAKE_JWT_HS256_SECRET, else local mode's dev secret)",
		Long: `Print a token for --tenant, signed with LAKE_JWT_HS256_SECRET when set (the deployment's
secret), else local mode's dev secret in --data-dir. Its subject is --as when given, else the
tenant.

--admin prints an operator's token instead: audience "` + local.AdminAudience + `", tenant claim "` + local.AdminTenant + `",
the only token local mode's admin routes (/v1/admin/*: a tenant's allowed prefixes, lake tenant)
take, and one they take for every tenant; no --tenant. Its subject (--as, else "` + local.AdminTenant + `") is
recorded as who changed a tenant's settings. Hand it only to operators. (On AWS, IAM decides who
may call /v1/admin/*: lake tenant signs with --sigv4 and needs no token.)`,
		Args: cobra.NoArgs,
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
	cmd.Flags().BoolVar(&opts.Admin, "admin", false, "print an operator's token for the admin routes (lake tenant), for every tenant; no --tenant")
	cmd.Flags().DurationVar(&opts.TTL, "ttl", auth.DefaultMaxLifetime, fmt.Sprintf("how long the token is valid (at most %v)", auth.DefaultMaxLifetime))
	return cmd
}

func tokenRun(_ context.Context, opts *TokenOptions) error {
	claims := auth.TokenClaims{Tenant: local.AdminTenant, Audience: local.AdminAudience}
	if !opts.Admin {
		tenant, err := needTenant(opts.Tenant)
		if err != nil {
			return err
		}
		claims = auth.TokenClaims{Tenant: tenant}
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
	claims.Subject, claims.TTL, claims.Now = opts.As, opts.TTL, opts.Now()
	tok, err := auth.IssueHS256(secret, claims)
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, tok)
	return nil
}
