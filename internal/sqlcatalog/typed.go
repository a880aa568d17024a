package sqlcatalog

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// A result column that is a mounted table's column as it is (SQLite's
// column origin: its database, table and column) is answered in the
// column's registered Arrow type, as Flight SQL's GetTables describes it:
// its values reached SQLite as integers, reals, texts or blobs
// (sqliteType) and are laid out again in that type. A column whose values
// do not fit the type (a compound SELECT mixing columns, say) keeps
// SQLite's kinds (merge).

// registeredTypes is the registered type of each of s's result columns
// that is a mounted column as it is, nil for the others (nil for all
// when nothing is mounted).
func (e *Engine) registeredTypes(s *statement) []arrow.DataType {
	if e.data == nil || len(e.data.tables) == 0 || s.pstmt == 0 {
		return nil
	}
	out := make([]arrow.DataType, s.cols)
	for i := range s.cols {
		name := func(f func(*libc.TLS, uintptr, int32) uintptr) string {
			if p := f(s.tls, s.pstmt, int32(i)); p != 0 {
				return libc.GoString(p)
			}
			return ""
		}
		t, ok := e.data.tables[name(sqlite3.Xsqlite3_column_database_name)+"\x00"+name(sqlite3.Xsqlite3_column_table_name)]
		if !ok {
			continue
		}
		if idx := t.schema.FieldIndices(name(sqlite3.Xsqlite3_column_origin_name)); len(idx) == 1 {
			out[i] = t.schema.Field(idx[0]).Type
		}
	}
	return out
}

// retype lays res's columns out in types (where not nil and every value
// fits), in place.
func retype(mem memory.Allocator, res *Result, types []arrow.DataType) {
	fields := res.Schema.Fields()
	changed := false
	cols := make([][]arrow.Array, len(res.batches))
	for b, rec := range res.batches {
		cols[b] = make([]arrow.Array, rec.NumCols())
		for i := range cols[b] {
			cols[b][i] = rec.Column(i)
			cols[b][i].Retain()
		}
	}
	for i, typ := range types {
		if typ == nil || i >= len(fields) {
			continue
		}
		converted := make([]arrow.Array, len(res.batches))
		ok := true
		for b := range res.batches {
			a, err := convert(mem, cols[b][i], typ)
			if err != nil {
				ok = false
				break
			}
			converted[b] = a
		}
		if !ok {
			for _, a := range converted {
				if a != nil {
					a.Release()
				}
			}
			continue
		}
		for b := range res.batches {
			cols[b][i].Release()
			cols[b][i] = converted[b]
		}
		fields[i].Type = typ
		changed = true
	}
	if changed {
		res.Schema = arrow.NewSchema(fields, nil)
		for b, rec := range res.batches {
			n := rec.NumRows()
			rec.Release()
			res.batches[b] = array.NewRecordBatch(res.Schema, cols[b], n)
		}
	}
	for b := range cols {
		for _, a := range cols[b] {
			a.Release()
		}
	}
}

// convert lays a (int64, float64, utf8 or binary, as collect builds
// columns) out as typ, or fails when a value does not fit.
func convert(mem memory.Allocator, a arrow.Array, typ arrow.DataType) (arrow.Array, error) {
	b := array.NewBuilder(mem, typ)
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		if err := appendConverted(b, a, i); err != nil {
			return nil, err
		}
	}
	return b.NewArray(), nil
}

var errNoFit = fmt.Errorf("sqlcatalog: a value does not fit the registered type")

// intOf is row i of a as an integer, when it is one.
func intOf(a arrow.Array, i int) (int64, bool) {
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.String:
		v, err := strconv.ParseInt(a.Value(i), 10, 64)
		return v, err == nil
	}
	return 0, false
}

// inRange checks v against a signed width's bounds.
func inRange(v int64, bits int) bool {
	return v >= -(1<<(bits-1)) && v <= 1<<(bits-1)-1
}

