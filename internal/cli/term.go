package cli

import (
	"io"
	"os"

	"github.com/fatih/color"
	"golang.org/x/term"
)

// DefaultWidth is the width assumed for a terminal that does not say.
const DefaultWidth = 80

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// TerminalWidth is the number of columns of the terminal w is, or 0 (no
// limit) when w is not a terminal: a listing piped into a program is not
// cut.
func TerminalWidth(w io.Writer) int {
	cols, _, ok := terminalSize(w)
	if !ok {
		return 0
	}
	if cols == 0 {
		return DefaultWidth
	}
	return cols
}

// UseColor decides whether output to w is colored: only on a terminal,
// never when NO_COLOR is set to anything (no-color.org) or TERM is
// "dumb". getenv is os.Getenv, or a test's.
func UseColor(w io.Writer, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return false
	}
	return IsTerminal(w)
}

// Palette colors the words of a table that a person scans for: states
// that need attention, stale and held leases, corruption. The zero
// Palette (or one for output that is not colored) returns text as it is.
type Palette struct {
	on                         bool
	good, busy, wait, bad, dim *color.Color
}

// NewPalette returns the palette for output to w: colors when UseColor
// says so for this process's environment, none otherwise.
func NewPalette(w io.Writer) Palette { return PaletteFor(UseColor(w, os.Getenv)) }

// PaletteFor returns a palette with colors on or off.
func PaletteFor(on bool) Palette {
	p := Palette{on: on,
		good: color.New(color.FgGreen), busy: color.New(color.FgCyan), wait: color.New(color.FgYellow),
		bad: color.New(color.FgRed, color.Bold), dim: color.New(color.Faint)}
	for _, c := range []*color.Color{p.good, p.busy, p.wait, p.bad, p.dim} {
		if on {
			c.EnableColor() // decided here, not by the library's look at os.Stdout
		} else {
			c.DisableColor()
		}
	}
	return p
}

// On reports whether the palette colors anything.
func (p Palette) On() bool { return p.on }

func (p Palette) paint(c *color.Color, s string) string {
	if !p.on || c == nil {
		return s
	}
	return c.Sprint(s)
}

// Good colors a healthy word (completed, ok).
func (p Palette) Good(s string) string { return p.paint(p.good, s) }

// Busy colors work in progress (running, held).
func (p Palette) Busy(s string) string { return p.paint(p.busy, s) }

// Wait colors what waits on someone (awaiting, stopped, stale).
func (p Palette) Wait(s string) string { return p.paint(p.wait, s) }

// Bad colors a failure (failed, CORRUPT).
func (p Palette) Bad(s string) string { return p.paint(p.bad, s) }

// Dim colors what matters least (cancelled, free, a dash).
func (p Palette) Dim(s string) string { return p.paint(p.dim, s) }

// TerminalRows is the number of rows of the terminal w is, or 0 when w is
// not a terminal or does not say.
func TerminalRows(w io.Writer) int {
	_, rows, _ := terminalSize(w)
	return rows
}

// terminalSize is the size of the terminal w is; ok is false when w is
// not a terminal, and cols and rows are 0 where the terminal does not
// say.
func terminalSize(w io.Writer) (cols, rows int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return 0, 0, false
	}
	cols, rows, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0, 0, true
	}
	return max(cols, 0), max(rows, 0), true
}
