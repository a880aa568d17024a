// Package backfill gives registrations written before schemas were stored
// the schema of their Parquet files: it reads each listed table's
// registration through the registration API, reads the footer of the first
// Parquet file at the location of each one without a schema, and (when
// applying) updates it with a conditional write (If-Match on the ETag
// read and only_if_no_schema), so a registration that changed meanwhile is
// never overwritten; it is reported instead.
//
// Locations are written by tenants and read with the operator's
// credentials, so a backfill reads only inside its Scope (allowed s3://
// prefixes, a local root) and refuses every other location: the table is
// reported as refused and its location never read.
package backfill

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// API is what a backfill needs of the registration API; *apiclient.Client
// implements it. Errors are *apiclient.Error kinds (catalog sentinels).
type API interface {
	Get(ctx context.Context, ref catalog.TableRef) (apiclient.Table, error)
	Update(ctx context.Context, ref catalog.TableRef, spec apiclient.Spec, opts apiclient.UpdateOptions) (apiclient.Table, error)
}

var _ API = (*apiclient.Client)(nil)

// Progress is told how many steps a phase has, each step, and the phase's
// end. Bar draws one on a terminal.
type Progress interface {
	Start(total int)
	Step()
	Done()
}

// Options configures Run.
type Options struct {
	// API reads and updates registrations. Required.
	API API
	// S3 returns the client for s3:// locations; it is called at most once,
	// on the first such location inside Scope. Nil makes s3:// locations
	// fail (per table, like any unreadable location).
	S3 func(ctx context.Context) (parquetschema.S3API, error)
	// Scope is where locations may be read; any other is refused. The
	// zero Scope refuses every location.
	Scope Scope
	// Apply writes the schemas; false is a dry run that only reports.
	Apply bool
	// Out receives one line per table without a schema and a summary.
	// Default io.Discard.
	Out io.Writer
	// Progress, when set, follows the reads (registrations, then footers).
	Progress Progress
}

// Report counts what Run found and did.
type Report struct {
	// Tables is how many tables were listed (and still registered).
	Tables int
	// WithoutSchema is how many of them had no schema.
	WithoutSchema int
	// Readable is how many of those had a readable Parquet footer.
	Readable int
	// Updated is how many were updated (zero in a dry run).
	Updated int
	// Left is how many changed between the read and the write (or were
	// dropped) and were left alone.
	Left int
	// Failed is how many could not be backfilled: no readable footer, or a
	// write that failed for another reason.
	Failed int
	// Refused is how many had a location outside the Scope, never read.
	Refused int
}

// item is one registration without a schema and what was found.
type item struct {
	ref      catalog.TableRef
	etag     string
	location string
	file     string
	ipc      []byte
	columns  int
	err      error
	refused  bool
}

