package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
)

// w5Epoch is how many revisions a W5 conversation grows before it starts
// over (with new words), so that the log's records look like an agent's
// (each a whole conversation sharing most of its bytes with the previous
// one) without the log growing quadratically.
const w5Epoch = 32

// runW5 is W5: compaction (KeepLast 1: every revision but the latest goes
// to a zstd archive segment) of a log of c.w5MiB MiB written through
// Append, in a child process whose peak RSS (getrusage) is its own, beside
// the floor of reading and compressing the same log in another child.
func runW5(ctx context.Context, c *config, r *report) error {
	dir := filepath.Join(c.dir, "w5")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "jsonl")
	const id = "w5-session"
	build := time.Now()
	revs, err := w5BuildLog(ctx, root, id, int64(c.w5MiB)<<20)
	if err != nil {
		return err
	}
	jsBuild := time.Since(build)
	// KeepLast 1 cuts at the last full record (a delta needs the records
	// before it): compaction trims the revisions before that one.
	lastFull, fulls, err := w5LastFull(ctx, root, id)
	if err != nil {
		return err
	}
	sessDir := filepath.Join(root, id)
	logFile := filepath.Join(sessDir, jsonlstore.LogFile)
	fi, err := os.Stat(logFile)
	if err != nil {
		return err
	}
	size := fi.Size()
	pristine := filepath.Join(dir, "pristine.jsonl")
	if err := copyFile(pristine, logFile); err != nil {
		return err
	}
	reset := func() error {
		for _, name := range []string{jsonlstore.ArchiveDir, jsonlstore.SummaryFile, jsonlstore.LogFile} {
			if err := os.RemoveAll(filepath.Join(sessDir, name)); err != nil {
				return err
			}
		}
		return copyFile(logFile, pristine)
	}

	compact, raw, noop := &sample{}, &sample{}, &sample{}
	var rss, rawRSS, noopRSS int64
	var archive int64
	for round := range c.w5Rounds {
		for _, k := range rotate(3, round) {
			switch k {
			case 0:
				if err := reset(); err != nil {
					return err
				}
				res, err := spawn("compact", root, id)
				if err != nil {
					return err
				}
				if res.fields["trimmed"] != strconv.FormatUint(lastFull-1, 10) {
					return fmt.Errorf("compaction trimmed %s revisions, want %d", res.fields["trimmed"], lastFull-1)
				}
				archive, _ = strconv.ParseInt(res.fields["archive"], 10, 64)
				compact.add(res.ns(), size)
				rss = max(rss, res.maxRSS)
			case 1:
				res, err := spawn("compact-raw", pristine)
				if err != nil {
					return err
				}
				raw.add(res.ns(), size)
				rawRSS = max(rawRSS, res.maxRSS)
			case 2:
				res, err := spawn("noop")
				if err != nil {
					return err
				}
				noop.add(res.wall, 0)
				noopRSS = max(noopRSS, res.maxRSS)
			}
		}
	}
	// The store is whole afterwards.
	st, err := openJSONLReader(root)
	if err != nil {
		return err
	}
	defer st.Close()
	if rec, err := st.Load(ctx, id); err != nil || rec.Revision != uint64(revs) {
		return fmt.Errorf("after compaction: Load: revision %d, %v", rec.Revision, err)
	}
	if rec, err := st.LoadRevision(ctx, id, 1); err != nil || rec.Revision != 1 {
		return fmt.Errorf("after compaction: LoadRevision(1): %v", err)
	}

	t := &table{
		title: fmt.Sprintf("W5 compaction of a %s log (%d revisions, KeepLast 1)", fmtBytes(size), revs),
		cols:  []string{"system", "runs", "MB/s", "p50", "peak RSS", "× floor"},
	}
	t.add("jsonlstore Compact (child process)", fmt.Sprint(len(compact.lat)), fmtNum(compact.mbPerSec()), fmtDur(compact.pct(50)), fmtBytes(rss), fmtRatio(compact.mbPerSec()/raw.mbPerSec()))
	t.add("floor: read + zstd the log (child process)", fmt.Sprint(len(raw.lat)), fmtNum(raw.mbPerSec()), fmtDur(raw.pct(50)), fmtBytes(rawRSS), "1.00×")
	t.add("empty child process", fmt.Sprint(len(noop.lat)), "—", fmtDur(noop.pct(50)), fmtBytes(noopRSS), "—")
	t.note("the log was written through Append (default Options: %d full records, the other %d revisions delta records) in %s; compaction trims the %d revisions before the last full record; the archive segment is %s; Compact's time is measured inside the child (lease, recovery, archive, verification, new log), peak RSS is the child's VmHWM", fulls, revs-fulls, jsBuild.Round(time.Millisecond), lastFull-1, fmtBytes(archive))
	t.note("SQLite has no equivalent step here: deleting old rows and VACUUM rewrites the database; not measured")
	r.add(t)
	r.set("W5/MiB", float64(size)/(1<<20))
	r.set("W5/MBps", compact.mbPerSec())
	if rss > 0 {
		r.set("W5/rssMiB", float64(rss)/(1<<20))
	}
	return nil
}

// w5BuildLog writes session id's log through Create and Append until it
// holds at least size bytes, and returns its number of revisions.
func w5BuildLog(ctx context.Context, root, id string, size int64) (int, error) {
	conv := newConversation(id, w2Message, 1)
	snap, err := conv.next()
	if err != nil {
		return 0, err
	}
	js, err := newJSONL(ctx, root, snap, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return 0, err
	}
	defer js.close()
	revs := 1
	for written := int64(0); written < size; {
		if revs%w5Epoch == 0 {
			conv = newConversation(id, w2Message, uint64(revs))
		}
		if snap, err = conv.next(); err != nil {
			return 0, err
		}
		if err := js.append(ctx, snap); err != nil {
			return 0, err
		}
		revs++
		b, err := js.tail()
		if err != nil {
			return 0, err
		}
		written += int64(len(b))
	}
	return revs, js.close()
}

// w5LastFull returns the revision of the last full record of session id's
// log and how many full records it holds.
func w5LastFull(ctx context.Context, root, id string) (last uint64, fulls int, err error) {
	st, err := openJSONLReader(root)
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	for info, err := range st.Records(ctx, session.SessionID(id)) {
		if err != nil {
			return 0, 0, err
		}
		if info.Kind == record.KindFull {
			last, fulls = info.Revision, fulls+1
		}
	}
	if last == 0 {
		return 0, 0, fmt.Errorf("%s: no full record", id)
	}
	return last, fulls, nil
}
