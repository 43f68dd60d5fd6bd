package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// rawConn connects to dsn directly, to look at or damage the tables.
func rawConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Every stored row is a record's line in the file format, verbatim: the
// envelope matches the columns, a full record's payload is the snapshot's
// sessnap encoding, and a revision that changes little is a delta.
func TestRecordsAreLinesVerbatim(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("v", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("v", "two")))
	require.NoError(t, err)

	rows, err := rawConn(t, dsn).Query(ctx, `SELECT rev, gen, time, kind, schema, line FROM pgstore_records WHERE session_id = 'v' ORDER BY rev`)
	require.NoError(t, err)
	var kinds []string
	var rev, gen int64
	var at time.Time
	var kind string
	var schema int
	var line []byte
	_, err = pgx.ForEachRow(rows, []any{&rev, &gen, &at, &kind, &schema, &line}, func() error {
		kinds = append(kinds, kind)
		rec, err := s.LoadRevision(ctx, "v", uint64(rev))
		require.NoError(t, err)
		require.Equal(t, byte('\n'), line[len(line)-1])
		m, payload, err := record.Parse(line[:len(line)-1], sessionstore.DefaultMaxRecordBytes)
		require.NoError(t, err, "revision %d", rev)
		require.Equal(t, record.Meta{Version: record.VersionOf(kind), Schema: rec.SchemaVersion, Rev: rec.Revision,
			Gen: rec.Generation, Time: rec.Time, Kind: kind}, m, "revision %d", rev)
		if kind == record.KindFull {
			want, err := sessnap.Marshal(rec.Snapshot)
			require.NoError(t, err)
			require.Equal(t, string(want), string(payload), "revision %d", rev)
		}
		require.Equal(t, uint64(gen), rec.Generation)
		require.Equal(t, sessnap.SchemaVersion, schema)
		require.WithinDuration(t, rec.Time, at, time.Microsecond, "the time column is the record's, to the microsecond")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{record.KindFull, record.KindDelta}, kinds, "revision 2 changes the title only")
}

