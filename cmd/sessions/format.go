package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// timeFormat says how tables print times: relative to now ("3m ago"), or
// absolute RFC 3339 (for scripts and reproducible output).
type timeFormat struct {
	rfc3339 bool
	now     time.Time
}

func (f timeFormat) format(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if f.rfc3339 {
		return t.UTC().Format(time.RFC3339)
	}
	return ago(f.now.Sub(t))
}

// ago prints a duration as a short relative time.
func ago(d time.Duration) string {
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// orDash is s escaped for a terminal, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return cli.Escape(s)
}

// holderText names a lease holder: "agent-1 pid 4242 on host" (label and
// host escaped: another program wrote them).
func holderText(h *summary.Holder) string {
	if h == nil {
		return "unknown holder"
	}
	s := fmt.Sprintf("pid %d on %s", h.PID, orDash(h.Host))
	if h.Label != "" {
		s = cli.Escape(h.Label) + " " + s
	}
	return s
}

// leaseText is the LEASE column: free, or who holds it, or who died.
func leaseText(st summary.LeaseStatus) string {
	switch st.State {
	case summary.LeaseFree:
		return "free"
	case summary.LeaseHeld:
		return "held by " + holderText(st.Holder)
	case summary.LeaseStale:
		if st.Holder != nil {
			return fmt.Sprintf("stale (%s died)", holderText(st.Holder))
		}
		return "stale"
	}
	return "?"
}

// titleWidth caps the TITLE column.
const titleWidth = 36

// idMin is the least an ID is cut to where nothing else gives enough room:
// a ULID whole, an imported ID's tool and its first dozen digits.
const idMin = 26

// paintState colors a STATE cell by what it asks of a person.
func paintState(p cli.Palette) func(string) string {
	return func(s string) string {
		switch state, _, _ := strings.Cut(s, " "); session.State(state) {
		case session.StateRunning:
			return p.Busy(s)
		case session.StateAwaiting, session.StateStopped:
			return p.Wait(s)
		case session.StateFailed:
			return p.Bad(s)
		case session.StateCompleted:
			return p.Good(s)
		case session.StateCancelled:
			return p.Dim(s)
		}
		return s
	}
}

// paintLease colors a LEASE cell: a stale lease stands out, a held one is
// work in progress.
func paintLease(p cli.Palette) func(string) string {
	return func(s string) string {
		switch {
		case strings.HasPrefix(s, "stale"):
			return p.Wait(s)
		case strings.HasPrefix(s, "held"):
			return p.Busy(s)
		case s == "free":
			return p.Dim(s)
		}
		return s
	}
}

// writeSummaries prints the session table of ls and watch, within width
// terminal cells (0: no limit): the title and lease are cut short first,
// then KIND, REV and UPDATED are left out, in that order, and only then
// are title, state and lease cut to their least.
func writeSummaries(w io.Writer, items []summary.Summary, tf timeFormat, width int, p cli.Palette) error {
	rows := make([][]string, 0, len(items))
	for _, s := range items {
		state := string(s.State)
		if s.State == session.StateStopped && s.StopReason != "" {
			state += " (" + cli.Escape(string(s.StopReason)) + ")" // which limit, or the user
		}
		title := cli.Cell(s.Title)
		if title == "" {
			title = "-"
		}
		rows = append(rows, []string{cli.Escape(string(s.ID)), title, state, cli.Escape(string(s.Kind)),
			strconv.FormatUint(s.Revision, 10), tf.format(s.UpdatedAt), leaseText(s.Lease)})
	}
	t := cli.Table{Columns: []cli.Column{
		// An imported session's ID is long ("claude-code-<uuid>-<agent>"):
		// cut short last, it stays a prefix that names the session.
		{Header: "ID", Min: idMin},
		{Header: "TITLE", Max: titleWidth, Want: 16, Min: 8},
		{Header: "STATE", Min: 7, Paint: paintState(p)},
		{Header: "KIND", Drop: 3},
		{Header: "REV", Right: true, Drop: 2},
		{Header: "UPDATED", Drop: 1},
		{Header: "LEASE", Want: 12, Min: 5, Paint: paintLease(p)},
	}, Rows: rows}
	return t.Write(w, width)
}

// writeJSON prints v as indented JSON, with the characters a terminal
// could act on escaped (cli.EscapeJSON).
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(cli.EscapeJSON(buf.Bytes()))
	return err
}

// printJSON prints v as writeJSON does and returns the exit status.
func (c *sub) printJSON(v any) int {
	if err := writeJSON(c.stdout, v); err != nil {
		return c.fail(err)
	}
	return exitOK
}

// jsonLine is v as one line of JSON Lines, escaped as writeJSON escapes.
func jsonLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(cli.EscapeJSON(b), '\n'), nil
}

// writeTable prints rows under header in columns two spaces apart; the
// columns marked in right are right-aligned (numbers), the others left.
func writeTable(w io.Writer, header []string, rows [][]string, right []bool) error {
	t := cli.Table{Rows: rows}
	for i, h := range header {
		t.Columns = append(t.Columns, cli.Column{Header: h, Right: i < len(right) && right[i]})
	}
	return t.Write(w, 0)
}
