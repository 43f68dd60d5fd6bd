package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// w8Writers and w8Searchers are how many processes append and search at
// once in W8, as issue 25 reproduced it; each writer appends w8Rate
// messages a second (an agent's pace is a message every few seconds: these
// are busy ones).
const (
	w8Writers   = 8
	w8Searchers = 4
	w8Rate      = 20
	// w8MinSearches is the fewest searches a searcher makes in a phase.
	w8MinSearches = 5
)

// runW8 is W8, search under load: a store of c.w8Sessions agent sessions
// (W6's mix of prompts, replies and tool results), one of which holds the
// rare word, searched for by w8Searchers processes at once, each a fresh
// process per search (this binary as a child: open the store, search,
// print the hit, exit) — first on the idle store, then while w8Writers
// other processes append to w8Writers other sessions (each its own
// session, one revision per message, w8Rate a second), then idle again;
// each phase lasts c.w8Phase.
// Every search must find the rare word. When the writers have stopped,
// each one's last acknowledged revision must be what Load reads and what a
// search for the word of its last message finds, and Verify must find
// the store sound.
func runW8(ctx context.Context, c *config, r *report) error {
	root := filepath.Join(c.dir, "w8")
	defer os.RemoveAll(root)
	build := time.Now()
	ids, text, err := w8Build(ctx, root, c.w8Sessions, c.w8Msgs)
	if err != nil {
		return err
	}
	built := time.Since(build)
	// One search brings the index current, as on a store that has been
	// searched before.
	caught := time.Now()
	res, err := w7Search(ctx, root)
	if err != nil {
		return err
	}
	catchUp := time.Since(caught)
	if len(res.Hits) != 1 {
		return fmt.Errorf("W8: %d hits for the rare word, want 1", len(res.Hits))
	}
	want := fmt.Sprintf("%s/%d@%d", res.Hits[0].ID, res.Hits[0].Message, res.Hits[0].Revision)
	writerIDs := ids[len(ids)-w8Writers:] // the rare word is in ids[0]'s session
	// The CPU floor's job, sized on the idle store (w8cpu.go).
	rounds, calSearch, err := w8CalibrateCPU(root)
	if err != nil {
		return err
	}

	phase := func(name string) (w8Phase, error) {
		p := w8Phase{name: name}
		start := time.Now()
		err := w8Searches(root, want, rounds, c.w8Phase, &p)
		p.elapsed = time.Since(start)
		return p, err
	}
	before, err := phase("idle, before the writers")
	if err != nil {
		return err
	}

	// The writers: each a process appending to its session until its
	// stdin closes.
	var writers []*w8Writer
	stopAll := func() {
		for _, w := range writers {
			w.stop()
		}
	}
	defer stopAll()
	for i, id := range writerIDs {
		w, err := startW8Writer(root, id, uint64(1000+i))
		if err != nil {
			return err
		}
		writers = append(writers, w)
	}
	loaded, err := phase("while 8 processes append")
	if err != nil {
		return err
	}
	// Stop them; each reports its appends and last revision.
	var wres []w8WriterResult
	for _, w := range writers {
		res, err := w.finish()
		if err != nil {
			return err
		}
		wres = append(wres, res)
	}
	writers = nil
	after, err := phase("idle, after the writers")
	if err != nil {
		return err
	}
	if err := w8Check(ctx, root, writerIDs, wres); err != nil {
		return err
	}

	idle := &w8Phase{name: "idle (before and after)"}
	for _, p := range []*w8Phase{&before, &after} {
		idle.inChild.lat = append(idle.inChild.lat, p.inChild.lat...)
		idle.wall.lat = append(idle.wall.lat, p.wall.lat...)
		idle.floor.lat = append(idle.floor.lat, p.floor.lat...)
		idle.cpu.lat = append(idle.cpu.lat, p.cpu.lat...)
		idle.indexed += p.indexed
	}
	base := idle.inChild.pct(50)
	t := &table{
		title: fmt.Sprintf("W8 search while %d processes append, %d sessions, %d searching processes", w8Writers, c.w8Sessions, w8Searchers),
		cols: []string{"phase", "searches", "search p50 (in child)", "p99", "max", "p50 ÷ idle p50", "p99 ÷ idle p50", "exec to exit p50", "exec to exit p99", "sessions read from their logs",
			"(ref) floor p50 (in child)", "floor p99", "floor p50 ÷ idle floor p50", "floor p99 ÷ idle floor p50",
			"(ref) CPU job p50 (in child)", "CPU job p99", "CPU job p50 ÷ idle CPU job p50", "CPU job p99 ÷ idle CPU job p50"},
	}
	floorBase, cpuBase := idle.floor.pct(50), idle.cpu.pct(50)
	for _, p := range []*w8Phase{&before, &loaded, &after, idle} {
		t.add(p.name, fmt.Sprint(len(p.inChild.lat)), fmtDur(p.inChild.pct(50)), fmtDur(p.inChild.pct(99)), fmtDur(p.inChild.pct(100)),
			fmtRatio(float64(p.inChild.pct(50))/float64(base)), fmtRatio(float64(p.inChild.pct(99))/float64(base)),
			fmtDur(p.wall.pct(50)), fmtDur(p.wall.pct(99)), fmt.Sprint(p.indexed),
			fmtDur(p.floor.pct(50)), fmtDur(p.floor.pct(99)),
			fmtRatio(float64(p.floor.pct(50))/float64(floorBase)), fmtRatio(float64(p.floor.pct(99))/float64(floorBase)),
			fmtDur(p.cpu.pct(50)), fmtDur(p.cpu.pct(99)),
			fmtRatio(float64(p.cpu.pct(50))/float64(cpuBase)), fmtRatio(float64(p.cpu.pct(99))/float64(cpuBase)))
	}
	var appends int
	var appendLat sample
	var appended int64
	for _, w := range wres {
		appends += w.acks
		appended += w.bytes
		appendLat.lat = append(appendLat.lat, w.lat...)
	}
	t.note("the store: %d sessions of %d messages (W6's mix: prompts of 100–500 B, replies of 200–800 B with a tool call, tool results of 2–64 KiB), %s of message text, created through Create 8 at a time in %s; one search then brought the index current in %s", c.w8Sessions, c.w8Msgs, fmtBytes(text), built.Round(time.Millisecond), catchUp.Round(time.Millisecond))
	t.note("a search is a fresh process (open the store, search for a rare word held by one idle session, print the hit, exit); %d such processes run at once, one search after another, for %s in every phase; \"in child\" is open + search as the child measured it", w8Searchers, c.w8Phase)
	t.note("the writers: %d processes, each holding one session and appending W6's messages, one revision per message, %d a second (a busy agent's pace, or faster when an append takes longer), while the searches of the middle phase ran (%s): %d appends in all, %s of message text, append p50 %s, p99 %s; each writer's last revision was then found by Load and by a search for its last message's word, and Verify found the store sound",
		w8Writers, w8Rate, loaded.elapsed.Round(time.Millisecond), appends, fmtBytes(appended), fmtDur(appendLat.pct(50)), fmtDur(appendLat.pct(99)))
	t.note("(ref) floor: before each search, its searcher runs a fresh process that does what any search of this store must and no more (list the root, lstat every log, read the index's row proofs with plain SQL: W7's search-floor), under the same load: how much the load alone slows a fresh process's reads")
	t.note("(ref) CPU job: before each search, its searcher also runs a fresh process doing a fixed CPU-bound job and nothing else (SHA-256 of a 4 KiB buffer, %d rounds, one goroutine, no I/O), sized before the first phase to take as long as a search on the idle store run as the phases run it (%d searchers, each a search then the job, %d times: the searches' median %s): its ratio under the load is what the scheduler alone, sharing 2 cores with the writers, does to a fresh process of a search's length — the floor of the search's own ratio on this machine",
		rounds, w8Searchers, w8CPUCalibrate, fmtDur(calSearch))
	t.note("\"sessions read from their logs\" is the sum over the phase's searches of SearchResult.Indexed: sessions a search found its index behind on")
	r.add(t)
	r.set("W8/idle-ms", float64(base)/1e6)
	r.set("W8/p50÷idle", float64(loaded.inChild.pct(50))/float64(base))
	r.set("W8/p99÷idle", float64(loaded.inChild.pct(99))/float64(base))
	r.set("W8/p50-ms", float64(loaded.inChild.pct(50))/1e6)
	r.set("W8/p99-ms", float64(loaded.inChild.pct(99))/1e6)
	r.set("W8/floor p50÷idle", float64(loaded.floor.pct(50))/float64(floorBase))
	r.set("W8/floor p99÷idle", float64(loaded.floor.pct(99))/float64(floorBase))
	r.set("W8/cpu p50÷idle", float64(loaded.cpu.pct(50))/float64(cpuBase))
	r.set("W8/cpu p99÷idle", float64(loaded.cpu.pct(99))/float64(cpuBase))
	return nil
}

