package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
)

// runW3 is W3: load the latest revision of a session whose history holds
// 1 and c.w3Revs revisions of the same final snapshot (16 KiB). The
// histories are written through each system's normal path (jsonlstore:
// Create, then Append), outside the measurement.
func runW3(ctx context.Context, c *config, r *report) error {
	dir := filepath.Join(c.dir, "w3")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	snap, err := snapshotOfSize("w3-one", 16<<10, 0)
	if err != nil {
		return err
	}
	one, many := session.SessionID("w3-one"), session.SessionID(fmt.Sprintf("w3-%d", c.w3Revs))
	revs := map[session.SessionID]int{one: 1, many: c.w3Revs}

	build := time.Now()
	jsDir := filepath.Join(dir, "jsonl")
	for _, id := range []session.SessionID{one, many} {
		snap.ID = id
		js, err := newJSONL(ctx, jsDir, snap, jsonlstore.Options{Search: fts.New()})
		if err != nil {
			return err
		}
		for range revs[id] - 1 {
			if err := js.append(ctx, snap); err != nil {
				js.close()
				return err
			}
		}
		if err := js.close(); err != nil {
			return err
		}
	}
	jsBuild := time.Since(build)
	sq, err := newSQLiteRevs(filepath.Join(dir, "sqlite.db"))
	if err != nil {
		return err
	}
	defer sq.close()
	bb, err := newBbolt(filepath.Join(dir, "bbolt.db"))
	if err != nil {
		return err
	}
	defer bb.close()
	for _, id := range []session.SessionID{one, many} {
		snap.ID = id
		if err := sq.bulk(snap, revs[id]); err != nil {
			return err
		}
		if err := bb.bulk(snap, revs[id]); err != nil {
			return err
		}
	}
	js, err := openJSONLReader(jsDir)
	if err != nil {
		return err
	}
	defer js.Close()

	type row struct {
		name string
		id   session.SessionID
		load func(session.SessionID) (uint64, error)
	}
	loadJSONL := func(id session.SessionID) (uint64, error) {
		rec, err := js.Load(ctx, id)
		return rec.Revision, err
	}
	loadSQLite := func(id session.SessionID) (uint64, error) {
		rev, _, err := sq.load(id)
		return uint64(rev), err
	}
	loadBbolt := func(id session.SessionID) (uint64, error) {
		rev, _, err := bb.load(id)
		return rev, err
	}
	type system struct {
		name string
		load func(session.SessionID) (uint64, error)
	}
	systems := []system{{"jsonlstore Load", loadJSONL}, {"SQLite ORDER BY rev DESC LIMIT 1", loadSQLite}, {"bbolt cursor Last", loadBbolt}}

	// pgstore, when a PostgreSQL server runs: the histories written
	// through Create and Append, as jsonlstore's.
	var pgBuild time.Duration
	if srv := c.pg.get(ctx, c.out, c.cleanups); srv != nil {
		pg, err := newPGDB(ctx, srv)
		if err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		defer pg.close(ctx)
		build := time.Now()
		for _, id := range []session.SessionID{one, many} {
			snap.ID = id
			pw, err := pg.create(ctx, snap)
			if err != nil {
				return fmt.Errorf("pgstore: %w", err)
			}
			for range revs[id] - 1 {
				if err := pw.append(ctx, snap); err != nil {
					pw.release(ctx)
					return fmt.Errorf("pgstore: %w", err)
				}
			}
			if err := pw.release(ctx); err != nil {
				return fmt.Errorf("pgstore: %w", err)
			}
		}
		pgBuild = time.Since(build)
		systems = append(systems, system{"pgstore Load", func(id session.SessionID) (uint64, error) {
			rec, err := pg.st.Load(ctx, id)
			return rec.Revision, err
		}})
	}
	var rows []row
	for _, sys := range systems {
		for _, id := range []session.SessionID{one, many} {
			name := fmt.Sprintf("%s, %d revisions", sys.name, revs[id])
			if revs[id] == 1 {
				name = sys.name + ", 1 revision"
			}
			rows = append(rows, row{name, id, sys.load})
		}
	}
	ops := make([]func() error, len(rows))
	for i, rw := range rows {
		ops[i] = func() error {
			rev, err := rw.load(rw.id)
			if err == nil && rev != uint64(revs[rw.id]) {
				err = fmt.Errorf("%s: loaded revision %d, want %d", rw.id, rev, revs[rw.id])
			}
			return err
		}
	}
	s, err := interleave(ops, c.w3Loads, int64(len(mustEncode(snap))))
	if err != nil {
		return err
	}
	t := &table{
		title: fmt.Sprintf("W3 load the latest revision (16 KiB snapshot), 1 vs %d revisions", c.w3Revs),
		cols:  []string{"system", "loads", "loads/s", "p50", "p99", "p50 × 1 revision", "× SQLite"},
	}
	for i, rw := range rows {
		base := i - i%2 // the same system's 1-revision row
		t.add(rw.name, fmt.Sprint(len(s[i].lat)), fmtNum(s[i].opsPerSec()), fmtDur(s[i].pct(50)), fmtDur(s[i].pct(99)),
			fmtRatio(float64(s[i].pct(50))/float64(s[base].pct(50))), fmtRatio(s[i].opsPerSec()/s[2+i%2].opsPerSec()))
	}
	t.note("every load decodes the snapshot (sessnap), as jsonlstore's Load does; the jsonlstore history of %d revisions took %s to write through Append (default Options: the repeated revisions are delta records, with a full record whenever the deltas since the last one would make loading costlier than about 1.5 snapshots)", c.w3Revs, jsBuild.Round(time.Millisecond))
	if pgBuild > 0 {
		t.note("pgstore: one query per Load over TCP on loopback (the latest full record and any deltas after it; pgstore writes full records, so one row here); its history of %d revisions took %s to write through Append", c.w3Revs, pgBuild.Round(time.Millisecond))
	}
	r.add(t)
	r.set("W3/revs", float64(c.w3Revs))
	r.set("W3/many÷one", float64(s[1].pct(50))/float64(s[0].pct(50)))
	return nil
}
