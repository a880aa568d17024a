// Package cli is the lake command: local mode, tokens, and the commands that
// register, list, show, refresh, drop and backfill tables, against local
// mode or the AWS deployment.
//
// Each command is an options struct holding its injected dependencies (IO
// streams, client factories, clock), a NewCmdX(f, runF) constructor that
// binds its flags (a test passes runF to stop after flag parsing), and an
// xRun function that does the work, so every command runs in process. The
// environment is read once, by the root, to bind flag defaults.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/auth"
	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/internal/local"
	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// IOStreams are where a command writes: results to Out, notes, progress
// and logs to ErrOut.
type IOStreams struct {
	Out, ErrOut io.Writer
}

// Factory holds what the commands share: the IO streams, the clock, the
// global flags (bound by NewCmdRoot from the command line and the
// environment) and the factories of the clients built from them.
type Factory struct {
	IO IOStreams
	// Now is the clock tokens are issued by.
	Now func() time.Time
	// Getenv reads the environment; NewCmdRoot uses it only for flag and
	// environment binding.
	Getenv func(string) string

	// Global flags and settings; see NewCmdRoot.
	DataDir, API, Discovery, Token, Tenant string
	// As is the subject of the tokens the CLI signs (--as): who the catalog
	// records as making a change.
	As    string
	SigV4 bool
	// JWTSecret is LAKE_JWT_HS256_SECRET: signs tokens when set.
	JWTSecret string
	// S3PathStyle is LAKE_S3_PATH_STYLE=true: path-style S3 addressing.
	S3PathStyle bool

	// APIClient returns a registration API client acting as tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// AdminClient returns a registration API client acting as an operator,
	// for the admin routes (/v1/admin/*, a tenant's allowed prefixes):
	// with --sigv4 it signs as APIClient does (on AWS, IAM decides who may
	// call them); else it sends --token, or signs a token for
	// local.AdminTenant with aud local.AdminAudience (subject --as).
	AdminClient func(ctx context.Context) (*apiclient.Client, error)
	// FlightClient returns a discovery client acting as tenant.
	FlightClient func(tenant string) (*flightclient.Client, error)
	// AWSConfig loads the AWS configuration (SigV4, S3, Lambda).
	AWSConfig func(ctx context.Context) (aws.Config, error)
}

// NewFactory returns a Factory writing to stdout and stderr, reading the
// environment with getenv, with the default client factories.
func NewFactory(getenv func(string) string, stdout, stderr io.Writer) *Factory {
	f := &Factory{IO: IOStreams{Out: stdout, ErrOut: stderr}, Now: time.Now, Getenv: getenv}
	f.AWSConfig = func(ctx context.Context) (aws.Config, error) {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return cfg, fmt.Errorf("load AWS config: %w", err)
		}
		return cfg, nil
	}
	f.APIClient = f.defaultAPIClient
	f.AdminClient = f.defaultAdminClient
	f.FlightClient = f.defaultFlightClient
	return f
}

// Main runs the command line with the process's signals (Ctrl-C and
// SIGTERM cancel the command) and returns the exit code.
func Main(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, NewFactory(getenv, stdout, stderr), args)
}

// Run runs the command line args with f and returns the exit code; an
// error is printed once, as "lake: <message>", on f.IO.ErrOut.
func Run(ctx context.Context, f *Factory, args []string) int {
	cmd := NewCmdRoot(f)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(f.IO.ErrOut, "lake:", Message(err))
		return 1
	}
	return 0
}

