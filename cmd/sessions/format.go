package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// truncate shortens s to at most n runes, marking the cut with "…", and
// keeps it on one line.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// holderText names a lease holder: "agent-1 pid 4242 on host".
func holderText(h *summary.Holder) string {
	if h == nil {
		return "unknown holder"
	}
	s := fmt.Sprintf("pid %d on %s", h.PID, orDash(h.Host))
	if h.Label != "" {
		s = h.Label + " " + s
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

const titleWidth = 36

// writeSummaries prints the session table of ls and watch.
func writeSummaries(w io.Writer, items []summary.Summary, tf timeFormat) error {
	rows := make([][]string, 0, len(items))
	for _, s := range items {
		state := string(s.State)
		if s.State == session.StateStopped && s.StopReason != "" {
			state += " (" + string(s.StopReason) + ")" // which limit, or the user
		}
		rows = append(rows, []string{string(s.ID), orDash(truncate(s.Title, titleWidth)), state, string(s.Kind),
			strconv.FormatUint(s.Revision, 10), tf.format(s.UpdatedAt), leaseText(s.Lease)})
	}
	return writeTable(w, []string{"ID", "TITLE", "STATE", "KIND", "REV", "UPDATED", "LEASE"}, rows,
		[]bool{false, false, false, false, true, false, false})
}

// humanBytes prints a size in binary units: 512 B, 1.5 KiB, 12 MiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v < 10 {
		return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.0f %ciB", v, "KMGTPE"[exp])
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// writeTable prints rows under header in columns two spaces apart; the
// columns marked in right are right-aligned (numbers), the others left.
func writeTable(w io.Writer, header []string, rows [][]string, right []bool) error {
	width := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, cell := range r {
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, r := range append([][]string{header}, rows...) {
		for i, cell := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			switch {
			case i < len(right) && right[i]:
				b.WriteString(pad + cell)
			case i == len(r)-1:
				b.WriteString(cell) // no trailing blanks
			default:
				b.WriteString(cell + pad)
			}
			if i < len(r)-1 {
				b.WriteString("  ")
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
