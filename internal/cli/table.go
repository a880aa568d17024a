package cli

import (
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// table writes aligned columns, padding by display width (East Asian wide
// characters count two cells, combining marks none) rather than by bytes
// or runes as text/tabwriter does, so CJK and accented names line up.
type table struct {
	rows [][]string
	// indent starts every line.
	indent string
	// gap separates columns.
	gap int
}

func newTable(indent string) *table { return &table{indent: indent, gap: 2} }

// add appends a row of cells.
func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the rows; the last column is not padded, and trailing
// empty cells do not add trailing spaces.
func (t *table) write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], runewidth.StringWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		line := t.indent
		for i, c := range r {
			if i < len(r)-1 {
				line += c + strings.Repeat(" ", widths[i]-runewidth.StringWidth(c)+t.gap)
			} else {
				line += c
			}
		}
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
