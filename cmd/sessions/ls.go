package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const lsDoc = `
Lists sessions as a table: ID, title, state (with the reason of a stopped
session), kind, latest revision, when it was last updated, and its lease:
free, held (by whom), or stale (the holder died; the next acquirer recovers
the session).

Filters repeat or take comma-separated values (--state running,awaiting).
A listing is paged: when more sessions match, the cursor for the next page
is printed on stderr (in the "next" field with --json). A session that
cannot be read (a damaged or missing log, a file this user may not read) has
no row: a warning on stderr names it and says why (with --json, it is also
in the "unreadable" field), on every page; 'sessions verify' says more.`

// queryFlags are the filter and paging flags of ls and watch.
type queryFlags struct {
	states, kinds listFlag
	limit         int
	order         string
	cursor        string
}

func (q *queryFlags) register(c *cli, paging bool) {
	c.fs.Var(&q.states, "state", "only sessions in these `states` (idle, running, awaiting, completed, stopped, cancelled, failed)")
	c.fs.Var(&q.kinds, "kind", "only sessions of these `kinds` (primary, subagent, scheduled, debug, unknown)")
	c.fs.IntVar(&q.limit, "limit", summary.DefaultLimit, "at most `N` sessions")
	c.fs.StringVar(&q.order, "order", string(summary.OrderUpdatedDesc), "`order`: updated_desc, updated_asc, created_desc, created_asc, id_asc")
	if paging {
		c.fs.StringVar(&q.cursor, "cursor", "", "continue a listing after the page that printed this `cursor`")
	}
}

func (q *queryFlags) query() (summary.Query, error) {
	out := summary.Query{Limit: q.limit, Order: summary.Order(q.order), Cursor: q.cursor}
	for _, s := range q.states {
		out.States = append(out.States, session.State(s))
	}
	for _, k := range q.kinds {
		out.Kinds = append(out.Kinds, session.SessionKind(k))
	}
	if q.limit <= 0 {
		return out, fmt.Errorf("--limit must be positive")
	}
	return out.Normalize()
}

// timeFlags are --time-format and the hidden --now of ls and watch.
type timeFlags struct {
	format string
	now    timeFlag
}

func (t *timeFlags) register(c *cli) {
	c.fs.StringVar(&t.format, "time-format", "relative", "print times as `format`: relative (3m ago) or rfc3339")
	c.fs.Var(&t.now, "now", "the time relative times are relative to (RFC 3339; for tests)")
	c.hide("now")
}

func (t *timeFlags) timeFormat() (timeFormat, error) {
	tf := timeFormat{now: t.now.t}
	if tf.now.IsZero() {
		tf.now = time.Now()
	}
	switch t.format {
	case "relative":
	case "rfc3339":
		tf.rfc3339 = true
	default:
		return tf, fmt.Errorf("--time-format must be relative or rfc3339, not %q", t.format)
	}
	return tf, nil
}

func cmdLs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("ls", lsDoc, stdout, stderr)
	var qf queryFlags
	var tfl timeFlags
	qf.register(c, true)
	tfl.register(c)
	asJSON := c.fs.Bool("json", false, "print the page (summary.Page) as JSON")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	q, err := qf.query()
	if err != nil {
		return c.usageError("%v", err)
	}
	tf, err := tfl.timeFormat()
	if err != nil {
		return c.usageError("%v", err)
	}
	return c.withAnyStore(ctx, func(st sessionstore.Store) int {
		page, err := st.List(ctx, q)
		if err != nil {
			return c.fail(err)
		}
		c.warnUnreadable(page.Unreadable)
		if *asJSON {
			if page.Items == nil {
				page.Items = []summary.Summary{}
			}
			if err := writeJSON(stdout, page); err != nil {
				return c.fail(err)
			}
			return exitOK
		}
		if err := writeSummaries(stdout, page.Items, tf); err != nil {
			return c.fail(err)
		}
		if page.Next != "" {
			fmt.Fprintf(stderr, "more sessions: repeat with --cursor %s\n", page.Next)
		}
		return exitOK
	})
}
