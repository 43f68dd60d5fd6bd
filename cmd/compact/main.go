package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Exit statuses.
const (
	exitOK    = 0 // every session compacted or skipped
	exitFail  = 1 // a session could not be compacted, or the store not opened
	exitUsage = 2 // bad flags or arguments
)

const usageText = `Usage: compact [--keep-last N] [--keep-since D] [--wait D] [--dry-run] [--json] [--dir ROOT] [ID...]

Trim old revisions of sessions (all of them when no ID is given) into zstd
archives. A revision is kept when any rule keeps it; the latest always is.
Trimmed revisions stay readable. At least one of --keep-last and
--keep-since is required. A session that cannot be read (a damaged or
missing log, a file this user may not read) is reported as failed, and the
others are compacted.

Flags:
  --keep-last N    keep each session's last N revisions
  --keep-since D   keep revisions written within D (like 36h, 90m, or 7d)
  --wait D         wait up to D for a session another process holds
                   (default: skip it, and say so)
  --dry-run        report what would be trimmed; take no lease, write nothing
  --json           print the reports and their totals as JSON
  --dir ROOT       the store (default: $SESSIONSTORE_DIR, else
                   $XDG_DATA_HOME/sessionstore, else ~/.local/share/sessionstore)

Exit status: 0 every session compacted or skipped, 1 a failure, 2 bad usage.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	policy jsonlstore.CompactPolicy
	wait   time.Duration
	json   bool
	dir    string
	ids    []session.SessionID
}

// run is the command: flags, validation, a compaction per session, the
// report. It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, code, ok := parse(args, stdout, stderr)
	if !ok {
		return code
	}
	dir, err := storeDir(opts.dir)
	if err != nil {
		return fail(stderr, err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fail(stderr, fmt.Errorf("no store at %s (use --dir, or set SESSIONSTORE_DIR)", dir))
	}
	st, err := jsonlstore.Open(dir, jsonlstore.Options{Logger: warnLogger(stderr)})
	if err != nil {
		return fail(stderr, err)
	}
	defer func() { _ = st.Close() }() // releases the root handle only: each compaction was durable when it returned

	work, err := sessions(ctx, st, opts.ids)
	if err != nil {
		return fail(stderr, err)
	}
	bar := newBar(stderr, work)
	out := report{DryRun: opts.policy.DryRun, Sessions: []result{}}
	for _, s := range work {
		if ctx.Err() != nil {
			out.add(result{CompactReport: jsonlstore.CompactReport{ID: s.id}, Error: "not attempted: " + ctx.Err().Error()})
			continue
		}
		if s.unreadable != "" {
			// Reported as a failure, and the others go on.
			out.add(result{CompactReport: jsonlstore.CompactReport{ID: s.id}, Error: "cannot be read: " + s.unreadable})
			continue
		}
		bar.start(s)
		rep, err := st.Compact(ctx, s.id, opts.policy, opts.wait)
		r := result{CompactReport: rep}
		if err != nil {
			r.ID, r.Error = s.id, err.Error()
		}
		out.add(r)
		bar.done(s)
	}
	bar.finish()

	if opts.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(stderr, err)
		}
	} else {
		out.print(stdout)
	}
	if out.Totals.Failed > 0 {
		return exitFail
	}
	return exitOK
}

// parse parses and validates args; flags and IDs may come in any order (a
// "--" ends the flags). It returns the options, or an exit status when
// the command should stop: 0 after --help, exitUsage after an error.
func parse(args []string, stdout, stderr io.Writer) (options, int, bool) {
	var o options
	var keepSince, wait durationFlag
	fset := flag.NewFlagSet("compact", flag.ContinueOnError)
	fset.SetOutput(io.Discard) // errors and usage are printed below
	fset.IntVar(&o.policy.KeepLast, "keep-last", 0, "")
	fset.Var(&keepSince, "keep-since", "")
	fset.Var(&wait, "wait", "")
	fset.BoolVar(&o.policy.DryRun, "dry-run", false, "")
	fset.BoolVar(&o.json, "json", false, "")
	fset.StringVar(&o.dir, "dir", "", "")
	usageError := func(format string, args ...any) (options, int, bool) {
		fmt.Fprintf(stderr, "compact: %s\n\n%s", fmt.Sprintf(format, args...), usageText)
		return o, exitUsage, false
	}
	var pos []string
	for {
		err := fset.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return o, exitOK, false
		}
		if err != nil {
			return usageError("%v", err)
		}
		rest := fset.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	o.policy.KeepSince, o.wait = time.Duration(keepSince), time.Duration(wait)
	switch {
	case o.policy.KeepLast < 0:
		return usageError("--keep-last must be positive, not %d", o.policy.KeepLast)
	case o.policy.KeepSince < 0:
		return usageError("--keep-since must be positive, not %s", o.policy.KeepSince)
	case o.wait < 0:
		return usageError("--wait must be positive, not %s", o.wait)
	case o.policy.KeepLast == 0 && o.policy.KeepSince == 0:
		return usageError("say what to keep: --keep-last N, --keep-since D, or both")
	}
	for _, p := range pos {
		id := session.SessionID(p)
		if err := sessionstore.ValidateID(id); err != nil {
			return usageError("%q is not a session ID: %v", p, err)
		}
		o.ids = append(o.ids, id)
	}
	return o, 0, true
}

// durationFlag is a positive time.Duration that also takes whole days
// ("7d").
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(v string) error {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return fmt.Errorf("not a number of days: %q", v)
		}
		*d = durationFlag(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	t, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("not a duration (like 36h, 90m or 7d): %q", v)
	}
	*d = durationFlag(t)
	return nil
}

// storeDir is the store: --dir, else jsonlstore.DefaultDir (as for the
// sessions command).
func storeDir(flagDir string) (string, error) {
	if flagDir != "" {
		return flagDir, nil
	}
	return jsonlstore.DefaultDir()
}

// warnLogger reports the store's warnings (a damaged session skipped by
// the listing, …) on stderr, without timestamps.
func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "compact: %v\n", err)
	return exitFail
}

// target is a session to compact and the size of its log (for progress),
// or one the listing could not read, and why.
type target struct {
	id         session.SessionID
	logBytes   int64
	unreadable string
}

// sessions returns the sessions to compact: ids, or every session of the
// store (in ID order, those the listing could not read included), with
// their log sizes as the listing knows them.
func sessions(ctx context.Context, st *jsonlstore.Store, ids []session.SessionID) ([]target, error) {
	sizes := map[session.SessionID]int64{}
	var all []target
	q := summary.Query{Limit: summary.MaxLimit, Order: summary.OrderIDAsc}
	for {
		page, err := st.List(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, s := range page.Items {
			sizes[s.ID] = s.Sizes.LogBytes
			all = append(all, target{id: s.ID, logBytes: s.Sizes.LogBytes})
		}
		if page.Next == "" {
			// Every page lists the unreadable sessions: take the last's.
			for _, u := range page.Unreadable {
				all = append(all, target{id: u.ID, unreadable: u.Reason})
			}
			break
		}
		q.Cursor = page.Next
	}
	if len(ids) == 0 {
		slices.SortFunc(all, func(a, b target) int { return cmp.Compare(a.id, b.id) })
		return all, nil
	}
	var out []target
	for _, id := range ids {
		out = append(out, target{id: id, logBytes: sizes[id]})
	}
	return out, nil
}

// result is one session's outcome.
type result struct {
	jsonlstore.CompactReport
	Error string `json:"error,omitempty"`
}

// totals add up the results. Byte counts are over the sessions compacted
// (or, in a dry run, that would be).
type totals struct {
	Sessions         int   `json:"sessions"`
	Compacted        int   `json:"compacted"`
	Skipped          int   `json:"skipped"`
	Failed           int   `json:"failed"`
	RevisionsTrimmed int64 `json:"revisions_trimmed"`
	LogBytesBefore   int64 `json:"log_bytes_before"`
	LogBytesAfter    int64 `json:"log_bytes_after"`
	ArchiveBytes     int64 `json:"archive_bytes"`
}

// report is what the command prints (with --json, as it is).
type report struct {
	DryRun   bool     `json:"dry_run"`
	Sessions []result `json:"sessions"`
	Totals   totals   `json:"totals"`
}

func (r *report) add(res result) {
	r.Sessions = append(r.Sessions, res)
	t := &r.Totals
	t.Sessions++
	switch {
	case res.Error != "":
		t.Failed++
	case res.Skipped != "":
		t.Skipped++
	default:
		t.Compacted++
		t.RevisionsTrimmed += res.RevisionsTrimmed
		t.LogBytesBefore += res.LogBytesBefore
		t.LogBytesAfter += res.LogBytesAfter
		t.ArchiveBytes += res.ArchiveBytes
	}
}

// print writes the human report: a line per session, then the totals.
func (r *report) print(w io.Writer) {
	compacted := "compacted"
	if r.DryRun {
		compacted = "would compact"
	}
	width := len("SESSION")
	for _, s := range r.Sessions {
		width = max(width, len(s.ID))
	}
	line := func(id, trimmed, first, before, after, archive, what string) {
		l := fmt.Sprintf("%-*s  %7s  %10s  %10s  %10s  %10s  %s", width, id, trimmed, first, before, after, archive, what)
		fmt.Fprintln(w, strings.TrimRight(l, " "))
	}
	line("SESSION", "TRIMMED", "FIRST KEPT", "LOG BEFORE", "LOG AFTER", "ARCHIVE", "")
	for _, s := range r.Sessions {
		id := string(s.ID)
		switch {
		case s.Error != "":
			line(id, "-", "-", "-", "-", "-", "failed: "+oneLine(s.Error))
		case s.Skipped != "":
			line(id, "-", "-", "-", "-", "-", "skipped: "+oneLine(s.Skipped))
		default:
			archive := bytesString(s.ArchiveBytes)
			if r.DryRun {
				archive = "-"
			}
			line(id, strconv.FormatInt(s.RevisionsTrimmed, 10), strconv.FormatUint(s.FirstKept, 10),
				bytesString(s.LogBytesBefore), bytesString(s.LogBytesAfter), archive, compacted)
		}
	}
	t := r.Totals
	fmt.Fprintf(w, "\n%d sessions: %d %s, %d skipped, %d failed; %d revisions trimmed; logs %s -> %s",
		t.Sessions, t.Compacted, compacted, t.Skipped, t.Failed, t.RevisionsTrimmed,
		bytesString(t.LogBytesBefore), bytesString(t.LogBytesAfter))
	if r.DryRun {
		fmt.Fprintln(w, " (dry run: nothing was written)")
	} else {
		fmt.Fprintf(w, "; archives +%s\n", bytesString(t.ArchiveBytes))
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// bytesString formats n bytes with a binary unit.
func bytesString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// bar is the progress bar, shown on stderr when it is a terminal; its
// methods do nothing otherwise.
type bar struct{ pb *progressbar.ProgressBar }

func newBar(stderr io.Writer, work []target) *bar {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || len(work) == 0 {
		return &bar{}
	}
	var total int64
	for _, s := range work {
		total += max(s.logBytes, 1)
	}
	return &bar{pb: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetDescription("compacting"),
	)}
}

func (b *bar) start(s target) {
	if b.pb != nil {
		b.pb.Describe("compacting " + string(s.id))
	}
}

func (b *bar) done(s target) {
	if b.pb != nil {
		_ = b.pb.Add64(max(s.logBytes, 1))
	}
}

func (b *bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}
