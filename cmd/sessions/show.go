package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

const showDoc = `
Prints a session's snapshot (the sessnap JSON document) indented: the latest
revision, or revision N with --rev (revisions count from 1). Characters a
terminal could act on are escaped in its strings (\u001b, \u009b, …), as
JSON allows.`

func cmdShow(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("show", showDoc, stdout, stderr)
	rev := c.fs.Uint64("rev", 0, "print revision `N` (1 or more) instead of the latest")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	revGiven := false
	c.fs.Visit(func(f *flag.Flag) { revGiven = revGiven || f.Name == "rev" })
	if revGiven && *rev == 0 {
		return c.usageError("--rev 0: revisions count from 1 (leave --rev out for the latest)")
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		rec, err := sessionstore.LoadAt(ctx, st, id, *rev)
		if err != nil {
			return c.fail(err)
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
