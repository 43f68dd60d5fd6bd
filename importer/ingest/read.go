package ingest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
)

// item is a source as read: its transcript, or why there is none (it is
// unchanged, or it failed).
type item struct {
	src *source
	t   *importer.Transcript
	err error
	// into is the transcript of this batch that t was folded into.
	into *importer.Transcript
}

// Reading and writing overlap, and reading is spread over the machine's
// cores: converters convert the sources a few ahead of the reader (a
// loader), the reader takes their transcripts in the sources' order,
// does what needs the sources before it (folding resumed Claude Code
// sessions, linking Codex sub-agents to their parents) and hands them a
// batch at a time to the writers, so that converting sources (CPU) and
// writing the ones before (CPU and syncs) share the machine. At most a
// few batches, and a few converted sources, are held at once.
const readAhead = 2

// read reads the batches into out, in order, until ctx is done, then
// closes out.
func (r *run) read(ctx context.Context, batches []*batch, out chan<- []item) {
	defer close(out)
	var todo []*source
	for _, b := range batches {
		for _, src := range b.sources {
			if !src.unchanged && src.err == nil {
				todo = append(todo, src)
			}
		}
	}
	l := newLoader(ctx, todo, runtime.GOMAXPROCS(0), r.load)
	defer l.close()
	rd := &reader{r: r, l: l, byThread: map[string]*source{}, spawns: map[string]*importer.Transcript{}}
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
			items = rd.claude(ctx, b)
		} else {
			items = rd.codex(ctx, b.sources[0])
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

// load converts one source with the tool's converter, its paths made
// absolute. Several run at once.
func (r *run) load(src *source) (*importer.Transcript, error) {
	t, err := r.convert(r.tool, src)
	if err != nil {
		return nil, err
	}
	if err := otherTool(r.tool, t.Report, func(tool string) bool {
		o, err := r.convert(tool, src)
		return err == nil && o.Report.Used > 0
	}); err != nil {
		return nil, err
	}
	absolute(t, src.dir)
	return t, nil
}

// convert converts src with tool's converter.
func (r *run) convert(tool string, src *source) (*importer.Transcript, error) {
	if tool == ClaudeCode {
		return claudecode.Load(src.fsys, src.name, claudecode.Options{MaxLineBytes: r.opts.MaxLineBytes})
	}
	return codex.Load(src.fsys, src.name, codex.Options{MaxLineBytes: r.opts.MaxLineBytes})
}

// otherTool returns ErrOtherTool when rep, tool's report of a source,
// says that none of its lines is tool's: some are JSON objects of types
// tool does not know, and no line was used or of a type tool knows. The
// error names the types found and, when readsAs says the source converts
// as the other tool's, that tool's import. An empty source, or one of
// unreadable lines only, is not another tool's: it imports as empty or
// reports its lines as skipped.
func otherTool(tool string, rep importer.Report, readsAs func(tool string) bool) error {
	known := rep.Skipped[importer.SkipNotConversation] + rep.Skipped[importer.SkipInvalid] + rep.Skipped[importer.SkipDuplicate]
	if rep.Used > 0 || known > 0 || rep.Skipped[importer.SkipUnknownType] == 0 {
		return nil
	}
	types := slices.SortedFunc(maps.Keys(rep.SkippedTypes), func(a, b string) int {
		return cmp.Or(cmp.Compare(rep.SkippedTypes[b], rep.SkippedTypes[a]), strings.Compare(a, b))
	})
	if len(types) > 5 {
		types = append(types[:5], "…")
	}
	other := Codex
	if tool == Codex {
		other = ClaudeCode
	}
	hint := ""
	if readsAs(other) {
		hint = fmt.Sprintf("; it reads as a %s transcript: 'sessions import %s'", other, other)
	}
	return fmt.Errorf("%w: none of its %d lines is a %s line (it holds lines of type %s)%s",
		ErrOtherTool, rep.Lines, tool, strings.Join(types, ", "), hint)
}

// loader converts sources on several goroutines, ahead of the one reader
// that takes them. It starts them in the order given, keeping at most a
// window of them started and not taken; a source taken before its turn
// (a Codex sub-agent's parent) is started then.
type loader struct {
	ctx     context.Context
	order   []*source
	next    int // order[next:] are not started yet
	window  int
	started map[*source]bool
	pending map[*source]*loading // started, not taken
	jobs    chan *loading
	wg      sync.WaitGroup
}

// loading is one source's conversion: done is closed when t and err are
// set.
type loading struct {
	src  *source
	t    *importer.Transcript
	err  error
	done chan struct{}
}

func newLoader(ctx context.Context, order []*source, workers int, load func(*source) (*importer.Transcript, error)) *loader {
	workers = max(workers, 1)
	window := 2 * workers
	// The queue holds every conversion started and not yet running: at
	// most the window and the one the reader waits for.
	l := &loader{ctx: ctx, order: order, window: window, started: map[*source]bool{},
		pending: map[*source]*loading{}, jobs: make(chan *loading, window+1)}
	for range workers {
		l.wg.Go(func() {
			for j := range l.jobs {
				if err := ctx.Err(); err != nil {
					j.err = err // the reader has stopped waiting: convert nothing more
				} else {
					j.t, j.err = load(j.src)
				}
				close(j.done)
			}
		})
	}
	l.fill()
	return l
}

// take returns the transcript of src, or the error converting it.
func (l *loader) take(src *source) (*importer.Transcript, error) {
	j := l.pending[src]
	if j == nil {
		j = l.start(src)
	}
	delete(l.pending, src)
	l.fill()
	select {
	case <-j.done:
		return j.t, j.err
	case <-l.ctx.Done():
		return nil, l.ctx.Err()
	}
}

func (l *loader) start(src *source) *loading {
	j := &loading{src: src, done: make(chan struct{})}
	l.started[src] = true
	l.pending[src] = j
	l.jobs <- j // never blocks: see newLoader
	return j
}

// fill starts the next sources, up to the window.
func (l *loader) fill() {
	for len(l.pending) < l.window && l.next < len(l.order) {
		src := l.order[l.next]
		l.next++
		if !l.started[src] {
			l.start(src)
		}
	}
}

// close stops the converters, once they have finished what they run (the
// conversions not started yet end at once when ctx is done).
func (l *loader) close() {
	close(l.jobs)
	l.wg.Wait()
}

// reader is the reading side's state.
type reader struct {
	r        *run
	l        *loader
	byThread map[string]*source              // Codex rollouts by the thread their name ends with
	spawns   map[string]*importer.Transcript // the spawns of the Codex threads read
	read     map[*source]bool
}

// claude reads a batch of Claude Code sources, each with its sub-agents,
// and folds those resumed in another file into their continuations.
func (rd *reader) claude(ctx context.Context, b *batch) []item {
	items := make([]item, 0, len(b.sources))
	var ts []*importer.Transcript
	for _, src := range b.sources {
		it := item{src: src, err: src.err}
		if !src.unchanged && src.err == nil {
			it.t, it.err = rd.l.take(src)
			if it.t != nil {
				ts = append(ts, it.t)
			}
		}
		items = append(items, it)
		if ctx.Err() != nil {
			return items
		}
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
func (rd *reader) codex(ctx context.Context, src *source) []item {
	if rd.read == nil {
		rd.read = map[*source]bool{}
	}
	if rd.read[src] {
		return nil
	}
	rd.read[src] = true // before the parent's: a loop of parents ends here
	it := item{src: src, err: src.err}
	if src.unchanged || src.err != nil {
		return []item{it}
	}
	var out []item
	t, err := rd.l.take(src)
	if err != nil {
		it.err = err
		return []item{it}
	}
	if t.Link != nil && ctx.Err() == nil {
		if ps := rd.byThread[t.Link.ParentSourceID]; ps != nil {
			out = append(out, rd.codex(ctx, ps)...)
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
