package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
)

const exportUsage = "ID [--format snapshot|jsonl|claude-code|codex] [--all-revisions]"

const exportDoc = `
Writes a session to stdout in one of these forms (--format):

  snapshot     (the default) the latest snapshot, as indented JSON, with
               the content kept out of line read back in: the session as
               it is now, a document that stands on its own.
  jsonl        the session's records exactly as the store keeps them, one
               line each (FORMAT.md): full and delta records, blob
               references as they are. What 'sessions migrate' copies.
  claude-code  the conversation as a Claude Code transcript (a sub-agent
               imported from Claude Code as its sub-agent file).
  codex        the conversation as a Codex rollout.

With --all-revisions (snapshot only) it writes every revision instead,
oldest first, one object per revision, each on one line:

  {"revision":1,"generation":1,"time":"2026-11-29T12:00:01Z",
   "schema":1,"snapshot":{...}}

where snapshot is that revision's snapshot rebuilt, byte for byte as stored
(the same bytes from a directory and from a PostgreSQL store). That is the
whole history spelled out — it can be many times the session's size (the
jsonl form holds the same history as stored) — so on a terminal it first
says how much it would write, and asks; to a file or a pipe it says so on
stderr, and writes, when that is over 256 MiB. Every form is written as it is
read: memory stays bounded however long the history. At a corrupt record
the export stops with the error on stderr and exit status 1, after what
came before it. --latest is the default form, as before.`

// exportForms are the forms --format takes.
var exportForms = []string{"snapshot", "jsonl", "claude-code", "codex"}

func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("export", exportDoc, stdout, stderr)
	format := c.fs.String("format", "snapshot", "the form: "+strings.Join(exportForms, ", "))
	all := c.fs.Bool("all-revisions", false, "every revision's snapshot, as JSON Lines (snapshot form)")
	yes := c.fs.Bool("yes", false, "with --all-revisions on a terminal: write without asking")
	warnAbove := c.fs.Int64("warn-bytes", largeHistory, "with --all-revisions to a file or pipe: the size that is warned of (for tests)")
	c.hide("warn-bytes")
	c.fs.Bool("latest", false, "the latest snapshot (the default)")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	switch {
	case !slices.Contains(exportForms, *format):
		return c.usageError("unknown --format %q (%s)", *format, strings.Join(exportForms, ", "))
	case *all && *format != "snapshot":
		return c.usageError("--all-revisions writes snapshots; --format %s holds one form of the session", *format)
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		if *all && cli.IsTerminal(stdout) && !*yes {
			if code, ok := c.confirmHistory(ctx, st, id, os.Stdin); !ok {
				return code
			}
		} else if *all {
			c.warnHistory(ctx, st, id, *warnAbove)
		}
		bw := bufio.NewWriterSize(stdout, 64<<10)
		err := exportAs(ctx, st, id, *format, *all, bw)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			return c.fail(err)
		}
		return exitOK
	})
}

// exportAs writes session id of st to w in form format.
func exportAs(ctx context.Context, st sessionstore.Store, id session.SessionID, format string, all bool, w io.Writer) error {
	switch format {
	case "jsonl":
		rl, ok := st.(recordLiner)
		if !ok {
			return errors.New("this store does not keep record lines")
		}
		for line, err := range rl.RecordLines(ctx, id) {
			if err != nil {
				return err
			}
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
	case "claude-code", "codex":
		rec, err := st.Load(ctx, id)
		if err != nil {
			return err
		}
		s, err := rec.Session()
		if err != nil {
			return err
		}
		if format == "codex" {
			return codex.Write(w, s, codex.WriteOptions{ParentThreadID: parentThread(ctx, st, s)})
		}
		var opts claudecode.WriteOptions
		if o := s.Origin(); o != nil && o.Tool == claudecode.Tool && o.AgentID != "" {
			opts.AgentID = o.AgentID // a sub-agent's file, under its parent's session ID
		}
		return claudecode.Write(w, s, opts)
	}
	return sessionstore.Export(ctx, st, id, w, !all)
}

// parentThread is the Codex thread of the session s is a sub-agent of,
// when it was imported from Codex ("" otherwise).
func parentThread(ctx context.Context, st sessionstore.Store, s *session.Session) string {
	parent := s.Relationship().ParentID
	if parent == "" {
		return ""
	}
	rec, err := st.Load(ctx, parent)
	if err != nil || rec.Snapshot.Origin == nil || rec.Snapshot.Origin.Tool != codex.Tool {
		return string(parent)
	}
	return rec.Snapshot.Origin.SessionID
}

// recordLiner is a store that keeps a session as the record lines of
// FORMAT.md (both adapters the command opens).
type recordLiner interface {
	RecordLines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error]
}

