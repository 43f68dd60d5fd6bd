package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// runW4 is W4: the first page (50, most recently updated first) of
// c.w4Sessions sessions, in a fresh process (this binary as a child, the
// page cache warm) and from a live process (jsonlstore: List while its
// watcher runs, so the page comes from the in-memory index; SQLite: a
// query on an open connection). SQLite keeps one row per session with its
// summary and an index on the update time.
func runW4(ctx context.Context, c *config, r *report) error {
	dir := filepath.Join(c.dir, "w4")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	jsDir, dbPath := filepath.Join(dir, "jsonl"), filepath.Join(dir, "sessions.db")
	build := time.Now()
	if err := w4BuildJSONL(ctx, jsDir, c.w4Sessions); err != nil {
		return err
	}
	jsBuild := time.Since(build)
	if err := w4BuildSQLite(dbPath, c.w4Sessions); err != nil {
		return err
	}

	// pgstore, when a PostgreSQL server runs: the same sessions, created
	// through its Create.
	var pg *pgDB
	var pgBuild time.Duration
	if srv := c.pg.get(ctx, c.out, c.cleanups); srv != nil {
		var err error
		if pg, err = newPGDB(ctx, srv); err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		defer pg.close(ctx)
		build := time.Now()
		if err := w4Build(ctx, pg.st, c.w4Sessions); err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		pgBuild = time.Since(build)
	}

	// Fresh processes, the kinds taking turns.
	kinds := []struct{ mode, arg string }{{"list-jsonl", jsDir}, {"list-sqlite", dbPath}, {"noop", ""}, {"scan-floor", jsDir}}
	if pg != nil {
		kinds = append(kinds, struct{ mode, arg string }{"list-pg", pg.dsn})
	}
	inChild := make([]*sample, len(kinds))
	wall := make([]*sample, len(kinds))
	for i := range kinds {
		inChild[i], wall[i] = &sample{}, &sample{}
	}
	for round := range c.w4Fresh {
		for _, k := range rotate(len(kinds), round) {
			res, err := spawn(kinds[k].mode, kinds[k].arg)
			if err != nil {
				return err
			}
			if strings.HasPrefix(kinds[k].mode, "list-") && res.fields["items"] != fmt.Sprint(summary.DefaultLimit) {
				return fmt.Errorf("%s: %s items, want %d", kinds[k].mode, res.fields["items"], summary.DefaultLimit)
			}
			inChild[k].add(res.ns(), 0)
			wall[k].add(res.wall, 0)
		}
	}

	// Live: a converged watcher, an open connection.
	st, err := openJSONLReader(jsDir)
	if err != nil {
		return err
	}
	defer st.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := st.Watch(wctx)
	if err != nil {
		return err
	}
	converge := time.Now()
	deadline := time.After(5 * time.Minute)
	for range c.w4Sessions {
		select {
		case <-ch:
		case <-deadline:
			return errors.New("the watcher did not report every session within 5 minutes")
		}
	}
	converged := time.Since(converge)
	db, err := openSQLite(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	first, err := st.List(ctx, summary.Query{})
	if err != nil {
		return err
	}
	liveOps := []func() error{
		func() error {
			page, err := st.List(ctx, summary.Query{})
			if err == nil && len(page.Items) != summary.DefaultLimit {
				err = fmt.Errorf("jsonlstore List: %d items", len(page.Items))
			}
			return err
		},
		func() error {
			items, err := sqliteFirstPage(db)
			if err == nil && len(items) != summary.DefaultLimit {
				err = fmt.Errorf("sqlite: %d items", len(items))
			}
			return err
		},
		func() error {
			for _, it := range first.Items {
				if _, err := fslease.Inspect(ctx, filepath.Join(jsDir, string(it.ID))); err != nil {
					return err
				}
			}
			return nil
		},
	}
	if pg != nil {
		liveOps = append(liveOps, func() error {
			page, err := pg.st.List(ctx, summary.Query{})
			if err == nil && len(page.Items) != summary.DefaultLimit {
				err = fmt.Errorf("pgstore List: %d items", len(page.Items))
			}
			return err
		})
	}
	live, err := interleave(liveOps, c.w4Live, 0)
	if err != nil {
		return err
	}
	cancel()

	t := &table{
		title: fmt.Sprintf("W4 list the first page of %d of %d sessions", summary.DefaultLimit, c.w4Sessions),
		cols:  []string{"system", "runs", "p50", "p99", "mean", "× SQLite (mean)"},
	}
	row := func(name string, s, ref *sample) {
		x := "—"
		if ref != nil {
			x = fmtRatio(ref.total().Seconds() / s.total().Seconds())
		}
		t.add(name, fmt.Sprint(len(s.lat)), fmtDur(s.pct(50)), fmtDur(s.pct(99)), fmtDur(s.total()/time.Duration(max(1, len(s.lat)))), x)
	}
	row("jsonlstore, fresh process: Open + List", inChild[0], inChild[1])
	row("SQLite, fresh process: open + query", inChild[1], inChild[1])
	row("jsonlstore, fresh process, exec to exit", wall[0], wall[1])
	row("SQLite, fresh process, exec to exit", wall[1], wall[1])
	row("(ref) empty child process, exec to exit", wall[2], nil)
	row("(ref) scan floor in a child: readdir, read every summary.json, lstat every log", inChild[3], inChild[1])
	if pg != nil {
		row("pgstore, fresh process: Open + List", inChild[4], inChild[1])
		row("pgstore, fresh process, exec to exit", wall[4], wall[1])
	}
	row("jsonlstore, live index (List, watcher running)", live[0], live[1])
	row("SQLite, open connection (query)", live[1], live[1])
	row("(ref) lease status of one page: 50 × fslease.Inspect", live[2], live[1])
	if pg != nil {
		row("pgstore, open store (List: one query)", live[3], live[1])
	}
	t.note("sessions have one 2 KiB revision each, created through jsonlstore's Create (%s for all); the watcher reported all of them %s after Watch returned", jsBuild.Round(time.Millisecond), converged.Round(time.Millisecond))
	t.note("every listing decodes its 50 summaries; jsonlstore's List also computes each item's lease status")
	if pg != nil {
		t.note("pgstore: the same sessions created through its Create (%s for all, 8 at a time); List is one keyset query on an index over TCP on loopback, lease status read from the session rows; a fresh process's Open connects and checks the schema", pgBuild.Round(time.Millisecond))
	}
	r.add(t)
	r.set("W4/sessions", float64(c.w4Sessions))
	r.set("W4/fresh-ms", float64(inChild[0].pct(50))/1e6)
	r.set("W4/live-ms", float64(live[0].pct(50))/1e6)
	return nil
}

// w4BuildJSONL creates n sessions through the store's Create, several at
// a time.
func w4BuildJSONL(ctx context.Context, dir string, n int) error {
	st, err := openJSONLReader(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	return w4Build(ctx, st, n)
}

// w4Build creates n sessions through st's Create, 8 at a time.
func w4Build(ctx context.Context, st sessionstore.Store, n int) error {
	snap, err := snapshotOfSize("w4", 2<<10, 0)
	if err != nil {
		return err
	}
	ids := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range ids {
				s := snap
				s.ID = w4ID(i)
				w, err := st.Create(ctx, s, sessionstore.AcquireOptions{Label: "bench"})
				if err == nil {
					err = w.Release(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
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
	return errors.Join(first, <-errs)
}

func w4ID(i int) session.SessionID { return session.SessionID(fmt.Sprintf("w4-%05d", i)) }

const w4Schema = `
CREATE TABLE sessions (
	id         TEXT PRIMARY KEY,
	updated_at INTEGER NOT NULL,
	summary    BLOB    NOT NULL
);
CREATE INDEX sessions_updated ON sessions (updated_at DESC, id DESC)`

// w4BuildSQLite stores n sessions' summaries, as a SQLite user listing
// sessions would.
func w4BuildSQLite(path string, n int) error {
	db, err := openSQLite(path)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(w4Schema); err != nil {
		return err
	}
	snap, err := snapshotOfSize("w4", 2<<10, 0)
	if err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	at := time.Now().UTC()
	for i := range n {
		snap.ID = w4ID(i)
		updated := at.Add(time.Duration(i) * time.Millisecond)
		b, err := json.Marshal(summary.Project(&snap, 1, 1, updated))
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO sessions (id, updated_at, summary) VALUES (?, ?, ?)", string(snap.ID), updated.UnixNano(), b); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// sqliteFirstPage returns the first page of summaries, most recently
// updated first, decoded.
func sqliteFirstPage(db *sql.DB) ([]summary.Summary, error) {
	rows, err := db.Query("SELECT summary FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?", summary.DefaultLimit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []summary.Summary
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var s summary.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
