package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/wire"
)

// CredentialsOptions are `lake credentials`'s inputs.
type CredentialsOptions struct {
	// IO receives the credentials.
	IO IOStreams
	// APIClient returns the registration API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Now is the clock the time left is counted by.
	Now func() time.Time
	// Tenant, Namespace and Table name the table (--tenant, -n, -t).
	Tenant, Namespace, Table string
	// Export is --export: shell lines to eval; JSON is --json: the API's
	// answer (wire.Credentials).
	Export, JSON bool
}

// NewCmdCredentials returns `lake credentials`. runF, when not nil,
// replaces credentialsRun.
func NewCmdCredentials(f *Factory, runF func(context.Context, *CredentialsOptions) error) *cobra.Command {
	opts := &CredentialsOptions{}
	cmd := &cobra.Command{
		Use:   "credentials",
		Short: "Temporary credentials that read one table's files, and nothing else",
		Long: `Asks the registration API for access to one table's files (GET …/tables/{table}/credentials,
the same door as discovery's lake.credentials action): for an s3:// location, temporary AWS
credentials (STS, 15 minutes by default) whose session policy reads the table's prefix and
nothing else; for a local path under local mode's --data-root, the path itself.

lake vends only when the table's location is under one of the prefixes an operator allowed for
its tenant (lake tenant allow-prefix), never in lake's own buckets; otherwise the API refuses
(403 location_not_allowed) and says why.

By default it prints the location, the kind of access, the key id and when the credentials
expire (the secret is not printed). --export prints shell lines that set AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and AWS_REGION (when known), each value single-quoted,
for a shell to run:

    eval "$(lake credentials --tenant acme -n sales -t orders --export)"

(for a local path: LAKE_TABLE_PATH). --json prints the API's answer, secret included.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Now, opts.Tenant = f.IO, f.APIClient, f.Now, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return credentialsRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	cmd.Flags().BoolVar(&opts.Export, "export", false, `print shell lines to eval: eval "$(lake credentials … --export)"`)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the API's answer as JSON, secret included")
	cmd.MarkFlagsMutuallyExclusive("export", "json")
	return cmd
}

// hintedError is an API refusal with a hint on what to do about it. It
// does not unwrap: Message prints it whole, the API's message then the
// hint.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return Message(e.err) + "\n" + e.hint }

// credentialsHint adds to err what to do about a refusal of tenant's
// vend, when there is something to say.
func credentialsHint(err error, tenant string) error {
	var hint string
	switch {
	case errors.Is(err, apiclient.ErrLocationNotAllowed):
		hint = fmt.Sprintf("ask an operator: lake tenant allow-prefix %s <prefix>", tenant)
	case errors.Is(err, apiclient.ErrVendingNotConfigured):
		if ae, ok := errors.AsType[*apiclient.Error](err); ok && !strings.HasSuffix(ae.Message, apiclient.ErrVendingNotConfigured.Error()) {
			return err // the API said how to configure it (local mode does)
		}
		hint = "start lake local with --vending-role-arn … or deploy with data buckets"
	case errors.Is(err, apiclient.ErrVendingFailed):
		hint = "the registration API's log says why STS refused; retry when it is fixed"
	default:
		return err
	}
	return &hintedError{err: err, hint: "hint: " + hint}
}

func credentialsRun(ctx context.Context, opts *CredentialsOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	creds, err := c.Credentials(ctx, ref)
	if err != nil {
		return credentialsHint(err, ref.Tenant)
	}
	switch {
	case opts.JSON:
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(creds)
	case opts.Export:
		return writeExport(opts.IO.Out, creds)
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "%s\n", ref)
	t := newTable("  ")
	t.add("location", creds.Location)
	switch creds.Access {
	case wire.AccessVended:
		t.add("access", "vended: temporary AWS credentials that read this prefix and nothing else")
		t.add("key id", creds.AccessKeyID)
		t.add("expires", expiry(creds.Expiration, opts.Now()))
		if creds.Region != "" {
			t.add("region", creds.Region)
		}
	default:
		t.add("access", creds.Access)
	}
	if creds.Note != "" {
		t.add("note", creds.Note)
	}
	if err := t.write(w); err != nil {
		return err
	}
	if creds.Access == wire.AccessVended {
		fmt.Fprintln(opts.IO.ErrOut, "the secret is not printed: --export prints shell lines to eval, --json the whole answer")
	}
	return nil
}

// expiry says when exp is, in local time, and how long from now.
func expiry(exp, now time.Time) string {
	if exp.IsZero() {
		return "-"
	}
	left := exp.Sub(now).Round(time.Second)
	when := exp.Local().Format("2006-01-02 15:04:05 MST")
	if left < 0 {
		return fmt.Sprintf("%s (expired %v ago)", when, -left)
	}
	return fmt.Sprintf("%s (in %v)", when, left)
}

// writeExport writes creds as lines a POSIX shell evals: export lines with
// single-quoted values, and a comment line (its text on one line).
func writeExport(w io.Writer, c wire.Credentials) error {
	var b strings.Builder
	line := func(name, value string) error {
		q, err := shellQuote(value)
		if err != nil {
			return fmt.Errorf("--export: %s: %w", name, err)
		}
		fmt.Fprintf(&b, "export %s=%s\n", name, q)
		return nil
	}
	table := c.Tenant + "/" + c.Namespace + "/" + c.Table
	switch c.Access {
	case wire.AccessVended:
		fmt.Fprintf(&b, "# lake credentials for %s: %s, expires %s\n", comment(table), comment(c.Location), c.Expiration.UTC().Format(time.RFC3339))
		for _, kv := range [][2]string{{"AWS_ACCESS_KEY_ID", c.AccessKeyID}, {"AWS_SECRET_ACCESS_KEY", c.SecretAccessKey}} {
			if err := line(kv[0], kv[1]); err != nil {
				return err
			}
		}
		if c.SessionToken != "" {
			if err := line("AWS_SESSION_TOKEN", c.SessionToken); err != nil {
				return err
			}
		} else {
			// A token left from other credentials would go with this key.
			b.WriteString("unset AWS_SESSION_TOKEN\n")
		}
		if c.Region != "" {
			if err := line("AWS_REGION", c.Region); err != nil {
				return err
			}
		}
	case wire.AccessPath:
		fmt.Fprintf(&b, "# lake credentials for %s: %s\n", comment(table), comment(c.Note))
		if err := line("LAKE_TABLE_PATH", strings.TrimPrefix(c.Location, "file://")); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--export: the API answered access %q, which this lake does not know", c.Access)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shellQuote quotes s for a POSIX shell: in single quotes, where every
// byte but NUL stands for itself; each single quote in s ends the quoted
// text, is written escaped (\') and a new quoted text begins. A shell
// cannot hold a NUL in a variable, so s with one is an error.
func shellQuote(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", errors.New("the value holds a NUL byte, which no shell variable can")
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'", nil
}

// comment makes s safe on a shell comment line: control characters
// (a newline would end the comment) become '?'.
func comment(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
