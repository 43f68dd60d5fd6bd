package compactcmd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Doc says what compaction does, for usage texts.
const Doc = `Trims old revisions of sessions (all of them when no ID is given) into zstd
archives. A revision is kept when any rule keeps it; the latest always is.
Trimmed revisions stay readable. At least one of --keep-last and
--keep-since is required. A session that cannot be read (a damaged or
missing log, a file this user may not read) is reported as failed, and the
others are compacted. A session another process holds is skipped, and
reported as such, unless --wait gives the time to wait for it.`

// Flags are the command's flags.
type Flags struct {
	KeepLast  int
	KeepSince cli.Duration
	Wait      cli.Duration
	DryRun    bool
	JSON      bool
}

// Register defines the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.IntVar(&f.KeepLast, "keep-last", 0, "keep each session's last `N` revisions")
	fs.Var(&f.KeepSince, "keep-since", "keep revisions written within `D` (like 36h, 90m, or 7d)")
	fs.Var(&f.Wait, "wait", "wait up to `D` for a session another process holds (default: skip it, and say so)")
	fs.BoolVar(&f.DryRun, "dry-run", false, "report what would be trimmed; take no lease, write nothing")
	fs.BoolVar(&f.JSON, "json", false, "print the reports and their totals as JSON")
}

// Policy validates the flags and returns the policy they say.
func (f *Flags) Policy() (maintenance.CompactPolicy, error) {
	p := maintenance.CompactPolicy{KeepLast: f.KeepLast, KeepSince: time.Duration(f.KeepSince), DryRun: f.DryRun}
	switch {
	case p.KeepLast < 0:
		return p, fmt.Errorf("--keep-last must be positive, not %d", p.KeepLast)
	case p.KeepSince < 0:
		return p, fmt.Errorf("--keep-since must be positive, not %s", p.KeepSince)
	case f.Wait < 0:
		return p, fmt.Errorf("--wait must be positive, not %s", time.Duration(f.Wait))
	case p.KeepLast == 0 && p.KeepSince == 0:
		return p, errors.New("say what to keep: --keep-last N, --keep-since D, or both")
	}
	return p, nil
}

// Run compacts the sessions ids of st (all of them when none is given)
// by the flags' policy, which must be valid (Policy), and prints the
// report. It returns the exit status: cli.ExitOK when every session was
// compacted or skipped, cli.ExitFail when one failed.
func Run(ctx context.Context, st *jsonlstore.Store, ids []session.SessionID, f Flags, stdout, stderr io.Writer) int {
	policy, err := f.Policy()
	if err != nil {
		fmt.Fprintf(stderr, "compact: %v\n", err)
		return cli.ExitUsage
	}
	if policy.DryRun {
		ctx = jsonlstore.ReadOnly(ctx) // its listing leaves the catalog as it is
	}
	work, err := targets(ctx, st, ids)
	if err != nil {
		fmt.Fprintf(stderr, "compact: %v\n", err)
		return cli.ExitFail
	}
	bar := newBar(stderr, work)
	out := Report{DryRun: policy.DryRun, Sessions: []Result{}}
	for _, s := range work {
		if ctx.Err() != nil {
			out.add(Result{CompactReport: maintenance.CompactReport{ID: s.id}, Error: "not attempted: " + ctx.Err().Error()})
			continue
		}
		if s.unreadable != "" {
			// Reported as a failure, and the others go on.
			out.add(Result{CompactReport: maintenance.CompactReport{ID: s.id}, Error: "cannot be read: " + s.unreadable})
			continue
		}
		bar.start(s)
		rep, err := st.Compact(ctx, s.id, policy, time.Duration(f.Wait))
		r := Result{CompactReport: rep}
		if err != nil {
			r.ID, r.Error = s.id, err.Error()
		}
		out.add(r)
		bar.done(s)
	}
	bar.finish()

	if f.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "compact: %v\n", err)
			return cli.ExitFail
		}
	} else if err := out.Print(stdout); err != nil {
		fmt.Fprintf(stderr, "compact: %v\n", err)
		return cli.ExitFail
	}
	if out.Totals.Failed > 0 {
		return cli.ExitFail
	}
	return cli.ExitOK
}

// target is a session to compact and the size of its log (for progress),
// or one the listing could not read, and why.
type target struct {
	id         session.SessionID
	logBytes   int64
	unreadable string
}