// NewCmdRoot returns the root command with every subcommand. Each global
// flag's default comes from its environment variable.
func NewCmdRoot(f *Factory) *cobra.Command {
	env := func(name, def string) string {
		if v := f.Getenv(name); v != "" {
			return v
		}
		return def
	}
	root := &cobra.Command{
		Use:   "lake",
		Short: "lake: a multi-tenant table catalog with exact Arrow schemas, discovered over Flight SQL",
		Long: `lake registers tables with their exact Arrow schemas and serves them to SQL tools over
Arrow Flight SQL. "lake local" runs the whole catalog on this machine; the other commands work
against local mode (the default endpoints) or an AWS deployment (--api with --sigv4, --discovery
with --token).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	f.JWTSecret = f.Getenv("LAKE_JWT_HS256_SECRET")
	f.S3PathStyle = f.Getenv("LAKE_S3_PATH_STYLE") == "true"
	pf := root.PersistentFlags()
	pf.StringVar(&f.DataDir, "data-dir", env("LAKE_DATA_DIR", ".lake"), "local mode's data folder; its dev secret signs tokens when --token is not given [LAKE_DATA_DIR]")
	pf.StringVar(&f.API, "api", env("LAKE_API", "http://127.0.0.1:8181"), "registration API base URL [LAKE_API]")
	pf.StringVar(&f.Discovery, "discovery", env("LAKE_DISCOVERY", "grpc://127.0.0.1:50051"), "Flight SQL endpoint: host:port (TLS unless the host is loopback), grpc+tls://… (TLS) or grpc://… (plaintext, only on request) [LAKE_DISCOVERY]")
	pf.StringVar(&f.Token, "token", env("LAKE_TOKEN", ""), "bearer token for discovery (and the local API) [LAKE_TOKEN]")
	pf.StringVar(&f.Tenant, "tenant", env("LAKE_TENANT", ""), "tenant to act as [LAKE_TENANT]")
	pf.StringVar(&f.As, "as", env("LAKE_AS", osUser()), "who you are in the tokens lake signs (their subject): the catalog records it as the author of each change; default your OS user name [LAKE_AS]")
	pf.BoolVar(&f.SigV4, "sigv4", env("LAKE_SIGV4", "") == "true", "sign registration API calls with AWS SigV4 (the AWS deployment) [LAKE_SIGV4]")

	root.AddCommand(
		NewCmdLocal(f, nil), NewCmdToken(f, nil), NewCmdRegister(f, nil), NewCmdList(f, nil),
		NewCmdUpdate(f, nil), NewCmdDiff(f, nil), NewCmdShow(f, nil), NewCmdSearch(f, nil), NewCmdRefresh(f, nil), NewCmdDrop(f, nil), NewCmdDropped(f, nil), NewCmdUndrop(f, nil), NewCmdHistory(f, nil), NewCmdChanges(f, nil), NewCmdBackfill(f, nil),
		NewCmdQuota(f, nil), NewCmdTenant(f, nil), NewCmdCredentials(f, nil), NewCmdSync(f, nil), NewCmdPreview(f, nil),
	)
	return root
}

// osUser is the name of the OS user running lake, or "" when unknown.
func osUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// errNoTenant is the usage error of a command that needs --tenant.
var errNoTenant = errors.New("--tenant (LAKE_TENANT) is required")

// needTenant returns tenant, or a usage error when it is empty or invalid.
func needTenant(tenant string) (string, error) {
	if tenant == "" {
		return "", errNoTenant
	}
	if err := catalog.ValidateName("tenant", tenant); err != nil {
		return "", err
	}
	return tenant, nil
}

// tableRef builds and validates tenant/ns/table.
func tableRef(tenant, ns, table string) (catalog.TableRef, error) {
	tenant, err := needTenant(tenant)
	if err != nil {
		return catalog.TableRef{}, err
	}
	ref := catalog.TableRef{Tenant: tenant, Namespace: ns, Name: table}
	return ref, ref.Validate()
}

// signingSecret returns the HS256 secret tokens are signed with:
// LAKE_JWT_HS256_SECRET (the deployment's secret, from Secrets Manager) when
// set, else local mode's dev secret in --data-dir.
func (f *Factory) signingSecret() ([]byte, error) {
	if f.JWTSecret != "" {
		return []byte(f.JWTSecret), nil
	}
	if _, err := os.Stat(filepath.Join(f.DataDir, local.SecretFile)); err != nil {
		return nil, fmt.Errorf("no --token, no LAKE_JWT_HS256_SECRET and no local dev secret in %s (start `lake local`, or pass --token)", f.DataDir)
	}
	return local.LoadSecret(f.DataDir)
}

// bearer returns --token, or mints a one-hour token for tenant with the
// signing secret.
func (f *Factory) bearer(tenant string) (string, error) {
	return f.signedBearer(auth.TokenClaims{Tenant: tenant})
}

// adminBearer returns --token, or mints a one-hour operator's token (aud
// local.AdminAudience, tenant local.AdminTenant) with the signing secret.
func (f *Factory) adminBearer() (string, error) {
	return f.signedBearer(auth.TokenClaims{Tenant: local.AdminTenant, Audience: local.AdminAudience})
}

// signedBearer returns --token, or mints a one-hour token of c (subject
// --as) with the signing secret.
func (f *Factory) signedBearer(c auth.TokenClaims) (string, error) {
	if f.Token != "" {
		return f.Token, nil
	}
	secret, err := f.signingSecret()
	if err != nil {
		return "", err
	}
	c.Subject, c.TTL, c.Now = f.As, time.Hour, f.Now()
	return auth.IssueHS256(secret, c)
}

func (f *Factory) defaultAPIClient(ctx context.Context, tenant string) (*apiclient.Client, error) {
	return f.newAPIClient(ctx, func() (string, error) { return f.bearer(tenant) })
}

func (f *Factory) defaultAdminClient(ctx context.Context) (*apiclient.Client, error) {
	return f.newAPIClient(ctx, f.adminBearer)
}

// newAPIClient returns a registration API client at --api signing with
// SigV4 (--sigv4) or sending the token bearer returns.
func (f *Factory) newAPIClient(ctx context.Context, bearer func() (string, error)) (*apiclient.Client, error) {
	var opts apiclient.Options
	if f.SigV4 {
		cfg, err := f.AWSConfig(ctx)
		if err != nil {
			return nil, err
		}
		if opts.SigV4, err = apiclient.SigV4From(cfg); err != nil {
			return nil, err
		}
	} else {
		var err error
		if opts.Token, err = bearer(); err != nil {
			return nil, err
		}
	}
	c, err := apiclient.New(f.API, opts)
	if err != nil {
		return nil, fmt.Errorf("--api: %w", err)
	}
	return c, nil
}

func (f *Factory) defaultFlightClient(tenant string) (*flightclient.Client, error) {
	tok, err := f.bearer(tenant)
	if err != nil {
		return nil, err
	}
	return flightclient.Dial(f.Discovery, tok)
}

// s3Client builds an S3 client from the AWS configuration, for reading
// Parquet footers at s3:// locations.
func (f *Factory) s3Client(ctx context.Context) (parquetschema.S3API, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = f.S3PathStyle }), nil
}
