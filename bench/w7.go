package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// runW7 is W7, search: sessions whose conversations hold prose of the
// corpus (corpus.go) and one rare word in one message of all, searched
// for in a fresh process (this binary as a child: open the store, search,
// print the hits, exit), beside an empty child and a child that proves
// the index current by a probe of every log (list the root, lstat every
// log, read the rows' proofs: what a search does without a catalog it can
// believe); then the index deleted by hand and
// searched again (it is built anew, and the answer is the same); then the
// cost of indexing an append, interleaved with appends to a store without
// an index, each append a 1 KiB message. Two variants: c.w7Sessions
// sessions of a few small messages, and the same number holding
// c.w7LargeMiB MiB of message text in all.
func runW7(ctx context.Context, c *config, r *report) error {
	dir := filepath.Join(c.dir, "w7")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	variants := []struct {
		name           string
		msgs, msgBytes int
	}{
		{"small", 4, 512},
		{"large", 8, int(int64(c.w7LargeMiB) << 20 / int64(c.w7Sessions) / 8)},
	}
	t := &table{
		title: fmt.Sprintf("W7 search for a rare word among %d sessions, fresh process", c.w7Sessions),
		cols:  []string{"variant", "message text", "index", "build (index caught up)", "search p50 (in child)", "exec to exit p50", "p99", "after the index is deleted"},
	}
	var noop, floor sample
	for vi, v := range variants {
		root := filepath.Join(dir, v.name)
		build := time.Now()
		text, err := w7Build(ctx, root, c.w7Sessions, v.msgs, v.msgBytes, uint64(vi))
		if err != nil {
			return err
		}
		built := time.Since(build)
		// One search brings the index current (what the feed did not write).
		caught := time.Now()
		res, err := w7Search(ctx, root)
		if err != nil {
			return err
		}
		catchUp := time.Since(caught)
		if len(res.Hits) != 1 {
			return fmt.Errorf("W7 %s: %d hits for the rare word, want 1", v.name, len(res.Hits))
		}
		want := res.Hits[0]
		idxSize, err := dirSize(filepath.Join(root, jsonlstore.SearchDir))
		if err != nil {
			return err
		}
		inChild, wall := &sample{}, &sample{}
		kinds := []string{"search-jsonl", "noop", "search-floor"}
		for round := range c.w7Fresh {
			for _, k := range rotate(len(kinds), round) {
				res, err := spawn(kinds[k], root, rareWord)
				if err != nil {
					return err
				}
				switch kinds[k] {
				case "search-jsonl":
					if res.fields["hits"] != "1" || res.fields["hit"] != fmt.Sprintf("%s/%d@%d", want.ID, want.Message, want.Revision) || res.fields["indexed"] != "0" {
						return fmt.Errorf("W7 %s: child found %v, want %s/%d@%d with the index current", v.name, res.fields, want.ID, want.Message, want.Revision)
					}
					inChild.add(res.ns(), 0)
					wall.add(res.wall, 0)
				case "noop":
					noop.add(res.wall, 0)
				default:
					floor.add(res.ns(), 0)
				}
			}
		}
		// Deleted by hand: the next search builds the index anew and
		// answers the same.
		if err := os.RemoveAll(filepath.Join(root, jsonlstore.SearchDir)); err != nil {
			return err
		}
		rebuilt, err := spawn("search-jsonl", root, rareWord)
		if err != nil {
			return err
		}
		if rebuilt.fields["hit"] != fmt.Sprintf("%s/%d@%d", want.ID, want.Message, want.Revision) {
			return fmt.Errorf("W7 %s: after deleting the index: %v", v.name, rebuilt.fields)
		}
		t.add(v.name, fmtBytes(text), fmtBytes(idxSize), fmt.Sprintf("%s (%s)", built.Round(time.Millisecond), catchUp.Round(time.Millisecond)),
			fmtDur(inChild.pct(50)), fmtDur(wall.pct(50)), fmtDur(wall.pct(99)),
			fmt.Sprintf("same hit, %s sessions indexed again in %s; stderr: %q", rebuilt.fields["indexed"], fmtDur(rebuilt.wall), strings.TrimSpace(rebuilt.stderr)))
		r.set("W7/"+v.name+"/ms", float64(wall.pct(50))/1e6)
		r.set("W7/"+v.name+"/MiB", float64(text)/(1<<20))
		if err := os.RemoveAll(root); err != nil {
			return err
		}
	}
	t.note("(ref) an empty child process, exec to exit: %s p50; proving the index current by a probe of every log, in a child (readdir of the root, lstat of every log, the rows' proofs read), what a search without a catalog to believe does: %s p50", fmtDur(noop.pct(50)), fmtDur(floor.pct(50)))
	t.note("sessions are created through jsonlstore's Create, 8 at a time; the index is fed by the writers in the background and brought current by one search (the time in brackets), which also writes the catalog, as a listing does; a search believes the catalog's entries of unmarked sessions in place of a probe of each log, and probes the logs its hits come from; \"message text\" is the text of all messages, \"index\" the size of ROOT/.search")
	r.add(t)
	r.set("W7/noop-ms", float64(noop.pct(50))/1e6)
	r.set("W7/floor-ms", float64(floor.pct(50))/1e6)
	return w7Append(ctx, c, dir, r)
}

