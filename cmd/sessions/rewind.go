package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/server"
	"github.com/sessionstore/sessionstore/session"
)

// rewind and fork: going back to a point of a conversation, in place or
// in a new session. A point is a message count K (the first K messages)
// or a message ID as 'sessions show' prints it (the messages up to it).

const rewindDoc = `
Rewinds a session in place: a new revision whose conversation is its first
K messages, or its messages up to the one whose ID is MSGID (as 'sessions
show' prints IDs), with the session idle. The revisions before stay in its
history ('sessions log') and can still be shown and forked. The session's
lease is taken first: a session another process holds is refused, naming
the holder, unless --wait.`

func cmdRewind(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("rewind", rewindDoc, stdout, stderr)
	to := c.fs.String("to-message", "", "keep the first `K` messages, or those up to message ID MSGID")
	wait := c.fs.Duration("wait", 0, "wait up to `duration` for a held lease (default: refuse at once)")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	if *to == "" {
		return c.usageError("--to-message is required")
	}
	if *wait < 0 {
		return c.usageError("--wait must not be negative")
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		return c.write(ctx, st, id, "sessions-rewind", *wait, func(w *server.Writer) (string, error) {
			rev, n, err := w.Rewind(ctx, 0, *to)
			return fmt.Sprintf("%s revision %d: rewound to %s", id, rev, cli.Plural(n, "message")), err
		})
	})
}

const forkDoc = `
Forks a session at a message: a new session whose conversation is the
first K messages of ID's latest revision, or its messages up to the one
whose ID is MSGID (as 'sessions show' prints IDs); without --at-message,
all of them. The new session is idle, keeps ID's title, and records that
it is a fork of ID at that message. Prints the new session's ID. ID itself
is not changed, and its lease is not needed.`

func cmdFork(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("fork", forkDoc, stdout, stderr)
	at := c.fs.String("at-message", "", "fork with the first `K` messages, or those up to message ID MSGID")
	newID := c.fs.String("id", "", "the new session's `ID` (default: a new ULID)")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		point := *at
		if point == "" {
			rec, err := st.LoadWith(ctx, id, sessionstore.LoadOptions{WithoutContent: true})
			if err != nil {
				return c.fail(err)
			}
			point = fmt.Sprint(len(rec.Snapshot.Messages))
		}
		h, err := sessionstore.ForkAt(ctx, st, id, point, session.SessionID(*newID), sessionstore.AcquireOptions{Label: "sessions-fork"})
		if err != nil {
			return c.fail(err)
		}
		n := len(h.Snapshot().Messages)
		if err := h.Close(context.WithoutCancel(ctx)); err != nil {
			return c.fail(err)
		}
		fmt.Fprintln(stdout, h.ID())
		fmt.Fprintf(stderr, "fork of %s at message %d\n", id, n)
		return exitOK
	})
}
