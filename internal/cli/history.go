package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

// HistoryOptions are `lake history`'s inputs.
type HistoryOptions struct {
	IO        IOStreams
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Tenant, Namespace and Table name the table; CreationID
	// (--creation-id) a dropped registration's history (lake dropped).
	Tenant, Namespace, Table, CreationID string
	JSON                                 bool
}

// NewCmdHistory returns `lake history`. runF, when not nil, replaces
// historyRun.
func NewCmdHistory(f *Factory, runF func(context.Context, *HistoryOptions) error) *cobra.Command {
	opts := &HistoryOptions{}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List a table's kept versions, newest first: who made each change, how and when",
		Long: `List the kept versions of a table's registration (the newest 100 by default), newest first:
each version's operation (create, update, undrop), who made it (the IAM principal on AWS, the
token's subject locally), when, and its columns. With --creation-id, the history of a dropped
registration (lake dropped lists them). lake show --version V and lake diff --from V show one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return historyRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	cmd.Flags().StringVar(&opts.CreationID, "creation-id", "", "a dropped registration's creation id (default: the table registered now)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func historyRun(ctx context.Context, opts *HistoryOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	var all []apiclient.Table
	for before := int64(0); ; {
		page, next, err := c.History(ctx, ref, opts.CreationID, before, catalog.MaxHistoryPage)
		if err != nil {
			return err
		}
		all = append(all, page...)
		if next == 0 {
			break
		}
		before = next
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	t := newTable("")
	t.add("VERSION", "OP", "BY", "AT", "COLUMNS")
	for _, v := range all {
		cols := "-"
		if s, err := catalog.DecodeSchema(v.SchemaIPC); err == nil {
			cols = fmt.Sprint(s.NumFields())
		}
		t.add(fmt.Sprint(v.Version), orDash(v.Op), orDash(v.UpdatedBy), v.UpdatedAt.Format(time.RFC3339), cols)
	}
	if err := t.write(opts.IO.Out); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "%s of %s\n", plural(len(all), "version"), ref)
	return nil
}

// versionSchema is the table at version v as the API keeps it, with its
// decoded schema (nil when it had none).
func versionSchema(ctx context.Context, c *apiclient.Client, ref catalog.TableRef, v int64) (apiclient.Table, *arrow.Schema, error) {
	t, err := c.Version(ctx, ref, "", v)
	if errors.Is(err, catalog.ErrNotFound) {
		return t, nil, fmt.Errorf("%s: version %d is not kept (lake history lists the kept versions)", ref, v)
	}
	if err != nil || t.SchemaIPC == nil {
		return t, nil, err
	}
	s, err := catalog.DecodeSchema(t.SchemaIPC)
	if err != nil {
		return t, nil, fmt.Errorf("%s: version %d's schema does not decode: %w", ref, v, err)
	}
	return t, s, nil
}

// diffVersions prints what changed from version from to version to (0:
// the newest kept) as the registration API's diff answers it: the schema
// field by field, then the description, location, table type, mode,
// protection and properties.
func diffVersions(ctx context.Context, opts *DiffOptions, c *apiclient.Client, ref catalog.TableRef) error {
	d, err := c.Diff(ctx, ref, opts.CreationID, opts.From, opts.To)
	if errors.Is(err, catalog.ErrNotFound) {
		return fmt.Errorf("%s: %w (lake history lists the kept versions)", ref, err)
	}
	if err != nil {
		return err
	}
	out := opts.IO.Out
	if opts.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	if len(d.Lines) == 0 {
		fmt.Fprintf(out, "%s: no changes from version %d to %d\n", ref, d.From, d.To)
		return nil
	}
	// The schema's changes counted whole (the API sends the first
	// schemadiff.MaxChanges, and a line for the rest), then the others.
	n := max(d.SchemaChangesTotal, len(d.SchemaChanges)) + len(d.Changes)
	fmt.Fprintf(out, "%s: %s from version %d to %d:\n", ref, plural(n, "change"), d.From, d.To)
	for _, l := range d.Lines {
		fmt.Fprintln(out, "  "+l)
	}
	return nil
}

// showVersion prints the table as it was at opts.Version.
func showVersion(ctx context.Context, opts *ShowOptions, ref catalog.TableRef) error {
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	t, s, err := versionSchema(ctx, c, ref, opts.Version)
	if err != nil {
		return err
	}
	out := opts.IO.Out
	if s == nil {
		return &refError{ref: ref, msg: msgNoSchema}
	}
	if opts.JSON {
		b, err := schemajson.Format(s)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, string(b))
		return nil
	}
	fmt.Fprintf(out, "%s  (%s, %d columns) at version %d: %s by %s, %s\n", ref, t.TableType, s.NumFields(), t.Version,
		orDash(t.Op), orDash(t.UpdatedBy), t.UpdatedAt.Format(time.RFC3339))
	if t.Description != "" {
		fmt.Fprintf(out, "description: %s\n", t.Description)
	}
	return printFields(out, s.Fields(), "  ")
}
