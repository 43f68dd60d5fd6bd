package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer/transcript"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

const showDoc = `
Prints a session's snapshot (the sessnap JSON document) indented: the latest
revision, or revision N with --rev (revisions count from 1). Characters a
terminal could act on are escaped in its strings (\u001b, \u009b, …), as
JSON allows.

With --format markdown or text it prints the conversation for a person to
read instead: the session's facts, then each message with its role, time,
model and usage; text in full; reasoning, tool calls and tool results
folded to a line each with their sizes; images and files named with their
type and size. Nothing the session holds makes structure of its own: a
line break in a title, model, tool name or ID is shown as \n (and CR, NEL,
U+2028 and the like as their escapes); in Markdown a message's text is a
fenced code block no line of it can close, and other values have their
markup escaped, so neither makes a header or HTML; in text a message's
lines are indented beneath its header. On a terminal, characters it could
act on are escaped (\x1b); piped, the text is as the session holds it.`

func cmdShow(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("show", showDoc, stdout, stderr)
	rev := c.fs.Uint64("rev", 0, "print revision `N` (1 or more) instead of the latest")
	format := c.fs.String("format", "json", "json, markdown or text")
	ids := c.fs.Bool("ids", false, "with markdown or text, show each message's ID (for rewind and fork --at-message)")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	revGiven := false
	c.fs.Visit(func(f *flag.Flag) { revGiven = revGiven || f.Name == "rev" })
	if revGiven && *rev == 0 {
		return c.usageError("--rev 0: revisions count from 1 (leave --rev out for the latest)")
	}
	if *format != "json" && *format != "markdown" && *format != "text" {
		return c.usageError("unknown --format %q (json, markdown or text)", *format)
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		rec, err := st.LoadWith(ctx, id, sessionstore.LoadOptions{Revision: *rev})
		if err != nil {
			return c.fail(err)
		}
		if *format != "json" {
			return c.showTranscript(rec, *format, *ids)
		}
		b, err := sessnap.Marshal(rec.Snapshot)
		if err != nil {
			return c.fail(err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return c.fail(err)
		}
		out.WriteByte('\n')
		if _, err := stdout.Write(cli.EscapeJSON(out.Bytes())); err != nil {
			return c.fail(err)
		}
		return exitOK
	})
}

// showTranscript prints rec's conversation as format (markdown or text).
func (c *sub) showTranscript(rec sessionstore.Record, format string, ids bool) int {
	s, err := rec.Session()
	if err != nil {
		return c.fail(err)
	}
	w := c.stdout
	if cli.IsTerminal(c.stdout) {
		w = &terminalText{w: c.stdout}
	}
	write := transcript.WriteText
	if format == "markdown" {
		write = transcript.WriteMarkdown
	}
	if err := write(w, s, transcript.Options{IDs: ids}); err != nil {
		return c.fail(err)
	}
	return exitOK
}

// terminalText writes text for a terminal: the characters it could act
// on escaped (cli.Escape), line breaks and tabs kept. A character cut
// between two writes waits for its end.
type terminalText struct {
	w    io.Writer
	rest []byte // the start of a character the last write cut
}

func (t *terminalText) Write(p []byte) (int, error) {
	n := len(p)
	if len(t.rest) > 0 {
		p = append(t.rest, p...)
		t.rest = nil
	}
	for k := 1; k <= utf8.UTFMax && k <= len(p); k++ {
		if tail := p[len(p)-k:]; utf8.RuneStart(tail[0]) {
			if !utf8.FullRune(tail) {
				t.rest, p = append([]byte(nil), tail...), p[:len(p)-k]
			}
			break
		}
	}
	var b strings.Builder
	start := 0
	for i, c := range p {
		if c == '\n' || c == '\t' {
			b.WriteString(cli.Escape(string(p[start:i])))
			b.WriteByte(c)
			start = i + 1
		}
	}
	b.WriteString(cli.Escape(string(p[start:])))
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	return n, nil
}