// w7Build creates n sessions of msgs messages of about msgBytes each,
// one holding the rare word, and returns the bytes of message text.
func w7Build(ctx context.Context, root string, n, msgs, msgBytes int, seed uint64) (int64, error) {
	st, err := jsonlstore.Open(root, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return 0, err
	}
	// The index exists from the start, as in a store that has been
	// searched: the writers feed it.
	if _, err := st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"}); err != nil {
		st.Close()
		return 0, err
	}
	var mu sync.Mutex
	var total int64
	ids := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	rare := n / 2
	for g := range 8 {
		cp := newCorpus(seed*100 + uint64(g))
		wg.Go(func() {
			for i := range ids {
				s := sessiontest.New(fmt.Sprintf("w7-%05d", i))
				var bytes int64
				for m := range msgs {
					text := cp.text(msgBytes)
					if i == rare && m == msgs/2 {
						text = plant(text)
					}
					role := session.RoleUser
					if m%2 == 1 {
						role = session.RoleAssistant
					}
					if err := s.AppendMessage(session.TextMessage(role, text, sessiontest.Epoch)); err != nil {
						errs <- err
						return
					}
					bytes += int64(len(text))
				}
				snap, err := sessnap.Of(s)
				if err == nil {
					var w sessionstore.Writer
					if w, err = st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "bench"}); err == nil {
						err = w.Release(ctx)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				total += bytes
				mu.Unlock()
			}
		})
	}
	var first error
	for i := 0; i < n && first == nil; i++ {
		select {
		case ids <- i:
		case first = <-errs:
		}
	}
	close(ids)
	wg.Wait()
	close(errs)
	return total, errors.Join(first, <-errs, st.Close())
}

// w7Search opens the store at root and searches for the rare word.
func w7Search(ctx context.Context, root string) (sessionstore.SearchResult, error) {
	st, err := jsonlstore.OpenExisting(root, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return sessionstore.SearchResult{}, err
	}
	defer st.Close()
	return st.Search(ctx, sessionstore.SearchQuery{Text: rareWord})
}

// w7Child is the fresh-process side of W7.
func w7Child(mode, root, word string) error {
	ctx := context.Background()
	start := time.Now()
	switch mode {
	case "search-jsonl":
		if dir := os.Getenv("SESSBENCH_SEARCH_CPUPROFILE"); dir != "" {
			// Where a search's time goes (go tool pprof on the files of
			// many children at once): one profile per child.
			stop, err := cpuProfile(filepath.Join(dir, fmt.Sprintf("search-%d.pprof", os.Getpid())))
			if err != nil {
				return err
			}
			defer stop()
		}
		res, err := w7Search(ctx, root)
		d := time.Since(start)
		if err != nil {
			return err
		}
		hit := ""
		if len(res.Hits) > 0 {
			h := res.Hits[0]
			hit = fmt.Sprintf("%s/%d@%d", h.ID, h.Message, h.Revision)
		}
		result("ns=%d hits=%d hit=%s indexed=%d", d.Nanoseconds(), len(res.Hits), hit, res.Indexed)
		return nil
	case "search-floor":
		// What a search does to prove its index current without a
		// catalog it can believe: list the root, lstat every log, read
		// the rows' proofs.
		entries, err := os.ReadDir(root)
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") {
				if err := syscall.Lstat(filepath.Join(root, e.Name(), jsonlstore.LogFile), &st); err != nil {
					return err
				}
			}
		}
		db, err := sql.Open("sqlite", "file:"+filepath.Join(root, jsonlstore.SearchDir, "index.db")+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			return err
		}
		defer db.Close()
		rows, err := db.Query("SELECT id, log_dev, log_ino, log_size, log_mtime FROM sessions")
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			var id string
			var d, e, f, g int64
			if err := rows.Scan(&id, &d, &e, &f, &g); err != nil {
				return err
			}
			n++
		}
		rows.Close()
		result("ns=%d rows=%d", time.Since(start).Nanoseconds(), n)
		return nil
	}
	return fmt.Errorf("unknown mode %s", mode)
}

