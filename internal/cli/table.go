package cli

import (
	"io"
	"strings"
)

// Column is one column of a Table.
type Column struct {
	Header string
	// Right aligns the column to the right (numbers).
	Right bool
	// Max caps the column's width in cells (0: none); longer cells are
	// truncated with "…".
	Max int
	// Want and Min, when positive, let the column shrink when the table
	// is wider than its limit, its cells truncated with "…": first down
	// to Want cells (0: not before columns are dropped), then, when
	// leaving out every droppable column is not enough, down to Min.
	Want, Min int
	// Drop, when positive, lets the column be left out when the table is
	// still too wide after shrinking to Want: the highest Drop goes first.
	Drop int
	// Paint, if set, colors a cell (its text as it is printed, already
	// truncated); padding stays outside the colors.
	Paint func(text string) string
}

// Table is rows of cells under headers, in columns two spaces apart.
// Cells must be printable already (Cell, Escape).
type Table struct {
	Columns []Column
	Rows    [][]string
}

// Write prints t within width terminal cells (0: no limit): when it is
// wider, the shrinkable columns give up cells down to their Want (the
// widest first), then droppable columns are left out until the rest fits;
// when even that is not enough, every column is shown again and the
// shrinkable ones go down to their Min before columns are dropped.
func (t *Table) Write(w io.Writer, width int) error {
	n := len(t.Columns)
	natural := make([]int, n)
	for i, c := range t.Columns {
		natural[i] = Width(c.Header)
		for _, r := range t.Rows {
			if i < len(r) {
				natural[i] = max(natural[i], Width(r[i]))
			}
		}
		if c.Max > 0 {
			natural[i] = min(natural[i], max(c.Max, Width(c.Header)))
		}
	}
	widths, shown := fit(t.Columns, natural, width)
	var b strings.Builder
	line := func(cells []string, header bool) {
		var sb strings.Builder
		first := true
		for i, c := range t.Columns {
			if !shown[i] {
				continue
			}
			if !first {
				sb.WriteString("  ")
			}
			first = false
			var cell string
			if i < len(cells) {
				cell = Truncate(cells[i], widths[i])
			}
			pad := strings.Repeat(" ", max(0, widths[i]-Width(cell)))
			if !header && c.Paint != nil && cell != "" {
				cell = c.Paint(cell)
			}
			if c.Right {
				sb.WriteString(pad + cell)
			} else {
				sb.WriteString(cell + pad)
			}
		}
		b.WriteString(strings.TrimRight(sb.String(), " "))
		b.WriteByte('\n')
	}
	headers := make([]string, n)
	for i, c := range t.Columns {
		headers[i] = c.Header
	}
	line(headers, true)
	for _, r := range t.Rows {
		line(r, false)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fit chooses each column's width, and which are shown, for a limit.
func fit(cols []Column, natural []int, limit int) ([]int, []bool) {
	widths := append([]int(nil), natural...)
	shown := make([]bool, len(cols))
	showAll := func() {
		for i := range shown {
			shown[i] = true
		}
	}
	showAll()
	if limit <= 0 {
		return widths, shown
	}
	total := func() int {
		sum, k := 0, 0
		for i := range cols {
			if shown[i] {
				sum += widths[i]
				k++
			}
		}
		return sum + 2*max(0, k-1)
	}
	// floor is how far column i may shrink at a level: 0 its Want, 1 its
	// Min; never below its header.
	floor := func(i, level int) int {
		c := cols[i]
		f := c.Min
		if level == 0 {
			f = c.Want
		}
		if f <= 0 {
			return natural[i]
		}
		return min(natural[i], max(f, Width(c.Header)))
	}
	for level := range 2 {
		showAll()
		for {
			copy(widths, natural)
			// Shrink the widest shrinkable column, one cell at a time.
			for total() > limit {
				best := -1
				for i := range cols {
					if shown[i] && widths[i] > floor(i, level) && (best < 0 || widths[i] > widths[best]) {
						best = i
					}
				}
				if best < 0 {
					break
				}
				widths[best]--
			}
			if total() <= limit {
				return widths, shown
			}
			drop := -1
			for i, c := range cols {
				if shown[i] && c.Drop > 0 && (drop < 0 || c.Drop > cols[drop].Drop) {
					drop = i
				}
			}
			if drop < 0 {
				break // next level, or as narrow as it gets
			}
			shown[drop] = false
		}
	}
	return widths, shown
}