func appendConverted(b array.Builder, a arrow.Array, i int) error {
	switch b := b.(type) {
	case *array.Int8Builder:
		v, ok := intOf(a, i)
		if !ok || !inRange(v, 8) {
			return errNoFit
		}
		b.Append(int8(v))
	case *array.Int16Builder:
		v, ok := intOf(a, i)
		if !ok || !inRange(v, 16) {
			return errNoFit
		}
		b.Append(int16(v))
	case *array.Int32Builder:
		v, ok := intOf(a, i)
		if !ok || !inRange(v, 32) {
			return errNoFit
		}
		b.Append(int32(v))
	case *array.Int64Builder:
		v, ok := intOf(a, i)
		if !ok {
			return errNoFit
		}
		b.Append(v)
	case *array.Uint8Builder:
		v, ok := intOf(a, i)
		if !ok || v < 0 || v > math.MaxUint8 {
			return errNoFit
		}
		b.Append(uint8(v))
	case *array.Uint16Builder:
		v, ok := intOf(a, i)
		if !ok || v < 0 || v > math.MaxUint16 {
			return errNoFit
		}
		b.Append(uint16(v))
	case *array.Uint32Builder:
		v, ok := intOf(a, i)
		if !ok || v < 0 || v > math.MaxUint32 {
			return errNoFit
		}
		b.Append(uint32(v))
	case *array.Uint64Builder:
		// Values past int64 reach SQLite as their digits.
		if s, ok := a.(*array.String); ok {
			v, err := strconv.ParseUint(s.Value(i), 10, 64)
			if err != nil {
				return errNoFit
			}
			b.Append(v)
			return nil
		}
		v, ok := intOf(a, i)
		if !ok || v < 0 {
			return errNoFit
		}
		b.Append(uint64(v))
	case *array.BooleanBuilder:
		v, ok := intOf(a, i)
		if !ok || v != 0 && v != 1 {
			return errNoFit
		}
		b.Append(v == 1)
	case *array.Date32Builder:
		t, ok := timeOf(a, i, dateLayout)
		if !ok {
			return errNoFit
		}
		b.Append(arrow.Date32FromTime(t))
	case *array.Date64Builder:
		t, ok := timeOf(a, i, dateLayout)
		if !ok {
			return errNoFit
		}
		b.Append(arrow.Date64FromTime(t))
	case *array.TimestampBuilder:
		unit := b.Type().(*arrow.TimestampType).Unit
		t, ok := timeOf(a, i, timestampLayouts[unit])
		if !ok {
			return errNoFit
		}
		v, err := arrow.TimestampFromTime(t, unit)
		if err != nil {
			return errNoFit
		}
		b.Append(v)
	case *array.Time32Builder:
		unit := b.Type().(*arrow.Time32Type).Unit
		t, ok := timeOf(a, i, timeLayouts[unit])
		if !ok {
			return errNoFit
		}
		b.Append(arrow.Time32(sinceMidnight(t) / unit.Multiplier()))
	case *array.Time64Builder:
		unit := b.Type().(*arrow.Time64Type).Unit
		t, ok := timeOf(a, i, timeLayouts[unit])
		if !ok {
			return errNoFit
		}
		b.Append(arrow.Time64(sinceMidnight(t) / unit.Multiplier()))
	case *array.DurationBuilder:
		v, ok := intOf(a, i)
		if !ok {
			return errNoFit
		}
		b.Append(arrow.Duration(v))
	case *array.Float16Builder, *array.Float32Builder, *array.Float64Builder:
		var v float64
		switch a := a.(type) {
		case *array.Float64:
			v = a.Value(i)
		case *array.Int64:
			v = float64(a.Value(i))
		default:
			return errNoFit
		}
		switch b := b.(type) {
		case *array.Float16Builder:
			b.Append(float16.New(float32(v)))
		case *array.Float32Builder:
			b.Append(float32(v))
		case *array.Float64Builder:
			b.Append(v)
		}
	case *array.StringBuilder:
		s, ok := a.(*array.String)
		if !ok {
			return errNoFit
		}
		b.Append(s.Value(i))
	case *array.LargeStringBuilder:
		s, ok := a.(*array.String)
		if !ok {
			return errNoFit
		}
		b.Append(s.Value(i))
	case *array.BinaryBuilder: // binary and large binary
		v, ok := a.(*array.Binary)
		if !ok {
			return errNoFit
		}
		b.Append(v.Value(i))
	case *array.FixedSizeBinaryBuilder:
		v, ok := a.(*array.Binary)
		if !ok || len(v.Value(i)) != b.Type().(*arrow.FixedSizeBinaryType).ByteWidth {
			return errNoFit
		}
		b.Append(v.Value(i))
	case *array.Decimal128Builder:
		t := b.Type().(*arrow.Decimal128Type)
		var n decimal128.Num
		var err error
		switch a := a.(type) {
		case *array.String:
			n, err = decimal128.FromString(a.Value(i), t.Precision, t.Scale)
		case *array.Int64:
			n = decimal128.FromI64(a.Value(i)).IncreaseScaleBy(t.Scale)
			if !n.FitsInPrecision(t.Precision) {
				return errNoFit
			}
		case *array.Float64:
			n, err = decimal128.FromFloat64(a.Value(i), t.Precision, t.Scale)
		default:
			return errNoFit
		}
		if err != nil {
			return errNoFit
		}
		b.Append(n)
	case *array.Decimal256Builder:
		s, ok := a.(*array.String)
		if !ok {
			return errNoFit
		}
		t := b.Type().(*arrow.Decimal256Type)
		n, err := decimal256.FromString(s.Value(i), t.Precision, t.Scale)
		if err != nil {
			return errNoFit
		}
		b.Append(n)
	default:
		return errNoFit
	}
	return nil
}

// timeOf is row i of a (text in layout, in UTC) as a time.
func timeOf(a arrow.Array, i int, layout string) (time.Time, bool) {
	s, ok := a.(*array.String)
	if !ok || layout == "" {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation(layout, s.Value(i), time.UTC)
	// Parse accepts a fraction its layout lacks: a text of another
	// unit's layout (a compound SELECT's) does not fit, rather than lose
	// digits.
	if err != nil || t.Format(layout) != s.Value(i) {
		return time.Time{}, false
	}
	return t, true
}

// sinceMidnight is t's time of day.
func sinceMidnight(t time.Time) time.Duration {
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
}
