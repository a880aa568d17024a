// Package preview reads a table's first rows from its Parquet files,
// bounded: the files are reached through the vending Door's answer (a local
// path under local mode's data root, or table-scoped credentials for
// s3://; FilesFor), only the asked columns are read, reading stops at the
// limit, row groups whose footer statistics rule out a filter are skipped,
// and bytes read, files opened and rows are capped. It is pure Go
// (arrow-go's parquet/pqarrow), so discovery stays static.
//
// Every surface that shows rows reads them here: the SQL layer's virtual
// tables (internal/sqlcatalog, through Flight SQL), the registration API's
// GET …/tables/{t}/preview (and `lake preview`, the catalog browser's
// Preview tab through it).
package preview

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/pkg/wire"
)

// Limits bound one preview. Zero fields take the defaults.
type Limits struct {
	// MaxBytes is the most bytes read from the files, footers included.
	// Default DefaultMaxBytes.
	MaxBytes int64
	// MaxFiles is the most files opened. Default DefaultMaxFiles.
	MaxFiles int
	// MaxListed is the most objects listed at the location before the
	// first is read. Default DefaultMaxListed.
	MaxListed int
	// MaxRows is the most rows read. Default DefaultMaxRows.
	MaxRows int64
	// MaxFooterBytes is the largest Parquet footer read. Default
	// DefaultMaxFooterBytes.
	MaxFooterBytes int64
}

// Defaults of Limits.
const (
	DefaultMaxBytes       = 64 << 20
	DefaultMaxFiles       = 100
	DefaultMaxListed      = 10_000
	DefaultMaxRows        = 10_000
	DefaultMaxFooterBytes = 8 << 20
)

// Op is a Filter's comparison.
type Op uint8

// Ops of a Filter.
const (
	OpEq Op = iota + 1
	OpLt
	OpLe
	OpGt
	OpGe
	OpIsNull
	OpIsNotNull
)

// Filter is one conjunct of the caller's predicate: column Column (an index
// into Request.Schema's fields) compared with a literal. Filters only skip
// row groups whose footer statistics rule them out; rows are not filtered
// here (the caller applies its predicate to the rows it reads). Value is
// int64, float64, string or []byte (SQLite's value kinds); nil for
// OpIsNull and OpIsNotNull.
//
// Comparisons skip on top-level columns of the signed integer types (an
// int64 value exactly, a float64 one in float64), float32 and float64 (NaN
// skips nothing), string and binary (a string or []byte value, compared as
// bytes, from statistics in Parquet's type-defined order only) and bool
// (an int64 value 0 or 1); IS NULL and IS NOT NULL on any column with null
// counts. Any other type (dates, timestamps, decimals, unsigned integers),
// a value of another kind, or a row group without statistics arrow-go
// trusts skips nothing. A comparison on a nullable column the file lacks
// skips all its row groups (every row is null).
type Filter struct {
	Column int
	Op     Op
	Value  any
}

// Request is one preview.
type Request struct {
	// Table names the table in errors ("namespace.table").
	Table string
	// Schema is the table's registered schema: what the rows are read as.
	Schema *arrow.Schema
	// Columns are the fields of Schema read, ascending; nil reads all,
	// an empty slice none (batches of rows without columns, counted from
	// the footers).
	Columns []int
	// Limit is the most rows read; reaching it ends the rows (io.EOF).
	// A Limit <= 0 or over Limits.MaxRows reads up to MaxRows rows, and a
	// row past them is a *LimitError on "rows" once those are returned:
	// a preview never cuts rows short where the caller set no bound at or
	// under the cap.
	Limit int64
	// Filters skip row groups (see Filter).
	Filters []Filter
}

// Stats count what a preview did: the objects listed and the files
// opened; the row groups of the opened files read (at least one batch) and
// skipped by the filters; the bytes fetched from the store, footers
// included; the rows returned.
type Stats struct {
	FilesListed, FilesOpened        int
	RowGroupsRead, RowGroupsSkipped int
	BytesRead, Rows                 int64
}

