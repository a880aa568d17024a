package sqlcatalog

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// BatchBytes is the most bytes one record batch of a result holds (a
// single larger row gets a batch of its own).
const BatchBytes = 1 << 20

// Result is a statement's answer as Arrow record batches. It is immutable
// and safe for concurrent use; Batches hands out references.
type Result struct {
	// Schema is the result's schema: each column int64, float64, utf8 or
	// binary, nullable.
	Schema *arrow.Schema
	// Rows and Bytes count the result.
	Rows, Bytes int
	batches     []arrow.RecordBatch
}

// Size is the bytes the result's Arrow buffers hold.
func (r *Result) Size() int64 {
	var n int64
	for _, b := range r.batches {
		for _, c := range b.Columns() {
			for _, buf := range c.Data().Buffers() {
				if buf != nil {
					n += int64(buf.Len())
				}
			}
		}
	}
	return n
}

// release frees the batches of a result never handed out.
func (r *Result) release() {
	for _, b := range r.batches {
		b.Release()
	}
	r.batches = nil
}

// Batches returns the result's record batches, each retained once for the
// caller to release.
func (r *Result) Batches() []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, len(r.batches))
	for i, b := range r.batches {
		b.Retain()
		out[i] = b
	}
	return out
}

// kind is a result column's Arrow type.
type kind int

const (
	kindNull kind = iota // no value seen yet
	kindInt
	kindFloat
	kindText
	kindBlob
)

// merge widens k to hold v too: integers and reals widen to float64, mixed
// text and numbers to utf8.
func merge(k kind, v any) kind {
	var vk kind
	switch v.(type) {
	case nil:
		return k
	case int64:
		vk = kindInt
	case float64:
		vk = kindFloat
	case []byte:
		vk = kindBlob
	default:
		vk = kindText
	}
	switch {
	case k == kindNull || k == vk:
		return vk
	case (k == kindInt || k == kindFloat) && (vk == kindInt || vk == kindFloat):
		return kindFloat
	default:
		return kindText
	}
}

// declared is the kind of a column of the views with no value to go by.
func declared(decl string) kind {
	switch strings.ToUpper(decl) {
	case "INTEGER":
		return kindInt
	case "REAL":
		return kindFloat
	case "BLOB":
		return kindBlob
	default:
		return kindText
	}
}

func valueBytes(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) + 4
	case []byte:
		return len(v) + 4
	default:
		return 8
	}
}

// rowOverhead is what one collected value costs beyond its bytes (see
// valueBytes): the interface holding it and its slice slot.
const rowOverhead = 16

// chargeStep is how many bytes collect gathers before charging them to
// its reservation at once.
const chargeStep = 64 << 10

// collect reads every row, within the engine's limits, and lays them out
// as Arrow. A column's type is what its values are (see merge), or, when
// all are NULL, its declared type in the views. ctx is checked at every
// row. r is charged as rows are gathered, then for the Arrow batches; the
// gathered rows' charge is given back once the batches hold the result.
func (e *Engine) collect(ctx context.Context, rows driver.Rows, r *Reservation) (*Result, error) {
	names := rows.Columns()
	n := len(names)
	decl := make([]string, n)
	if ct, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		for i := range decl {
			decl[i] = ct.ColumnTypeDatabaseTypeName(i)
		}
	}
	cols := make([][]any, n)
	kinds := make([]kind, n)
	vals := make([]driver.Value, n)
	var total, rowCount int
	var rowSizes []int
	// gathered is what the rows hold in Go values; charged, what of it r
	// holds.
	var gathered, charged int64
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := rows.Next(vals); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if rowCount == e.limits.MaxRows {
			return nil, &Error{Kind: ErrLimit, Offset: -1,
				Msg: fmt.Sprintf("sql: the result has more than %d rows; narrow it with WHERE or LIMIT", e.limits.MaxRows)}
		}
		size := 0
		for i, v := range vals {
			if t, ok := v.(time.Time); ok {
				v = t.UTC().Format(time.RFC3339Nano)
			}
			if b, ok := v.([]byte); ok {
				v = append([]byte(nil), b...)
			}
			cols[i] = append(cols[i], v)
			kinds[i] = merge(kinds[i], v)
			size += valueBytes(v)
		}
		total += size
		if total > e.limits.MaxBytes {
			return nil, &Error{Kind: ErrLimit, Offset: -1,
				Msg: fmt.Sprintf("sql: the result holds more than %d bytes; narrow it with WHERE or LIMIT", e.limits.MaxBytes)}
		}
		rowSizes = append(rowSizes, size)
		rowCount++
		gathered += int64(size + n*rowOverhead + 8)
		if gathered-charged >= chargeStep {
			if err := r.Grow(gathered - charged); err != nil {
				return nil, err
			}
			charged = gathered
		}
	}
	if err := r.Grow(gathered - charged); err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, n)
	for i := range fields {
		if kinds[i] == kindNull {
			kinds[i] = declared(decl[i])
		}
		fields[i] = arrow.Field{Name: names[i], Type: arrowType(kinds[i]), Nullable: true}
	}
	res := &Result{Schema: arrow.NewSchema(fields, nil), Rows: rowCount, Bytes: total}
	lo, size := 0, 0
	for r := 0; r < rowCount; r++ {
		if r > lo && size+rowSizes[r] > BatchBytes {
			res.batches = append(res.batches, e.batch(res.Schema, kinds, cols, lo, r))
			lo, size = r, 0
		}
		size += rowSizes[r]
	}
	if rowCount > lo || len(res.batches) == 0 {
		res.batches = append(res.batches, e.batch(res.Schema, kinds, cols, lo, rowCount))
	}
	// The batches hold the result now; the gathered values are garbage.
	if err := r.Grow(res.Size()); err != nil {
		res.release()
		return nil, err
	}
	r.Shrink(gathered)
	return res, nil
}

func arrowType(k kind) arrow.DataType {
	switch k {
	case kindInt:
		return arrow.PrimitiveTypes.Int64
	case kindFloat:
		return arrow.PrimitiveTypes.Float64
	case kindBlob:
		return arrow.BinaryTypes.Binary
	default:
		return arrow.BinaryTypes.String
	}
}

// text is v as SQLite would print it.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []byte:
		return string(v)
	default:
		return fmt.Sprint(v)
	}
}

// batch builds the record batch of rows [lo, hi).
func (e *Engine) batch(schema *arrow.Schema, kinds []kind, cols [][]any, lo, hi int) arrow.RecordBatch {
	b := array.NewRecordBuilder(e.mem, schema)
	defer b.Release()
	for i, k := range kinds {
		fb := b.Field(i)
		fb.Reserve(hi - lo)
		for _, v := range cols[i][lo:hi] {
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch k {
			case kindInt:
				fb.(*array.Int64Builder).Append(v.(int64))
			case kindFloat:
				switch x := v.(type) {
				case int64:
					fb.(*array.Float64Builder).Append(float64(x))
				default:
					fb.(*array.Float64Builder).Append(x.(float64))
				}
			case kindBlob:
				fb.(*array.BinaryBuilder).Append(v.([]byte))
			default:
				fb.(*array.StringBuilder).Append(text(v))
			}
		}
	}
	return b.NewRecordBatch()
}
