package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// w9Text is the length of the user message each W9 resume appends.
const w9Text = 160

// w9Window is how many resumes the first and last p50s of W9's long run
// cover.
const w9Window = 100

// w9Message is the 160-byte user message resume n appends, at after.
func w9Message(n int, after time.Time) session.Message {
	text := fmt.Sprintf("resume %d: ", n)
	for len(text) < w9Text {
		text += "carry on with the next step "
	}
	return session.TextMessage(session.RoleUser, text[:w9Text], after.Add(time.Second))
}

// w9Resume is what an agent that starts a process per turn does: open the
// store, resume the session (sessionstore.Resume: acquire and the latest
// revision, read once), restore it, append one message, release, close.
// It returns the encoded message's size.
func w9Resume(ctx context.Context, dir string, id session.SessionID, n int) (int, error) {
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	w, rec, err := sessionstore.Resume(ctx, st, id, sessionstore.AcquireOptions{Label: "w9"})
	if err != nil {
		return 0, err
	}
	defer w.Release(ctx)
	s, err := rec.Session()
	if err != nil {
		return 0, err
	}
	var last time.Time
	if c := s.Conversation(); len(c) > 0 {
		last = c[len(c)-1].CreatedAt
	}
	m := w9Message(n, last)
	if err := s.AppendMessage(m); err != nil {
		return 0, err
	}
	snap, err := sessnap.Of(s)
	if err != nil {
		return 0, err
	}
	if _, err := w.Append(ctx, rec.Revision, snap); err != nil {
		return 0, err
	}
	if err := w.Release(ctx); err != nil {
		return 0, err
	}
	enc, err := sessnap.AppendMessage(nil, m, nil)
	return len(enc), err
}

// w9Child is the child mode w9-resume DIR ID N: one resume in a fresh
// process.
func w9Child(dir, id, n string) error {
	k, err := strconv.Atoi(n)
	if err != nil {
		return err
	}
	if path := os.Getenv("SESSBENCH_W9_CPUPROFILE"); path != "" {
		// Where a resume's time goes (go tool pprof): the profile of the
		// last resume of a run.
		stop, err := cpuProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	start := time.Now()
	msg, err := w9Resume(context.Background(), dir, session.SessionID(id), k)
	if err != nil {
		return err
	}
	result("ns=%d msg=%d", time.Since(start).Nanoseconds(), msg)
	return nil
}

// w9ReadChild is the child mode w9-read DIR [zstd]: read every file of
// session directory DIR once (decompressing the zstd ones with zstd), in
// a fresh process: the floor of a resume.
func w9ReadChild(dir string, decompress bool) error {
	start := time.Now()
	var err error
	if decompress {
		err = readUnique(dir)
	} else {
		err = readFiles(dir)
	}
	if err != nil {
		return err
	}
	result("ns=%d", time.Since(start).Nanoseconds())
	return nil
}

// readFiles reads every file of dir once, as stored.
func readFiles(dir string) error {
	buf := make([]byte, 1<<20)
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			n, err := f.Read(buf)
			if n == 0 || err != nil {
				return nil
			}
		}
	})
}

// runW9 is W9, resume, as an agent that starts a process per turn
// resumes its session:
//
//   - a session grown as W6 grows one (one revision per message, tool
//     results of 2–64 KiB) to c.w9MiB of message text, then resumed
//     c.w9Fresh times, each in a fresh process (open the store, Resume,
//     restore the session, append one 160-byte user message, release,
//     exit), interleaved with fresh processes that read every file of the
//     session's directory once (as stored, and decompressing the zstd
//     ones): the time of each, and the bytes each resume adds;
//   - a small session resumed c.w9Many times in this process, one message
//     each, with a store opened for each resume: how the log grows against
//     the messages, the chains' lengths, and the p50 of the first and last
//     100 resumes.
func runW9(ctx context.Context, c *config, r *report) error {
	dir := filepath.Join(c.dir, "w9")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.w9Fresh > 0 {
		if err := w9Fresh(ctx, c, r, filepath.Join(dir, "fresh")); err != nil {
			return err
		}
	}
	if c.w9Many == 0 {
		return nil
	}
	return w9Many(ctx, c, r, filepath.Join(dir, "many"))
}

