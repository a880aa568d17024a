package sqlcatalog

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

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
	// Data says the statement read registered tables' rows (a result of
	// their files as they were when it ran, not of the catalog alone).
	Data    bool
	batches []arrow.RecordBatch
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

// kind is a result column's Arrow type, or a value's.
type kind uint8

const (
	kindNull kind = iota // no value seen yet; a NULL value
	kindInt
	kindFloat
	kindText
	kindBlob
)

// merge widens k to hold a value of kind v too: integers and reals widen
// to float64, mixed text and numbers to utf8.
func merge(k, v kind) kind {
	switch {
	case v == kindNull:
		return k
	case k == kindNull || k == v:
		return v
	case (k == kindInt || k == kindFloat) && (v == kindInt || v == kindFloat):
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

// column is one result column as its rows are gathered, typed, with no Go
// value per cell: each row's kind, the numbers in order (int64 or float64
// bits), and the texts and blobs in order as one run of bytes.
type column struct {
	kind  kind   // the column's type so far (merge)
	kinds []kind // each row's
	nums  []uint64
	data  []byte
	ends  []int // where each text or blob ends in data

	// Where the next batch starts reading nums and ends (batch).
	num, str int
}

// The add methods append one row's value and return the bytes it counts
// for: a text or blob its length and 4, anything else 8.

func (c *column) addNull() int {
	c.kinds = append(c.kinds, kindNull)
	return 8
}

func (c *column) addNumber(k kind, bits uint64) int {
	c.kinds = append(c.kinds, k)
	c.nums = append(c.nums, bits)
	c.kind = merge(c.kind, k)
	return 8
}

func (c *column) addBytes(k kind, b []byte) int {
	c.kinds = append(c.kinds, k)
	c.data = append(c.data, b...)
	c.ends = append(c.ends, len(c.data))
	c.kind = merge(c.kind, k)
	return len(b) + 4
}

// rowOverhead is what one gathered value costs beyond its bytes (see
// column's add methods): its kind and its number or end offset.
const rowOverhead = 16

// chargeStep is how many bytes collect gathers before charging them to
// its reservation at once.
const chargeStep = 64 << 10

// collect reads every row of s, within the engine's limits, and lays them
// out as Arrow. A column's type is what its values are (see merge), or,
// when all are NULL, its declared type in the views. ctx is checked at
// every row. r is charged as rows are gathered, then for the Arrow
// batches; the gathered rows' charge is given back once the batches hold
// the result.
func (e *Engine) collect(ctx context.Context, s *statement, r *Reservation) (*Result, error) {
	names, decl := s.columns()
	n := len(names)
	cols := make([]column, n)
	var total, rowCount int
	var rowSizes []int
	// gathered is what the rows hold in Go memory; charged, what of it r
	// holds.
	var gathered, charged int64
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if ok, err := s.step(); err != nil {
			return nil, err
		} else if !ok {
			break
		}
		if rowCount == e.limits.MaxRows {
			return nil, &Error{Kind: ErrLimit, Offset: -1,
				Msg: fmt.Sprintf("sql: the result has more than %d rows; narrow it with WHERE or LIMIT", e.limits.MaxRows)}
		}
		size := s.read(cols)
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
		if cols[i].kind == kindNull {
			cols[i].kind = declared(decl[i])
		}
		fields[i] = arrow.Field{Name: names[i], Type: arrowType(cols[i].kind), Nullable: true}
	}
	res := &Result{Schema: arrow.NewSchema(fields, nil), Rows: rowCount, Bytes: total}
	lo, size := 0, 0
	for r := 0; r < rowCount; r++ {
		if r > lo && size+rowSizes[r] > BatchBytes {
			res.batches = append(res.batches, e.batch(res.Schema, cols, lo, r))
			lo, size = r, 0
		}
		size += rowSizes[r]
	}
	if rowCount > lo || len(res.batches) == 0 {
		res.batches = append(res.batches, e.batch(res.Schema, cols, lo, rowCount))
	}
	if types := e.registeredTypes(s); types != nil {
		retype(e.mem, res, types)
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

// batch builds the record batch of rows [lo, hi); batches are built in
// order (see column.appendTo).
func (e *Engine) batch(schema *arrow.Schema, cols []column, lo, hi int) arrow.RecordBatch {
	b := array.NewRecordBuilder(e.mem, schema)
	defer b.Release()
	for i := range cols {
		cols[i].appendTo(b.Field(i), lo, hi)
	}
	return b.NewRecordBatch()
}

// appendTo appends rows [lo, hi) to fb, the builder of c's type, room
// for them reserved first. Batches are built in order: c keeps where the
// next one starts reading its numbers and bytes.
func (c *column) appendTo(fb array.Builder, lo, hi int) {
	kinds := c.kinds[lo:hi]
	fb.Reserve(len(kinds))
	switch c.kind {
	case kindInt:
		ib := fb.(*array.Int64Builder)
		for _, k := range kinds {
			if k == kindNull {
				ib.UnsafeAppendBoolToBitmap(false)
			} else {
				ib.UnsafeAppend(int64(c.nextNumber()))
			}
		}
	case kindFloat:
		fb := fb.(*array.Float64Builder)
		for _, k := range kinds {
			switch k {
			case kindNull:
				fb.UnsafeAppendBoolToBitmap(false)
			case kindInt:
				fb.UnsafeAppend(float64(int64(c.nextNumber())))
			default:
				fb.UnsafeAppend(math.Float64frombits(c.nextNumber()))
			}
		}
	default:
		bb, ok := fb.(*array.BinaryBuilder)
		if !ok {
			bb = fb.(*array.StringBuilder).BinaryBuilder
		}
		size, numbers := c.bytesOf(kinds)
		bb.ReserveData(size)
		var digits []byte
		for _, k := range kinds {
			switch k {
			case kindNull:
				bb.AppendNull()
			// A text column's numbers, as SQLite would print them.
			case kindInt:
				digits = strconv.AppendInt(digits[:0], int64(c.nextNumber()), 10)
				bb.Append(digits)
			case kindFloat:
				digits = strconv.AppendFloat(digits[:0], math.Float64frombits(c.nextNumber()), 'g', -1, 64)
				bb.Append(digits)
			default:
				if numbers == 0 {
					bb.UnsafeAppend(c.nextBytes()) // within size
				} else {
					bb.Append(c.nextBytes())
				}
			}
		}
	}
}

func (c *column) nextNumber() uint64 {
	c.num++
	return c.nums[c.num-1]
}

func (c *column) nextBytes() []byte {
	start := 0
	if c.str > 0 {
		start = c.ends[c.str-1]
	}
	c.str++
	return c.data[start:c.ends[c.str-1]]
}

// bytesOf is the bytes of the texts and blobs among the next rows, of
// kinds, and how many numbers are among them.
func (c *column) bytesOf(kinds []kind) (size, numbers int) {
	n := 0
	for _, k := range kinds {
		switch k {
		case kindText, kindBlob:
			n++
		case kindInt, kindFloat:
			numbers++
		}
	}
	if n == 0 {
		return 0, numbers
	}
	start := 0
	if c.str > 0 {
		start = c.ends[c.str-1]
	}
	return c.ends[c.str+n-1] - start, numbers
}
