package sqlcatalog

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/arrowtype"
)

// RemarksKey is the Arrow field metadata key of a column's comment
// (Flight SQL's column metadata), which information_schema.columns
// reports as column_comment.
const RemarksKey = "ARROW:FLIGHT:SQL:REMARKS"

// The numbers of a column row (arenaRow.numbers), columns 8 to 13 of
// information_schema.columns.
const (
	charMaxLength = iota
	octetLength
	precision
	radix
	scale
	datetimePrecision
)

// describeSchema appends a schema's top-level fields to l's rows as
// columns: the exact Arrow type (arrowtype.String, as search, the browser
// and lake show print it: "decimal128(38, 10)", "timestamp[us, tz=UTC]",
// "list<item: int32 not null>"), never a family name, and the ANSI
// precision, scale and length where they apply:
//   - integers: numeric_precision = bit width, radix 2, scale 0;
//   - floating point: precision 11, 24 or 53 bits (half, single, double),
//     radix 2;
//   - decimals: their precision and scale, radix 10;
//   - fixed_size_binary(n): character_octet_length n;
//   - timestamps, times, durations and dates: datetime_precision, the
//     digits of fractional seconds (s 0, ms 3, us 6, ns 9; date32 0,
//     date64 3).
func describeSchema(l *arenaLayout, s *arrow.Schema) {
	for i := range s.NumFields() {
		f := s.Field(i)
		r := arenaRow{name: l.append(f.Name), nullable: l.no, dataType: l.text(arrowtype.String(f.Type))}
		if f.Nullable {
			r.nullable = l.yes
		}
		if v, ok := f.Metadata.GetValue(RemarksKey); ok {
			r.comment, r.set = l.append(v), r.set|commentSet
		}
		describeType(&r, f.Type)
		l.rows = append(l.rows, r)
	}
}

func unitDigits(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Millisecond:
		return 3
	case arrow.Microsecond:
		return 6
	case arrow.Nanosecond:
		return 9
	default:
		return 0
	}
}

// number sets number i of r.
func (r *arenaRow) number(i int, v int64) {
	r.numbers[i] = v
	r.set |= 1 << i
}

func describeType(r *arenaRow, t arrow.DataType) {
	switch t := t.(type) {
	case arrow.DecimalType:
		r.number(precision, int64(t.GetPrecision()))
		r.number(radix, 10)
		r.number(scale, int64(t.GetScale()))
	case *arrow.FixedSizeBinaryType:
		r.number(octetLength, int64(t.ByteWidth))
	case *arrow.TimestampType:
		r.number(datetimePrecision, unitDigits(t.Unit))
	case *arrow.Time32Type:
		r.number(datetimePrecision, unitDigits(t.Unit))
	case *arrow.Time64Type:
		r.number(datetimePrecision, unitDigits(t.Unit))
	case *arrow.DurationType:
		r.number(datetimePrecision, unitDigits(t.Unit))
	case *arrow.Date32Type:
		r.number(datetimePrecision, 0)
	case *arrow.Date64Type:
		r.number(datetimePrecision, 3)
	default:
		switch t.ID() {
		case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32, arrow.INT64, arrow.UINT64:
			r.number(precision, int64(t.(arrow.FixedWidthDataType).BitWidth()))
			r.number(radix, 2)
			r.number(scale, 0)
		case arrow.FLOAT16:
			r.number(precision, 11)
			r.number(radix, 2)
		case arrow.FLOAT32:
			r.number(precision, 24)
			r.number(radix, 2)
		case arrow.FLOAT64:
			r.number(precision, 53)
			r.number(radix, 2)
		}
	}
}
