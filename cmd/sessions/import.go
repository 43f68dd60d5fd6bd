package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/ingest"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/memstore"
)

const importUsage = "claude-code|codex [PATH...] [--dry-run] [--redact default|generic|off] [--json]"

var importDoc = fmt.Sprintf(`
Imports another agent's sessions: Claude Code's transcripts (PATH defaults to
~/.claude/projects: a transcript, a project directory or the projects
directory) or Codex's rollouts (PATH defaults to $CODEX_HOME/sessions, else
~/.codex/sessions: a rollout, or a directory searched for *.jsonl files).
Each conversation becomes a session (sub-agents as its child sessions) with
the ID "claude-code-<session id>" or "codex-<thread id>"; its title,
workspace, model, usage and timestamps come from the source. The sources
are only read, never changed.

Importing again is safe and quick: a source whose files have the size and
SHA-256 its session recorded is not read again; one that grew appends what
it gained to its session; one that was rewritten (its session is no longer
the start of it) is reported as diverged and left alone, as is a session
another process holds.

Only regular files are read: a path named is followed wherever it leads,
but in the directories it names nothing leads out of them. A walk follows
no symbolic link, passes over named pipes, devices and sockets, and goes
on past a directory it cannot read; the report lists each path it passed
over ("ignored"). A Codex walk descends at most %d directories; a walk
that meets more than %d directory entries in all stops, importing
nothing (name the directory that holds the sessions). Ctrl-C or SIGTERM
stops an import at once, with exit status 1: the sessions imported before
are kept, and importing again finishes the work.

What a converter cannot use — a torn last line, a line of an unknown type,
an invalid line — is counted in the report, never fatal. The report lists
each source read (its lines, size, the sessions created or updated, what
was skipped), then the totals; --json prints it all, unchanged sources
included. On a terminal a progress bar shows on stderr.

A missing directory store is created (unless --dry-run). Exit status 1
when a source could not be imported (failed, diverged, or its session
held), after the others were.`, ingest.DefaultMaxDepth, ingest.DefaultMaxEntries)

func cmdImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("import", importDoc, stdout, stderr)
	dryRun := c.fs.Bool("dry-run", false, "read the sources and report what would be written; write nothing")
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	c.redactFlag()
	pos, code, ok := c.parse(args, 1, -1)
	if !ok {
		return code
	}
	tool, paths := pos[0], pos[1:]
	if tool != ingest.ClaudeCode && tool != ingest.Codex {
		return c.usageError("unknown tool %q: claude-code or codex", tool)
	}
	if len(paths) == 0 {
		p, err := defaultSource(tool)
		if err != nil {
			return c.fail(err)
		}
		paths = []string{p}
	}
	st, err := c.openImportStore(ctx, *dryRun)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // every writer was released: nothing waits on Close

	bar := newImportBar(stderr)
	rep, err := ingest.Run(ctx, st, tool, paths, ingest.Options{DryRun: *dryRun, Progress: bar.update})
	bar.finish()
	if ctx.Err() != nil {
		// A signal: Run stopped within a read of each file it was reading.
		return c.fail(fmt.Errorf("stopped (%w): the sessions imported before it are kept; import again to finish", context.Cause(ctx)))
	}
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if code := c.printJSON(rep); code != exitOK {
			return code
		}
	} else if err := writeImportReport(stdout, rep); err != nil {
		return c.fail(err)
	}
	if rep.Totals.Failed > 0 {
		return exitFail
	}
	return exitOK
}

// defaultSource is where tool keeps its sessions.
func defaultSource(tool string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no PATH given, and no home directory: %w", err)
	}
	p := filepath.Join(home, ".claude", "projects")
	if tool == ingest.Codex {
		p = filepath.Join(home, ".codex", "sessions")
		if ch := os.Getenv("CODEX_HOME"); ch != "" {
			p = filepath.Join(ch, "sessions")
		}
	}
	if _, err := os.Stat(p); err != nil { //nolint:gosec // G703: the user's own home directory, or $CODEX_HOME
		return "", fmt.Errorf("no PATH given, and %s has none: %w", tool, err)
	}
	return p, nil
}

// openImportStore opens the store to import into: created when it is a
// missing directory, except for a dry run, which imports into an empty
// store in memory instead (everything would be created).
func (c *sub) openImportStore(ctx context.Context, dryRun bool) (sessionstore.Store, error) {
	st, err := c.open(ctx, !dryRun)
	if dryRun && errors.Is(err, jsonlstore.ErrNoStore) {
		return memstore.New(memstore.Options{}), nil
	}
	return st, err
}

