package ingest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// plan finds the sources the store holds unchanged and sizes the rest.
// A source whose files cannot be hashed is left to be read (and to fail
// there, with its report). Hashing is reading every file the store may
// hold unchanged, the whole of a second import: it is spread over the
// cores.
func (r *run) plan(batches []*batch) error {
	var srcs []*source
	for _, b := range batches {
		srcs = append(srcs, b.sources...)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(srcs)) {
		wg.Go(func() {
			buf := make([]byte, 256<<10)
			for i := next.Add(1) - 1; i < int64(len(srcs)) && r.ctx.Err() == nil; i = next.Add(1) - 1 {
				if srcs[i].err != nil {
					continue // reported failed
				}
				ok, err := r.ix.unchanged(srcs[i], buf)
				srcs[i].unchanged = ok && err == nil
			}
		})
	}
	wg.Wait()
	if err := r.ctx.Err(); err != nil {
		return err
	}
	for _, src := range srcs {
		r.prog.Sources++
		if !src.unchanged {
			r.prog.Bytes += src.bytes()
		}
	}
	return nil
}

// report writes one item and reports on its source (not yet finished:
// finish takes the reports in order). Several run at once.
func (r *run) report(it item) SourceReport {
	src := it.src
	switch {
	case src.unchanged:
		sr := SourceReport{Status: StatusUnchanged}
		sr.Read.Lines, sr.Read.Bytes = r.ix.recorded(src)
		return sr
	case it.err != nil:
		return SourceReport{Status: StatusFailed, Error: it.err.Error()}
	}
	sr := SourceReport{Read: readReport(it.t)}
	if into := r.foldedInto(it); into != "" {
		sr.Sessions = []SessionReport{{ID: it.t.SessionID(), SourceID: it.t.SourceID, Action: ActionFolded,
			Messages: len(it.t.Messages), Into: into}}
	} else {
		sr.Sessions = r.tree(it.t, "", "")
	}
	return sr
}

// finish records src's report and moves the progress on.
func (r *run) finish(src *source, sr SourceReport) {
	sr.Path = src.path()
	if len(src.files) > 1 {
		sr.Files = src.paths()
	}
	if sr.Status == "" {
		sr.Status = StatusRead
		for _, s := range sr.Sessions {
			if s.Action == ActionFailed || s.Action == ActionDiverged {
				sr.Status = StatusFailed
			}
		}
	}
	r.add(sr)
	r.prog.SourcesDone++
	if !src.unchanged {
		r.prog.BytesDone += src.bytes()
	}
	r.progress(src.path())
}

// foldedInto returns the session an item's conversation is part of, when
// it is a Claude Code session resumed in another file: one Fold left out
// of its batch, or one an earlier import folded (a stored session's
// ResumesLabel names it, and holds at least as many messages).
func (r *run) foldedInto(it item) session.SessionID {
	if it.into != nil {
		return it.into.SessionID()
	}
	t := it.t
	if s := r.ix.resumed[t.SourceID]; s != nil && s.id != t.SessionID() && len(t.Messages) > 0 && len(t.Messages) <= s.messages {
		return s.id
	}
	return ""
}

// absolute makes the paths of t and its children, relative to dir, the
// files' absolute paths: what their origins record.
func absolute(t *importer.Transcript, dir string) {
	if t.Path != "" && !filepath.IsAbs(t.Path) {
		t.Path = filepath.Join(dir, filepath.FromSlash(t.Path))
	}
	for _, c := range t.Children {
		absolute(c, dir)
	}
}

// readReport sums the converter's reports of the files t was read from
// (an inline sub-agent shares its parent's file, and its report).
func readReport(t *importer.Transcript) importer.Report {
	var out importer.Report
	seen := map[string]bool{}
	var walk func(*importer.Transcript)
	walk = func(t *importer.Transcript) {
		if !seen[t.Path] {
			seen[t.Path] = true
			out.Add(t.Report)
		}
		for _, c := range t.Children {
			walk(c)
		}
	}
	walk(t)
	out.Messages = len(t.Messages)
	return out
}

// tree imports t and its sub-agents (children of t's session), and
// reports on each. parent and root are the sessions t hangs off (""
// for a conversation of its own).
func (r *run) tree(t *importer.Transcript, parent, root session.SessionID) []SessionReport {
	id := t.SessionID()
	rep := SessionReport{ID: id, SourceID: t.SourceID, AgentID: t.AgentID, Messages: len(t.Messages)}
	if parent == "" && t.Link != nil {
		// A sub-agent whose parent is not among the sources: it hangs off
		// the session its parent's import makes (or made).
		parent = (&importer.Transcript{Tool: t.Tool, SourceID: t.Link.ParentSourceID}).SessionID()
	}
	rep.ParentID = parent
	r.mu.Lock()
	path, dup := r.done[id]
	if !dup {
		r.done[id] = t.Path
	}
	r.mu.Unlock()
	if dup {
		rep.Action, rep.Error = ActionDuplicate, "imported from "+path+" in this run"
	} else {
		if err := r.session(t, &rep, parent, root); err != nil {
			rep.Action, rep.Error = ActionFailed, err.Error()
		}
	}
	out := []SessionReport{rep}
	if root == "" {
		root = parent
	}
	if root == "" {
		root = id
	}
	for _, c := range t.Children {
		out = append(out, r.tree(c, id, root)...)
	}
	return out
}