// Run backfills refs (the tenant's tables as discovery lists them). It
// returns an error when opts.Scope is invalid or a registration cannot be
// read (nothing is written then), and, when applying, when some table
// could not be backfilled (refused ones included); either way the lines
// already written to Out say what happened.
func Run(ctx context.Context, refs []catalog.TableRef, opts Options) (Report, error) {
	sc, err := opts.Scope.open()
	if err != nil {
		return Report{}, err
	}
	defer sc.close()
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	p := opts.Progress
	if p == nil {
		p = nopProgress{}
	}
	var rep Report
	items, err := find(ctx, opts.API, refs, p, &rep)
	if err != nil {
		return rep, err
	}
	rep.WithoutSchema = len(items)
	if len(items) == 0 {
		fmt.Fprintf(out, "every one of %d tables has a schema; nothing to backfill\n", rep.Tables)
		return rep, nil
	}
	s3c := lazyS3{get: opts.S3}
	p.Start(len(items))
	for i := range items {
		it := &items[i]
		var client parquetschema.S3API
		t, err := sc.check(it.location)
		it.err = err
		it.refused = err != nil
		if it.err == nil && t.s3 {
			client, it.err = s3c.client(ctx)
		}
		if it.err == nil {
			s, file, err := sc.read(ctx, it.location, t, client)
			if err == nil {
				it.ipc, err = catalog.EncodeSchema(s)
				it.columns = s.NumFields()
			}
			it.file, it.err = file, err
		}
		switch {
		case it.refused:
			rep.Refused++
		case it.err == nil:
			rep.Readable++
		}
		p.Step()
	}
	p.Done()
	for i := range items {
		it := &items[i]
		switch {
		case it.refused:
			fmt.Fprintf(out, "refused %s: %v\n", it.ref, it.err)
		case it.err != nil:
			rep.Failed++
			fmt.Fprintf(out, "skip    %s: %v\n", it.ref, it.err)
		case !opts.Apply:
			fmt.Fprintf(out, "would   %s: %d columns from %s\n", it.ref, it.columns, it.file)
		default:
			_, err := opts.API.Update(ctx, it.ref, apiclient.Spec{SchemaIPC: it.ipc},
				apiclient.UpdateOptions{IfMatch: it.etag, OnlyIfNoSchema: true})
			switch {
			case err == nil:
				rep.Updated++
				fmt.Fprintf(out, "updated %s: %d columns from %s\n", it.ref, it.columns, it.file)
			case errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrNotFound):
				rep.Left++
				fmt.Fprintf(out, "left    %s: it changed since it was read (%s)\n", it.ref, code(err))
			default:
				rep.Failed++
				fmt.Fprintf(out, "failed  %s: %v\n", it.ref, err)
			}
		}
	}
	if !opts.Apply {
		fmt.Fprintf(out, "dry run: %d of %d tables lack a schema; %d can be backfilled, %d cannot, %d refused. Run again with --apply.\n",
			rep.WithoutSchema, rep.Tables, rep.Readable, rep.WithoutSchema-rep.Readable-rep.Refused, rep.Refused)
		return rep, nil
	}
	fmt.Fprintf(out, "backfill: %d updated, %d changed meanwhile and left alone, %d failed, %d refused (of %d without a schema)\n",
		rep.Updated, rep.Left, rep.Failed, rep.Refused, rep.WithoutSchema)
	if n := rep.Failed + rep.Refused; n > 0 {
		return rep, fmt.Errorf("backfill: %d of %d tables could not be backfilled", n, rep.WithoutSchema)
	}
	return rep, nil
}

// find reads each listed table's registration (strongly consistent) and
// keeps those without a schema; a table dropped since the listing is not
// counted.
func find(ctx context.Context, api API, refs []catalog.TableRef, p Progress, rep *Report) ([]item, error) {
	var items []item
	p.Start(len(refs))
	defer p.Done()
	for _, ref := range refs {
		t, err := api.Get(ctx, ref)
		p.Step()
		if errors.Is(err, catalog.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("backfill: read %w", err)
		}
		rep.Tables++
		if len(t.SchemaIPC) == 0 {
			items = append(items, item{ref: ref, etag: t.ETag, location: t.Location})
		}
	}
	return items, nil
}

// code is the API's error code, or the error itself for other errors.
func code(err error) string {
	if ae, ok := errors.AsType[*apiclient.Error](err); ok {
		return ae.Code
	}
	return err.Error()
}

// lazyS3 builds the S3 client on first use and keeps it (or its error).
type lazyS3 struct {
	get  func(ctx context.Context) (parquetschema.S3API, error)
	done bool
	c    parquetschema.S3API
	err  error
}

func (l *lazyS3) client(ctx context.Context) (parquetschema.S3API, error) {
	if !l.done {
		l.done = true
		if l.get == nil {
			l.err = errors.New("no S3 client configured")
		} else {
			l.c, l.err = l.get(ctx)
		}
	}
	return l.c, l.err
}

type nopProgress struct{}

func (nopProgress) Start(int) {}
func (nopProgress) Step()     {}
func (nopProgress) Done()     {}