// targets returns the sessions to compact: ids, or every session of the
// store (in ID order, those the listing could not read included), with
// their log sizes as the listing knows them.
func targets(ctx context.Context, st *jsonlstore.Store, ids []session.SessionID) ([]target, error) {
	sizes := map[session.SessionID]int64{}
	var all []target
	var unreadable []summary.Unreadable
	q := summary.Query{Limit: summary.MaxLimit, Order: summary.OrderIDAsc}
	for page, err := range sessionstore.Pages(ctx, st, q) {
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, s := range page.Items {
			sizes[s.ID] = s.Sizes.LogBytes
			all = append(all, target{id: s.ID, logBytes: s.Sizes.LogBytes})
		}
		unreadable = page.Unreadable // every page lists them: the last's are taken
	}
	for _, u := range unreadable {
		all = append(all, target{id: u.ID, unreadable: u.Reason})
	}
	if len(ids) == 0 {
		slices.SortFunc(all, func(a, b target) int { return cmp.Compare(a.id, b.id) })
		return all, nil
	}
	out := make([]target, 0, len(ids))
	for _, id := range ids {
		out = append(out, target{id: id, logBytes: sizes[id]})
	}
	return out, nil
}

// Result is one session's outcome.
type Result struct {
	maintenance.CompactReport
	Error string `json:"error,omitempty"`
}

// Totals add up the results. Byte counts are over the sessions compacted
// (or, in a dry run, that would be).
type Totals struct {
	Sessions         int   `json:"sessions"`
	Compacted        int   `json:"compacted"`
	Skipped          int   `json:"skipped"`
	Failed           int   `json:"failed"`
	RevisionsTrimmed int64 `json:"revisions_trimmed"`
	LogBytesBefore   int64 `json:"log_bytes_before"`
	LogBytesAfter    int64 `json:"log_bytes_after"`
	ArchiveBytes     int64 `json:"archive_bytes"`
}

// Report is what the command prints (with --json, as it is).
type Report struct {
	DryRun   bool     `json:"dry_run"`
	Sessions []Result `json:"sessions"`
	Totals   Totals   `json:"totals"`
}

func (r *Report) add(res Result) {
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

// Print writes the report for people: a line per session, then the
// totals.
func (r *Report) Print(w io.Writer) error {
	compacted := "compacted"
	if r.DryRun {
		compacted = "would compact"
	}
	t := cli.Table{Columns: []cli.Column{
		{Header: "SESSION"}, {Header: "TRIMMED", Right: true}, {Header: "FIRST KEPT", Right: true},
		{Header: "LOG BEFORE", Right: true}, {Header: "LOG AFTER", Right: true}, {Header: "ARCHIVE", Right: true}, {Header: ""},
	}}
	for _, s := range r.Sessions {
		id := cli.Escape(string(s.ID))
		switch {
		case s.Error != "":
			t.Rows = append(t.Rows, []string{id, "-", "-", "-", "-", "-", "failed: " + cli.Escape(cli.OneLine(s.Error))})
		case s.Skipped != "":
			t.Rows = append(t.Rows, []string{id, "-", "-", "-", "-", "-", "skipped: " + cli.Escape(cli.OneLine(s.Skipped))})
		default:
			archive := cli.HumanBytes(s.ArchiveBytes)
			if r.DryRun {
				archive = "-"
			}
			t.Rows = append(t.Rows, []string{id, strconv.FormatInt(s.RevisionsTrimmed, 10), strconv.FormatUint(s.FirstKept, 10),
				cli.HumanBytes(s.LogBytesBefore), cli.HumanBytes(s.LogBytesAfter), archive, compacted})
		}
	}
	if err := t.Write(w, 0); err != nil {
		return err
	}
	tt := r.Totals
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s: %d %s, %d skipped, %d failed; %s trimmed; logs %s -> %s",
		cli.Plural(tt.Sessions, "session"), tt.Compacted, compacted, tt.Skipped, tt.Failed, cli.Plural(int(tt.RevisionsTrimmed), "revision"),
		cli.HumanBytes(tt.LogBytesBefore), cli.HumanBytes(tt.LogBytesAfter))
	if r.DryRun {
		b.WriteString(" (dry run: nothing was written)\n")
	} else {
		fmt.Fprintf(&b, "; archives +%s\n", cli.HumanBytes(tt.ArchiveBytes))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// bar is the progress bar, shown on stderr when it is a terminal; its
// methods do nothing otherwise.
type bar struct{ pb *progressbar.ProgressBar }

func newBar(stderr io.Writer, work []target) *bar {
	if !cli.IsTerminal(stderr) || len(work) == 0 {
		return &bar{}
	}
	var total int64
	for _, s := range work {
		total += max(s.logBytes, 1)
	}
	return &bar{pb: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr.(*os.File)),
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
		b.pb.Describe("compacting " + cli.Escape(string(s.id)))
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