// session creates the session of t or continues it, and says what it
// did in rep.
func (r *run) session(t *importer.Transcript, rep *SessionReport, parent, root session.SessionID) error {
	ctx := r.ctx
	rec, err := r.st.Load(ctx, rep.ID)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		return r.create(t, rep, parent, root)
	case err != nil:
		return err
	}
	s, err := rec.Session()
	if err != nil {
		return err
	}
	next, stop := iter.Pull2(t.Apply(s))
	defer stop()
	first, err, ok := next()
	switch {
	case !ok:
		rep.Action = ActionUnchanged
		return nil
	case errors.Is(err, importer.ErrDiverged):
		rep.Action, rep.Error = ActionDiverged, err.Error()
		return nil
	case err != nil:
		return err
	}
	rep.Action = ActionUpdated
	if r.opts.DryRun {
		for rep.Revisions = 1; ; rep.Revisions++ {
			_, err, ok := next()
			if !ok {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	// The import continues the session as any holder would, without
	// waiting for one that holds it: that one is reported, and left alone.
	w, err := r.st.TryAcquire(ctx, rep.ID, sessionstore.AcquireOptions{Label: r.opts.Label})
	if err != nil {
		return err
	}
	defer func() { _ = w.Release(context.WithoutCancel(ctx)) }() // the appends are durable; a release that fails leaves a stale lease, recovered by the next holder
	expected := rec.Revision                                     // a revision appended since Load is ErrConflict: the session changed meanwhile
	for s := first; ; {
		snap, err := sessnap.Of(s)
		if err != nil {
			return err
		}
		if expected, err = w.Append(ctx, expected, snap); err != nil {
			return err
		}
		rep.Revisions++
		var ok bool
		if s, err, ok = next(); !ok {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// create creates the session of t with its whole history at once.
func (r *run) create(t *importer.Transcript, rep *SessionReport, parent, root session.SessionID) error {
	if len(t.Messages) == 0 && t.Link == nil && len(t.Children) == 0 {
		rep.Action = ActionEmpty
		return nil
	}
	cfg := t.Config(rep.ID, r.opts.Env)
	if parent != "" {
		cfg.Relationship.ParentID, cfg.Relationship.RootID = parent, root
		if root == "" {
			cfg.Relationship.RootID = parent
		}
	}
	revs := revisions(t, cfg)
	rep.Action = ActionCreated
	if r.opts.DryRun {
		for _, err := range revs {
			if err != nil {
				return err
			}
			rep.Revisions++
		}
		return nil
	}
	counted := func(yield func(*session.Session, error) bool) {
		for s, err := range revs {
			if err == nil {
				rep.Revisions++
			}
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
	opts := sessionstore.AcquireOptions{Label: r.opts.Label}
	if rc, ok := r.st.(releasedCreator); ok {
		created, err := rc.CreateHistoryReleased(r.ctx, sessionstore.Snapshots(counted), opts)
		if !created {
			rep.Revisions = 0
		}
		return err
	}
	w, err := sessionstore.CreateHistory(r.ctx, r.st, sessionstore.Snapshots(counted), opts)
	if err != nil {
		rep.Revisions = 0
		return err
	}
	return w.Release(context.WithoutCancel(r.ctx))
}

// releasedCreator is a store that creates a session from its history and
// releases its lease in one call, for less than CreateHistory and the
// writer's Release (jsonlstore.Store.CreateHistoryReleased).
type releasedCreator interface {
	CreateHistoryReleased(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts sessionstore.AcquireOptions) (created bool, err error)
}

// revisions are the revisions of a fresh import of t: one per step, or
// for a conversation without any (a sub-agent that said nothing) the new
// session alone.
func revisions(t *importer.Transcript, cfg session.Config) iter.Seq2[*session.Session, error] {
	if len(t.Steps) > 0 {
		return t.Revisions(cfg)
	}
	return func(yield func(*session.Session, error) bool) {
		s, err := session.New(cfg)
		if err != nil {
			err = fmt.Errorf("ingest: %w", err)
		}
		yield(s, err)
	}
}