func w9Fresh(ctx context.Context, c *config, r *report, dir string) error {
	const id = "w9-session"
	agent := newAgentSession(id, 9)
	_, first, err := agent.next()
	if err != nil {
		return err
	}
	js, err := newJSONL(ctx, dir, first, jsonlstore.Options{})
	if err != nil {
		return err
	}
	for agent.content < int64(c.w9MiB)<<20 {
		_, snap, err := agent.next()
		if err == nil {
			err = js.append(ctx, snap)
		}
		if err != nil {
			js.close()
			return err
		}
	}
	if err := js.close(); err != nil {
		return err
	}
	sessDir := filepath.Join(dir, id)
	logPath := filepath.Join(sessDir, jsonlstore.LogFile)
	startSize, err := dirSize(sessDir)
	if err != nil {
		return err
	}
	// Warm the page cache, as a resumed session's files are.
	if err := readFiles(sessDir); err != nil {
		return err
	}
	var resume, resumeIn, read, readZ, load, decode sample
	var added, logAdded, msgBytes []int64
	for i := range c.w9Fresh {
		before, err := dirSize(sessDir)
		if err != nil {
			return err
		}
		logBefore, err := os.Stat(logPath)
		if err != nil {
			return err
		}
		runs := []func() error{
			func() error {
				res, err := spawn("w9-resume", dir, id, strconv.Itoa(i))
				if err != nil {
					return err
				}
				resume.add(res.wall, 0)
				resumeIn.add(res.ns(), 0)
				n, _ := strconv.ParseInt(res.fields["msg"], 10, 64)
				msgBytes = append(msgBytes, n)
				return nil
			},
			func() error {
				res, err := spawn("w9-read", sessDir)
				if err == nil {
					read.add(res.wall, 0)
				}
				return err
			},
			func() error {
				res, err := spawn("w9-read-zstd", sessDir)
				if err == nil {
					readZ.add(res.wall, 0)
				}
				return err
			},
			func() error {
				res, err := spawn("w9-decode", sessDir)
				if err == nil {
					decode.add(res.wall, 0)
				}
				return err
			},
			func() error {
				res, err := spawn("w9-load", dir, id)
				if err == nil {
					load.add(res.wall, 0)
				}
				return err
			},
		}
		for _, k := range rotate(len(runs), i) {
			if err := runs[k](); err != nil {
				return err
			}
		}
		after, err := dirSize(sessDir)
		if err != nil {
			return err
		}
		logAfter, err := os.Stat(logPath)
		if err != nil {
			return err
		}
		added = append(added, after-before)
		logAdded = append(logAdded, logAfter.Size()-logBefore.Size())
	}
	kinds, _, err := w9Kinds(ctx, dir, id, c.w9Fresh)
	if err != nil {
		return err
	}
	maxAdded, maxLog, maxMsg := int64(0), int64(0), int64(0)
	for i := range added {
		maxAdded, maxLog, maxMsg = max(maxAdded, added[i]), max(maxLog, logAdded[i]), max(maxMsg, msgBytes[i])
	}
	t := &table{
		title: fmt.Sprintf("W9 resume of a session of %d MiB of message text, each in a fresh process (%d resumes)", c.w9MiB, c.w9Fresh),
		cols:  []string{"fresh process", "p50 (parent's wall clock)", "p50 inside the process", "× reading every file once", "× reading and decompressing", "× the floor: read, decompress, check, decode", "× Open and Load"},
	}
	x := func(a, b sample) string { return fmtX(float64(a.pct(50)) / float64(b.pct(50))) }
	t.add("resume: open, Resume, restore, append one 160-byte message, release, exit", fmtDur(resume.pct(50)), fmtDur(resumeIn.pct(50)),
		x(resume, read), x(resume, readZ), x(resume, decode), x(resume, load))
	t.add("read every file of the session's directory once", fmtDur(read.pct(50)), "—", "1.00×", "—", "—", "—")
	t.add("read every file once, decompressing the zstd ones", fmtDur(readZ.pct(50)), "—", x(readZ, read), "1.00×", "—", "—")
	t.add("the floor: read every file on every core, decompress into buffers of their size, SHA-256 every blob, decode every page's messages (sessnap.Unmarshal)", fmtDur(decode.pct(50)), "—", x(decode, read), x(decode, readZ), "1.00×", "—")
	t.add("open the store, Load the session and restore it (no lease, no append)", fmtDur(load.pct(50)), "—", x(load, read), x(load, readZ), x(load, decode), "1.00×")
	t.note("the session directory held %s (%s of message text) before the resumes; the five processes run in rotating order each round, from the page cache", fmtBytes(startSize), fmtBytes(agent.content))
	t.note("bytes a resume added: at most %s to the session directory, %s to the log, for an encoded message of %s (target: ≤ 2 × message + 1 KiB = %s); records the resumes wrote: %s",
		fmtBytes(maxAdded), fmtBytes(maxLog), fmtBytes(maxMsg), fmtBytes(2*maxMsg+1024), kinds)
	r.add(t)
	r.set("W9/resume÷read", float64(resume.pct(50))/float64(read.pct(50)))
	r.set("W9/resume÷readzstd", float64(resume.pct(50))/float64(readZ.pct(50)))
	r.set("W9/resume÷floor", float64(resume.pct(50))/float64(decode.pct(50)))
	r.set("W9/resume÷load", float64(resume.pct(50))/float64(load.pct(50)))
	r.set("W9/added-max", float64(maxAdded))
	r.set("W9/msg", float64(maxMsg))
	return nil
}

