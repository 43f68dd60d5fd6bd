package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/session"
)

// The tools Run imports from.
const (
	ClaudeCode = claudecode.Tool
	Codex      = codex.Tool
)

var (
	// ErrUnknownTool reports a tool Run does not import from.
	ErrUnknownTool = errors.New("ingest: unknown tool")
	// ErrTooManyEntries reports a walk of the paths given that met more
	// directory entries than Options.MaxEntries: nothing is imported.
	ErrTooManyEntries = errors.New("ingest: too many directory entries")
	// ErrOtherTool reports a source none of whose lines is the tool's:
	// another tool's file (the error names it when it reads as one).
	ErrOtherTool = errors.New("not a transcript of this tool")
)

// The bounds of a walk of the paths given, by default (Options).
const (
	// DefaultMaxDepth is how many directories below a path a Codex walk
	// descends: its sessions directory is three deep (YYYY/MM/DD).
	DefaultMaxDepth = 16
	// DefaultMaxEntries is how many directory entries a walk reads in
	// all before it gives up (ErrTooManyEntries): far more than years of
	// sessions, far fewer than a walk of / meets.
	DefaultMaxEntries = 1 << 20
)

// Options tune Run. The zero value works.
type Options struct {
	// DryRun reads the sources and reports what an import would write,
	// writing nothing.
	DryRun bool
	// Env is the environment reference of the sessions an import creates
	// (default: provider "import", the tool's name, revision "1").
	Env session.EnvironmentRef
	// Label names the importer in the leases it takes (default
	// "sessions-import").
	Label string
	// MaxLineBytes bounds a source line (0: importer.DefaultMaxLineBytes).
	MaxLineBytes int
	// MaxDepth bounds how many directories below a path given a walk
	// for Codex rollouts descends (0: DefaultMaxDepth); a deeper
	// directory is not searched, and is reported in Report.Ignored.
	// (Claude Code's layout is two deep, and walked no deeper.)
	MaxDepth int
	// MaxEntries bounds the directory entries the walks of the paths
	// given read in all (0: DefaultMaxEntries); beyond it Run fails with
	// ErrTooManyEntries and imports nothing.
	MaxEntries int
	// Progress, when set, is called once the sources are planned (nothing
	// done yet) and after each source.
	Progress func(Progress)
}

// Progress is how far an import is. Bytes counts the files of the sources
// that are read; those skipped unchanged are not read, and count as done
// sources only.
type Progress struct {
	Sources, SourcesDone int
	Bytes, BytesDone     int64
	// Path is the source just done ("" in the first call).
	Path string
}

// Status is what became of a source.
type Status string

// Source statuses.
const (
	// StatusRead: the source was read, and each of its conversations
	// created, continued or found unchanged (see its sessions).
	StatusRead Status = "read"
	// StatusUnchanged: the store holds the source as it is; not read.
	StatusUnchanged Status = "unchanged"
	// StatusFailed: the source, or one of its sessions, could not be read
	// or written (see Error and its sessions).
	StatusFailed Status = "failed"
)

// Action is what an import did (or, in a dry run, would do) to one
// session.
type Action string

// Session actions.
const (
	ActionCreated   Action = "created"
	ActionUpdated   Action = "updated"
	ActionUnchanged Action = "unchanged"
	// ActionFolded: a Claude Code session resumed in another file; its
	// conversation is part of the session Into, and it has none of its own.
	ActionFolded Action = "folded"
	// ActionEmpty: a conversation without any message; no session is made.
	ActionEmpty Action = "empty"
	// ActionDiverged: the stored session is not the start of the source's
	// conversation (the source was rewritten); nothing is written.
	ActionDiverged Action = "diverged"
	// ActionDuplicate: a conversation this run imported from another
	// source already (the same session copied to two places).
	ActionDuplicate Action = "duplicate"
	// ActionFailed: reading or writing the session failed (see Error).
	ActionFailed Action = "failed"
)