// A record of a kind this program does not know (a later format's delta,
// say), whole and with a valid checksum, was written by a newer program:
// readers stop before it and say so (never skip it, never guess), the
// revisions before it still read, and the holder does not append after
// it.
func TestUnknownRecordKindIsNewer(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("k", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	first, err := s.Load(ctx, "k")
	require.NoError(t, err)

	// Revision 2 of a kind this program does not know, as a newer one might write.
	conn := rawConn(t, dsn)
	m := record.Meta{Version: record.Version2, Schema: sessnap.SchemaVersion, Rev: 2, Gen: w.Generation(), Time: first.Time.Add(time.Second), Kind: "patch"}
	line := record.Encode(m, []byte(`{"ops":[]}`))
	_, err = conn.Exec(ctx, `INSERT INTO pgstore_records (session_id, rev, gen, time, kind, schema, line) VALUES ('k', 2, $1, $2, 'patch', $3, $4)`,
		int64(m.Gen), m.Time, m.Schema, line)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE pgstore_summaries SET revision = 2 WHERE session_id = 'k'`)
	require.NoError(t, err)

	requireCorrupt := func(err error, what string) {
		t.Helper()
		var ne *sessionstore.NewerRecordError
		require.True(t, errors.As(err, &ne), "%s: want a *NewerRecordError, got %v", what, err)
		require.ErrorIs(t, err, sessionstore.ErrSchemaTooNew)
		require.NotErrorIs(t, err, sessionstore.ErrCorrupt)
		require.Equal(t, uint64(2), ne.Revision, what)
		require.Contains(t, err.Error(), `"patch"`, what)
	}
	_, err = s.Load(ctx, "k")
	requireCorrupt(err, "Load")
	_, err = s.LoadRevision(ctx, "k", 2)
	requireCorrupt(err, "LoadRevision 2")
	rec, err := s.LoadRevision(ctx, "k", 1)
	require.NoError(t, err)
	require.Equal(t, "one", rec.Snapshot.Title)
	var revs []uint64
	var last error
	for rec, err := range s.History(ctx, "k") {
		if err != nil {
			last = err
			continue
		}
		revs = append(revs, rec.Revision)
	}
	require.Equal(t, []uint64{1}, revs)
	requireCorrupt(last, "History")
	_, err = w.Append(ctx, 2, first.Snapshot)
	requireCorrupt(err, "Append after it")
	require.NoError(t, w.Release(ctx))
}

// A damaged line fails its checksum: corruption at its revision.
func TestDamagedLineIsCorruption(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("d", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	_, err = rawConn(t, dsn).Exec(ctx, `UPDATE pgstore_records SET line = overlay(line placing 'X' from 40) WHERE session_id = 'd'`)
	require.NoError(t, err)
	_, err = s.Load(ctx, "d")
	var ce *sessionstore.CorruptionError
	require.True(t, errors.As(err, &ce), "got %v", err)
	require.ErrorIs(t, err, record.ErrChecksum)
	require.Equal(t, uint64(1), ce.Revision)
}

// A holder that stops heartbeating loses its lease after the TTL: another
// store (another machine) takes it over, seeing it stale, and the old
// holder's append writes nothing.
func TestLeaseExpiresWithoutHeartbeat(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	// Long enough that the TryAcquire below finds the lease live on a
	// loaded machine.
	const ttl = 2 * time.Second
	a := openDSN(t, dsn, pgstore.Options{LeaseTTL: ttl})
	b := openDSN(t, dsn, pgstore.Options{LeaseTTL: ttl})
	old, err := a.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("e", "one")), sessionstore.AcquireOptions{Label: "a", HeartbeatInterval: time.Hour})
	require.NoError(t, err)

	_, err = b.TryAcquire(ctx, "e", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrLeaseHeld, "live until it expires")
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	w, err := b.Acquire(actx, "e", sessionstore.AcquireOptions{Label: "b"})
	require.NoError(t, err)
	defer w.Release(ctx)
	require.Equal(t, summary.LeaseStale, w.Recovery().Previous.State)
	require.Equal(t, "a", w.Recovery().Previous.Holder.Label)
	require.Greater(t, w.Generation(), old.Generation())
	require.Less(t, time.Since(start), 10*time.Second)

	_, err = old.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("e", "stale write")))
	require.ErrorIs(t, err, sessionstore.ErrLeaseLost)
	require.ErrorIs(t, old.Heartbeat(ctx), sessionstore.ErrLeaseLost)
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("e", "two")))
	require.NoError(t, err)
	rec, err := a.Load(ctx, "e")
	require.NoError(t, err)
	require.Equal(t, "two", rec.Snapshot.Title)
	require.Equal(t, w.Generation(), rec.Generation)
}

// A lease expires even if nobody takes it over: the paused holder's next
// append fails all the same, and readers see the lease stale.
func TestExpiredLeaseFencesWithoutTakeover(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, pgstore.Options{})
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("x", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, s.ExpireLease(ctx, "x"))
	require.ErrorIs(t, s.ExpireLease(ctx, "x"), pgstore.ErrNotHeld)
	st, err := s.Lease(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseStale, st.State)
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("x", "two")))
	require.ErrorIs(t, err, sessionstore.ErrLeaseLost)
	require.NoError(t, w.Release(ctx), "releasing a lost lease is a no-op")
	st, err = s.Lease(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseStale, st.State, "a lost holder's release does not free the lease")
	rec, err := s.Load(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, uint64(1), rec.Revision)
}

// An append proves the holder alive: a holder that appends but has not
// heartbeated for an hour shows a fresh heartbeat, and its lease lives a
// TTL from the append.
func TestAppendCountsAsHeartbeat(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{HeartbeatInterval: time.Hour})
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("a", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	_, err = rawConn(t, dsn).Exec(ctx, `UPDATE pgstore_sessions SET heartbeat_at = heartbeat_at - interval '1 hour'`)
	require.NoError(t, err)
	st, err := s.Lease(ctx, "a")
	require.NoError(t, err)
	require.Greater(t, st.HeartbeatAge, time.Hour)
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("a", "two")))
	require.NoError(t, err)
	st, err = s.Lease(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseHeld, st.State)
	require.Less(t, st.HeartbeatAge, time.Minute)
	require.True(t, st.Holder.HeartbeatAt.After(st.Holder.AcquiredAt))
}

// The writer's own heartbeat keeps its lease alive for many TTLs.
func TestHeartbeatKeepsLeaseAlive(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	// Ten beats per TTL: a loaded machine may delay some.
	const ttl = time.Second
	a := openDSN(t, dsn, pgstore.Options{LeaseTTL: ttl, HeartbeatInterval: ttl / 10})
	b := openDSN(t, dsn, pgstore.Options{LeaseTTL: ttl})
	w, err := a.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("h", "one")), sessionstore.AcquireOptions{Label: "beating"})
	require.NoError(t, err)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := b.TryAcquire(ctx, "h", sessionstore.AcquireOptions{})
		require.ErrorIs(t, err, sessionstore.ErrLeaseHeld)
		var held *sessionstore.LeaseHeldError
		require.True(t, errors.As(err, &held))
		h := held.Status.Holder
		// Held, on the server's clock, for two TTLs since acquisition.
		if h.HeartbeatAt.Sub(h.AcquiredAt) > 2*ttl {
			break
		}
		require.True(t, time.Now().Before(deadline), "heartbeats did not advance: %+v", h)
		time.Sleep(ttl / 4) // pacing the probe, not synchronizing
	}
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("h", "two")))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
}

// Deleting a session and creating it again restarts its generations; the
// old session's lost writers must not write into the new one even when
// their generation matches (the nonce fences them).
func TestRecreatedSessionFencesOldWriters(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, pgstore.Options{})
	old, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("r", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, s.ExpireLease(ctx, "r"))
	// Another holder deletes the session and it is created again: the new
	// creator has generation 1, as old had.
	w, err := s.Acquire(ctx, "r", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx))
	fresh, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("r", "fresh")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer fresh.Release(ctx)
	require.Equal(t, old.Generation(), fresh.Generation())
	_, err = old.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("r", "ghost")))
	require.ErrorIs(t, err, sessionstore.ErrLeaseLost)
	rec, err := s.Load(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, "fresh", rec.Snapshot.Title)
	require.Equal(t, uint64(1), rec.Revision)
}

// Ordering and cursors are exact to the nanosecond, though timestamptz
// keeps microseconds: sessions created within one microsecond list in
// summary.Compare's order.
func TestListOrdersNanoseconds(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, pgstore.Options{})
	base := sessiontest.Epoch
	for i := range 6 {
		snap := sessiontest.Snap(t, sessiontest.Titled(fmt.Sprintf("n%d", i), "t"))
		snap.CreatedAt = base.Add(time.Duration(5-i) * time.Nanosecond)
		w, err := s.Create(ctx, snap, sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
	}
	var got []string
	q := summary.Query{Order: summary.OrderCreatedAsc, Limit: 2}
	for {
		p, err := s.List(ctx, q)
		require.NoError(t, err)
		for _, it := range p.Items {
			got = append(got, string(it.ID))
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	require.Equal(t, []string{"n5", "n4", "n3", "n2", "n1", "n0"}, got)
}

// A session copied record by record (RecordLines into Import) is the same
// session byte for byte: the same lines, the same export, and the copy's
// lease is free at a generation no lower than its records'.
func TestImportCopiesVerbatim(t *testing.T) {
	ctx := t.Context()
	src := mustOpen(t, pgstore.Options{})
	dst := mustOpen(t, pgstore.Options{})
	w, err := src.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("c", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for i := range 3 {
		_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, sessiontest.Titled("c", fmt.Sprintf("step %d", i))))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))

	lines := func(s *pgstore.Store) [][]byte {
		var out [][]byte
		for l, err := range s.RecordLines(ctx, "c") {
			require.NoError(t, err)
			out = append(out, l)
		}
		return out
	}
	n, err := dst.Import(ctx, "c", func(yield func([]byte, error) bool) {
		for _, l := range lines(src) {
			if !yield(l, nil) {
				return
			}
		}
	}, nil)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, lines(src), lines(dst))
	var a, b strings.Builder
	require.NoError(t, src.Export(ctx, "c", &a, false))
	require.NoError(t, dst.Export(ctx, "c", &b, false))
	require.Equal(t, a.String(), b.String())
	require.Equal(t, 4, strings.Count(a.String(), "\n"))

	rep, err := dst.Verify(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Sessions, 1)
	require.True(t, rep.OK(), "%+v", rep)
	require.Equal(t, uint64(4), rep.Sessions[0].Revision)

	var infos []sessionstore.RecordInfo
	for info, err := range dst.Records(ctx, "c") {
		require.NoError(t, err)
		infos = append(infos, info)
	}
	require.Len(t, infos, 4)
	var lineBytes int64
	for i, l := range lines(dst) {
		require.Equal(t, uint64(i+1), infos[i].Revision)
		require.Equal(t, int64(len(l)), infos[i].Bytes)
		require.Positive(t, infos[i].PayloadBytes)
		lineBytes += int64(len(l))
	}
	du, err := dst.DiskUsage(ctx)
	require.NoError(t, err)
	require.Equal(t, []sessionstore.SessionUsage{{ID: "c", LogBytes: lineBytes, TotalBytes: lineBytes}}, du.Sessions)
	require.Equal(t, lineBytes, du.Total.TotalBytes)
	_, err = dst.DiskUsage(ctx, "c", "nosuch")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)

	st, err := dst.Lease(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseFree, st.State)
	w2, err := dst.TryAcquire(ctx, "c", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Greater(t, w2.Generation(), uint64(1))
	require.Equal(t, uint64(4), w2.Revision())
	require.NoError(t, w2.Release(ctx))

	_, err = dst.Import(ctx, "c", func(func([]byte, error) bool) {}, nil)
	require.ErrorIs(t, err, sessionstore.ErrExists)
	// A damaged line imports nothing.
	bad := lines(src)
	bad[1] = append([]byte(nil), bad[1]...)
	bad[1][30] ^= 1
	other := mustOpen(t, pgstore.Options{})
	_, err = other.Import(ctx, "c", func(yield func([]byte, error) bool) {
		for _, l := range bad {
			if !yield(l, nil) {
				return
			}
		}
	}, nil)
	require.ErrorIs(t, err, sessionstore.ErrCorrupt)
	require.ErrorIs(t, err, record.ErrChecksum)
	_, err = other.Load(ctx, "c")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}

// A session whose latest record a newer schema wrote is read, but not
// appended to: this program would drop the fields it does not know.
func TestSchemaTooNewRefusesAppend(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, pgstore.Options{})
	payload, err := sessnap.Marshal(sessiontest.Snap(t, sessiontest.Titled("n", "from the future")))
	require.NoError(t, err)
	line := record.Encode(record.Meta{Version: record.Version4, Schema: sessnap.SchemaVersion + 1, Rev: 1, Gen: 3,
		Time: time.Now().UTC(), Kind: record.KindFull}, payload)
	_, err = s.Import(ctx, "n", func(yield func([]byte, error) bool) { yield(line, nil) }, nil)
	require.NoError(t, err)

	rec, err := s.Load(ctx, "n")
	require.NoError(t, err)
	require.Equal(t, sessnap.SchemaVersion+1, rec.SchemaVersion)
	w, err := s.Acquire(ctx, "n", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Equal(t, uint64(4), w.Generation(), "above the imported records' generation")
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("n", "older program")))
	require.ErrorIs(t, err, sessionstore.ErrSchemaTooNew)
	rec, err = s.Load(ctx, "n")
	require.NoError(t, err)
	require.Equal(t, uint64(1), rec.Revision)
	require.NoError(t, w.Release(ctx))
}

// Generations stop at 2^53-1, the record format's bound (a line with a
// larger gen does not parse): a lease at the bound is refused, not issued
// past it, and records written at the bound read back.
func TestGenerationBound(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("g", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	conn := rawConn(t, dsn)
	_, err = conn.Exec(ctx, `UPDATE pgstore_sessions SET generation = $1 WHERE id = 'g'`, int64(sessnap.MaxSafeInteger-1))
	require.NoError(t, err)

	w, err = s.Acquire(ctx, "g", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Equal(t, uint64(sessnap.MaxSafeInteger), w.Generation())
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("g", "two")))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	rec, err := s.Load(ctx, "g")
	require.NoError(t, err)
	require.Equal(t, uint64(sessnap.MaxSafeInteger), rec.Generation)
	require.Equal(t, "two", rec.Snapshot.Title)

	_, err = s.TryAcquire(ctx, "g", sessionstore.AcquireOptions{})
	require.ErrorContains(t, err, "generation 9007199254740992 is above 2^53-1")
	var gen int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT generation FROM pgstore_sessions WHERE id = 'g'`).Scan(&gen))
	require.Equal(t, int64(sessnap.MaxSafeInteger), gen, "nothing written")
	l, err := s.Lease(ctx, "g")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseFree, l.State)
	require.Equal(t, uint64(sessnap.MaxSafeInteger), l.Generation)
}
