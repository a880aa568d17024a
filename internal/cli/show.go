package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/flightclient"
	"github.com/lake-catalog/lake/pkg/arrowtype"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

// ShowOptions are `lake show`'s inputs.
type ShowOptions struct {
	// IO receives the schema.
	IO IOStreams
	// FlightClient returns the discovery client acting as a tenant.
	FlightClient func(tenant string) (*flightclient.Client, error)
	// APIClient returns the registration API client acting as a tenant:
	// the text output reads the table's description and properties with
	// it (discovery does not carry them).
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Discovery names the endpoint in error messages.
	Discovery string
	// Tenant, Namespace and Table name the table (--tenant, -n, -t).
	Tenant, Namespace, Table string
	// JSON is --json: lake's JSON schema form.
	JSON bool
	// Version is --version: the table as it was at that kept version,
	// from the registration API (0: now, from discovery).
	Version int64
}

// NewCmdShow returns `lake show`. runF, when not nil, replaces showRun.
func NewCmdShow(f *Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{}
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show one table's exact schema (from discovery), description and properties (from the registration API)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.FlightClient, opts.APIClient, opts.Discovery, opts.Tenant = f.IO, f.FlightClient, f.APIClient, f.Discovery, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print only the schema, in lake's JSON schema form")
	cmd.Flags().Int64Var(&opts.Version, "version", 0, "show the table as it was at this kept version (lake history lists them)")
	return cmd
}

// Messages of show, after the table ref.
const (
	msgNotDiscovered = "table not found (a new registration appears after the next refresh)"
	msgNoSchema      = "no stored schema; `lake backfill` can add it from its Parquet files"
)

func showRun(ctx context.Context, opts *ShowOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	if opts.Version < 0 {
		return fmt.Errorf("--version takes a version number ≥ 1")
	}
	if opts.Version > 0 {
		return showVersion(ctx, opts, ref)
	}
	d, err := opts.FlightClient(ref.Tenant)
	if err != nil {
		return err
	}
	defer d.Close()
	nsp, tp := flightclient.EscapeLike(ref.Namespace), flightclient.EscapeLike(ref.Name)
	rows, err := d.Tables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: &nsp, TableNameFilterPattern: &tp, IncludeSchema: true})
	if status.Code(err) == codes.FailedPrecondition {
		return &refError{ref: ref, msg: msgNoSchema}
	}
	if err != nil {
		return discoveryErr(opts.Discovery, ref.String(), err)
	}
	if len(rows) == 0 {
		return &refError{ref: ref, msg: msgNotDiscovered, kind: catalog.ErrNotFound}
	}
	s := rows[0].Schema
	out := opts.IO.Out
	if opts.JSON {
		b, err := schemajson.Format(s)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, string(b))
		return nil
	}
	fmt.Fprintf(out, "%s  (%s, %d columns)\n", ref, rows[0].Type, s.NumFields())
	t := describe(ctx, opts, ref)
	desc, props := t.Description, t.Properties
	if desc != "" {
		fmt.Fprintf(out, "description: %s\n", strings.ReplaceAll(desc, "\n", "\n             "))
	}
	var rules []string
	if t.Compatibility != "" {
		rules = append(rules, "compatibility "+t.Compatibility)
	}
	if t.Protected {
		rules = append(rules, "protected from drops")
	}
	if len(rules) > 0 {
		fmt.Fprintf(out, "rules: %s\n", strings.Join(rules, ", "))
	}
	if err := printFields(out, s.Fields(), "  "); err != nil {
		return err
	}
	if len(props) > 0 {
		fmt.Fprintln(out, "properties:")
		for _, k := range slices.Sorted(maps.Keys(props)) {
			fmt.Fprintf(out, "  %s = %s\n", k, props[k])
		}
	}
	if md := s.Metadata(); md.Len() > 0 {
		fmt.Fprintln(out, "metadata:")
		for i, k := range md.Keys() {
			fmt.Fprintf(out, "  %s = %s\n", k, md.Values()[i])
		}
	}
	return nil
}

// describe reads ref's registration from the registration API, for its
// description, properties, compatibility mode and protection. They are
// extras to the schema: when the API cannot be asked (no credentials for
// it, unreachable) show says so on ErrOut and goes on; a table the API no
// longer has (dropped since the last refresh) has none.
func describe(ctx context.Context, opts *ShowOptions, ref catalog.TableRef) apiclient.Table {
	if opts.APIClient == nil {
		return apiclient.Table{}
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err == nil {
		var t apiclient.Table
		if t, err = c.Get(ctx, ref); err == nil {
			return t
		}
	}
	if !errors.Is(err, catalog.ErrNotFound) {
		fmt.Fprintf(opts.IO.ErrOut, "note: description, properties and rules not shown: %s\n", Message(err))
	}
	return apiclient.Table{}
}

// refError is a client-side error about a table: the ref, then what is
// wrong, each said once. It unwraps to kind (a catalog sentinel) when set.
type refError struct {
	ref  catalog.TableRef
	msg  string
	kind error
}

func (e *refError) Error() string { return e.ref.String() + ": " + e.msg }
func (e *refError) Unwrap() error { return e.kind }

// printFields prints a field tree's top level: name, type, nullability and
// the column's comment (its ARROW:FLIGHT:SQL:REMARKS metadata, after "--"),
// aligned by display width.
func printFields(w io.Writer, fs []arrow.Field, indent string) error {
	t := newTable(indent)
	for _, f := range fs {
		null := ""
		if !f.Nullable {
			null = "not null"
		}
		comment := ""
		if i := f.Metadata.FindKey(flightsql.RemarksKey); i >= 0 {
			comment = "-- " + f.Metadata.Values()[i]
		}
		t.add(f.Name, arrowtype.String(f.Type), null, comment)
	}
	return t.write(w)
}
