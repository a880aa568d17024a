package preview

import (
	"bytes"
	"cmp"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// canSkip reports whether a row group's statistics for one column show
// that no row of it matches f: col is the column chunk of a top-level
// primitive column of registered type t, rows the row group's row count.
// Anything it cannot judge exactly (no statistics, statistics arrow-go
// does not trust for the writer, a logical type whose order is not the
// stored one's, a value of another kind) skips nothing.
func canSkip(col *metadata.ColumnChunkMetaData, rows int64, t arrow.DataType, f Filter) bool {
	st, err := col.Statistics()
	if err != nil || st == nil {
		return false
	}
	allNull := st.HasNullCount() && st.NullCount() >= rows && rows > 0
	switch f.Op {
	case OpIsNull:
		return st.HasNullCount() && st.NullCount() == 0
	case OpIsNotNull:
		return allNull
	case OpEq, OpLt, OpLe, OpGt, OpGe:
		if allNull {
			// A comparison is never true of a null.
			return true
		}
	default:
		return false
	}
	if !st.HasMinMax() {
		return false
	}
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32:
		s, ok := st.(*metadata.Int32Statistics)
		if !ok {
			return false
		}
		return skipNumber(float64(s.Min()), float64(s.Max()), int64(s.Min()), int64(s.Max()), f)
	case arrow.INT64:
		s, ok := st.(*metadata.Int64Statistics)
		if !ok {
			return false
		}
		return skipNumber(float64(s.Min()), float64(s.Max()), s.Min(), s.Max(), f)
	case arrow.FLOAT32:
		s, ok := st.(*metadata.Float32Statistics)
		if !ok {
			return false
		}
		return skipFloat(float64(s.Min()), float64(s.Max()), f)
	case arrow.FLOAT64:
		s, ok := st.(*metadata.Float64Statistics)
		if !ok {
			return false
		}
		return skipFloat(s.Min(), s.Max(), f)
	case arrow.BOOL:
		s, ok := st.(*metadata.BooleanStatistics)
		v, isInt := f.Value.(int64)
		if !ok || !isInt || (v != 0 && v != 1) {
			return false
		}
		return skipOrdered(b2i(s.Min()), b2i(s.Max()), v, f.Op)
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		s, ok := st.(*metadata.ByteArrayStatistics)
		// Only min_value and max_value (the type-defined column order)
		// are in unsigned byte order; the older min and max fields were
		// written in signed order by some writers.
		if !ok || col.Type() != parquet.Types.ByteArray || s.Descr().ColumnOrder() != parquet.ColumnOrders.TypeDefinedOrder || s.Descr().SortOrder() != schema.SortUNSIGNED {
			return false
		}
		var v []byte
		switch x := f.Value.(type) {
		case string:
			v = []byte(x)
		case []byte:
			v = x
		default:
			return false
		}
		return skipCompare(bytes.Compare(v, s.Min()), bytes.Compare(v, s.Max()), f.Op)
	}
	return false
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// skipNumber judges an integer column: an int64 value exactly, a float64
// one in float64 when the statistics are exact in it.
func skipNumber(fmin, fmax float64, imin, imax int64, f Filter) bool {
	switch v := f.Value.(type) {
	case int64:
		return skipOrdered(imin, imax, v, f.Op)
	case float64:
		const exact = 1 << 53
		if imin < -exact || imax > exact {
			return false
		}
		return skipFloat(fmin, fmax, f)
	}
	return false
}

// skipFloat judges a floating-point column (or an integer one in
// float64). NaN in the statistics or the value skips nothing; -0 and +0
// compare equal, so Parquet's rule on signed zeros in statistics holds.
func skipFloat(lo, hi float64, f Filter) bool {
	var v float64
	switch x := f.Value.(type) {
	case float64:
		v = x
	case int64:
		v = float64(x)
		if int64(v) != x {
			return false
		}
	default:
		return false
	}
	if math.IsNaN(v) || math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
		return false
	}
	return skipOrdered(lo, hi, v, f.Op)
}

func skipOrdered[T cmp.Ordered](lo, hi, v T, op Op) bool {
	if lo > hi {
		return false
	}
	return skipCompare(cmp.Compare(v, lo), cmp.Compare(v, hi), op)
}

// skipCompare decides from v compared with the minimum (vsMin) and the
// maximum (vsMax) whether no value in [min, max] can satisfy "x op v".
func skipCompare(vsMin, vsMax int, op Op) bool {
	switch op {
	case OpEq:
		return vsMin < 0 || vsMax > 0
	case OpLt: // x < v: none when min >= v
		return vsMin <= 0
	case OpLe: // x <= v: none when min > v
		return vsMin < 0
	case OpGt: // x > v: none when max <= v
		return vsMax >= 0
	case OpGe: // x >= v: none when max < v
		return vsMax > 0
	}
	return false
}
