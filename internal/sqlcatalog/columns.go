package sqlcatalog

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/arrowtype"
)

// RemarksKey is the Arrow field metadata key of a column's comment
// (Flight SQL's column metadata), which information_schema.columns
// reports as column_comment.
const RemarksKey = "ARROW:FLIGHT:SQL:REMARKS"

// columnRow is one top-level field as information_schema.columns shows
// it. Numbers are int64 or nil (NULL), comment a string or nil.
type columnRow struct {
	name, nullable, dataType                            string
	charMaxLength, octetLength, precision, radix, scale any
	datetimePrecision, comment                          any
}

// describeSchema lists a schema's top-level fields as columns: the exact
// Arrow type (arrowtype.String, as search, the browser and lake show print
// it: "decimal128(38, 10)", "timestamp[us, tz=UTC]",
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
func describeSchema(s *arrow.Schema) []columnRow {
	out := make([]columnRow, 0, s.NumFields())
	for _, f := range s.Fields() {
		c := columnRow{name: f.Name, nullable: "NO", dataType: arrowtype.String(f.Type)}
		if f.Nullable {
			c.nullable = "YES"
		}
		if v, ok := f.Metadata.GetValue(RemarksKey); ok {
			c.comment = v
		}
		describeType(&c, f.Type)
		out = append(out, c)
	}
	return out
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

func describeType(c *columnRow, t arrow.DataType) {
	switch t := t.(type) {
	case arrow.DecimalType:
		c.precision, c.radix, c.scale = int64(t.GetPrecision()), int64(10), int64(t.GetScale())
	case *arrow.FixedSizeBinaryType:
		c.octetLength = int64(t.ByteWidth)
	case *arrow.TimestampType:
		c.datetimePrecision = unitDigits(t.Unit)
	case *arrow.Time32Type:
		c.datetimePrecision = unitDigits(t.Unit)
	case *arrow.Time64Type:
		c.datetimePrecision = unitDigits(t.Unit)
	case *arrow.DurationType:
		c.datetimePrecision = unitDigits(t.Unit)
	case *arrow.Date32Type:
		c.datetimePrecision = int64(0)
	case *arrow.Date64Type:
		c.datetimePrecision = int64(3)
	default:
		switch t.ID() {
		case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32, arrow.INT64, arrow.UINT64:
			c.precision, c.radix, c.scale = int64(t.(arrow.FixedWidthDataType).BitWidth()), int64(2), int64(0)
		case arrow.FLOAT16:
			c.precision, c.radix = int64(11), int64(2)
		case arrow.FLOAT32:
			c.precision, c.radix = int64(24), int64(2)
		case arrow.FLOAT64:
			c.precision, c.radix = int64(53), int64(2)
		}
	}
}
