package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/summary"
)

const watchDoc = `
Shows the sessions table of 'sessions ls' and keeps it current from the
store's change feed until Ctrl-C. On a terminal the table is redrawn in
place; otherwise each refresh is printed below the previous one.`

// watchRefresh bounds how often the table is redrawn: changes arriving
// faster are coalesced. Relative times and lease states change without any
// change event, so the table is also redrawn every watchIdle.
const (
	watchRefresh = 200 * time.Millisecond
	watchIdle    = 2 * time.Second
)

func cmdWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("watch", watchDoc, stdout, stderr)
	var qf queryFlags
	var tfl timeFlags
	qf.register(c, false)
	tfl.register(c)
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	q, err := qf.query()
	if err != nil {
		return c.usageError("%v", err)
	}
	if _, err := tfl.timeFormat(); err != nil {
		return c.usageError("%v", err)
	}
	return c.withStore(ctx, false, func(st *jsonlstore.Store) int {
		changes, err := st.Watch(ctx)
		if err != nil {
			return c.fail(err)
		}
		ix := summary.NewIndex()
		defer ix.Close()
		tty := isTerminal(stdout)
		redraw := func() error {
			page, err := ix.Query(q)
			if err != nil {
				return err
			}
			for i := range page.Items {
				// Lease status is computed when read, never carried by changes.
				if ls, err := st.Lease(ctx, page.Items[i].ID); err == nil {
					page.Items[i].Lease = ls
				}
			}
			tf, _ := tfl.timeFormat()
			var buf bytes.Buffer
			if tty {
				buf.WriteString("\x1b[H\x1b[2J") // home, clear screen
			}
			fmt.Fprintf(&buf, "%s  %d sessions  %s  (Ctrl-C to stop)\n\n", st.Dir(), ix.Len(), time.Now().Format("15:04:05"))
			if err := writeSummaries(&buf, page.Items, tf); err != nil {
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
