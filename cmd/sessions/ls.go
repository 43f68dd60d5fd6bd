package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const lsDoc = `
Lists sessions as a table: ID, title, state (with the reason of a stopped
session), kind, latest revision, when it was last updated, and its lease:
free, held (by whom), or stale (the holder died; the next acquirer recovers
the session).

Filters repeat or take comma-separated values (--state running,awaiting).
--label KEY=VALUE selects the sessions carrying that label with exactly
that value; several --label flags must all match. --project DIR selects the
sessions whose project is DIR (a relative DIR is taken from the current
directory). --here selects the sessions of the project you are in: the
nearest of the current directory and its ancestors that holds a .git entry
(the repository's top level), else the current directory itself.
A listing is paged, --limit sessions a page: when more sessions match, stderr
says how to see the next page (--page N; with --json the cursor is in the
"next" field). --all lists every page. --page counts pages from the start,
as the store is when asked; --cursor C resumes exactly after the page that
gave C, however the store changed meanwhile. A session that cannot be read
(a damaged or missing log, a file this user may not read) has no row: a
warning on stderr names it and says why (with --json, it is also in the
"unreadable" field), on every page; 'sessions verify' says more.

On a terminal the table fits its width (the title and lease are cut short
first, then the KIND, REV and UPDATED columns are left out, and a long
imported ID is cut last, to a prefix that still names it) and states and
leases are colored, unless NO_COLOR is set.`

// queryFlags are the filter and paging flags of ls and watch.
type queryFlags struct {
	states, kinds listFlag
	labels        labelFlag
	project       string
	here          bool
	limit         int
	order         string
	cursor        string
	page          int
	all           bool
}

func (q *queryFlags) register(c *sub, paging bool) {
	c.fs.Var(&q.states, "state", "only sessions in these `states` (idle, running, awaiting, completed, stopped, cancelled, failed)")
	c.fs.Var(&q.kinds, "kind", "only sessions of these `kinds` (primary, subagent, scheduled, debug, unknown)")
	c.fs.Var(&q.labels, "label", "only sessions carrying this label with this value, as `key=value` (repeatable: all must match)")
	c.fs.StringVar(&q.project, "project", "", "only sessions of the project in `directory`")
	c.fs.BoolVar(&q.here, "here", false, "only sessions of the current directory's project (its repository's top level, else the directory)")
	c.fs.IntVar(&q.limit, "limit", summary.DefaultLimit, "at most `N` sessions")
	c.fs.StringVar(&q.order, "order", string(summary.OrderUpdatedDesc), "`order`: updated_desc, updated_asc, created_desc, created_asc, id_asc")
	if paging {
		c.fs.StringVar(&q.cursor, "cursor", "", "continue a listing after the page that printed this `cursor` (--json's \"next\")")
		c.fs.IntVar(&q.page, "page", 0, "print page `N` of the listing (1 is the first)")
		c.fs.BoolVar(&q.all, "all", false, "print every page")
	}
}

// filtered reports whether the query filters sessions (for "no sessions
// match").
func (q *queryFlags) filtered() bool {
	return len(q.states) > 0 || len(q.kinds) > 0 || len(q.labels.m) > 0 || q.project != "" || q.here
}

func (q *queryFlags) query() (summary.Query, error) {
	out := summary.Query{Limit: q.limit, Order: summary.Order(q.order), Cursor: q.cursor, Labels: q.labels.m}
	var err error
	if out.Project, err = projectOf(q.project, q.here); err != nil {
		return out, err
	}
	for _, s := range q.states {
		out.States = append(out.States, session.State(s))
	}
	for _, k := range q.kinds {
		out.Kinds = append(out.Kinds, session.SessionKind(k))
	}
	switch {
	case q.limit <= 0:
		return out, fmt.Errorf("--limit must be positive")
	case q.page < 0:
		return out, fmt.Errorf("--page must be positive")
	case q.page > 0 && (q.all || q.cursor != ""), q.all && q.cursor != "":
		return out, fmt.Errorf("--page, --all and --cursor exclude each other")
	}
	return out.Normalize()
}

// projectOf is the project a command's --project and --here flags select
// ("" for none): --project's directory made absolute and cleaned, or with
// --here the project of the current directory (cli.ProjectOf).
func projectOf(project string, here bool) (string, error) {
	switch {
	case here && project != "":
		return "", fmt.Errorf("--here and --project exclude each other")
	case here:
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("--here: %w", err)
		}
		p, err := cli.ProjectOf(wd)
		if err != nil {
			return "", fmt.Errorf("--here: %w", err)
		}
		return p, nil
	case project != "":
		p, err := filepath.Abs(project)
		if err != nil {
			return "", fmt.Errorf("--project: %w", err)
		}
		return p, nil
	}
	return "", nil
}

