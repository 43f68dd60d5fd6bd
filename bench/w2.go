package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/sessnap"
)

// w2Message is the size of the message each W2 revision adds.
const w2Message = 2 << 10

// runW2 is W2, a growing conversation: c.w2Revs revisions, each adding one
// message of about 2 KiB plus the usage and tool-call counters an agent's
// turn changes. Every system stores every revision durably; jsonlstore
// with default Options (delta records) goes first in each round (the raw
// baseline then writes exactly the bytes it appended), the others —
// jsonlstore with FullRecordsOnly among them — in rotating order.
func runW2(ctx context.Context, c *config, r *report) error {
	dir := filepath.Join(c.dir, "w2")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dirs := []string{"jsonl", "jsonl-full", "raw", "full", "sqlite-revs", "sqlite-events", "bbolt", "enc", "diff"} // one per row, in row order
	for _, d := range dirs {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	sub := func(name string) string { return filepath.Join(dir, name) }
	conv := newConversation("w2-session", w2Message, 2)
	first, err := conv.next()
	if err != nil {
		return err
	}
	// The store twice: with default Options (delta records) and with
	// FullRecordsOnly, the store as it was before deltas.
	js, err := newJSONL(ctx, sub("jsonl"), first, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return err
	}
	jsOpen := true
	defer func() {
		if jsOpen {
			js.close()
		}
	}()
	jf, err := newJSONL(ctx, sub("jsonl-full"), first, jsonlstore.Options{FullRecordsOnly: true, Search: fts.New()})
	if err != nil {
		return err
	}
	jfOpen := true
	defer func() {
		if jfOpen {
			jf.close()
		}
	}()
	raw, err := newRaw(filepath.Join(sub("raw"), "raw.log"))
	if err != nil {
		return err
	}
	defer raw.close()
	full, err := newRaw(filepath.Join(sub("full"), "full.log"))
	if err != nil {
		return err
	}
	defer full.close()
	sr, err := newSQLiteRevs(filepath.Join(sub("sqlite-revs"), "revs.db"))
	if err != nil {
		return err
	}
	defer sr.close()
	se, err := newSQLiteEvents(filepath.Join(sub("sqlite-events"), "events.db"))
	if err != nil {
		return err
	}
	defer se.close()
	bb, err := newBbolt(filepath.Join(sub("bbolt"), "bbolt.db"))
	if err != nil {
		return err
	}
	defer bb.close()
	// Revision 1, outside the measurement, everywhere.
	line, err := js.tail()
	if err != nil {
		return err
	}
	if _, err := jf.tail(); err != nil {
		return err
	}
	if err := raw.append(line); err != nil {
		return err
	}
	firstFull, err := fullLine(first)
	if err != nil {
		return err
	}
	if err := full.append(firstFull); err != nil {
		return err
	}
	for _, a := range []func(sessnap.Snapshot) error{sr.append, se.append, bb.append} {
		if err := a(first); err != nil {
			return err
		}
	}

	const (
		rowJSONL = iota
		rowFullRecords
		rowRaw
		rowFull
		rowSQLiteRevs
		rowSQLiteEvents
		rowBbolt
		rowEncode
		rowDiff
	)
	names := []string{"jsonlstore (default Options: delta records)", "jsonlstore FullRecordsOnly",
		"raw O_APPEND+fdatasync (the delta store's bytes)", "(ref) full snapshot per revision (encode, O_APPEND+fdatasync)",
		"SQLite (row per revision)", "SQLite (row per message + session row)", "bbolt (value per revision)",
		"(ref) encoding alone, no I/O", "(ref) encoding + record.Diff against the previous revision, no I/O"}
	s := make([]*sample, len(names))
	for i := range s {
		s[i] = &sample{}
	}
	var appended [4]int64 // bytes appended by jsonl, jsonl-full, raw, full
	var m ioMeter
	var snap sessnap.Snapshot
	prevEnc := mustEncode(first) // the diff row's previous revision
	// others[k] is row k+1.
	others := []func() error{
		func() error { return jf.append(ctx, snap) },
		func() error { return raw.append(line) },
		func() error {
			b, err := fullLine(snap)
			if err != nil {
				return err
			}
			appended[rowFull] += int64(len(b))
			return full.append(b)
		},
		func() error { return sr.append(snap) },
		func() error { return se.append(snap) },
		func() error { return bb.append(snap) },
		func() error { _, err := adapter.EncodeSnapshot(snap.ID, snap, 0); return err },
		func() error {
			b, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
			if err != nil {
				return err
			}
			if _, ok := record.Diff(prevEnc, b); !ok {
				return errors.New("record.Diff found no delta")
			}
			prevEnc = b
			return nil
		},
	}
	start := time.Now()
	for round := range c.w2Revs - 1 {
		if snap, err = conv.next(); err != nil {
			return err
		}
		if err := m.timed(s[rowJSONL], 1, func() error { return js.append(ctx, snap) }); err != nil {
			return fmt.Errorf("jsonlstore, revision %d: %w", round+2, err)
		}
		if line, err = js.tail(); err != nil {
			return err
		}
		appended[rowJSONL] += int64(len(line))
		appended[rowRaw] += int64(len(line))
		for _, k := range rotate(len(others), round) {
			if err := m.timed(s[k+1], 1, others[k]); err != nil {
				return fmt.Errorf("%s, revision %d: %w", names[k+1], round+2, err)
			}
			if k+1 == rowFullRecords {
				b, err := jf.tail()
				if err != nil {
					return err
				}
				appended[rowFullRecords] += int64(len(b))
			}
		}
	}
	elapsed := time.Since(start)
	final, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
	if err != nil {
		return err
	}
	// Sizes on disk once every system is closed (SQLite checkpoints its
	// WAL into the database then).
	jsOpen, jfOpen = false, false
	for _, cl := range []func() error{js.close, jf.close, raw.close, full.close, sr.close, se.close, bb.close} {
		if err := cl(); err != nil {
			return err
		}
	}

	t := &table{
		title: fmt.Sprintf("W2 growing conversation, %d revisions of +%s", c.w2Revs, fmtBytes(w2Message)),
		cols:  []string{"system", "revisions/s", "total time", "p50", "p99", "appended", "written", "written ÷ final snapshot", "dirtied", "on disk", "× raw", "× SQLite (per message)", "× FullRecordsOnly"},
	}
	for i, n := range names {
		app := "—"
		if i < len(appended) {
			app = fmtBytes(appended[i])
		}
		size, err := dirSize(filepath.Join(dir, dirs[i]))
		if err != nil {
			return err
		}
		written, ratio, dirtied := "—", "—", "—"
		if s[i].ioKnown {
			written = fmtBytes(s[i].written)
			if s[i].written > 0 {
				ratio = fmtX(float64(s[i].written) / float64(len(final)))
			}
			dirtied = fmtBytes(s[i].dirtied)
		}
		t.add(n, fmtNum(s[i].opsPerSec()), fmtDur(s[i].total()), fmtDur(s[i].pct(50)), fmtDur(s[i].pct(99)), app, written, ratio, dirtied, fmtBytes(size),
			fmtRatio(s[i].opsPerSec()/s[rowRaw].opsPerSec()), fmtRatio(s[i].opsPerSec()/s[rowSQLiteEvents].opsPerSec()), fmtRatio(s[i].opsPerSec()/s[rowFullRecords].opsPerSec()))
	}
	t.note("revision 1 is written outside the measurement; the table covers revisions 2–%d; the final snapshot is %s; the whole workload took %s", c.w2Revs, fmtBytes(int64(len(final))), elapsed.Round(time.Millisecond))
	t.note("the delta store goes first in every round (the raw row then appends the bytes it just appended), the others in rotating order; the (ref) full-snapshot row is the encoding and durable append of the whole snapshot, without the store's checks and summary")
	t.note("the (ref) encoding rows are CPU only: EncodeSnapshot of the revision, and that plus record.Diff against the previous revision's encoding (what the delta store computes before writing; Diff also checks that the delta rebuilds the revision)")
	t.note("appended: bytes added to the log (the two stores, raw, full); written: bytes passed to write(2)/pwrite(2) (wchar), summary.json, SQLite's WAL and checkpoints, bbolt's pages and meta included; dirtied: page cache dirtied (write_bytes, an upper bound: see the header)")
	r.add(t)
	r.set("W2/appended", float64(appended[rowJSONL]))
	r.set("W2/written", float64(s[rowJSONL].written))
	r.set("W2/appended-full", float64(appended[rowFullRecords]))
	r.set("W2/final", float64(len(final)))
	r.set("W2/fullrecords÷jsonl", s[rowJSONL].opsPerSec()/s[rowFullRecords].opsPerSec())
	r.set("W2/jsonl÷sqlite", s[rowJSONL].opsPerSec()/s[rowSQLiteEvents].opsPerSec())
	r.set("W2/fullsnap÷jsonl", s[rowJSONL].opsPerSec()/s[rowFull].opsPerSec())
	r.set("W2/jsonl-ms", float64(s[rowJSONL].pct(50))/1e6)
	r.set("W2/diff-ms", float64(s[rowDiff].pct(50))/1e6)
	return nil
}

// fullLine is what a store writing the full snapshot on every revision
// appends: the encoded snapshot and a newline.
func fullLine(snap sessnap.Snapshot) ([]byte, error) {
	b, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
	return append(b, '\n'), err
}