// LimitError is a preview stopped by one of its caps: Limit names it
// ("bytes read", "files opened", "objects listed", "rows", "footer bytes",
// "concurrent previews"), Max is its value. "objects listed" is reported
// when the listing stopped at MaxListed and the rows ran out before the
// limit (the objects not listed might hold more).
type LimitError struct {
	Table string
	Limit string
	Max   int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("preview of %s: past the cap on %s (%d)", e.Table, e.Limit, e.Max)
}

// MismatchError is a file whose schema does not match the registration:
// rows are never cast silently. File is its location (s3://… or file://…).
// Each asked column must be in the file by name with the registered Arrow
// type (field metadata, list element names and nested fields required in
// the file but nullable in the table aside; int32 is not int64), and not
// nullable where the table requires it; a nullable column the file lacks
// reads as nulls, a required one is a mismatch. An object at the location
// that is not Parquet (it does not end in PAR1, its footer does not
// decode, or it is encrypted) is a MismatchError too: never skipped
// silently.
type MismatchError struct {
	Table, File, Reason string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("preview of %s: file %s does not match the registered schema: %s", e.Table, e.File, e.Reason)
}

// Reader reads a table's rows: its files in key order, each file's row
// groups in order, only the asked columns, until the limit. It is not safe
// for concurrent use. Errors stick: after one, Next returns it again.
// Store errors (an object gone, access denied) are returned wrapped, so
// errors.Is and errors.As reach them; they name the object (Files'
// contract).
type Reader struct {
	impl *reader
}

// Open starts reading req's table from files under lim; mem allocates the
// rows (a caller charging a memory budget passes its allocator). It lists
// the location (up to Limits.MaxListed objects) and reads nothing else yet.
func Open(ctx context.Context, files icebergsync.Files, req Request, lim Limits, mem memory.Allocator) (*Reader, error) {
	return open(ctx, files, req, lim, mem)
}

// Schema is the schema of the batches Next returns: req.Columns of the
// registered schema, in order.
func (r *Reader) Schema() *arrow.Schema { return r.impl.schema() }

// Next returns the next batch of rows (the caller releases it), or io.EOF
// once the limit is reached or the files are read. ctx bounds the reads
// the call makes.
func (r *Reader) Next(ctx context.Context) (arrow.RecordBatch, error) { return r.impl.next(ctx) }

// Stats counts what the reader has done so far.
func (r *Reader) Stats() Stats { return r.impl.stats() }

// Close frees what the reader holds.
func (r *Reader) Close() error { return r.impl.close() }

// Read reads up to req.Limit rows whole: the batches (the caller releases
// them) and what reading them took. On an error it returns no batches,
// the stats so far and the error.
func Read(ctx context.Context, files icebergsync.Files, req Request, lim Limits, mem memory.Allocator) ([]arrow.RecordBatch, Stats, error) {
	return read(ctx, files, req, lim, mem)
}

// FilesFor is the Files the Door's answer reaches: a local root for
// wire.AccessPath, an S3 client with the vended credentials for
// wire.AccessVended (built from cfg's endpoint settings; pathStyle for
// S3-compatible servers).
func FilesFor(access wire.Credentials, cfg aws.Config, pathStyle bool) (icebergsync.Files, error) {
	return filesFor(access, cfg, pathStyle)
}

// Gate bounds previews in progress: at most perTenant for one tenant and
// total for the process. It is safe for concurrent use.
type Gate struct {
	impl *gate
}

// NewGate returns a Gate (<= 0: DefaultPerTenant, DefaultTotal).
func NewGate(perTenant, total int) *Gate { return &Gate{impl: newGate(perTenant, total)} }

// Defaults of NewGate.
const (
	DefaultPerTenant = 4
	DefaultTotal     = 64
)

// Enter admits one preview of tenant's, or answers a *LimitError on
// "concurrent previews" (its Table is "tenant <tenant>") at once; the
// caller calls release when done (once; later calls do nothing).
func (g *Gate) Enter(tenant string) (release func(), err error) { return g.impl.enter(tenant) }