// w8Phase is what the searches of one phase measured.
type w8Phase struct {
	name          string
	inChild, wall sample
	floor         sample // search-floor children, in child
	cpu           sample // w8-cpu children (the CPU floor), in child
	indexed       int
	elapsed       time.Duration
}

// w8Searches runs searches in each of w8Searchers goroutines, one after
// another until d has passed (at least w8MinSearches each), each a fresh
// child process, and checks that every one finds want. Before each, the
// same goroutine runs the two reference children: the search floor, and
// the CPU job of rounds (w8cpu.go).
func w8Searches(root, want string, rounds int, d time.Duration, p *w8Phase) error {
	end := time.Now().Add(d)
	var mu sync.Mutex
	errs := make(chan error, w8Searchers)
	var wg sync.WaitGroup
	for range w8Searchers {
		wg.Go(func() {
			for n := 0; n < w8MinSearches || time.Now().Before(end); n++ {
				// The floor, as often as the search: a fresh process that
				// does what any search must (list the root, lstat every
				// log, read the index's proofs), under the same load.
				fl, err := spawn("search-floor", root, rareWord)
				if err != nil {
					errs <- err
					return
				}
				// The CPU floor: a fresh process of a search's length,
				// all CPU.
				job, err := spawn("w8-cpu", strconv.Itoa(rounds))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				p.floor.add(fl.ns(), 0)
				p.cpu.add(job.ns(), 0)
				mu.Unlock()
				res, err := spawn("search-jsonl", root, rareWord)
				if err == nil && (res.fields["hits"] != "1" || res.fields["hit"] != want) {
					err = fmt.Errorf("W8 %s: a search found %v, want %s", p.name, res.fields, want)
				}
				if err != nil {
					errs <- err
					return
				}
				indexed, _ := strconv.Atoi(res.fields["indexed"])
				mu.Lock()
				p.inChild.add(res.ns(), 0)
				p.wall.add(res.wall, 0)
				p.indexed += indexed
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// w8Build creates n agent sessions of msgs messages each, 8 at a time;
// the first holds the rare word. It returns their IDs and the bytes of
// message text.
func w8Build(ctx context.Context, root string, n, msgs int) ([]session.SessionID, int64, error) {
	st, err := jsonlstore.Open(root, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return nil, 0, err
	}
	ids := make([]session.SessionID, n)
	for i := range ids {
		ids[i] = session.SessionID(fmt.Sprintf("w8-%04d", i))
	}
	var total atomic.Int64
	next := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				a := newAgentSession(string(ids[i]), uint64(i))
				var snap sessnap.Snapshot
				for m := range msgs {
					_, s, err := a.next()
					if err != nil {
						errs <- err
						return
					}
					if i == 0 && m == msgs/2 {
						// The rare word, in a message of the first session.
						if err := a.s.AppendMessage(session.TextMessage(session.RoleUser, plant(a.w.text(200)), sessiontest.Epoch.Add(time.Duration(a.step)*time.Second))); err != nil {
							errs <- err
							return
						}
						if s, err = sessnap.Of(a.s); err != nil {
							errs <- err
							return
						}
					}
					snap = s
				}
				w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "bench"})
				if err == nil {
					err = w.Release(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
				total.Add(a.content)
			}
		})
	}
	var first error
	for i := 0; i < n && first == nil; i++ {
		select {
		case next <- i:
		case first = <-errs:
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return ids, total.Load(), errors.Join(first, <-errs, st.Close())
}

// w8Writer is a writer child process.
type w8Writer struct {
	id    session.SessionID
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	errb  strings.Builder
	done  bool
}

// w8WriterResult is what a writer reported when it stopped.
type w8WriterResult struct {
	acks  int
	last  uint64
	word  string // the word planted in its last message
	bytes int64
	lat   []time.Duration
}

func startW8Writer(root string, id session.SessionID, seed uint64) (*w8Writer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	w := &w8Writer{id: id, cmd: exec.Command(exe, "-child", "w8-writer", root, string(id), fmt.Sprint(seed))}
	w.cmd.Stderr = &w.errb
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w.out = bufio.NewReader(stdout)
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	line, err := w.out.ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		w.stop()
		return nil, fmt.Errorf("W8 writer %s: %q, %v: %s", id, line, err, w.errb.String())
	}
	return w, nil
}

// finish closes the writer's stdin (it appends its last message, with a
// word of its own, and releases its session) and reads its report.
func (w *w8Writer) finish() (w8WriterResult, error) {
	_ = w.stdin.Close()
	var res w8WriterResult
	var line string
	for {
		l, err := w.out.ReadString('\n')
		if rest, ok := strings.CutPrefix(l, "lat "); ok {
			for _, f := range strings.Fields(rest) {
				n, _ := strconv.ParseInt(f, 10, 64)
				res.lat = append(res.lat, time.Duration(n))
			}
		} else if strings.HasPrefix(l, "result ") {
			line = l
		}
		if err != nil {
			break
		}
	}
	err := w.cmd.Wait()
	w.done = true
	if err != nil || line == "" {
		return res, fmt.Errorf("W8 writer %s: %v: %s", w.id, err, w.errb.String())
	}
	for _, kv := range strings.Fields(strings.TrimPrefix(line, "result ")) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "acks":
			res.acks, _ = strconv.Atoi(v)
		case "last":
			res.last, _ = strconv.ParseUint(v, 10, 64)
		case "word":
			res.word = v
		case "bytes":
			res.bytes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return res, nil
}

// stop ends a writer that was not finished (an error elsewhere).
func (w *w8Writer) stop() {
	if w.done {
		return
	}
	w.done = true
	_ = w.stdin.Close()
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
}

// w8WriterChild is the writer process: it holds session id and appends
// W6's messages to it until its stdin closes, then appends one message
// holding a word of its own, releases the session and reports.
func w8WriterChild(root, id, seedArg string) error {
	ctx := context.Background()
	if dir := os.Getenv("SESSBENCH_W8_WRITER_CPUPROFILE"); dir != "" {
		// Where a writer's time goes (its appends and its index writes).
		stop, err := cpuProfile(filepath.Join(dir, fmt.Sprintf("writer-%d.pprof", os.Getpid())))
		if err != nil {
			return err
		}
		defer stop()
	}
	seed, err := strconv.ParseUint(seedArg, 10, 64)
	if err != nil {
		return err
	}
	st, err := jsonlstore.OpenExisting(root, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := st.Acquire(ctx, session.SessionID(id), sessionstore.AcquireOptions{Label: "w8-writer"})
	if err != nil {
		return err
	}
	rec, err := st.Load(ctx, session.SessionID(id))
	if err != nil {
		return err
	}
	s, err := rec.Session()
	if err != nil {
		return err
	}
	a := newAgentSession(id, seed)
	// Continue the conversation: the next message is a user prompt, its
	// time and tool call IDs after the session's.
	a.s, a.step = s, (s.MessageCount()+2)/3*3
	var stopped atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stopped.Store(true)
	}()
	fmt.Println("ready")
	var lat []time.Duration
	tick := time.NewTicker(time.Second / w8Rate)
	defer tick.Stop()
	for ; !stopped.Load(); <-tick.C {
		_, snap, err := a.next()
		if err != nil {
			return err
		}
		start := time.Now()
		if _, err := w.Append(ctx, w.Revision(), snap); err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
	}
	// The last message holds a word no other message does.
	word := fmt.Sprintf("lastword%s", strings.ReplaceAll(id, "-", ""))
	if err := a.s.AppendMessage(session.TextMessage(session.RoleUser, "the end: "+word, sessiontest.Epoch.Add(time.Duration(a.step+1)*time.Second))); err != nil {
		return err
	}
	snap, err := sessnap.Of(a.s)
	if err != nil {
		return err
	}
	last, err := w.Append(ctx, w.Revision(), snap)
	if err != nil {
		return err
	}
	if err := w.Release(ctx); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("lat")
	for _, d := range lat {
		fmt.Fprintf(&b, " %d", d.Nanoseconds())
	}
	fmt.Println(b.String())
	fmt.Printf("result acks=%d last=%d word=%s bytes=%d\n", len(lat)+1, last, word, a.content)
	return nil
}

// w8Check checks what the writers acknowledged: each session's latest
// revision is the writer's last, a search for its last word finds that
// message at that revision, and Verify finds the store sound.
func w8Check(ctx context.Context, root string, ids []session.SessionID, res []w8WriterResult) error {
	st, err := jsonlstore.OpenExisting(root, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return err
	}
	defer st.Close()
	for i, id := range ids {
		rec, err := st.Load(ctx, id)
		if err != nil {
			return fmt.Errorf("W8: load %s: %w", id, err)
		}
		if rec.Revision != res[i].last {
			return fmt.Errorf("W8: %s is at revision %d, its writer's last acknowledged was %d", id, rec.Revision, res[i].last)
		}
		sr, err := st.Search(ctx, sessionstore.SearchQuery{Text: res[i].word})
		if err != nil {
			return err
		}
		if len(sr.Hits) != 1 || sr.Hits[0].ID != id || sr.Hits[0].Revision != res[i].last {
			return fmt.Errorf("W8: a search for %s's last word found %+v, want revision %d", id, sr.Hits, res[i].last)
		}
	}
	rep, err := st.Verify(ctx)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("W8: verify found %d problems: %+v", rep.ProblemCount(), rep)
	}
	return nil
}
