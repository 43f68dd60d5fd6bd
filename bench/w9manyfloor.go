package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// W9's 10,000 resumes return the whole session each time, so a resume's
// cost grows with the session whatever the store does: reading its files
// and decoding its messages grow with it. w9ManyFloor measures that
// growth in the same run, beside the first and the last resumes:
//
//   - read: every file of the session's directory, read once (readFiles);
//   - read and decode: the same read, then sessnap.Unmarshal of the latest
//     snapshot's bytes (every message inline, as sessnap.Marshal writes
//     them; prepared before the timer starts).
//
// A resume that cost the first resumes' p50 plus only the growth of one
// of these, from the first 100 to the last 100, is the floor of the
// ratio last ÷ first (w9FloorRatio).
type w9ManyFloor struct {
	read, decode sample
}

// measure times both floors once for session id as it is now.
func (f *w9ManyFloor) measure(ctx context.Context, dir, sessDir string, id session.SessionID) error {
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	if err != nil {
		return err
	}
	rec, err := st.Load(ctx, id)
	st.Close()
	if err != nil {
		return err
	}
	snap, err := sessnap.Marshal(rec.Snapshot)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := readFiles(sessDir); err != nil {
		return err
	}
	f.read.add(time.Since(t0), 0)
	t0 = time.Now()
	if err := readFiles(sessDir); err != nil {
		return err
	}
	dec, err := sessnap.Unmarshal(snap)
	if err != nil {
		return err
	}
	f.decode.add(time.Since(t0), 0)
	if len(dec.Messages) != len(rec.Snapshot.Messages) {
		return fmt.Errorf("the floor decoded %d messages, the session holds %d", len(dec.Messages), len(rec.Snapshot.Messages))
	}
	return nil
}

// windows returns the p50 of a floor's samples taken after the first
// resumes (the first w9Window) and after the last (the rest).
func windows(s sample) (first, last time.Duration) {
	k := min(w9Window, len(s.lat))
	return pctOf(s.lat[:k], 50), pctOf(s.lat[k:], 50)
}

// w9FloorRatio is last ÷ first of a resume that costs first (the first
// resumes' p50) plus only the floor's growth from the first to the last
// resumes.
func w9FloorRatio(first time.Duration, floor sample) float64 {
	ff, fl := windows(floor)
	return float64(first+fl-ff) / float64(first)
}

// table is W9's 10,000-resume floor table: the resumes' first and last
// p50 beside the floors' (each floor's samples: the first w9Window were
// taken after the first resumes, the rest after the last).
func (f *w9ManyFloor) table(n int, lat []time.Duration) *table {
	first := pctOf(lat[:min(w9Window, len(lat))], 50)
	last := pctOf(lat[max(0, len(lat)-w9Window):], 50)
	t := &table{
		title: fmt.Sprintf("W9 %d resumes: the floor of their growth, measured after each of the first and the last 100 (same run)", n),
		cols:  []string{"what", "p50 first 100", "p50 last 100", "last ÷ first", "last − first", "a resume of the first 100's p50 plus only this growth: last ÷ first"},
	}
	t.add("resume (open, Resume, restore, append one message, release, close)", fmtDur(first), fmtDur(last),
		fmtX(float64(last)/float64(first)), fmtDur(last-first), "—")
	row := func(what string, s sample) {
		ff, fl := windows(s)
		t.add(what, fmtDur(ff), fmtDur(fl), fmtX(float64(fl)/float64(ff)), fmtDur(fl-ff), fmtX(w9FloorRatio(first, s)))
	}
	row("(a) read every file of the session's directory once", f.read)
	row("(b) (a), then sessnap.Unmarshal of the latest snapshot (every message inline; its bytes prepared before the timer)", f.decode)
	t.note("a resume must return the whole session decoded, so (b)'s growth is what any resume adds from the first 100 to the last 100; the last column is the ratio a resume would show if it added nothing else")
	return t
}
