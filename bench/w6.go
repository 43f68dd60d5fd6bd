package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// w6Window is how many appends the first and last p50s of W6 cover.
const w6Window = 60

// w6Rewinds is how many rewinds by one message W6 times after the appends.
const w6Rewinds = 30

// agentSession grows a coding agent's session one message per revision:
// a user prompt, an assistant reply with a tool call, the tool's result
// (2 to 64 KiB of text), and again.
type agentSession struct {
	s       *session.Session
	w       *words
	r       *rand.Rand
	step    int
	content int64 // bytes of message text so far
}

func newAgentSession(id string, seed uint64) *agentSession {
	return &agentSession{s: sessiontest.InState(id, session.StateRunning), w: newWords(seed), r: rand.New(rand.NewPCG(seed, 11))}
}

// next appends the next message and returns it with the snapshot.
func (a *agentSession) next() (session.Message, sessnap.Snapshot, error) {
	a.step++
	at := sessiontest.Epoch.Add(time.Duration(a.step) * time.Second)
	var m session.Message
	call := fmt.Sprintf("call-%d", a.step/3)
	switch a.step % 3 {
	case 1:
		m = session.TextMessage(session.RoleUser, a.w.text(100+a.r.IntN(400)), at)
	case 2:
		m = session.TextMessage(session.RoleAssistant, a.w.text(200+a.r.IntN(600)), at)
		m.Parts = append(m.Parts, session.Part{Type: session.PartToolCall, ToolCallID: call, Name: "read_file",
			Input: []byte(fmt.Sprintf(`{"path":"src/pkg/file%d.go"}`, a.step))})
		if err := a.s.AddUsage(session.Usage{InputTokens: 3000, OutputTokens: 200, CacheReadTokens: 2500}); err != nil {
			return m, sessnap.Snapshot{}, err
		}
		if err := a.s.RecordToolCall(); err != nil {
			return m, sessnap.Snapshot{}, err
		}
	default:
		m = session.Message{Role: session.RoleTool, CreatedAt: at, Parts: []session.Part{{Type: session.PartToolResult,
			ToolCallID: call, Output: a.w.text(2<<10 + a.r.IntN(62<<10))}}}
	}
	for _, p := range m.Parts {
		a.content += int64(len(p.Text) + len(p.Output) + len(p.Input))
	}
	if err := a.s.AppendMessage(m); err != nil {
		return m, sessnap.Snapshot{}, err
	}
	snap, err := sessnap.Of(a.s)
	return m, snap, err
}