// w7Append measures what indexing costs an append: appends of a 1 KiB
// message to a store with a search index, each followed by the index
// write it queued (FlushSearch: what the store's background queue does
// after the append), interleaved with appends to a store without one;
// and the same in bursts of 16 appends, whose index writes share one
// transaction, as the queue's do.
func w7Append(ctx context.Context, c *config, dir string, r *report) error {
	cp := newCorpus(77)
	type side struct {
		st *jsonlstore.Store
		w  sessionstore.Writer
		s  *session.Session
	}
	open := func(name string, indexed bool) (*side, error) {
		st, err := jsonlstore.Open(filepath.Join(dir, name), jsonlstore.Options{Search: fts.New()})
		if err != nil {
			return nil, err
		}
		if indexed {
			if _, err := st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"}); err != nil {
				return nil, err
			}
		}
		s := sessiontest.New("w7-append")
		if err := s.AppendMessage(session.TextMessage(session.RoleUser, cp.text(1<<10), sessiontest.Epoch)); err != nil {
			return nil, err
		}
		snap, err := sessnap.Of(s)
		if err != nil {
			return nil, err
		}
		w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{})
		if err != nil {
			return nil, err
		}
		return &side{st: st, w: w, s: s}, st.FlushSearch(ctx)
	}
	with, err := open("append-indexed", true)
	if err != nil {
		return err
	}
	without, err := open("append-plain", false)
	if err != nil {
		return err
	}
	defer func() {
		_ = with.w.Release(ctx)
		_ = without.w.Release(ctx)
		with.st.Close()
		without.st.Close()
	}()
	appendOne := func(sd *side, text string) error {
		if err := sd.s.AppendMessage(session.TextMessage(session.RoleAssistant, text, sessiontest.Epoch)); err != nil {
			return err
		}
		snap, err := sessnap.Of(sd.s)
		if err != nil {
			return err
		}
		_, err = sd.w.Append(ctx, sd.w.Revision(), snap)
		return err
	}
	t := &table{
		title: "W7 indexing an append (a 1 KiB message): with the index write against without an index",
		cols:  []string{"appends per index write", "rounds", "append without index (mean)", "append + its index write (mean)", "index write ÷ append"},
	}
	for _, burst := range []int{1, 16} {
		texts := make([]string, burst)
		ops := []func() error{
			func() error {
				for _, tx := range texts {
					if err := appendOne(without, tx); err != nil {
						return err
					}
				}
				return nil
			},
			func() error {
				for _, tx := range texts {
					if err := appendOne(with, tx); err != nil {
						return err
					}
				}
				return with.st.FlushSearch(ctx)
			},
		}
		after := []func() error{nil, func() error {
			for i := range texts {
				texts[i] = cp.text(1 << 10)
			}
			return nil
		}}
		after[1]()
		s, err := interleaveAfter(ops, after, c.w7Appends/burst, 0)
		if err != nil {
			return err
		}
		plain := s[0].total() / time.Duration(len(s[0].lat)*burst)
		indexed := s[1].total() / time.Duration(len(s[1].lat)*burst)
		ratio := float64(indexed-plain) / float64(plain)
		t.add(fmt.Sprint(burst), fmt.Sprint(len(s[0].lat)), fmtDur(plain), fmtDur(indexed), fmt.Sprintf("%.0f%%", 100*ratio))
		r.set(fmt.Sprintf("W7/append%d", burst), ratio)
	}
	t.note("each round appends to both stores in turn (the order rotating); an index write is one SQLite transaction (WAL, synchronous NORMAL) adding the messages to the FTS5 table and checking and updating the session's row; the store's own queue makes it about 100 ms after the append, off the append's path, sharing it with the appends made meanwhile")
	t.note("SL measures the floor: one FTS5 transaction of one 1 KiB message through modernc.org/sqlite")
	r.add(t)
	return nil
}
