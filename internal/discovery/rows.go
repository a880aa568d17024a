package discovery

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lake-catalog/lake/internal/preview"
	"github.com/lake-catalog/lake/internal/sqlcatalog"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// Rows. A statement naming one of the caller's registered tables
// (SELECT * FROM sales.orders LIMIT 10, a SQL tool's data tab) reads that
// table's rows (issue 42): the tenant's SQL engine mounts the table as a
// virtual table (sqlcatalog, datatable.go) whose rows sqlData reads with
// package preview, through the table's access from Options.Door (vended,
// table-scoped credentials for s3://, a path under local mode's data root)
// and never another. The reads are network I/O on that statement alone:
// metadata answers (GetTables and the rest, information_schema) never
// read a file. A read is bounded by preview's caps (Options.Rows.Limits:
// 64 MiB read by default), the statement's time budget and result caps,
// the batches it holds are charged to the budget of results in flight,
// Options.Rows.Gate bounds the reads in progress per tenant, and
// Options.Rows.Reads the reads running at once in the process (the
// others wait their turn within their statement's budget), so that reads
// neither starve the catalog's answers of cores nor outgrow memory. Without a Door a statement over a table's rows is refused, saying
// where the data is.

// RowsOptions configure reading tables' rows.
type RowsOptions struct {
	// S3Config is the AWS configuration S3 clients that read s3:// files
	// are built from (endpoint settings); their credentials are always
	// the table's vended ones. S3PathStyle is path-style addressing.
	S3Config    aws.Config
	S3PathStyle bool
	// Limits bound each read (zero fields: preview's defaults).
	Limits preview.Limits
	// Gate bounds reads in progress per tenant, refusing past it at once;
	// nil: preview.NewGate(0, 0).
	Gate *preview.Gate
	// Reads is how many reads run at once in the whole process; one more
	// waits for a turn, within its statement's budget. Reading and
	// decoding a file's pages takes a core and tens of megabytes while it
	// lasts (a 20-column file of 1 MiB pages: ~35 ms and ~45 MiB), so
	// more at once than half the cores would starve the catalog's own
	// answers and outgrow the memory budget. 0 means DefaultRowsReads().
	Reads int
}

// DefaultRowsReads is RowsOptions.Reads' default: half the cores
// (GOMAXPROCS), at least one.
func DefaultRowsReads() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// sqlData is a tenant's registered tables as its SQL engine reads them.
type sqlData struct {
	s      *Service
	tenant string
	ts     *tenantState
	// schemas are decoded once per engine.
	mu      sync.Mutex
	schemas map[int]*arrow.Schema
}

var _ sqlcatalog.Data = (*sqlData)(nil)

// errNoRowSchema is a registered table without a readable schema.
var errNoRowSchema = errors.New("the table has no schema to read its rows as")

func (d *sqlData) Schema(ns, name string) (*arrow.Schema, error) {
	i, ok := d.ts.find(ns, name)
	if !ok {
		return nil, fmt.Errorf("no table %s.%s", ns, name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if sc, ok := d.schemas[i]; ok {
		return sc, nil
	}
	b := d.ts.schema(i)
	if len(b) == 0 {
		return nil, errNoRowSchema
	}
	sc, err := catalog.DecodeSchema(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoRowSchema, err)
	}
	if d.schemas == nil {
		d.schemas = map[int]*arrow.Schema{}
	}
	d.schemas[i] = sc
	return sc, nil
}

// Open reads ns.name's rows through the Door, admitted by the gate.
func (d *sqlData) Open(ctx context.Context, ns, name string, req preview.Request) (sqlcatalog.Rows, error) {
	i, ok := d.ts.find(ns, name)
	if !ok {
		return nil, fmt.Errorf("no table %s.%s", ns, name)
	}
	access, err := d.s.opts.Door.Credentials(ctx, vending.TableRequest{Who: "sql:" + d.tenant, Tenant: d.tenant, Namespace: ns, Table: name,
		Location: d.ts.cols.Location.Value(i), Allowed: d.ts.settings().AllowedPrefixes})
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", ns, name, err)
	}
	files, err := preview.FilesFor(access, d.s.opts.Rows.S3Config, d.s.opts.Rows.S3PathStyle)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", ns, name, err)
	}
	return preview.Open(ctx, files, req, d.s.opts.Rows.Limits, d.s.mem)
}

// enterRows admits one statement over tables' rows of tenant's: a place
// under the tenant's gate (refused at once past it), then a turn among
// the process's reads (waited for within ctx). A statement holds both
// for its whole run, whatever number of tables and scans it reads (a
// join's inner scans wait for no one). release gives them back.
func (s *Service) enterRows(ctx context.Context, tenant string) (release func(), err error) {
	leave, err := s.rowsGate.Enter(tenant)
	if err != nil {
		return nil, status.Errorf(codes.ResourceExhausted, "sql: %v: at most %d statements over tables' rows at once per tenant; retry shortly", err, preview.DefaultPerTenant)
	}
	select {
	case s.rowsTurns <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return func() {
		<-s.rowsTurns
		leave()
	}, nil
}
