package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/wire"
)

// PreviewOptions are `lake preview`'s inputs.
type PreviewOptions struct {
	// IO receives the rows.
	IO IOStreams
	// APIClient returns the registration API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Tenant, Namespace and Table name the table (--tenant, -n, -t).
	Tenant, Namespace, Table string
	// Limit is --limit (0: the API's default); Columns is --columns.
	Limit   int
	Columns []string
	// JSON is --json: the API's answer (wire.Preview).
	JSON bool
}

// maxCellWidth is the most terminal cells a value takes in the table;
// longer values end with "…".
const maxCellWidth = 40

// NewCmdPreview returns `lake preview`. runF, when not nil, replaces
// previewRun.
func NewCmdPreview(f *Factory, runF func(context.Context, *PreviewOptions) error) *cobra.Command {
	opts := &PreviewOptions{}
	cmd := &cobra.Command{
		Use:   "preview",
		Short: "Show a table's first rows, read from its files",
		Long: fmt.Sprintf(`Asks the registration API for a table's first rows (GET …/tables/{table}/preview): lake reads
them from the table's Parquet files through the same door as lake credentials (the table's
vended credentials for s3://, the path under local mode's --data-root), as the registered
schema says, and prints them as a table: each column's name and exact type, the rows, and
what reading them took.

--limit is 1 to %d rows (default %d); --columns a,b reads those columns alone, in that
order. A preview is bounded (64 MiB read by default, a few previews at once per tenant): past
a cap the API says which. A file that does not match the registered schema is named, never
cast. Values longer than %d cells end with "…"; --json prints the API's answer whole.`,
			wire.MaxPreviewLimit, wire.DefaultPreviewLimit, maxCellWidth),
		Example: `  lake preview --tenant acme -n sales -t orders
  lake preview --tenant acme -n sales -t orders --limit 5 --columns order_id,total`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if opts.Limit < 0 || opts.Limit > wire.MaxPreviewLimit || (cmd.Flags().Changed("limit") && opts.Limit == 0) {
				return fmt.Errorf("--limit %d: want 1 to %d", opts.Limit, wire.MaxPreviewLimit)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return previewRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, fmt.Sprintf("rows to show, 1 to %d (default %d)", wire.MaxPreviewLimit, wire.DefaultPreviewLimit))
	cmd.Flags().StringSliceVar(&opts.Columns, "columns", nil, "columns to show, by name, in this order (default: all)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the API's answer as JSON")
	return cmd
}

// previewHint adds to err what to do about a refused preview, when there
// is something to say.
func previewHint(err error, tenant string) error {
	switch {
	case errors.Is(err, apiclient.ErrLocationNotAllowed), errors.Is(err, apiclient.ErrVendingNotConfigured), errors.Is(err, apiclient.ErrVendingFailed):
		return credentialsHint(err, tenant)
	case errors.Is(err, apiclient.ErrSchemaMismatch):
		return &hintedError{err: err, hint: "hint: lake show prints the registered schema; update it (lake update) or fix the file"}
	}
	return err
}

func previewRun(ctx context.Context, opts *PreviewOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	p, err := c.Preview(ctx, ref, opts.Limit, opts.Columns)
	if err != nil {
		return previewHint(err, ref.Tenant)
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // types such as list<item: utf8> as written
		return enc.Encode(p)
	}
	return writePreview(opts, p)
}

// writePreview prints p as a table: names, types, a rule, the rows, and a
// footer of what reading them took.
func writePreview(opts *PreviewOptions, p wire.Preview) error {
	w := opts.IO.Out
	t := newTable("")
	names, types := make([]string, len(p.Columns)), make([]string, len(p.Columns))
	for i, c := range p.Columns {
		names[i], types[i] = cell(c.Name), cell(c.Type)
	}
	rows := make([][]string, len(p.Rows))
	for r, row := range p.Rows {
		rows[r] = make([]string, len(row))
		for i, v := range row {
			rows[r][i] = cell(previewText(v))
		}
	}
	rule := make([]string, len(p.Columns))
	for i := range p.Columns {
		width := max(runewidth.StringWidth(names[i]), runewidth.StringWidth(types[i]))
		for _, row := range rows {
			width = max(width, runewidth.StringWidth(row[i]))
		}
		rule[i] = strings.Repeat("─", width)
	}
	t.add(names...)
	t.add(types...)
	t.add(rule...)
	for _, row := range rows {
		t.add(row...)
	}
	if err := t.write(w); err != nil {
		return err
	}
	more := ""
	if p.Truncated {
		more = "; more follow"
	}
	s := p.Stats
	_, err := fmt.Fprintf(w, "%s (limit %d%s) · %s, %s read, %d skipped, %s read\n", plural(len(p.Rows), "row"), p.Limit, more,
		plural(s.FilesOpened, "file"), plural(s.RowGroupsRead, "row group"), s.RowGroupsSkipped, plural(int(s.BytesRead), "byte"))
	return err
}

// previewText is a row value as the table shows it: null, numbers and
// strings as they are, nested values as JSON.
func previewText(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// cell makes s fit one table cell: control characters escaped as Go
// escapes them (a newline is \n), at most maxCellWidth cells, longer
// values cut with "…".
func cell(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		q := strconv.Quote(s)
		s = q[1 : len(q)-1]
	}
	return runewidth.Truncate(s, maxCellWidth, "…")
}