// w9Kinds counts the kinds of session id's last n records, and returns
// the longest run of deltas in its log.
func w9Kinds(ctx context.Context, dir string, id session.SessionID, n int) (string, int, error) {
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	if err != nil {
		return "", 0, err
	}
	defer st.Close()
	var infos []sessionstore.RecordInfo
	for info, err := range st.Records(ctx, id) {
		if err != nil {
			return "", 0, err
		}
		infos = append(infos, info)
	}
	count := map[string]int{}
	for _, info := range infos[max(0, len(infos)-n):] {
		count[info.Kind]++
	}
	run, longest := 0, 0
	for _, info := range infos {
		if info.Kind == "delta" {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return fmt.Sprintf("%d delta, %d full", count["delta"], count["full"]), longest, nil
}

func w9Many(ctx context.Context, c *config, r *report, dir string) error {
	const id = "w9-many"
	snap, err := sessnap.Of(sessiontest.InState(id, session.StateIdle))
	if err != nil {
		return err
	}
	js, err := newJSONL(ctx, dir, snap, jsonlstore.Options{})
	if err != nil {
		return err
	}
	if err := js.close(); err != nil {
		return err
	}
	sessDir := filepath.Join(dir, id)
	logPath := filepath.Join(sessDir, jsonlstore.LogFile)
	logStart, err := os.Stat(logPath)
	if err != nil {
		return err
	}
	dirStart, err := dirSize(sessDir)
	if err != nil {
		return err
	}
	var lat sample
	var msgBytes int64
	// The floor of the growth: a resume returns the whole session, so its
	// cost grows by what reading and decoding the session costs: Open and
	// Load of the session in this process, with a store opened for it,
	// after each of the last 100 resumes (the same session, the same
	// moment).
	var load sample
	var floor w9ManyFloor
	openLoad := func() error {
		t0 := time.Now()
		st, err := jsonlstore.Open(dir, jsonlstore.Options{})
		if err != nil {
			return err
		}
		_, err = st.Load(ctx, id)
		st.Close()
		load.add(time.Since(t0), 0)
		return err
	}
	stopProfile := func() {}
	start := time.Now()
	for i := range c.w9Many {
		t0 := time.Now()
		n, err := w9Resume(ctx, dir, id, i)
		if err != nil {
			return fmt.Errorf("resume %d: %w", i+1, err)
		}
		lat.add(time.Since(t0), 0)
		msgBytes += int64(n)
		if i == c.w9Many-w9Window-1 {
			if path := os.Getenv("SESSBENCH_W9_MANY_CPUPROFILE"); path != "" {
				// Where the last 100 resumes' time goes (go tool pprof),
				// with the loads beside them.
				if stopProfile, err = cpuProfile(path); err != nil {
					return err
				}
			}
		}
		if i >= c.w9Many-w9Window {
			if err := openLoad(); err != nil {
				return err
			}
		}
		if i < w9Window || i >= c.w9Many-w9Window {
			if err := floor.measure(ctx, dir, sessDir, id); err != nil {
				return err
			}
		}
	}
	elapsed := time.Since(start)
	stopProfile()
	logEnd, err := os.Stat(logPath)
	if err != nil {
		return err
	}
	dirEnd, err := dirSize(sessDir)
	if err != nil {
		return err
	}
	kinds, longest, err := w9Kinds(ctx, dir, id, c.w9Many)
	if err != nil {
		return err
	}
	first := pctOf(lat.lat[:min(w9Window, len(lat.lat))], 50)
	last := pctOf(lat.lat[max(0, len(lat.lat)-w9Window):], 50)
	logGrowth := logEnd.Size() - logStart.Size()
	t := &table{
		title: fmt.Sprintf("W9 %d resumes of one session, one 160-byte message each (in one process, a store opened for each)", c.w9Many),
		cols:  []string{"p50 first 100", "p50 last 100", "last ÷ first", "last − first", "Open and Load after each of the last 100 (p50)", "last 100 ÷ Open and Load", "Open and Load ÷ first 100", "log growth", "÷ encoded messages", "session directory growth", "records", "longest chain of deltas"},
	}
	t.add(fmtDur(first), fmtDur(last), fmtX(float64(last)/float64(first)), fmtDur(last-first), fmtDur(load.pct(50)),
		fmtX(float64(last)/float64(load.pct(50))), fmtX(float64(load.pct(50))/float64(first)), fmtBytes(logGrowth), fmtX(float64(logGrowth)/float64(msgBytes)),
		fmtBytes(dirEnd-dirStart), kinds, strconv.Itoa(longest))
	t.note("a resume: jsonlstore.Open, sessionstore.Resume, restore, append one message, Release, Close; the messages appended encode to %s in all; the run took %s",
		fmtBytes(msgBytes), elapsed.Round(time.Millisecond))
	r.add(t)
	ft := floor.table(c.w9Many, lat.lat)
	r.add(ft)
	r.set("W9/many-last÷first", float64(last)/float64(first))
	r.set("W9/many-floor-read", w9FloorRatio(first, floor.read))
	r.set("W9/many-floor-decode", w9FloorRatio(first, floor.decode))
	r.set("W9/many-log÷msgs", float64(logGrowth)/float64(msgBytes))
	return nil
}
