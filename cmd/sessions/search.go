package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fatih/color"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

const searchDoc = `
Searches the titles and messages of every session — prompts, replies,
reasoning, tool calls and tool results — and prints the best hits first:
the session, the message (its index in the conversation, from 0, and its
role), the revision it appeared at, and a snippet with the matches marked.

TEXT is words, all of which must be in one message (case does not matter);
"a phrase" of words in order (quote it for the shell too: '"exit status"');
and prefixes: work* matches worker and workers. A word is a run of letters
and digits, so config.yaml is the phrase "config yaml".

The store keeps an index for this (on a directory store, ROOT/.search/),
brought up to date as agents append. A session appended by a program that
did not index it, or an index deleted by hand, is indexed before the search
answers: "search index is being built" on stderr says it will take a while.
Every answer is as the sessions are on disk.

On a terminal the matches are bold; otherwise they are marked «so». A
snippet is the session's text: control characters are printed escaped.`

func cmdSearch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("search", searchDoc, stdout, stderr)
	var labels labelFlag
	c.fs.Var(&labels, "label", "only sessions with this label, `key=value` (repeat: all of them)")
	project := c.fs.String("project", "", "only sessions of the project in `directory`")
	here := c.fs.Bool("here", false, "only sessions of the current directory's project (as ls --here)")
	noTools := c.fs.Bool("no-tools", false, "leave tool calls and tool results out")
	limit := c.fs.Int("limit", sessionstore.DefaultSearchLimit, "at most `N` hits")
	asJSON := c.fs.Bool("json", false, "print the result as JSON")
	retired := c.fs.Bool("retired", false, "search the retired sessions instead (see retire; slower: each is read)")
	pos, code, ok := c.parse(args, 1, -1)
	if !ok {
		return code
	}
	if *limit <= 0 {
		return c.usageError("--limit must be positive")
	}
	proj, err := projectOf(*project, *here)
	if err != nil {
		return c.usageError("%v", err)
	}
	q := sessionstore.SearchQuery{Text: strings.Join(pos, " "), Labels: labels.m, Project: proj,
		NoTools: *noTools, Limit: *limit}
	if _, err := q.Normalize(); err != nil {
		return c.usageError("%v", err)
	}
	search := func(st sessionstore.Store) (sessionstore.SearchResult, error) { return st.Search(ctx, q) }
	if *retired {
		search = func(st sessionstore.Store) (sessionstore.SearchResult, error) {
			ds, ok := st.(*jsonlstore.Store)
			if !ok {
				return sessionstore.SearchResult{}, errors.New("--retired: only a directory store has a retired area")
			}
			return ds.SearchRetired(ctx, q)
		}
	}
	return c.withStore(ctx, func(st sessionstore.Store) int {
		res, err := search(st)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			return c.printJSON(res)
		}
		c.warnUnreadable(res.Unreadable)
		if len(res.Hits) == 0 {
			fmt.Fprintln(stderr, "no matches")
			return exitOK
		}
		mark := markers(cli.UseColor(stdout, os.Getenv))
		for _, h := range res.Hits {
			where := "title"
			if h.Message >= 0 {
				where = fmt.Sprintf("message %d (%s)", h.Message, h.Role)
				if h.Field == "tool" {
					where += " in tools"
				}
			}
			fmt.Fprintf(stdout, "%s  rev %d  %s  %s\n", h.ID, h.Revision, where, cli.Cell(h.Title))
			fmt.Fprintf(stdout, "    %s\n", marked(h.Snippet, h.Marks, mark))
		}
		return exitOK
	})
}

// markers are what a snippet's matches are put between: bold on a
// terminal, guillemets elsewhere.
func markers(colored bool) [2]string {
	if !colored {
		return [2]string{"«", "»"}
	}
	b := color.New(color.Bold)
	b.EnableColor()
	on := b.Sprint("\x00")
	i := strings.IndexByte(on, 0)
	return [2]string{on[:i], on[i+1:]}
}

// marked is snippet with its marks put between mark, every piece of the
// session's text escaped (cli.Escape), so that the text cannot drive the
// terminal and the marks stay where they were.
func marked(snippet string, marks []sessionstore.TextSpan, mark [2]string) string {
	var b strings.Builder
	at := 0
	for _, m := range marks {
		if m.Start < at || m.End > len(snippet) || m.Start >= m.End {
			continue
		}
		b.WriteString(cli.Escape(snippet[at:m.Start]))
		b.WriteString(mark[0] + cli.Escape(snippet[m.Start:m.End]) + mark[1])
		at = m.End
	}
	b.WriteString(cli.Escape(snippet[at:]))
	return b.String()
}
