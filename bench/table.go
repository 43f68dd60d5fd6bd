package main

import (
	"fmt"
	"io"
	"strings"
)

// table is one workload's results, printed as Markdown.
type table struct {
	title string
	cols  []string
	rows  [][]string
	notes []string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

func (t *table) markdown(w io.Writer) {
	fmt.Fprintf(w, "### %s\n\n", t.title)
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.cols, " | "))
	seps := make([]string, len(t.cols))
	for i := range seps {
		seps[i] = "---"
		if i > 0 {
			seps[i] = "---:"
		}
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range t.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	fmt.Fprintln(w)
}

// rateCols are the columns of a table of timed operations.
var rateCols = []string{"system", "ops", "ops/s", "MB/s", "p50", "p99", "written/op", "× raw", "× SQLite"}

// rateTable builds a table of timed operations, one row per system, with
// throughput ratios to the rows named raw and sqlite ("" for none).
func rateTable(title string, names []string, s []*sample, raw, sqlite string) *table {
	t := &table{title: title, cols: rateCols}
	ref := func(name string, i int) string {
		for j, n := range names {
			if n == name && name != "" {
				return fmtRatio(s[i].opsPerSec() / s[j].opsPerSec())
			}
		}
		return "—"
	}
	for i, n := range names {
		written := "—"
		if s[i].ioKnown && len(s[i].lat) > 0 {
			written = fmtBytes(s[i].written / int64(len(s[i].lat)))
		}
		t.add(n, fmt.Sprint(len(s[i].lat)), fmtNum(s[i].opsPerSec()), fmtNum(s[i].mbPerSec()),
			fmtDur(s[i].pct(50)), fmtDur(s[i].pct(99)), written, ref(raw, i), ref(sqlite, i))
	}
	return t
}

// target is one of the targets with the figure measured.
type target struct {
	what, want, got string
	met             bool
}

func targetTable(ts []target) *table {
	t := &table{title: "Targets", cols: []string{"target", "wanted", "measured", "met"}}
	for _, x := range ts {
		met := "**missed**"
		if x.met {
			met = "met"
		}
		t.add(x.what, x.want, x.got, met)
	}
	return t
}