// confirmHistory says on stderr how much --all-revisions would write and
// asks on stdin whether to write it to the terminal. ok reports yes;
// otherwise the command returns code.
func (c *sub) confirmHistory(ctx context.Context, st sessionstore.Store, id session.SessionID, stdin io.Reader) (code int, ok bool) {
	revs, size, exact, err := historySize(ctx, st, id)
	if err != nil {
		return c.fail(err), false
	}
	amount := cli.HumanBytes(size)
	if !exact {
		amount = "at least " + amount
	}
	if confirm(stdin, c.stderr, fmt.Sprintf("--all-revisions writes %s (%s) of JSON to the terminal", cli.Plural(revs, "revision"), amount)) {
		return exitOK, true
	}
	fmt.Fprintln(c.stderr, "nothing written: redirect it to a file (> FILE), or give --yes")
	return exitFail, false
}

// largeHistory is the size of an --all-revisions export, written to a
// file or a pipe, that is worth a word on stderr before it starts.
const largeHistory = 256 << 20

// warnHistory says on stderr how much --all-revisions is about to write to
// a file or a pipe when that is at least above bytes: a pipe takes
// gigabytes without a word, and the user may want the jsonl form instead.
func (c *sub) warnHistory(ctx context.Context, st sessionstore.Store, id session.SessionID, above int64) {
	revs, size, exact, err := historySize(ctx, st, id)
	if err != nil || size < above {
		return // the export meets the error itself
	}
	amount := cli.HumanBytes(size)
	if !exact {
		amount = "at least " + amount
	}
	fmt.Fprintf(c.stderr, "sessions export: --all-revisions writes %s (%s) of JSON: every revision spelled out; --format jsonl holds the same history as stored\n",
		cli.Plural(revs, "revision"), amount)
}

// confirm asks question on w and reports whether the answer read from r
// is yes.
func confirm(r io.Reader, w io.Writer, question string) bool {
	fmt.Fprintf(w, "%s. Write it? [y/N] ", question)
	answer, _ := bufio.NewReader(r).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

// historySize is how many revisions an export of every revision of
// session id writes, and how many bytes. From a store that keeps record
// lines it is one pass over them, reading each record's envelope and its
// snapshot's length, rebuilding nothing: the bytes of the snapshots as
// stored, so at least what the export writes (it reads content kept out
// of line back in), exact false. Otherwise it is an export written
// nowhere.
func historySize(ctx context.Context, st sessionstore.Store, id session.SessionID) (revs int, size int64, exact bool, err error) {
	rl, ok := st.(recordLiner)
	if !ok {
		var n countingWriter
		err := sessionstore.Export(ctx, st, id, &n, false)
		return n.lines, n.bytes, true, err
	}
	for line, err := range rl.RecordLines(ctx, id) {
		if err != nil {
			return 0, 0, false, err
		}
		m, payload, err := record.Parse(bytes.TrimSuffix(line, []byte{'\n'}), len(line))
		if err != nil {
			return 0, 0, false, err
		}
		n, err := record.ExportLen(m, payload)
		if err != nil {
			return 0, 0, false, err
		}
		if n > 0 {
			revs++
			size += int64(n)
		}
	}
	return revs, size, false, nil
}

// countingWriter counts what is written to it, and its lines.
type countingWriter struct {
	bytes int64
	lines int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.bytes += int64(len(p))
	w.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}
