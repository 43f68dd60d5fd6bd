package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/server"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The write commands, for shell scripts: each takes the session's lease
// as any writer does (internal/server's Writer, the server's handles'
// own), writes one revision, and releases it.

const newDoc = `
Creates an empty session and prints its ID. Creates the store when it is
missing. --id names the session (default: a new ULID); --title gives it an
explicit title (default: the first user message's first line); --label
KEY=VALUE (repeatable) and --project DIR (or --here) set its labels and
project.`

func cmdNew(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("new", newDoc, stdout, stderr)
	id := c.fs.String("id", "", "the new session's `ID` (default: a new ULID)")
	title := c.fs.String("title", "", "the session's `title`")
	var labels labelFlag
	c.fs.Var(&labels, "label", "a label, as `key=value` (repeatable)")
	project := c.fs.String("project", "", "the session's project `directory`")
	here := c.fs.Bool("here", false, "the project is the one you are in")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	var ws session.Workspace
	switch {
	case *here && *project != "":
		return c.usageError("--here and --project exclude each other")
	case *here || *project != "":
		dir := *project
		if *here {
			dir = "."
		}
		p, err := cli.ProjectOf(dir)
		if err != nil {
			return c.fail(err)
		}
		ws.Project = p
	}
	st, err := c.open(ctx, true)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // the writer released first: nothing written waits on Close
	w, err := server.Create(ctx, st, server.CreateOptions{ID: session.SessionID(*id), Title: *title, Labels: labels.m, Workspace: ws},
		sessionstore.AcquireOptions{Label: "sessions-new"})
	if err != nil {
		return c.fail(err)
	}
	if err := w.Release(ctx); err != nil {
		return c.fail(err)
	}
	fmt.Fprintln(stdout, w.ID())
	return exitOK
}

const appendDoc = `
Appends messages to a session, read from standard input as JSON lines, one
message a line in the form 'sessions show' prints a message:

  {"role":"user","parts":[{"type":"text","text":"hello"}]}

A message without created_at is stamped with the current time. Every line
is checked before anything is written, and all of them go into one
revision: an invalid line (it is named) writes nothing. Empty lines are
skipped. The session's lease is taken first, as any writer must: a session
another process holds is refused, naming the holder, unless --wait.`

// maxAppendLine bounds one line of input: the store's record cap, which
// one message cannot exceed anyway.
const maxAppendLine = sessionstore.DefaultMaxRecordBytes

func cmdAppend(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return appendFrom(ctx, args, os.Stdin, stdout, stderr)
}

func appendFrom(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newSub("append", appendDoc, stdout, stderr)
	wait := c.fs.Duration("wait", 0, "wait up to `duration` for a held lease (default: refuse at once)")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	if *wait < 0 {
		return c.usageError("--wait must not be negative")
	}
	msgs, err := readMessages(stdin)
	if err != nil {
		return c.fail(err)
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		return c.write(ctx, st, id, "sessions-append", *wait, func(w *server.Writer) (string, error) {
			rev, err := w.AddMessages(ctx, 0, msgs)
			return fmt.Sprintf("%s revision %d: %s appended", id, rev, cli.Plural(len(msgs), "message")), err
		})
	})
}

// readMessages reads JSON lines of messages.
func readMessages(r io.Reader) ([]session.Message, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxAppendLine)
	var msgs []session.Message
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		m, err := sessnap.UnmarshalMessage([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		msgs = append(msgs, m)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("a line is longer than %d bytes, the most one message may take", maxAppendLine)
		}
		return nil, fmt.Errorf("read standard input: %w", err)
	}
	if len(msgs) == 0 {
		return nil, errors.New("no message on standard input (JSON lines, one message each)")
	}
	return msgs, nil
}

const labelDoc = `
Sets labels (KEY=VALUE) and removes them (--rm KEY, repeatable) in one
revision of a session. Taking the lease is as for append.`

func cmdLabel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("label", labelDoc, stdout, stderr)
	wait := c.fs.Duration("wait", 0, "wait up to `duration` for a held lease (default: refuse at once)")
	var remove listFlag
	c.fs.Var(&remove, "rm", "remove the label `key` (repeatable)")
	pos, code, ok := c.parse(args, 1, -1)
	if !ok {
		return code
	}
	if err := checkNames(pos[:1]); err != nil {
		return c.usageError("%v", err)
	}
	var set labelFlag
	for _, kv := range pos[1:] {
		if err := set.Set(kv); err != nil {
			return c.usageError("%v", err)
		}
	}
	if len(set.m) == 0 && len(remove) == 0 {
		return c.usageError("no label to set (KEY=VALUE) or remove (--rm KEY)")
	}
	if *wait < 0 {
		return c.usageError("--wait must not be negative")
	}
	return c.withSession(ctx, pos[0], func(st sessionstore.Store, id session.SessionID) int {
		return c.write(ctx, st, id, "sessions-label", *wait, func(w *server.Writer) (string, error) {
			rev, labels, err := w.SetLabels(ctx, set.m, remove)
			return fmt.Sprintf("%s revision %d: %s", id, rev, cli.Plural(len(labels), "label")), err
		})
	})
}

// write takes session id's lease, runs fn, releases the lease and prints
// what fn says.
func (c *sub) write(ctx context.Context, st sessionstore.Store, id session.SessionID, label string, wait time.Duration, fn func(w *server.Writer) (string, error)) int {
	w, err := server.Acquire(ctx, st, id, sessionstore.AcquireOptions{Label: label}, wait)
	var he *sessionstore.LeaseHeldError
	switch {
	case errors.As(err, &he):
		return c.fail(heldError(he, c.name, wait))
	case err != nil:
		return c.fail(err)
	}
	out, err := fn(w)
	if rerr := w.Release(ctx); err == nil {
		err = rerr
	}
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintln(c.stdout, out)
	return exitOK
}