// timeFlags are --time-format and the hidden --now of ls and watch.
type timeFlags struct {
	format string
	now    timeFlag
}

func (t *timeFlags) register(c *sub) {
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

// listFlags are the flags of a listing, ls's and watch's: its query and
// how it prints times.
type listFlags struct {
	queryFlags
	timeFlags
}

func (l *listFlags) register(c *sub, paging bool) {
	l.queryFlags.register(c, paging)
	l.timeFlags.register(c)
}

// parsed returns the query and the time format the flags give; the error
// is a usage error's text.
func (l *listFlags) parsed() (summary.Query, timeFormat, error) {
	q, err := l.query()
	if err != nil {
		return q, timeFormat{}, err
	}
	tf, err := l.timeFormat()
	return q, tf, err
}

func cmdLs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("ls", lsDoc, stdout, stderr)
	var lf listFlags
	lf.register(c, true)
	asJSON := c.fs.Bool("json", false, "print the page (summary.Page) as JSON")
	retired := c.fs.Bool("retired", false, "list the retired sessions instead (see retire; a directory store's)")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	if *retired {
		return c.lsRetired(ctx, *asJSON)
	}
	q, tf, err := lf.parsed()
	if err != nil {
		return c.usageError("%v", err)
	}
	return c.withStore(ctx, func(st sessionstore.Store) int {
		page, number, err := listPage(ctx, st, q, lf.queryFlags)
		if err != nil {
			return c.fail(err)
		}
		c.warnUnreadable(page.Unreadable)
		if *asJSON {
			return c.printJSON(jsonPageOf(page))
		}
		if len(page.Items) == 0 {
			switch {
			case number > 1 || lf.cursor != "":
				fmt.Fprintln(stdout, "no more sessions")
			case lf.filtered():
				fmt.Fprintln(stdout, "no sessions match")
			case len(page.Unreadable) > 0:
				fmt.Fprintln(stdout, "no readable sessions") // the others are named on stderr
			default:
				fmt.Fprintln(stdout, "no sessions")
			}
			return exitOK
		}
		if err := writeSummaries(stdout, page.Items, tf, cli.TerminalWidth(stdout), cli.NewPalette(stdout)); err != nil {
			return c.fail(err)
		}
		if page.Next != "" {
			hint := fmt.Sprintf("--page %d", number+1)
			if number == 0 { // continued from a --cursor: only a cursor continues it exactly
				hint = "--cursor " + page.Next
			}
			fmt.Fprintf(stderr, "more sessions: repeat with %s, or --all for every page\n", hint)
		}
		return exitOK
	})
}

// listPage returns the page the flags ask for: page qf.page (counting
// from 1), the page after qf.cursor, or, with --all, every page as one.
// number is the page's number (0 after a cursor).
func listPage(ctx context.Context, st sessionstore.Store, q summary.Query, qf queryFlags) (summary.Page, int, error) {
	if q.Cursor != "" {
		page, err := st.List(ctx, q)
		return page, 0, err
	}
	var all summary.Page
	number := 0
	for page, err := range sessionstore.Pages(ctx, st, q) {
		number++
		if err != nil {
			return page, number, err
		}
		switch {
		case qf.all:
			all.Items = append(all.Items, page.Items...)
			all.Unreadable = page.Unreadable // every page lists them
		case number >= max(qf.page, 1) || page.Next == "":
			if number < qf.page {
				page.Items, number = nil, qf.page // past the last page
			}
			return page, number, nil
		}
	}
	return all, number, nil // --all
}

// jsonItem is a summary as ls --json prints it: labels always an object
// ({} when the session has none), so that a reader never meets null or a
// missing key (the outer field hides the summary's own, which omits them).
type jsonItem struct {
	summary.Summary
	Labels map[string]string `json:"labels"`
}

// jsonPage is a page as ls --json prints it (summary.Page's keys).
type jsonPage struct {
	Items      []jsonItem           `json:"items"`
	Next       string               `json:"next,omitempty"`
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
}

// jsonPageOf is page as ls --json prints it: items and labels never null.
func jsonPageOf(page summary.Page) jsonPage {
	out := jsonPage{Items: make([]jsonItem, len(page.Items)), Next: page.Next, Unreadable: page.Unreadable}
	for i, s := range page.Items {
		out.Items[i] = jsonItem{Summary: s, Labels: s.Labels}
		if s.Labels == nil {
			out.Items[i].Labels = map[string]string{}
		}
	}
	return out
}