// Report is what Run did.
type Report struct {
	Tool    string         `json:"tool"`
	DryRun  bool           `json:"dry_run,omitempty"`
	Sources []SourceReport `json:"sources"`
	// Ignored are the paths passed over in finding the sources (never
	// read): unreadable directories, files that are not regular files,
	// symbolic links, directories beyond MaxDepth.
	Ignored []Ignored `json:"ignored,omitempty"`
	Totals  Totals    `json:"totals"`
	// Elapsed is the time Run took.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Sessions returns the reports of every session of every source, in
// order.
func (r *Report) Sessions() []SessionReport {
	var out []SessionReport
	for _, s := range r.Sources {
		out = append(out, s.Sessions...)
	}
	return out
}

// Totals sum a report's sources.
type Totals struct {
	Sources   int `json:"sources"`
	Read      int `json:"read"`
	Unchanged int `json:"unchanged"`
	Failed    int `json:"failed"`
	// Sessions counts the sessions of the sources by action.
	Sessions map[Action]int `json:"sessions,omitempty"`
	// Revisions is the number of revisions written (or, in a dry run,
	// that would be).
	Revisions int `json:"revisions"`
	// Lines and Bytes are the size of the sources read; Skipped counts
	// their lines not used, by reason.
	Lines   int64                     `json:"lines"`
	Bytes   int64                     `json:"bytes"`
	Skipped map[importer.Reason]int64 `json:"skipped,omitempty"`
}

// SourceReport is what became of one source.
type SourceReport struct {
	// Path is the source's main file; Files all its files, Path first.
	Path   string   `json:"path"`
	Files  []string `json:"files,omitempty"`
	Status Status   `json:"status"`
	// Read is the converter's report of the files read, summed (their
	// lines, bytes, and lines skipped by reason); for an unchanged source,
	// the lines and bytes its sessions record.
	Read     importer.Report `json:"read"`
	Sessions []SessionReport `json:"sessions,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// SessionReport is what became of one conversation of a source.
type SessionReport struct {
	ID session.SessionID `json:"id"`
	// SourceID and AgentID name the conversation in its source.
	SourceID string `json:"source_id"`
	AgentID  string `json:"agent_id,omitempty"`
	// ParentID is the session of the conversation that spawned it.
	ParentID session.SessionID `json:"parent_id,omitempty"`
	Action   Action            `json:"action"`
	// Revisions is the number of revisions written (in a dry run, that
	// would be); Messages the conversation's length in the source.
	Revisions int `json:"revisions"`
	Messages  int `json:"messages"`
	// Into is the session a folded conversation is part of.
	Into  session.SessionID `json:"into,omitempty"`
	Error string            `json:"error,omitempty"`
}

func (o Options) withDefaults(tool string) Options {
	if o.Env == (session.EnvironmentRef{}) {
		o.Env = session.EnvironmentRef{Provider: "import", ID: tool, Revision: "1"}
	}
	if o.Label == "" {
		o.Label = "sessions-import"
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	return o
}

// Run imports the sources of tool (ClaudeCode or Codex) found under paths
// into st, as the package documentation describes, and reports on each.
// Errors: ErrUnknownTool, a path that cannot be read or is not a regular
// file or a directory (importer.ErrNotRegular), ErrTooManyEntries, st's
// List errors, ctx's (the run stops within a read of each file it is
// reading; the sessions written before stay); a source that fails does
// not fail the run (see its report).
func Run(ctx context.Context, st sessionstore.Store, tool string, paths []string, opts Options) (*Report, error) {
	start := time.Now()
	if tool != ClaudeCode && tool != Codex {
		return nil, fmt.Errorf("%w %q (%s or %s)", ErrUnknownTool, tool, ClaudeCode, Codex)
	}
	opts = opts.withDefaults(tool)
	d, err := discover(ctx, tool, paths, opts)
	if err != nil {
		return nil, err
	}
	defer d.close()
	batches := d.batches
	ix, err := loadIndex(ctx, st, tool)
	if err != nil {
		return nil, err
	}
	r := &run{ctx: ctx, st: st, tool: tool, opts: opts, ix: ix, done: map[session.SessionID]string{},
		rep: &Report{Tool: tool, DryRun: opts.DryRun, Ignored: d.ignored}}
	if err := r.plan(batches); err != nil {
		return nil, err
	}
	r.progress("")
	rctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the reader and the writers, whose channels are drained below
	items := make(chan []item, readAhead)
	go r.read(rctx, batches, items)
	// Sessions are written by several writers at once, so that one
	// session's syncs overlap another's work; the reports are taken in
	// the sources' order.
	jobs, order := make(chan job), make(chan job, 4*writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for j := range jobs {
				j.out <- r.report(j.it)
			}
		})
	}
	go func() {
		defer close(order)
		defer close(jobs)
		for batch := range items {
			for _, it := range batch {
				j := job{it: it, out: make(chan SourceReport, 1)}
				select {
				case order <- j:
				case <-rctx.Done():
					continue // drain the reader
				}
				jobs <- j
			}
		}
	}()
	for j := range order {
		r.finish(j.it.src, <-j.out)
		if ctx.Err() != nil {
			cancel()
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.rep.Elapsed = time.Since(start)
	return r.rep, nil
}

// writers is how many sessions are written at once.
const writers = 4

// job is one source to write, and where its report goes.
type job struct {
	it  item
	out chan SourceReport
}

// run is the state of one Run.
type run struct {
	ctx  context.Context
	st   sessionstore.Store
	tool string
	opts Options
	ix   *index
	rep  *Report
	// done maps the sessions this run imported to their sources' paths.
	mu   sync.Mutex
	done map[session.SessionID]string
	prog Progress
}

func (r *run) progress(path string) {
	if r.opts.Progress != nil {
		p := r.prog
		p.Path = path
		r.opts.Progress(p)
	}
}

// add records a source's report in the totals.
func (r *run) add(sr SourceReport) {
	t := &r.rep.Totals
	t.Sources++
	switch sr.Status {
	case StatusRead:
		t.Read++
	case StatusUnchanged:
		t.Unchanged++
	case StatusFailed:
		t.Failed++
	}
	if sr.Status != StatusUnchanged {
		t.Lines += sr.Read.Lines
		t.Bytes += sr.Read.Bytes
		for k, v := range sr.Read.Skipped {
			if t.Skipped == nil {
				t.Skipped = map[importer.Reason]int64{}
			}
			t.Skipped[k] += v
		}
	}
	for _, s := range sr.Sessions {
		if t.Sessions == nil {
			t.Sessions = map[Action]int{}
		}
		t.Sessions[s.Action]++
		t.Revisions += s.Revisions
	}
	r.rep.Sources = append(r.rep.Sources, sr)
}
