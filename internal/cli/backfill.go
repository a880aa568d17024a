package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// backfillItem is one registration without a schema and what was found.
type backfillItem struct {
	ref      catalog.TableRef
	version  int64
	location string
	file     string
	ipc      []byte
	columns  int
	err      error
}

func (g *globals) backfillCmd() *cobra.Command {
	var apply bool
	var nsPattern string
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Give registrations without a schema the schema of their Parquet files (dry run unless --apply)",
		Long: `Finds the tenant's registrations that carry no schema (written before schemas were stored), reads
the schema from the first Parquet file at each table's location (a local path or s3:// prefix;
only the footer is read), and with --apply updates each with a conditional write: a
registration that changed meanwhile is never overwritten. Without --apply it lists what it
would change.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, err := g.needTenant()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			d, err := g.discoveryClient(tenant)
			if err != nil {
				return err
			}
			defer d.Close()
			api, err := g.apiClient(ctx, tenant)
			if err != nil {
				return err
			}
			opts := &flightsql.GetTablesOpts{}
			if nsPattern != "" {
				opts.DbSchemaFilterPattern = &nsPattern
			}
			rows, err := d.tables(ctx, opts)
			if err != nil {
				return err
			}
			items, err := g.findLegacy(ctx, api, tenant, rows)
			if err != nil {
				return err
			}
			if len(items) == 0 {
				fmt.Fprintf(g.out, "every one of %d tables has a schema; nothing to backfill\n", len(rows))
				return nil
			}
			s3c, _ := s3Client(ctx) // only needed for s3:// locations; errors surface per table
			p := newProgress(g.errOut, len(items))
			for i := range items {
				it := &items[i]
				s, file, err := parquetschema.FromLocation(ctx, it.location, s3c)
				if err == nil {
					it.ipc, err = catalog.EncodeSchema(s)
					it.columns = s.NumFields()
				}
				it.file, it.err = file, err
				p.step()
			}
			p.done()
			changed, failed, conflicts := 0, 0, 0
			for i := range items {
				it := &items[i]
				switch {
				case it.err != nil:
					failed++
					fmt.Fprintf(g.out, "skip    %s: %v\n", it.ref, it.err)
				case !apply:
					fmt.Fprintf(g.out, "would   %s: %d columns from %s\n", it.ref, it.columns, it.file)
				default:
					_, err := api.backfill(ctx, it.ref, it.version, it.ipc)
					var ae *apiError
					switch {
					case err == nil:
						changed++
						fmt.Fprintf(g.out, "updated %s: %d columns from %s\n", it.ref, it.columns, it.file)
					case errors.As(err, &ae) && (ae.Status == 409 || ae.Status == 412 || ae.Status == 404):
						conflicts++
						fmt.Fprintf(g.out, "left    %s: it changed since it was read (%s)\n", it.ref, ae.Code)
					default:
						failed++
						fmt.Fprintf(g.out, "failed  %s: %v\n", it.ref, err)
					}
				}
			}
			if !apply {
				fmt.Fprintf(g.out, "dry run: %d of %d tables lack a schema; %d can be backfilled, %d cannot. Run again with --apply.\n",
					len(items), len(rows), len(items)-failed, failed)
				return nil
			}
			fmt.Fprintf(g.out, "backfill: %d updated, %d changed meanwhile and left alone, %d failed (of %d without a schema)\n", changed, conflicts, failed, len(items))
			if failed > 0 {
				return fmt.Errorf("%d tables could not be backfilled", failed)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&apply, "apply", false, "write the schemas (default: dry run)")
	cmd.Flags().StringVarP(&nsPattern, "namespace", "n", "", "only namespaces matching this LIKE pattern")
	return cmd
}

// findLegacy reads each listed table's registration (strongly consistent)
// and keeps those without a schema.
func (g *globals) findLegacy(ctx context.Context, api *apiClient, tenant string, rows []tableRow) ([]backfillItem, error) {
	var items []backfillItem
	p := newProgress(g.errOut, len(rows))
	defer p.done()
	for _, r := range rows {
		ref := catalog.TableRef{Tenant: tenant, Namespace: r.Namespace, Name: r.Name}
		t, err := api.get(ctx, ref)
		p.step()
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == 404 {
			continue // dropped since the snapshot
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		if len(t.SchemaIPC) == 0 {
			items = append(items, backfillItem{ref: ref, version: t.Version, location: t.Location})
		}
	}
	return items, nil
}

// progress draws "[n/total]" on a terminal-ish writer for long runs.
type progress struct {
	w          interface{ Write([]byte) (int, error) }
	n, total   int
	last       time.Time
	wroteFirst bool
}

func newProgress(w interface{ Write([]byte) (int, error) }, total int) *progress {
	return &progress{w: w, total: total}
}

func (p *progress) step() {
	p.n++
	if p.total < 20 || time.Since(p.last) < 200*time.Millisecond && p.n < p.total {
		return
	}
	p.last = time.Now()
	width := 30
	filled := width * p.n / p.total
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = '.'
		if i < filled {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(p.w, "\r[%s] %d/%d", bar, p.n, p.total)
	p.wroteFirst = true
}

func (p *progress) done() {
	if p.wroteFirst {
		fmt.Fprintln(p.w)
		p.wroteFirst = false
	}
}
