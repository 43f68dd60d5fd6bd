package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/sessnap"
)

var w1Sizes = []int{1 << 10, 16 << 10, 256 << 10}

// w1PG is the pgstore row's place in W1's tables: after bbolt.
const w1PG = 4

// runW1 is W1: durable appends of 1, 16 and 256 KiB snapshots, the same
// snapshot again and again, one operation per system per round.
func runW1(ctx context.Context, c *config, r *report) error {
	for _, size := range w1Sizes {
		if err := runW1Size(ctx, c, r, size); err != nil {
			return fmt.Errorf("%d KiB: %w", size>>10, err)
		}
	}
	return nil
}

func runW1Size(ctx context.Context, c *config, r *report, size int) error {
	dir := filepath.Join(c.dir, fmt.Sprintf("w1-%dKiB", size>>10))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Appends alternate between two snapshots of the same size whose
	// messages differ: each append replaces the conversation, so a store
	// that writes deltas still has the whole message list to write.
	var snaps [2]sessnap.Snapshot
	var err error
	for i := range snaps {
		if snaps[i], err = snapshotOfSize("w1-session", size, uint64(i)); err != nil {
			return err
		}
	}
	payload, err := adapter.EncodeSnapshot(snaps[0].ID, snaps[0], 0)
	if err != nil {
		return err
	}
	js, err := newJSONL(ctx, filepath.Join(dir, "jsonl"), snaps[0], jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return err
	}
	defer js.close()
	if _, err := js.tail(); err != nil { // revision 1, written by Create
		return err
	}
	// One append outside the measurement gives the line the store writes;
	// after each of its appends the raw baseline takes the store's new
	// line, so it always writes exactly the bytes the store wrote last.
	if err := js.append(ctx, snaps[1]); err != nil {
		return err
	}
	line, err := js.tail()
	if err != nil {
		return err
	}
	raw, err := newRaw(filepath.Join(dir, "raw.log"))
	if err != nil {
		return err
	}
	defer raw.close()
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
	// Revisions 1 and 2 everywhere, as for the store.
	for _, sn := range snaps {
		if err := sq.append(sn); err != nil {
			return err
		}
		if err := bb.append(sn); err != nil {
			return err
		}
	}
	// Two reference rows split the store's cost from the disk's: the
	// encoding alone (CPU, no I/O), and the raw append followed by an
	// unsynced pwrite of a summary-sized side file, as the summary refresh
	// does after each append.
	sum, err := os.ReadFile(filepath.Join(dir, "jsonl", string(snaps[0].ID), jsonlstore.SummaryFile))
	if err != nil {
		return err
	}
	side, err := newRaw(filepath.Join(dir, "raw2.log"))
	if err != nil {
		return err
	}
	defer side.close()
	sideSum, err := os.OpenFile(filepath.Join(dir, "side.json"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer sideSum.Close()

	names := []string{"jsonlstore", "raw O_APPEND+fdatasync", "SQLite (row per revision)", "bbolt",
		"(ref) encoding alone, no I/O", "(ref) raw + unsynced summary-sized pwrite"}
	// Each system's next snapshot differs from its previous one: all of
	// them wrote snaps[1] last.
	var n [4]int // appends so far by jsonl, SQLite, bbolt, encoding
	next := func(i int) sessnap.Snapshot { sn := snaps[n[i]%2]; n[i]++; return sn }
	ops := []func() error{
		func() error { return js.append(ctx, next(0)) },
		func() error { return raw.append(line) },
		func() error { return sq.append(next(1)) },
		func() error { return bb.append(next(2)) },
		func() error { sn := next(3); _, err := adapter.EncodeSnapshot(sn.ID, sn, 0); return err },
		func() error {
			if err := side.append(line); err != nil {
				return err
			}
			_, err := sideSum.WriteAt(sum, 0)
			return err
		},
	}
	var lineBytes int64 // what the store appended during the measurement
	after := []func() error{func() (err error) { line, err = js.tail(); lineBytes += int64(len(line)); return err }, nil, nil, nil, nil, nil}

	// pgstore, after bbolt, when a PostgreSQL server runs.
	var pg *pgDB
	if srv := c.pg.get(ctx, c.out, c.cleanups); srv != nil {
		if pg, err = newPGDB(ctx, srv); err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		defer pg.close(ctx)
		pw, err := pg.create(ctx, snaps[0])
		if err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		defer pw.release(ctx)
		if err := pw.append(ctx, snaps[1]); err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		var pn int
		names = slices.Insert(names, w1PG, "pgstore (PostgreSQL, loopback)")
		ops = slices.Insert(ops, w1PG, func() error { sn := snaps[pn%2]; pn++; return pw.append(ctx, sn) })
		after = slices.Insert(after, w1PG, nil)
	}
	var wal0 int64
	if pg != nil {
		if wal0, err = pg.walBytes(ctx); err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
	}
	s, err := interleaveAfter(ops, after, c.w1Ops[size], int64(len(payload)))
	if err != nil {
		return err
	}
	if pg != nil {
		wal1, err := pg.walBytes(ctx)
		if err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		s[w1PG].written = wal1 - wal0
	}
	t := rateTable(fmt.Sprintf("W1 durable append, %d KiB snapshot", size>>10), names, s, names[1], names[2])
	t.note("snapshot %s encoded; consecutive appends alternate between two such snapshots with different messages, so the store (default Options) computes a delta replacing the message list and writes it where it is smaller than the full record: %s per append on average (the raw baseline writes the store's last line); MB/s counts the snapshot's bytes", fmtBytes(int64(len(payload))), fmtBytes(lineBytes/int64(max(1, len(s[0].lat)))))
	if pg != nil {
		t.note("pgstore: one transaction per append (fence, record, summary, NOTIFY) sent over TCP on loopback, committed with the WAL fsynced (fsync=on, synchronous_commit=on); its written/op is the WAL the server generated (pg_current_wal_insert_lsn), not this process's writes; pgstore writes full records")
	}
	r.add(t)
	key := fmt.Sprintf("W1/%dKiB/", size>>10)
	r.set(key+"jsonl÷raw", s[0].opsPerSec()/s[1].opsPerSec())
	r.set(key+"jsonl÷sqlite", s[0].opsPerSec()/s[2].opsPerSec())
	return nil
}

// interleave runs n rounds; in each, every op runs once, in an order that
// rotates from round to round. It returns one sample per op, each
// operation charged logical bytes.
func interleave(ops []func() error, n int, logical int64) ([]*sample, error) {
	return interleaveAfter(ops, nil, n, logical)
}

// interleaveAfter is interleave where after[k], when not nil, runs right
// after ops[k], outside the measurement.
func interleaveAfter(ops, after []func() error, n int, logical int64) ([]*sample, error) {
	var m ioMeter
	s := make([]*sample, len(ops))
	for i := range s {
		s[i] = &sample{}
	}
	for round := range n {
		for _, k := range rotate(len(ops), round) {
			if err := m.timed(s[k], logical, ops[k]); err != nil {
				return nil, fmt.Errorf("op %d, round %d: %w", k, round, err)
			}
			if k < len(after) && after[k] != nil {
				if err := after[k](); err != nil {
					return nil, fmt.Errorf("op %d, round %d: %w", k, round, err)
				}
			}
		}
	}
	return s, nil
}
