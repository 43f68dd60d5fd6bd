package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/summary"
)

const watchDoc = `
Shows the sessions table of 'sessions ls' and keeps it current from the
store's change feed until Ctrl-C, leases included: a session whose holder
is killed turns stale within a few seconds (jsonlstore: a poll interval,
one second; PostgreSQL: when its lease expires), with no polling. On a terminal the table is redrawn in
place, fits the terminal's width (titles and leases are cut short first,
then the KIND, REV and UPDATED columns are left out), shows as many
sessions as the terminal has rows, and is colored unless NO_COLOR is set;
otherwise each refresh is printed below the previous one.`

// watchRefresh bounds how often the table is redrawn: changes arriving
// faster are coalesced. Relative times change without any change event, so
// the table is also redrawn every watchIdle. Leases need no polling: every
// change carries the session's lease status, and an acquisition, a
// release, a takeover and a holder's death are changes.
const (
	watchRefresh = 200 * time.Millisecond
	watchIdle    = 2 * time.Second
)

func cmdWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("watch", watchDoc, stdout, stderr)
	var lf listFlags
	lf.register(c, false)
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	q, _, err := lf.parsed()
	if err != nil {
		return c.usageError("%v", err)
	}
	loc := c.location()
	return c.withStore(ctx, func(st sessionstore.Store) int {
		changes, err := st.Watch(ctx)
		if err != nil {
			return c.fail(err)
		}
		ix := summary.NewIndex()
		defer ix.Close()
		tty := cli.IsTerminal(stdout)
		palette := cli.NewPalette(stdout)
		redraw := func() error {
			width, rows := watchSize(stdout)
			wq := q
			if rows > 0 {
				wq.Limit = max(1, min(q.Limit, rows-3)) // the header, a blank line, the column headers
			}
			page, err := ix.Query(wq)
			if err != nil {
				return err
			}
			tf, _ := lf.timeFormat() // now, at each redraw
			var buf bytes.Buffer
			if tty {
				buf.WriteString("\x1b[H\x1b[2J") // home, clear screen
			}
			header := fmt.Sprintf("%s  %s  %s  (Ctrl-C to stop)", cli.Escape(loc), cli.Plural(ix.Len(), "session"), time.Now().Format("15:04:05"))
			if width > 0 {
				header = cli.Truncate(header, width)
			}
			buf.WriteString(header + "\n\n")
			if len(page.Items) == 0 {
				if ix.Len() == 0 {
					buf.WriteString("no sessions\n")
				} else {
					buf.WriteString("no sessions match\n")
				}
			} else if err := writeSummaries(&buf, page.Items, tf, width, palette); err != nil {
				return err
			}
			for _, u := range page.Unreadable {
				fmt.Fprintf(&buf, "warning: %s\n", unreadableText(u))
			}
			if !tty {
				buf.WriteByte('\n')
			}
			_, err = stdout.Write(buf.Bytes())
			return err
		}
		timer := time.NewTimer(watchRefresh) // the first table once the initial state is in
		defer timer.Stop()
		dirty := true
		for {
			select {
			case <-ctx.Done():
				return exitOK // Ctrl-C: a normal end
			case ch, ok := <-changes:
				if !ok {
					return exitOK
				}
				ix.Apply(ch)
				if !dirty {
					dirty = true
					timer.Reset(watchRefresh)
				}
			case <-timer.C:
				if err := redraw(); err != nil {
					if ctx.Err() != nil {
						return exitOK
					}
					return c.fail(err)
				}
				dirty = false
				timer.Reset(watchIdle)
			}
		}
	})
}

// watchSize is the width and height of the terminal stdout is, or 0, 0
// when it is not one (then nothing is cut).
func watchSize(stdout io.Writer) (width, rows int) {
	width = cli.TerminalWidth(stdout)
	if width == 0 {
		return 0, 0
	}
	return width, cli.TerminalRows(stdout)
}