// writeImportReport prints a line for each source read (unchanged ones
// are counted in the totals), then the totals.
func writeImportReport(w io.Writer, rep *ingest.Report) error {
	var b strings.Builder
	verb := ""
	if rep.DryRun {
		verb = "would be "
	}
	for _, src := range rep.Sources {
		if src.Status == ingest.StatusUnchanged {
			continue
		}
		fmt.Fprintf(&b, "%s: %d lines, %s", cli.Escape(src.Path), src.Read.Lines, cli.HumanBytes(src.Read.Bytes))
		if skipped := skippedText(src.Read.Skipped); skipped != "" {
			fmt.Fprintf(&b, "; skipped %s", skipped)
		}
		if src.Error != "" {
			fmt.Fprintf(&b, "\n  failed: %s", cli.Escape(src.Error))
		}
		b.WriteByte('\n')
		for _, s := range src.Sessions {
			fmt.Fprintf(&b, "  %s%s %s: %d messages", verb, s.Action, cli.Escape(string(s.ID)), s.Messages)
			if s.Revisions > 0 {
				fmt.Fprintf(&b, ", %d revisions", s.Revisions)
			}
			if s.ParentID != "" {
				fmt.Fprintf(&b, ", sub-agent of %s", cli.Escape(string(s.ParentID)))
			}
			if s.Into != "" {
				fmt.Fprintf(&b, ", part of %s", cli.Escape(string(s.Into)))
			}
			if s.Error != "" {
				fmt.Fprintf(&b, "\n    %s", cli.Escape(s.Error))
			}
			b.WriteByte('\n')
		}
	}
	for i, ig := range rep.Ignored {
		if i == maxIgnoredShown {
			fmt.Fprintf(&b, "ignored %d more (--json lists them)\n", len(rep.Ignored)-i)
			break
		}
		fmt.Fprintf(&b, "ignored %s: %s\n", cli.Escape(ig.Path), cli.Escape(ig.Reason))
	}
	t := rep.Totals
	fmt.Fprintf(&b, "%s: %s; %d read, %d unchanged", rep.Tool, cli.Plural(t.Sources, "source"), t.Read, t.Unchanged)
	if t.Failed > 0 {
		fmt.Fprintf(&b, ", %d failed", t.Failed)
	}
	b.WriteByte('\n')
	if len(t.Sessions) > 0 {
		var parts []string
		for _, a := range []ingest.Action{ingest.ActionCreated, ingest.ActionUpdated, ingest.ActionUnchanged, ingest.ActionFolded,
			ingest.ActionEmpty, ingest.ActionDuplicate, ingest.ActionDiverged, ingest.ActionFailed} {
			if n := t.Sessions[a]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, a))
			}
		}
		fmt.Fprintf(&b, "sessions: %s; %s %swritten\n", strings.Join(parts, ", "), cli.Plural(t.Revisions, "revision"), verb)
	}
	secs := rep.Elapsed.Seconds()
	fmt.Fprintf(&b, "read %d lines, %s in %s", t.Lines, cli.HumanBytes(t.Bytes), rep.Elapsed.Round(time.Millisecond))
	if secs > 0 && t.Bytes > 0 {
		fmt.Fprintf(&b, " (%.1f MB/s)", float64(t.Bytes)/secs/1e6)
	}
	if skipped := skippedText(t.Skipped); skipped != "" {
		fmt.Fprintf(&b, "; skipped %s", skipped)
	}
	b.WriteByte('\n')
	if rep.DryRun {
		b.WriteString("dry run: nothing was written\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxIgnoredShown bounds the paths passed over that the report prints (a
// walk of a large tree may pass over many links).
const maxIgnoredShown = 20

// skippedText names the lines skipped, by reason, in a fixed order.
func skippedText(m map[importer.Reason]int64) string {
	reasons := make([]string, 0, len(m))
	for r := range m {
		reasons = append(reasons, string(r))
	}
	slices.Sort(reasons)
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", m[importer.Reason(r)], r)
	}
	return strings.Join(reasons, ", ")
}

// importBar is the progress bar of an import, on stderr when it is a
// terminal; its methods do nothing otherwise.
type importBar struct {
	out io.Writer
	pb  *progressbar.ProgressBar
}

func newImportBar(stderr io.Writer) *importBar {
	if !cli.IsTerminal(stderr) {
		return &importBar{}
	}
	return &importBar{out: stderr}
}

func (b *importBar) update(p ingest.Progress) {
	if b.out == nil {
		return
	}
	if b.pb == nil {
		if p.Bytes == 0 {
			return // nothing to read: no bar
		}
		b.pb = progressbar.NewOptions64(p.Bytes,
			progressbar.OptionSetWriter(b.out),
			progressbar.OptionShowBytes(true),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetDescription("importing"),
		)
	}
	b.pb.Describe(fmt.Sprintf("importing %d/%d", p.SourcesDone, p.Sources))
	_ = b.pb.Set64(p.BytesDone)
}

func (b *importBar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}