// runW6 is W6, a growing agent session: one revision per message until
// the session holds c.w6MiB of message text, each append timed, a raw
// O_APPEND+fdatasync of the new message's bytes after each one; then the
// latest revision is loaded by a fresh store, beside a read (and
// decompression) of the session's unique content on disk.
func runW6(ctx context.Context, c *config, r *report) error {
	dir := filepath.Join(c.dir, "w6")
	if err := os.MkdirAll(filepath.Join(dir, "raw"), 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	agent := newAgentSession("w6-session", 6)
	_, first, err := agent.next()
	if err != nil {
		return err
	}
	js, err := newJSONL(ctx, filepath.Join(dir, "jsonl"), first, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return err
	}
	jsOpen := true
	defer func() {
		if jsOpen {
			js.close()
		}
	}()
	raw, err := newRaw(filepath.Join(dir, "raw", "raw.log"))
	if err != nil {
		return err
	}
	defer raw.close()

	limit := int64(c.w6MiB) << 20
	var store, rawS sample
	var m ioMeter
	start := time.Now()
	for agent.content < limit {
		msg, snap, err := agent.next()
		if err != nil {
			return err
		}
		if err := m.timed(&store, 0, func() error { return js.append(ctx, snap) }); err != nil {
			return fmt.Errorf("jsonlstore, revision %d: %w", js.rev+1, err)
		}
		var b bytes.Buffer
		for _, p := range msg.Parts {
			b.WriteString(p.Text)
			b.WriteString(p.Output)
			b.Write(p.Input)
		}
		b.WriteByte('\n')
		if err := m.timed(&rawS, int64(b.Len()), func() error { return raw.append(b.Bytes()) }); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)

	// Rewinds: the conversation cut by one message (Session.Truncate, as
	// sessionstore.Handle.Pop does) and appended, w6Rewinds times in a
	// row, each timed, with the bytes each adds to the log.
	var rewind sample
	var rewindMax int64
	for range w6Rewinds {
		before, err := os.Stat(js.log)
		if err != nil {
			return err
		}
		if err := agent.s.Truncate(agent.s.MessageCount()-1, false); err != nil {
			return err
		}
		snap, err := sessnap.Of(agent.s)
		if err != nil {
			return err
		}
		if err := m.timed(&rewind, 0, func() error { return js.append(ctx, snap) }); err != nil {
			return fmt.Errorf("jsonlstore, rewind at revision %d: %w", js.rev+1, err)
		}
		after, err := os.Stat(js.log)
		if err != nil {
			return err
		}
		rewindMax = max(rewindMax, after.Size()-before.Size())
	}
	revs := js.rev
	jsOpen = false
	if err := js.close(); err != nil {
		return err
	}
	sessDir := filepath.Join(dir, "jsonl", "w6-session")
	logInfo, err := os.Stat(filepath.Join(sessDir, jsonlstore.LogFile))
	if err != nil {
		return err
	}
	onDisk, err := dirSize(sessDir)
	if err != nil {
		return err
	}

	// Load, in a fresh store each time, beside reading the unique content.
	if path := os.Getenv("SESSBENCH_W6_LOAD_CPUPROFILE"); path != "" {
		// Where the loads' time goes (go tool pprof): the loads and the
		// reads beside them.
		stop, err := cpuProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	var load, read sample
	var loaded int
	for range c.w6Loads {
		if err := m.timed(&read, 0, func() error { return readUnique(sessDir) }); err != nil {
			return err
		}
		if err := m.timed(&load, 0, func() error {
			st, err := jsonlstore.Open(filepath.Join(dir, "jsonl"), jsonlstore.Options{Search: fts.New()})
			if err != nil {
				return err
			}
			defer st.Close()
			rec, err := st.Load(ctx, "w6-session")
			loaded = len(rec.Snapshot.Messages)
			return err
		}); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	if want := len(agent.s.Conversation()); loaded != want {
		return fmt.Errorf("load: %d messages, want %d", loaded, want)
	}

	firstP50 := pctOf(store.lat[:min(w6Window, len(store.lat))], 50)
	lastP50 := pctOf(store.lat[max(0, len(store.lat)-w6Window):], 50)
	rawLastP50 := pctOf(rawS.lat[max(0, len(rawS.lat)-w6Window):], 50)
	t := &table{
		title: fmt.Sprintf("W6 growing agent session, one revision per message, to %d MiB of message text (%d revisions)", c.w6MiB, revs),
		cols:  []string{"system", "appends/s", "p50 first 60", "p50 last 60", "last ÷ first", "p99", "last 60 ÷ raw last 60"},
	}
	t.add("jsonlstore (default Options)", fmtNum(store.opsPerSec()), fmtDur(firstP50), fmtDur(lastP50), fmtX(float64(lastP50)/float64(firstP50)),
		fmtDur(store.pct(99)), fmtX(float64(lastP50)/float64(rawLastP50)))
	t.add("raw O_APPEND+fdatasync of the new message's bytes", fmtNum(rawS.opsPerSec()), fmtDur(pctOf(rawS.lat[:min(w6Window, len(rawS.lat))], 50)),
		fmtDur(rawLastP50), "—", fmtDur(rawS.pct(99)), "1.00×")
	t.add(fmt.Sprintf("jsonlstore rewind by one message (%d in a row)", w6Rewinds), fmtNum(rewind.opsPerSec()), "—", fmtDur(rewind.pct(50)),
		fmt.Sprintf("%s ÷ last 60 appends", fmtX(float64(rewind.pct(50))/float64(lastP50))), fmtDur(rewind.pct(99)), fmt.Sprintf("≤ %d B added to the log each", rewindMax))
	t.note("messages cycle through a user prompt (100–500 B), an assistant reply with a tool call (200–800 B), and a tool result of 2–64 KiB of text; each message is one revision, the store appending first and the raw baseline after it, in the same round; the workload took %s", elapsed.Round(time.Millisecond))
	t.note("on disk: the session directory holds %s for %s of message text (log %s; the rest blobs and pages, zstd where that pays)", fmtBytes(onDisk), fmtBytes(agent.content), fmtBytes(logInfo.Size()))
	r.add(t)

	lt := &table{
		title: "W6 load of the latest revision, fresh store",
		cols:  []string{"operation", "p50", "× reading the unique content"},
	}
	lt.add("jsonlstore Load (Open, Load: chain, pages, blobs checked against their SHA-256, decode)", fmtDur(load.pct(50)), fmtX(float64(load.pct(50))/float64(read.pct(50))))
	lt.add("read and decompress every file of the session directory once (log, blobs, pages)", fmtDur(read.pct(50)), "1.00×")
	lt.note("%d loads of each, interleaved; both read from the page cache", c.w6Loads)
	r.add(lt)

	r.set("W6/MiB", float64(c.w6MiB))
	r.set("W6/last÷first", float64(lastP50)/float64(firstP50))
	r.set("W6/last÷raw", float64(lastP50)/float64(rawLastP50))
	r.set("W6/rewind÷append", float64(rewind.pct(50))/float64(lastP50))
	r.set("W6/rewindBytes", float64(rewindMax))
	r.set("W6/load÷read", float64(load.pct(50))/float64(read.pct(50)))
	return nil
}

// pctOf is the p-th percentile of l (nearest rank).
func pctOf(l []time.Duration, p float64) time.Duration {
	s := sample{lat: l}
	return s.pct(p)
}

// readUnique reads every file of session directory dir once, decompressing
// the zstd ones: the floor of loading its content.
func readUnique(dir string) error {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var rd io.Reader = f
		if strings.HasSuffix(path, ".zst") {
			if err := dec.Reset(f); err != nil {
				return err
			}
			rd = dec
		}
		_, err = io.Copy(io.Discard, rd)
		return err
	})
}
