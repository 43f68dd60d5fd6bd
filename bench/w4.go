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
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// runW4 is W4: the first page (50, most recently updated first) of
// c.w4Sessions sessions, in a fresh process (this binary as a child, the
// page cache warm; and the sessions command, "sessions ls --limit 50",
// exec to exit, beside "sessions help", the same binary reading nothing)
// and from a live process (jsonlstore: List while its watcher runs, so the
// page comes from the in-memory index; SQLite: a query on an open
// connection). SQLite keeps one row per session with its summary and an
// index on the update time. jsonlstore's fresh listings read its catalog,
// written and settled before they run (as it is on a store whose sessions
// were created more than catalog.SettleTime ago).
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
	bin, err := buildSessions(dir)
	if err != nil {
		return err
	}
	settle := time.Now()
	if err := w4SettleCatalog(bin, jsDir); err != nil {
		return err
	}
	settled := time.Since(settle)

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
	kinds := []struct{ mode, arg string }{{"list-jsonl", jsDir}, {"list-sqlite", dbPath}, {"noop", ""}, {"scan-floor", jsDir},
		{"cli-ls", jsDir}, {"cli-help", ""}}
	const cliLs, cliHelp, cliPG = 4, 5, 7
	if pg != nil {
		kinds = append(kinds, struct{ mode, arg string }{"list-pg", pg.dsn}, struct{ mode, arg string }{"cli-ls", pg.dsn})
	}
	inChild := make([]*sample, len(kinds))
	wall := make([]*sample, len(kinds))
	for i := range kinds {
		inChild[i], wall[i] = &sample{}, &sample{}
	}
	for round := range c.w4Fresh {
		for _, k := range rotate(len(kinds), round) {
			if strings.HasPrefix(kinds[k].mode, "cli-") {
				d, err := w4CLI(bin, kinds[k].mode, kinds[k].arg)
				if err != nil {
					return err
				}
				wall[k].add(d, 0)
				continue
			}
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
	row("sessions ls --limit 50 (jsonlstore), exec to exit", wall[cliLs], wall[1])
	row("(ref) sessions help (reads nothing), exec to exit", wall[cliHelp], nil)
	if pg != nil {
		row("pgstore, fresh process: Open + List", inChild[6], inChild[1])
		row("pgstore, fresh process, exec to exit", wall[6], wall[1])
		row("sessions ls --limit 50 (pgstore), exec to exit", wall[cliPG], wall[1])
	}
	row("jsonlstore, live index (List, watcher running)", live[0], live[1])
	row("SQLite, open connection (query)", live[1], live[1])
	row("(ref) lease status of one page: 50 × fslease.Inspect", live[2], live[1])
	if pg != nil {
		row("pgstore, open store (List: one query)", live[3], live[1])
	}
	t.note("sessions have one 2 KiB revision each, created through jsonlstore's Create (%s for all); the watcher reported all of them %s after Watch returned", jsBuild.Round(time.Millisecond), converged.Round(time.Millisecond))
	t.note("every listing decodes its 50 summaries; jsonlstore's List also computes each item's lease status")
	t.note("jsonlstore's fresh listings read its catalog (.catalog/), written by a first listing and vouched for by its root file once the root had settled (%s); sessions ls prints the table to a pipe", settled.Round(time.Millisecond))
	if pg != nil {
		t.note("pgstore: the same sessions created through its Create (%s for all, 8 at a time); List is one keyset query on an index over TCP on loopback, lease status read from the session rows; a fresh process's Open connects and checks the schema", pgBuild.Round(time.Millisecond))
	}
	r.add(t)
	r.set("W4/sessions", float64(c.w4Sessions))
	r.set("W4/fresh-ms", float64(inChild[0].pct(50))/1e6)
	r.set("W4/live-ms", float64(live[0].pct(50))/1e6)
	r.set("W4/cli-ls-ms", float64(wall[cliLs].pct(50))/1e6)
	r.set("W4/cli-help-ms", float64(wall[cliHelp].pct(50))/1e6)
	if pg != nil {
		r.set("W4/pg-fresh-ms", float64(wall[6].pct(50))/1e6)
		r.set("W4/cli-pg-ms", float64(wall[cliPG].pct(50))/1e6)
	}
	return nil
}

// w4SettleCatalog makes the catalog of the store in dir what a store left
// alone has: a listing writes it, and one a few seconds later (the root
// unchanged since) writes the root file that vouches for it.
func w4SettleCatalog(bin, dir string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := execTimed(bin, "--dir", dir, "ls", "--limit", "1"); err != nil {
			return err
		}
		_, err := os.Stat(filepath.Join(dir, jsonlstore.CatalogDir, "root"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the catalog did not settle: %w", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	rep, err := execTimed(bin, "--dir", dir, "verify", "--quiet", "--json")
	if err != nil {
		return err
	}
	var v struct {
		Catalog struct {
			State string `json:"state"`
		} `json:"catalog"`
	}
	if err := json.Unmarshal([]byte(rep.stdout), &v); err != nil {
		return fmt.Errorf("sessions verify --json: %w", err)
	}
	if v.Catalog.State != "current" {
		return fmt.Errorf("the catalog is %q, not current: %s", v.Catalog.State, rep.stdout)
	}
	return nil
}

// w4CLI runs the sessions command once as kind says: "cli-ls" lists the
// first page of the store at loc, "cli-help" prints the usage. It checks
// what the listing printed (a header and a full page).
func w4CLI(bin, kind, loc string) (time.Duration, error) {
	args := []string{"help"}
	if kind == "cli-ls" {
		args = []string{"--dir", loc, "ls", "--limit", fmt.Sprint(summary.DefaultLimit)}
	}
	res, err := execTimed(bin, args...)
	if err != nil {
		return 0, err
	}
	if kind == "cli-ls" && strings.Count(res.stdout, "\n") != summary.DefaultLimit+1 {
		return 0, fmt.Errorf("sessions ls printed %d lines, want %d: %q", strings.Count(res.stdout, "\n"), summary.DefaultLimit+1, res.stdout)
	}
	return res.wall, nil
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
