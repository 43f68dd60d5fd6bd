package ingest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// plan finds the sources the store holds unchanged and sizes the rest.
// A source whose files cannot be hashed is left to be read (and to fail
// there, with its report).
func (r *run) plan(batches []*batch) error {
	for _, b := range batches {
		for _, src := range b.sources {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			ok, err := r.ix.unchanged(src)
			src.unchanged = ok && err == nil
			r.prog.Sources++
			if !src.unchanged {
				r.prog.Bytes += src.bytes()
			}
		}
	}
	return nil
}

// item is a source as read: its transcript, or why there is none (it is
// unchanged, or it failed).
type item struct {
	src *source
	t   *importer.Transcript
	err error
	// into is the transcript of this batch that t was folded into.
	into *importer.Transcript
}

// Reading and writing overlap: one goroutine reads (and converts) the
// sources a batch at a time, the caller's writes them, in order, so that
// converting a source (CPU) and writing the one before (CPU and syncs)
// share the machine. At most a few batches are held at once.
const readAhead = 2

// read reads the batches into out, in order, until ctx is done, then
// closes out.
func (r *run) read(ctx context.Context, batches []*batch, out chan<- []item) {
	defer close(out)
	rd := &reader{r: r, byThread: map[string]*source{}, spawns: map[string]*importer.Transcript{}}
	if r.tool == Codex {
		for _, b := range batches {
			if id := codex.ThreadIDOf(b.sources[0].name); id != "" {
				rd.byThread[id] = b.sources[0]
			}
		}
	}
	for _, b := range batches {
		var items []item
		if r.tool == ClaudeCode {
			items = rd.claude(b)
		} else {
			items = rd.codex(b.sources[0])
		}
		if len(items) == 0 {
			continue // read earlier, as another's parent
		}
		select {
		case out <- items:
		case <-ctx.Done():
			return
		}
	}
}

// reader is the reading side's state.
type reader struct {
	r        *run
	byThread map[string]*source              // Codex rollouts by the thread their name ends with
	spawns   map[string]*importer.Transcript // the spawns of the Codex threads read
	read     map[*source]bool
}

// claude reads a batch of Claude Code sources, each with its sub-agents,
// and folds those resumed in another file into their continuations.
func (rd *reader) claude(b *batch) []item {
	items := make([]item, 0, len(b.sources))
	var ts []*importer.Transcript
	for _, src := range b.sources {
		it := item{src: src}
		if !src.unchanged {
			it.t, it.err = claudecode.Load(os.DirFS(src.dir), src.name, claudecode.Options{MaxLineBytes: rd.r.opts.MaxLineBytes})
			if it.t != nil {
				absolute(it.t, src.dir)
				ts = append(ts, it.t)
			}
		}
		items = append(items, it)
	}
	if len(ts) < 2 {
		return items
	}
	kept := map[*importer.Transcript]bool{}
	for _, t := range claudecode.Fold(ts) {
		kept[t] = true
	}
	for i, it := range items {
		if it.t == nil || kept[it.t] {
			continue
		}
		for _, c := range ts {
			if kept[c] && c.Labels[claudecode.ResumesLabel] == it.t.SourceID {
				items[i].into = c
			}
		}
		for _, c := range ts { // the label names the last of several folded into c
			if items[i].into == nil && kept[c] && len(c.Messages) > len(it.t.Messages) && c.Messages[0].ID == it.t.Messages[0].ID {
				items[i].into = c
			}
		}
	}
	return items
}

// codex reads a Codex rollout. A sub-agent's thread takes its spawning
// tool call and role from its parent's rollout, which is read first when
// it is among the sources (named by the parent's thread ID): its items
// come first. The spawns of the rollouts read are kept, not their
// transcripts.
func (rd *reader) codex(src *source) []item {
	if rd.read == nil {
		rd.read = map[*source]bool{}
	}
	if rd.read[src] {
		return nil
	}
	rd.read[src] = true // before the parent's: a loop of parents ends here
	it := item{src: src}
	if src.unchanged {
		return []item{it}
	}
	var out []item
	t, err := codex.Load(os.DirFS(src.dir), src.name, codex.Options{MaxLineBytes: rd.r.opts.MaxLineBytes})
	if err != nil {
		it.err = err
		return []item{it}
	}
	absolute(t, src.dir)
	if t.Link != nil {
		if ps := rd.byThread[t.Link.ParentSourceID]; ps != nil {
			out = append(out, rd.codex(ps)...)
		}
		if p := rd.spawns[t.Link.ParentSourceID]; p != nil {
			p.Adopt(t)
			p.Children = nil // the link is what was wanted
		}
	}
	if len(t.Spawns) > 0 {
		rd.spawns[t.SourceID] = &importer.Transcript{Tool: t.Tool, SourceID: t.SourceID, Spawns: t.Spawns}
	}
	it.t = t
	return append(out, it)
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
	w, err := sessionstore.CreateHistory(r.ctx, r.st, sessionstore.Snapshots(counted), sessionstore.AcquireOptions{Label: r.opts.Label})
	if err != nil {
		rep.Revisions = 0
		return err
	}
	return w.Release(context.WithoutCancel(r.ctx))
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
